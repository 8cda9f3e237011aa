/*
 * llama.cpp's block types on the device (kernels/ggml.cu; docs/gpu.md,
 * "ggml- and imat-ggml- on the GPU"): Q(W) = decode(encode(W)) of every
 * block with the CPU's own FR_HD code (quantizers/ggml_blocks.h,
 * ggml_kquants.h), so w^ is the CPU's bit for bit. C interface, no CUDA
 * types; w a device tensor of `dtype` (enum frontier_dtype), w_hat device
 * float32 [rows x cols].
 */
#ifndef FR_KERNELS_GGML_H
#define FR_KERNELS_GGML_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

/* w_hat = every block of ggml type `type` (enum fr_ggml_qtype) of every
 * row, a short last block as the CPU takes it; importance: the weight of
 * each of the cols columns (HOST memory, uploaded: the imatrix-weighted
 * searches of imat-ggml-) or NULL (ggml-). Refuses a NaN or Inf weight as
 * the CPU does (fr_cuda_check_finite: one read, one synchronisation), then
 * enqueues the blocks on the stream. */
fr_status fr_cuda_ggml(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                       int type, const float *importance, void *stream, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
