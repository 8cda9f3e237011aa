/*
 * The per-group optimised int variants on the device (docs/gpu.md, "mse-,
 * imat- and hqq- on the GPU"): the clipping search of mse- and imat-
 * (kernels/clipsearch.cu, the CPU's fr_wrap_search_group of
 * quantizers/wrap.c) and the zero-point optimisation of hqq-
 * (kernels/hqq.cu, quantizers/hqq.c), with the non-finite check every
 * wrapper runs first (fr_wrap_check_finite). C interface, no CUDA types;
 * streams are void *, tensors device pointers of `dtype` (enum
 * frontier_dtype), w_hat device float32 [rows x cols].
 */
#ifndef FR_KERNELS_CLIPSEARCH_H
#define FR_KERNELS_CLIPSEARCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"
#include "quantizers/int_group.h"

/* FR_E_USAGE "non-finite weight at row R, column C" for the first NaN or
 * Inf of w in element order (the CPU's message), else FR_OK. One read of
 * the tensor, a fixed-tree minimum per block, the blocks' minima on the
 * host: synchronises the stream (the only synchronisation of these calls). */
fr_status fr_cuda_check_finite(const void *w, int dtype, int64_t rows, int64_t cols, void *stream,
                               fr_error *err);

/* w_hat = every group of the int base p (group or row scales) searched over
 * the shrink factors 1, 0.95, ..., 0.5 with per-column weights col_weight
 * (HOST memory, [cols], uploaded; NULL: 1): bit for bit the CPU's
 * fr_wrap_search_tensor. Checks finiteness first; the search is enqueued
 * on the stream. */
fr_status fr_cuda_clip_search(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                              const fr_int_params *p, const float *col_weight, void *stream,
                              fr_error *err);

/* w_hat = hqq- of the int asym base p (quantizers/hqq.c): checks finiteness
 * first; enqueued on the stream. */
fr_status fr_cuda_hqq(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                      const fr_int_params *p, void *stream, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
