/*
 * The on-disk schema of the frontier dataset (docs/dataset.md), written once
 * as field tables that drive the writer (dataset_write.c), the reader and
 * the copying and freeing of rows in memory (dataset.c), the HDF5 types
 * (dataset_file.c) and the checksums (dataset_checksum.c). Private to the
 * dataset code of frontier/.
 */
#ifndef FR_DATASET_SCHEMA_H
#define FR_DATASET_SCHEMA_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frontier/dataset/dataset.h"

typedef enum ds_field_type {
    DS_U32,
    DS_U64,
    DS_I64,
    DS_F64,
    DS_STR /* variable-length UTF-8 string; char * in memory */
} ds_field_type;

typedef struct ds_field {
    const char *name;
    ds_field_type type;
    size_t offset; /* in the in-memory row struct */
    int optional;  /* added after files existed without it (ds_field_optional) */
} ds_field;

typedef struct ds_table {
    const char *name;   /* "/sources" */
    const ds_field *fields;
    size_t n_fields;
    size_t row_size;    /* sizeof the in-memory row struct */
    hsize_t chunk_rows; /* HDF5 chunk size in rows */
} ds_table;

/* /results rows as they travel to and from HDF5: fr_ds_result with the
 * device beside it as a pointer, since HDF5 does not convert char[16] to a
 * variable-length string (row.device itself is not part of the HDF5 type). */
typedef struct ds_result_io {
    fr_ds_result row;
    char *device;
} ds_result_io;

#define DS_FIELD(type, member, kind) {#member, kind, offsetof(type, member), 0}
/* a field added to a table after files existed without it */
#define DS_OPTIONAL_FIELD(type, member, kind) {#member, kind, offsetof(type, member), 1}

static const ds_field ds_source_fields[] = {
    DS_FIELD(fr_ds_source, source_id, DS_U32),
    DS_FIELD(fr_ds_source, path, DS_STR),
    DS_FIELD(fr_ds_source, kind, DS_STR),
    DS_FIELD(fr_ds_source, size, DS_U64),
    DS_FIELD(fr_ds_source, sha256, DS_STR),
    DS_FIELD(fr_ds_source, mtime, DS_I64),
    DS_FIELD(fr_ds_source, n_tensors, DS_U32),
    DS_FIELD(fr_ds_source, n_params, DS_U64),
};

/* "class" is the column name; the C member is cls */
static const ds_field ds_tensor_fields[] = {
    DS_FIELD(fr_ds_tensor, tensor_id, DS_U32),
    DS_FIELD(fr_ds_tensor, source_id, DS_U32),
    DS_FIELD(fr_ds_tensor, name, DS_STR),
    {"class", DS_STR, offsetof(fr_ds_tensor, cls), 0},
    DS_FIELD(fr_ds_tensor, dtype, DS_STR),
    DS_FIELD(fr_ds_tensor, shape, DS_STR),
    DS_FIELD(fr_ds_tensor, numel, DS_U64),
    DS_FIELD(fr_ds_tensor, rows, DS_I64),
    DS_FIELD(fr_ds_tensor, cols, DS_I64),
    DS_FIELD(fr_ds_tensor, sq_norm, DS_F64),
    /* added after schema 1 files existed: optional (ds_field_optional) */
    DS_OPTIONAL_FIELD(fr_ds_tensor, source_format, DS_STR),
    DS_OPTIONAL_FIELD(fr_ds_tensor, stored_bits, DS_U64),
    DS_OPTIONAL_FIELD(fr_ds_tensor, out_error, DS_STR),
};

static const ds_field ds_config_fields[] = {
    DS_FIELD(fr_ds_config, config_id, DS_U32),
    DS_FIELD(fr_ds_config, name, DS_STR),
    DS_FIELD(fr_ds_config, family, DS_STR),
    DS_FIELD(fr_ds_config, nominal_bits, DS_F64),
    DS_FIELD(fr_ds_config, params, DS_STR),
    DS_FIELD(fr_ds_config, origin, DS_STR),
};

#define DS_RESULT_FIELD(member, kind) {#member, kind, offsetof(ds_result_io, row.member), 0}

