/*
 * The checksums of a dataset (docs/security.md): dataset_checksum.c.
 * Fletcher32 (HDF5's filter) covers each chunk of a table, but not the
 * variable-length strings, which HDF5 keeps in its global heap, nor the
 * root attributes. So each table also carries a "checksum" attribute over
 * every field of its rows as read (FNV-1a 64 over a canonical encoding),
 * and the root one over the root attributes; the reader verifies each one
 * it finds (a table rewritten by another program without one is read as
 * it is; an attribute cannot silently vanish: object headers carry HDF5's
 * own checksum).
 */
#ifndef FR_DATASET_CHECKSUM_H
#define FR_DATASET_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "frontier/dataset/dataset.h"
#include "frontier/dataset/dataset_schema.h"

#define DS_CHECKSUM_ATTR "checksum"
#define DS_CHECKSUM_TEXT 32 /* "fnv1a64:" + 16 hex digits + NUL fits */

/* A running FNV-1a 64 hash. */
typedef struct ds_hash {
    uint64_t h;
} ds_hash;

void ds_hash_init(ds_hash *h);
/* Adds n rows laid out as table describes (for /results: ds_result_io). */
void ds_hash_rows(ds_hash *h, const ds_table *table, const void *rows, size_t n);
/* The root attributes that make the dataset's identity, in a fixed order. */
void ds_hash_root(ds_hash *h, const fr_dataset *ds);
/* "fnv1a64:<16 hex digits>" */
void ds_hash_text(const ds_hash *h, char out[DS_CHECKSUM_TEXT]);

#endif
