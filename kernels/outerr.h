/*
 * The output-error terms on the device (docs/formats.md, "Error metrics";
 * docs/gpu.md, "Output error"): tr(D H D^T) for D = W - W^ (or D = W, the
 * reference term) with cuBLAS, in the C interface of the device library
 * (no CUDA types; streams are void *). Rows are taken in fixed chunks of
 * FR_KOUT_ROWS: D (float32) and G = D H (one cublasSgemm, FP32 math:
 * CUBLAS_PEDANTIC_MATH, or TF32 tensor cores when asked) per chunk, the
 * chunk's sum of D o G in double with a fixed grid and a fixed tree, the
 * chunks added in order: the result depends on the data only (and on
 * cuBLAS's choice of kernel for the shape, which is fixed for a device).
 *
 * The CPU emulation of tests/gpu/emu has no cuBLAS: there the same chunks
 * go through OpenBLAS's sgemm on the emulated device memory (host memory;
 * FP32 only), so the executor's calibrated path runs in CI too.
 */
#ifndef FR_KERNELS_OUTERR_H
#define FR_KERNELS_OUTERR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

#define FR_KOUT_ROWS 512

/* cuBLAS handle on a stream and the chunk scratch (grown as needed). */
typedef struct fr_cuda_blas fr_cuda_blas;

/* 1 when the output terms can be computed on the device (cuBLAS; in the
 * emulation OpenBLAS). */
int fr_cuda_blas_available(void);

/* tf32: allow TF32 tensor cores in the output GEMM (default 0: FP32). */
fr_status fr_cuda_blas_create(void *stream, int tf32, fr_cuda_blas **out, fr_error *err);
void fr_cuda_blas_destroy(fr_cuda_blas *b);

/*
 * *out = tr(D H D^T), D = w - w_hat (w_hat NULL: D = w); w a device tensor
 * of `dtype` (enum frontier_dtype), w_hat device float32, h the device
 * float32 [cols x cols] second moment. Enqueued on the handle's stream and
 * synchronised (the value is on the host on return).
 */
fr_status fr_cuda_output_term(fr_cuda_blas *b, const void *w, int dtype, const float *w_hat,
                              int64_t rows, int64_t cols, const float *h, double *out,
                              fr_error *err);

/*
 * *out = sum_ij diag_j (w - w_hat)_ij^2 (w_hat NULL: w), the output term of
 * statistics without a Hessian (sweep --diagonal-output-error); diag the
 * device float32 [cols] act_sq_mean. The terms as the CPU forms them
 * (frontier/exec/metrics.c), summed in another order: within about 1e-15
 * relative of it (the emulation sums in the CPU's order). Synchronised.
 */
fr_status fr_cuda_output_term_diag(fr_cuda_blas *b, const void *w, int dtype, const float *w_hat,
                                   int64_t rows, int64_t cols, const float *diag, double *out,
                                   fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