static const ds_field ds_result_fields[] = {
    DS_RESULT_FIELD(tensor_id, DS_U32),
    DS_RESULT_FIELD(config_id, DS_U32),
    DS_RESULT_FIELD(bits_per_weight, DS_F64),
    DS_RESULT_FIELD(total_bits, DS_U64),
    DS_RESULT_FIELD(rel_err, DS_F64),
    DS_RESULT_FIELD(sqnr_db, DS_F64),
    DS_RESULT_FIELD(max_abs_err, DS_F64),
    DS_RESULT_FIELD(cosine, DS_F64),
    DS_RESULT_FIELD(out_rel_err, DS_F64),
    DS_RESULT_FIELD(sq_err, DS_F64),
    DS_RESULT_FIELD(out_sq_err, DS_F64),
    DS_RESULT_FIELD(out_sq_ref, DS_F64),
    DS_RESULT_FIELD(seconds, DS_F64),
    DS_FIELD(ds_result_io, device, DS_STR),
    /* added after schema 1 files existed: optional (ds_field_optional) */
    {"flags", DS_U32, offsetof(ds_result_io, row.flags), 1},
};

/* /expert_results: the /results fields and the expert index */
typedef struct ds_expert_io {
    ds_result_io io;
    uint32_t expert;
} ds_expert_io;

#define DS_EXPERT_FIELD(member, kind) \
    {.name = #member, .type = kind, .offset = offsetof(ds_expert_io, io.row.member)}

static const ds_field ds_expert_result_fields[] = {
    DS_EXPERT_FIELD(tensor_id, DS_U32),
    {.name = "expert", .type = DS_U32, .offset = offsetof(ds_expert_io, expert)},
    DS_EXPERT_FIELD(config_id, DS_U32),
    DS_EXPERT_FIELD(bits_per_weight, DS_F64),
    DS_EXPERT_FIELD(total_bits, DS_U64),
    DS_EXPERT_FIELD(rel_err, DS_F64),
    DS_EXPERT_FIELD(sqnr_db, DS_F64),
    DS_EXPERT_FIELD(max_abs_err, DS_F64),
    DS_EXPERT_FIELD(cosine, DS_F64),
    DS_EXPERT_FIELD(out_rel_err, DS_F64),
    DS_EXPERT_FIELD(sq_err, DS_F64),
    DS_EXPERT_FIELD(out_sq_err, DS_F64),
    DS_EXPERT_FIELD(out_sq_ref, DS_F64),
    DS_EXPERT_FIELD(seconds, DS_F64),
    {.name = "flags", .type = DS_U32, .offset = offsetof(ds_expert_io, io.row.flags),
     .optional = 1},
    {.name = "device", .type = DS_STR, .offset = offsetof(ds_expert_io, io.device)},
};

static const ds_field ds_skipped_fields[] = {
    DS_FIELD(fr_ds_skipped, source_id, DS_U32),
    DS_FIELD(fr_ds_skipped, name, DS_STR),
    DS_FIELD(fr_ds_skipped, config, DS_STR),
    DS_FIELD(fr_ds_skipped, reason, DS_STR),
};

#define DS_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Optional fields: added to a table after files existed without them
 * (docs/dataset.md, "Versioning"; so far /results and /expert_results
 * `flags`, /tensors `source_format` and `stored_bits`). A file without one
 * reads it as 0 (a string as ""), and the checksum encodes it only where it
 * is nonzero (non-empty), so files without it keep their checksums. */
static inline int ds_field_optional(const ds_field *field)
{
    return field->optional;
}

/* Chunks: /results grows by appends of many rows; the others are small. */
static const ds_table ds_sources_table = {"sources", ds_source_fields, DS_COUNT(ds_source_fields),
                                          sizeof(fr_ds_source), 64};
static const ds_table ds_tensors_table = {"tensors", ds_tensor_fields, DS_COUNT(ds_tensor_fields),
                                          sizeof(fr_ds_tensor), 512};
static const ds_table ds_configs_table = {"configs", ds_config_fields, DS_COUNT(ds_config_fields),
                                          sizeof(fr_ds_config), 256};
static const ds_table ds_results_table = {"results", ds_result_fields, DS_COUNT(ds_result_fields),
                                          sizeof(ds_result_io), 4096};
static const ds_table ds_expert_results_table = {"expert_results", ds_expert_result_fields,
                                                 DS_COUNT(ds_expert_result_fields),
                                                 sizeof(ds_expert_io), 4096};
static const ds_table ds_skipped_table = {"skipped", ds_skipped_fields,
                                          DS_COUNT(ds_skipped_fields), sizeof(fr_ds_skipped), 256};

/* Rows per HDF5 read/write call when staging /results. */
#define DS_IO_BLOCK 8192

/* Root attribute names (docs/dataset.md). */
#define DS_FORMAT "frontier"

#endif
