/*
 * The CUDA path as C sees it (docs/gpu.md). Plain C: no CUDA header, device
 * pointers are void * / float *, streams are void * (a cudaStream_t; NULL is
 * the legacy default stream). Only built with FRONTIER_HAVE_CUDA.
 */
#ifndef FR_KERNELS_LAUNCHERS_H
#define FR_KERNELS_LAUNCHERS_H

#include <stddef.h>
#include <stdint.h>

/* the project's C headers carry no C++ guards of their own */
#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"
#include "core/registry.h"
#include "frontier/executor.h"
#include "frontier/plugin.h"

/* Usable CUDA devices. 0 when there is no driver, no device, or any error
 * (cudaGetDeviceCount failing means "no GPU", never a crash). */
int fr_cuda_device_count(void);

/* "NVIDIA H200, sm_90, 139 GiB, driver 13.0" of device `device`. */
fr_status fr_cuda_device_describe(int device, char *buf, size_t size, fr_error *err);

/*
 * The CUDA executor (frontier/executor.h). Evaluates every (item, config)
 * of the plan on device opt->device (0 when negative): built-in data-free
 * configurations in one fused read per tensor, plugins through their
 * sweep_cuda / quantize_cuda, and whatever has no CUDA path (calibrated
 * items, CPU-only plugins, tensors whose plugin needs them whole but which
 * exceed the staging cap) through fr_exec_cpu. Tensors stream host ->
 * device through pinned double buffers on a copy stream overlapped with
 * the compute stream; synthetic tensors are generated on the device.
 * FRONTIER_CUDA_BUFFER (bytes, with k/M/G suffix) caps each staging buffer.
 */
fr_status fr_exec_cuda(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                       const fr_executor_options *opt, const fr_sweep_sink *sink, fr_error *err);

/* Totals of the last fr_exec_cuda run in this process (for the benchmark
 * and the log line at the end of a run). */
typedef struct fr_cuda_run_stats {
    double wall_s;       /* from entry to return */
    double gpu_s;        /* compute stream busy time: generation, statistics, fused sweeps */
    double generate_s;   /* of which: synthetic tensors generated on the device */
    double h2d_s;        /* copy stream busy time (host -> device transfers) */
    double stage_s;      /* host time spent filling the pinned staging buffers */
    uint64_t h2d_bytes;
    uint64_t tensor_bytes; /* bytes of every tensor evaluated (as stored) */
    uint64_t elements;
    uint64_t fused_configs; /* (tensor, config) pairs evaluated by fused kernels */
    uint64_t plugin_configs; /* ... through a plugin's CUDA functions */
    uint64_t cpu_configs;   /* ... handed to the CPU executor */
    uint64_t chunked_tensors; /* tensors larger than the cap, streamed in row chunks */
    uint64_t nf4_mean_fallbacks; /* nf4-dq means recomputed sequentially (docs/gpu.md) */
} fr_cuda_run_stats;

void fr_cuda_last_run_stats(fr_cuda_run_stats *out);

/* ---- per-family launchers: the built-in descriptors' CUDA functions ---- */

#define FR_CUDA_FAMILY_LAUNCHERS(family)                                                      \
    int fr_##family##_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,      \
                                    float *w_hat, int64_t rows, int64_t cols,                 \
                                    const frontier_calib *calib, void *stream,                \
                                    frontier_call *call);                                     \
    int fr_##family##_sweep_cuda(const frontier_config *const *cfgs, size_t n_cfgs,            \
                                 const void *w, int dtype, int64_t rows, int64_t cols,        \
                                 const frontier_calib *calib, frontier_error_sums *sums,      \
                                 void *stream, frontier_call *call);

FR_CUDA_FAMILY_LAUNCHERS(int)
FR_CUDA_FAMILY_LAUNCHERS(fp8)
FR_CUDA_FAMILY_LAUNCHERS(nvfp4)
FR_CUDA_FAMILY_LAUNCHERS(mx)
FR_CUDA_FAMILY_LAUNCHERS(nf4)

