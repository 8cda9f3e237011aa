/*
 * A safetensors writer (the format of core/safetensors.c): the caller
 * declares every tensor (name, dtype, shape) first, the header is written
 * from that plan, then the tensors' bytes are streamed in the declared
 * order. Nothing is held in memory but the plan, so a shard of any size
 * is written with the memory of one tensor.
 */
#ifndef FR_SAFETENSORS_WRITE_H
#define FR_SAFETENSORS_WRITE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "error.h"
#include "source.h"

typedef struct fr_st_entry {
    const char *name;         /* borrowed until fr_st_writer_begin returns */
    const char *dtype;        /* the format's name: "F32", "BF16", "U8", "I32", "F8_E4M3" */
    int ndim;
    int64_t shape[FR_MAX_DIMS];
    uint64_t nbytes;          /* numel x element size (the writer checks it) */
} fr_st_entry;

typedef struct fr_st_writer fr_st_writer;

/* Bytes per element of a safetensors dtype name, 0 when unknown. */
unsigned fr_st_dtype_size(const char *dtype);

/* Creates path (truncating it) and writes the header: the entries in the
 * given order, packed back to back, and a "__metadata__" string map of
 * n_meta key/value pairs (meta[2i], meta[2i + 1]). FR_E_USAGE for a bad
 * plan (unknown dtype, nbytes that disagree with the shape, duplicate
 * names), FR_E_OUTPUT when the file cannot be written. */
fr_status fr_st_writer_begin(const char *path, const fr_st_entry *entries, size_t n,
                             const char *const *meta, size_t n_meta, fr_st_writer **out,
                             fr_error *err);

/* Appends bytes of the data section (any split across calls); writing
 * past the planned size is FR_E_FAIL. */
fr_status fr_st_writer_write(fr_st_writer *w, const void *data, size_t n, fr_error *err);

/* Checks that every planned byte came, flushes and closes; frees w either
 * way. FR_E_OUTPUT when a write or the close failed. */
fr_status fr_st_writer_finish(fr_st_writer *w, fr_error *err);

/* Closes and frees without checks (the caller removes the file). */
void fr_st_writer_abort(fr_st_writer *w);

/* Size of the data section a plan describes, and of the whole file. */
uint64_t fr_st_plan_data_bytes(const fr_st_entry *entries, size_t n);

/* Flushes f and fsyncs its file, so what was written is on disk before a
 * rename makes it visible: 0, or -1 with errno. A filesystem that cannot
 * sync (EINVAL, EROFS) counts as synced. */
int fr_file_sync(FILE *f);

#endif
