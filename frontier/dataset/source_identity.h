/*
 * The identity of a model source as /sources records it (docs/dataset.md),
 * for --resume and merge: frontier/dataset/source_identity.c.
 */
#ifndef FR_SOURCE_IDENTITY_H
#define FR_SOURCE_IDENTITY_H

#include <stdint.h>

#include "core/error.h"
#include "core/source.h"
#include "frontier/dataset/dataset.h"

/* sha256 of the source's files (one file: its digest, as sha256sum prints
 * it; several: the digest of their "digest  name\n" lines in order), or ""
 * without OpenSSL or for synthetic sources; size = bytes of all files;
 * mtime = the newest. */
fr_status fr_source_identity(const fr_source *src, char sha256[65], uint64_t *size,
                             int64_t *mtime, fr_error *err);

/* sha256 of one file as sha256sum prints it, or "" without OpenSSL;
 * FR_E_IO when it cannot be read. */
fr_status fr_file_sha256(const char *path, char sha256[65], fr_error *err);

/* Whether two /sources rows name the same checkpoint: synthetic sources by
 * their spec; files by sha256 and size when both rows have a digest, else
 * by size and mtime, and then also by path when by_path is set (merge: two
 * folders with equal sizes and times are not one model; --resume: the
 * checkpoint may have moved). */
int fr_source_identity_same(const fr_ds_source *a, const fr_ds_source *b, int by_path);

#endif