/* ---- lower level, for the executor, tests and benchmarks ---- */

/* True when configuration ref of the registry has a built-in kernel. */
int fr_cuda_has_kernel(const fr_registry *reg, const fr_config_ref *ref);

/*
 * Fused sweep of n built-in configurations (any families) over the device
 * tensor w (rows x cols, enum frontier_dtype): one read per 128
 * configurations. Fills sums[n] (sq_ref included), *sq_norm (sum w^2) and
 * *nonfinite (count of NaN/Inf; the sums are meaningless when nonzero).
 * Synchronises the stream.
 */
fr_status fr_cuda_sweep(const fr_registry *reg, const fr_config_ref *const *cfgs, size_t n,
                        const void *w, int dtype, int64_t rows, int64_t cols,
                        frontier_error_sums *sums, double *sq_norm, int64_t *nonfinite,
                        void *stream, fr_error *err);

/* Quantize-dequantize of one built-in configuration into w_hat (device
 * float32, rows x cols). Enqueued on the stream, not synchronised. */
fr_status fr_cuda_quantize(const fr_registry *reg, const fr_config_ref *cfg, const void *w,
                           int dtype, float *w_hat, int64_t rows, int64_t cols, void *stream,
                           fr_error *err);

/*
 * Error sums of (w, w_hat) on the device with exactly the chunking and
 * element order of fr_error_sums_accumulate (frontier/metrics.h), so they
 * are bitwise equal to the CPU's for the same w_hat. w is of `dtype`,
 * w_hat float32, both device pointers. Synchronises the stream.
 */
fr_status fr_cuda_error_sums(const void *w, int dtype, const float *w_hat, int64_t n,
                             frontier_error_sums *sums, void *stream, fr_error *err);

/*
 * Synthetic tensor elements [first, first + n) of tensor `tensor` of a
 * --synthetic spec (core/synthetic.h), generated by cuRAND's device API
 * (curand_init(seed, tensor, 4 * i); curand4) and core/synthetic.h's FR_HD
 * transform, stored as dtype (an fr_dtype: F32, F16 or BF16) into dst (device).
 * Bitwise equal to fr_synthetic_element() on the CPU. Enqueued, not
 * synchronised.
 */
fr_status fr_cuda_synthetic(int dist, int dtype, uint64_t seed, uint64_t tensor,
                            uint64_t first, int64_t n, void *dst, void *stream, fr_error *err);

/* ---- device memory, copies and timing for C callers (tests, benchmarks) ---- */

fr_status fr_cuda_select(int device, fr_error *err);
fr_status fr_cuda_malloc(void **p, size_t bytes, fr_error *err);
void fr_cuda_free(void *p);
fr_status fr_cuda_upload(void *dst, const void *src, size_t bytes, fr_error *err);
fr_status fr_cuda_download(void *dst, const void *src, size_t bytes, fr_error *err);
/* n_words 32-bit words of dst set to bits (NaN poison before a launch). */
fr_status fr_cuda_fill32(void *dst, uint32_t bits, size_t n_words, void *stream, fr_error *err);
fr_status fr_cuda_copy_d2d(void *dst, const void *src, size_t bytes, void *stream, fr_error *err);
fr_status fr_cuda_sync(void *stream, fr_error *err);

/* CUDA-event timing of the work enqueued on a stream between start and stop. */
typedef struct fr_cuda_timer fr_cuda_timer;
fr_status fr_cuda_timer_create(fr_cuda_timer **out, void *stream, fr_error *err);
fr_status fr_cuda_timer_start(fr_cuda_timer *t, fr_error *err);
/* Records the stop event, waits for it, and gives the elapsed seconds. */
fr_status fr_cuda_timer_stop(fr_cuda_timer *t, double *seconds, fr_error *err);
void fr_cuda_timer_free(fr_cuda_timer *t);

#ifdef __cplusplus
}
#endif

#endif
