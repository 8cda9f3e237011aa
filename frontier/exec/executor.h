/*
 * The split between the sweep engine (what to measure) and an executor (where
 * it runs). The engine builds a plan of items, one per tensor, each with the
 * configurations to evaluate; an executor (the CPU one, exec_cpu.h, or the
 * CUDA one, exec_cuda.h, both here in frontier/exec/) evaluates them and
 * hands back error sums through the sink, in any order. The engine turns
 * sums into dataset rows.
 */
#ifndef FR_EXECUTOR_H
#define FR_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/plugin.h"

typedef struct fr_sweep_item {
    const fr_source *src;
    const fr_tensor *tensor;
    int64_t rows, cols;               /* matrix view (fr_tensor_matrix) */
    size_t n_configs;
    const fr_config_ref *const *configs; /* configurations still to evaluate on it */
    const frontier_calib *calib;      /* host statistics, or NULL */
    int has_group_amax;               /* group_amax is set (frontier/model/fused_scale.h) */
    float group_amax;                 /* joint amax of the tensor's fused group, handed
                                       * to the call for nvfp4-fused */
} fr_sweep_item;

typedef struct fr_sweep_outcome {
    size_t item;                  /* index into the plan */
    size_t config;                /* index into that item's configs */
    fr_status status;             /* FR_OK, or why this (tensor, config) failed */
    char error[256];              /* message when status != FR_OK */
    frontier_error_sums sums;
    double out_sq_err, out_sq_ref;   /* calibrated output error terms, NaN without calib */
    double seconds;               /* time of this configuration on this tensor */
    char device[16];              /* "cpu", "cuda:0" */
    /* numeric edge cases (frontier/exec/numeric_flags.h): FR_ROW_* bits, 0 when
     * the executor did not examine them; the largest and the smallest
     * nonzero scale quotient, for the warning lines */
    uint32_t flags;
    double scale_largest, scale_smallest;
} fr_sweep_outcome;

typedef struct fr_sweep_sink {
    void *ctx;
    /* one outcome per (item, config); called from one thread at a time */
    void (*outcome)(void *ctx, const fr_sweep_outcome *o);
    /* an item was skipped as a whole (NaN/Inf weights, unreadable dtype) */
    void (*item_skipped)(void *ctx, size_t item, fr_status status, const char *reason);
    /* an item is finished; bytes = its stored size, for progress */
    void (*item_done)(void *ctx, size_t item, uint64_t bytes);
    /* sum of w^2 of an item in double (computed once per tensor) */
    void (*item_norm)(void *ctx, size_t item, double sq_norm);
    /* nonzero when the run should stop early (SIGINT) */
    int (*cancelled)(void *ctx);
} fr_sweep_sink;

/* Totals of a CUDA executor run (the benchmark, the log line at the end
 * of a run, `frontier sweep --device-stats FILE`). */
typedef struct fr_cuda_run_stats {
    double wall_s;       /* from entry to return */
    double gpu_s;        /* compute stream busy time: generation, statistics, fused sweeps */
    double generate_s;   /* of which: synthetic tensors generated on the device */
    double h2d_s;        /* copy stream busy time (host -> device transfers) */
    double stage_s;      /* host time spent filling the pinned staging buffers */
    double numeric_s;    /* of gpu_s: the numeric flags' reduction (kernels/numeric.h) */
    double output_s;     /* of gpu_s (host clock): fused configurations' output error on a
                          * calibrated tensor, their quantize_cuda and tr(dW H dW^T) */
    double plugin_s;     /* of gpu_s (host clock): plugin and calibrated configurations,
                          * each its quantize_cuda (or sweep_cuda), sums and output term */
    double plugin_out_s; /* of plugin_s: their tr(dW H dW^T) */
    uint64_t h2d_bytes;
    uint64_t tensor_bytes; /* bytes of every tensor evaluated (as stored) */
    uint64_t elements;
    uint64_t fused_configs; /* (tensor, config) pairs evaluated by fused kernels */
    uint64_t plugin_configs; /* ... through a plugin's CUDA functions */
    uint64_t cpu_configs;   /* ... handed to the CPU executor */
    uint64_t chunked_tensors; /* tensors larger than the cap, streamed in row chunks */
    uint64_t nf4_mean_fallbacks; /* nf4-dq means recomputed sequentially (docs/gpu.md) */
} fr_cuda_run_stats;

/* How an executor runs. Every setting arrives here from the command line
 * (frontier/cli/cmd_sweep.c); nothing below reads the environment. Zero
 * sizes mean the documented defaults. */
typedef struct fr_executor_options {
    int threads;       /* CPU threads, <= 0: all */
    int device;        /* CUDA device index, -1 for CPU */
    uint64_t seed;     /* run seed (synthetic tensors, plugin RNG) */
    /* CPU: tensors whose float32 copies together stay under batch_bytes are
     * evaluated as one batch (default 64 MiB); when one float32 copy per
     * thread would exceed parallel_bytes, a tensor's configurations run one
     * after the other, each on every thread (default 1 GiB). */
    size_t cpu_batch_bytes;
    size_t cpu_parallel_bytes;
    /* CPU: bound on a tensor's working set (--max-memory, frontier/exec/blocked.h):
     * a tensor whose float32 copy and one output exceed it is evaluated in
     * blocks of whole rows, and batches and parallel jobs are kept under it;
     * 0: no bound. The CUDA executor does not read it. */
    size_t max_memory;
    /* CUDA: the size of each of the two staging/device input buffers; larger
     * tensors stream in row chunks (default 1 GiB, at most a quarter of free
     * device memory). docs/gpu.md, "Streaming". */
    size_t cuda_buffer_bytes;
    /* CUDA: where the run's totals go when not NULL */
    fr_cuda_run_stats *cuda_stats;
    /* CUDA: allow TF32 tensor cores in the output-error GEMM (out_rel_err,
     * docs/gpu.md "Output error"); 0: FP32 math, within 1e-5 of the CPU */
    int cuda_tf32;
    /* --diagonal-output-error: a tensor whose statistics have no Hessian but
     * act_mean_sq gets out_sq_err = sum_ij act_mean_sq_j dW_ij^2 (and the
     * reference term likewise) instead of NaN, by either executor.
     * docs/calibration.md */
    int diagonal_output_error;
} fr_executor_options;

/* What a tensor's output error is computed with (docs/calibration.md): the
 * trace with its Hessian, the diagonal alone (act_mean_sq, under
 * --diagonal-output-error, for statistics without a Hessian), or nothing.
 * The CPU executor computes by it and the sweep's plan records it on the
 * tensor's /tensors row, so the two cannot disagree. */
typedef enum { FR_OUT_NONE = 0, FR_OUT_HESSIAN, FR_OUT_DIAGONAL } fr_out_basis;

static inline fr_out_basis fr_out_basis_of(const frontier_calib *calib, int64_t cols,
                                           int diagonal_output_error)
{
    if (!calib || calib->cols != cols)
        return FR_OUT_NONE;
    if (calib->hessian)
        return FR_OUT_HESSIAN;
    return diagonal_output_error && calib->act_mean_sq ? FR_OUT_DIAGONAL : FR_OUT_NONE;
}

#endif
