/*
 * The split between the sweep engine (what to measure) and an executor (where
 * it runs). The engine builds a plan of items, one per tensor, each with the
 * configurations to evaluate; an executor (the CPU one in frontier/, the CUDA
 * one in kernels/) evaluates them and hands back error sums through the sink,
 * in any order. The engine turns sums into dataset rows.
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

typedef struct fr_executor_options {
    int threads;       /* CPU threads, <= 0: all */
    int device;        /* CUDA device index, -1 for CPU */
    uint64_t seed;     /* run seed (synthetic tensors, plugin RNG) */
} fr_executor_options;

/* The CPU executor (frontier/exec_cpu.c). */
fr_status fr_exec_cpu(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                      const fr_executor_options *opt, const fr_sweep_sink *sink, fr_error *err);

/* The CUDA executor (kernels/exec_cuda.cu); declared in kernels/launchers.h:
 * fr_status fr_exec_cuda(...same arguments...); int fr_cuda_device_count(void); */

#endif
