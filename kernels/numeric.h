/*
 * The numeric-flag reduction on the device (docs/dataset.md "Numeric
 * flags"; docs/gpu.md "Numeric flags"), in the C interface of the device
 * library (no CUDA types; streams are void *). A mechanism only: it
 * reduces a tensor to what frontier/exec/numeric_flags.c's shape passes reduce
 * it to on the CPU, and the rules are evaluated there
 * (fr_numeric_evaluate), so the policy stays in frontier/.
 *
 * Per distinct group shape (tile_rows x tile_cols, resolved: >= 1) the
 * largest group amax and asymmetric range max(max x, 0) - min(min x, 0)
 * and the smallest nonzero ones; per tensor the count of nonzero elements,
 * of float32 subnormals and of -0, and the largest magnitude's bits. Every
 * element is taken as the float32 the CPU's copy holds (bf16 and f16
 * converted exactly, so an f16 subnormal is a normal float32 there as
 * here). The values are maxima and minima, reduced with atomics in any
 * order: exact, equal to the CPU's bit for bit.
 *
 * A tensor may come in row chunks of any size (the executor's streaming):
 * a group whose rows or columns span several warps' pieces keeps (amax, hi,
 * -lo) per group in device memory until end(), 12 bytes per group of such
 * a shape (tile_rows > 1, or tile_cols > FR_KNUM_PIECE); the others (one
 * row, up to FR_KNUM_PIECE columns: the usual groups) are reduced as they
 * are read.
 */
#ifndef FR_KERNELS_NUMERIC_H
#define FR_KERNELS_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

/* Columns of one warp's piece of a group row. */
#define FR_KNUM_PIECE 2048

/* The reduced values, as end() writes them to host memory: this head,
 * then 4 uint32 per shape (float32 bits of the largest amax, the smallest
 * nonzero amax (+inf: none), the largest range, the smallest nonzero
 * range). */
typedef struct fr_cuda_numeric_head {
    unsigned long long n_nonzero, n_subnormal, n_neg_zero;
    unsigned int max_mag, spare;
} fr_cuda_numeric_head;

#define FR_CUDA_NUMERIC_BYTES(n_shapes) (sizeof(fr_cuda_numeric_head) + 16 * (size_t)(n_shapes))

typedef struct fr_cuda_numeric fr_cuda_numeric;

fr_status fr_cuda_numeric_create(void *stream, fr_cuda_numeric **out, fr_error *err);
/* Frees in stream order; the caller synchronises the stream before exit. */
void fr_cuda_numeric_destroy(fr_cuda_numeric *nm);

/* Starts a rows x cols tensor with n_shapes group shapes (0: the tensor
 * facts only). FR_E_NOMEM when the per-group memory cannot be had (the
 * caller then leaves the tensor "not examined"). Enqueued. */
fr_status fr_cuda_numeric_begin(fr_cuda_numeric *nm, const int64_t *tile_rows,
                                const int64_t *tile_cols, size_t n_shapes, int64_t rows,
                                int64_t cols, fr_error *err);
/* Rows [row0, row0 + chunk_rows) at w (device, enum frontier_dtype f32,
 * f16 or bf16), in any order of chunks, each row once. Enqueued. */
fr_status fr_cuda_numeric_chunk(fr_cuda_numeric *nm, const void *w, int dtype, int64_t row0,
                                int64_t chunk_rows, fr_error *err);
/* After the last chunk: finishes the multi-piece groups and copies the
 * FR_CUDA_NUMERIC_BYTES(n_shapes) bytes of the result to host (pinned,
 * valid once the stream has reached this point). Enqueued. */
fr_status fr_cuda_numeric_end(fr_cuda_numeric *nm, void *host, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
