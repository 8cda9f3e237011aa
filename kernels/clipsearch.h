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
#include "core/hd.h"
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

/*
 * The exhaustive check of the shrink's power (quantizers/hqq.h fr_hqq_pow)
 * on the device against the host (tests/gpu/test_gpu_clip.c):
 * digest[k] = sum mod 2^64 of fr_hqq_pow_mix(u, bits of fr_hqq_pow(u)) over
 * the float bit patterns u = first + FR_HQQ_DIGEST_SPAN k + i, i <
 * FR_HQQ_DIGEST_SPAN, u < first + count; ceil(count / FR_HQQ_DIGEST_SPAN)
 * entries into host memory. One thread per entry (no atomics); synchronous.
 */
#define FR_HQQ_DIGEST_SPAN 4096
FR_HD uint64_t fr_hqq_pow_mix(uint32_t u, uint32_t r)
{
    uint64_t x = ((uint64_t)u << 32 | r) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}
fr_status fr_cuda_hqq_pow_digest(uint32_t first, uint64_t count, uint64_t *digest, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
