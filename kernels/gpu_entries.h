/*
 * The GPU entry points of the built-in families, as kernels/ registers
 * them: quantizers/ (below kernels/) never names a device function, so the
 * built-in descriptors carry none; the registration of the built-ins, above
 * both layers (frontier/exec/builtins.h), attaches the row of this table to the
 * family's descriptor with FRONTIER_Q_HAS_CUDA. Only built with
 * FRONTIER_HAVE_CUDA.
 */
#ifndef FR_KERNELS_GPU_ENTRIES_H
#define FR_KERNELS_GPU_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

/* the project's C headers carry no C++ guards of their own */
#ifdef __cplusplus
extern "C" {
#endif

#include "frontier/plugin.h"
#include "quantizers/families.h"

/* One family's functions, with the types of the descriptor's fields
 * (frontier_quantizer.quantize_cuda, .sweep_cuda); NULL where it has none. */
typedef struct fr_kernel_gpu_entry {
    int (*quantize_cuda)(const frontier_config *cfg, const void *w, int dtype, float *w_hat,
                         int64_t rows, int64_t cols, const frontier_calib *calib, void *stream,
                         frontier_call *call);
    int (*sweep_cuda)(const frontier_config *const *cfgs, size_t n_cfgs, const void *w,
                      int dtype, int64_t rows, int64_t cols, const frontier_calib *calib,
                      frontier_error_sums *sums, void *stream, frontier_call *call);
} fr_kernel_gpu_entry;

/* Indexed by enum fr_family: every kernel family's pair (FR_KFAMILY in
 * kernels/<name>.cu), the host families' quantize_cuda where the device
 * has one, {NULL, NULL} for the rest (kernels/gpu_entries.c). */
extern const fr_kernel_gpu_entry fr_kernel_gpu_entries[FR_FAMILY_COUNT];

/* The functions the table lists. A kernel family's pair (FR_KFAMILY,
 * kernels/kcommon.cuh) reads no statistics. */
#define FR_KFAMILY_DECLARE(ID, name, ggml)                                                   \
    int fr_##name##_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,       \
                                  float *w_hat, int64_t rows, int64_t cols,                  \
                                  const frontier_calib *calib, void *stream,                 \
                                  frontier_call *call);                                      \
    int fr_##name##_sweep_cuda(const frontier_config *const *cfgs, size_t n_cfgs,             \
                               const void *w, int dtype, int64_t rows, int64_t cols,         \
                               const frontier_calib *calib, frontier_error_sums *sums,       \
                               void *stream, frontier_call *call);
FR_BUILTIN_FAMILIES(FR_KFAMILY_DECLARE)
#undef FR_KFAMILY_DECLARE

/* The host families' quantize_cuda: mse and imat kernels/clipsearch.cu,
 * hqq kernels/hqq.cu, awq kernels/awq.cu, gptq kernels/gptq.cu, rht and
 * rht_gptq kernels/rht.cu, ggml and ggml_imat kernels/ggml.cu (docs/gpu.md
 * has each one's section). */
#define FR_KHOST_DECLARE(name)                                                               \
    int fr_##name##_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,       \
                                  float *w_hat, int64_t rows, int64_t cols,                  \
                                  const frontier_calib *calib, void *stream,                 \
                                  frontier_call *call);
FR_KHOST_DECLARE(mse)
FR_KHOST_DECLARE(imat)
FR_KHOST_DECLARE(hqq)
FR_KHOST_DECLARE(awq)
FR_KHOST_DECLARE(gptq)
FR_KHOST_DECLARE(rht)
FR_KHOST_DECLARE(rht_gptq)
FR_KHOST_DECLARE(ggml)
FR_KHOST_DECLARE(ggml_imat)
#undef FR_KHOST_DECLARE

#ifdef __cplusplus
}
#endif

#endif
