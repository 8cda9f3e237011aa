/*
 * The random Hadamard rotation on the device (kernels/rht.cu; the rotation
 * of quantizers/rht.h, docs/formats.md `rht+<config>`, docs/gpu.md "RHT on
 * the GPU"): R = B D applied to every row with the CPU's float32
 * operations per element (x * d_j, the butterflies (i, i + h) for
 * h = 1, 2, 4, ... inside each greedy power-of-two block, x * 1/sqrtf(n)),
 * so a rotated row is fr_rht_row's bit for bit. C interface, no CUDA types.
 * The quantize_cuda of rht and rht_gptq are defined there too (rows of
 * gpu_entries.h's table).
 */
#ifndef FR_KERNELS_RHT_H
#define FR_KERNELS_RHT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

/* Rows held in shared memory up to this many columns (32 KiB); longer
 * rows are transformed in place in device memory. */
#define FR_KRHT_SHARED_COLS 8192

/*
 * out (device float32, rows x cols) = each row of the device tensor `in`
 * (enum frontier_dtype: f32, f16 or bf16) rotated: R x (inverse = 0) or
 * R^T x (inverse = 1). `signs` (device, cols floats of +-1) is
 * fr_rht_signs' vector. `out` may be `in` when dtype is f32. Enqueued on
 * `stream`; does not synchronise.
 */
fr_status fr_cuda_rht_rows(const void *in, int dtype, float *out, int64_t rows, int64_t cols,
                           const float *signs, int inverse, void *stream, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
