/*
 * The sweep engine: which configurations and tensors to measure, the plan
 * handed to an executor (frontier/exec/executor.h), the rows it produces, and
 * the dataset file they are committed to (docs/dataset.md).
 *
 *   fr_sweep_create   validates options, selects configurations, checks the
 *                     output (before anything is opened or written)
 *   fr_sweep_add_source  once per model (or synthetic source)
 *   fr_sweep_execute  resume checks, plan, first commit, execution,
 *                     periodic commits, final commit
 *
 * What it selects: frontier/sweep/sweep_select.h; the units it runs, one
 * of each per sweep: the plan (frontier/sweep/sweep_plan.h), the row sink
 * (frontier/sweep/sweep_sink.h) and the committer
 * (frontier/sweep/sweep_commit.h); the table (or JSON) users see at the
 * end: frontier/cli/sweep_summary.h.
 */
#ifndef FR_SWEEP_H
#define FR_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/exec/executor.h"
#include "core/source.h"
#include "frontier/dataset/dataset.h"

/* An executor standing in for the one --device names: several CUDA devices
 * of this process (frontier/exec/shard.c) or the ranks of an MPI job
 * (frontier/sweep/sweep_mpi.c). device names it in the log, the summary and the
 * dataset's devices attribute ("cuda:0,2", "mpi 4 ranks: cuda:0 x4"). */
typedef struct fr_sweep_executor {
    const char *device;
    void *ctx;
    fr_status (*run)(void *ctx, const fr_registry *reg, const fr_sweep_item *items,
                     size_t n_items, const fr_executor_options *opt,
                     const fr_sweep_sink *sink, fr_error *err);
} fr_sweep_executor;

typedef struct fr_sweep_options {
    const char *output;          /* the dataset file (required) */
    const char *bits;            /* "2..8", "4", "2,3,4,8", "2..4,8"; NULL: any */
    const char *quantizers;      /* comma-separated names or globs over config and
                                  * quantizer names; NULL: every data-free one */
    const char *include;         /* POSIX extended regex over tensor names, or NULL */
    const char *exclude;
    int64_t min_numel;           /* tensors with fewer elements are skipped */
    const char *device;          /* "auto" (NULL), "cpu", "cuda", "cuda:N" */
    int threads;                 /* CPU threads, <= 0: all */
    uint64_t seed;               /* plugin RNG streams (synthetic sources carry their own) */
    int resume;                  /* continue an existing output */
    int quiet;                   /* no progress bar, no informational messages */
    const char *command_line;    /* recorded in the dataset */
    volatile sig_atomic_t *stop; /* becomes nonzero to stop early (SIGINT), or NULL */
    double commit_interval;      /* seconds between commits, used as given; <= 0:
                                  * 2 s stretched to 10x the time a commit takes */
    /* executor settings (frontier/exec/executor.h): 0 means the default */
    size_t cpu_batch_bytes;
    size_t cpu_parallel_bytes;
    size_t max_memory;           /* --max-memory: CPU row blocks past it
                                  * (frontier/exec/blocked.h) */
    size_t cuda_buffer_bytes;
    fr_cuda_run_stats *cuda_stats; /* filled after a run on a CUDA device, or NULL */
    int cuda_tf32;               /* --tf32: TF32 in the GPU output-error GEMM; recorded
                                  * in the devices attribute ("cuda:0 tf32") */
    const char *calib;           /* calibration statistics file (docs/calibration.md), or
                                  * NULL: out_rel_err of the tensors it covers */
    int diagonal_output_error;   /* --diagonal-output-error: statistics without a
                                  * Hessian give out_rel_err from its diagonal
                                  * (fr_executor_options) */
    const fr_sweep_executor *executor; /* NULL: the CPU or the CUDA device of --device */
    int split_experts;           /* --split-experts: also one /expert_results row per
                                  * expert of each expert stack (docs/dataset.md) */
    int fused_global_scale;      /* --fused-global-scale: also nvfp4-fused, nvfp4 with
                                  * the joint-amax global scale of the tensor's fused
                                  * group (q/k/v, gate/up), for each member of a group
                                  * of two or more (docs/quantize.md) */
} fr_sweep_options;

typedef struct fr_sweep_stats {
    size_t n_configs;        /* configurations selected */
    size_t n_tensors;        /* tensors of all sources */
    size_t n_selected;       /* tensors measured (or to be) */
    size_t n_skipped;        /* tensors skipped as a whole (1-D, non-float, NaN, ...) */
    size_t n_excluded;       /* tensors deselected by --include/--exclude */
    size_t n_items;          /* tensors with work left in this run */
    size_t n_rows_new;       /* rows measured by this run */
    size_t n_rows_resumed;   /* rows found in the output when resuming */
    size_t n_failed;         /* (tensor, configuration) pairs that failed */
    size_t n_commits;
    uint64_t bytes;          /* stored bytes of the tensors processed */
    double seconds;          /* wall time of the execution */
    char device[64];         /* "cpu (2 threads)", "cuda:0" */
} fr_sweep_stats;

typedef struct fr_sweep fr_sweep;

fr_status fr_sweep_create(const fr_registry *reg, const fr_sweep_options *opt, fr_sweep **out,
                          fr_error *err);
/* The source must outlive the sweep. */
fr_status fr_sweep_add_source(fr_sweep *sw, const fr_source *src, fr_error *err);
/* FR_OK when every (tensor, configuration) succeeded (skipped tensors
 * included); FR_E_FAIL when some configuration failed on some tensor (all
 * recorded in /skipped); FR_E_INTERRUPT when stopped (rows so far are
 * committed); other codes when nothing could run. */
fr_status fr_sweep_execute(fr_sweep *sw, fr_error *err);
const fr_dataset *fr_sweep_dataset(const fr_sweep *sw);
const fr_sweep_stats *fr_sweep_get_stats(const fr_sweep *sw);
void fr_sweep_destroy(fr_sweep *sw);

#endif
