/*
 * The CUDA executor (frontier/exec/executor.h; docs/gpu.md, "Streaming"): the
 * policy of a GPU sweep (what runs where, the CPU fallback, staging,
 * statistics) over the device library's mechanisms (kernels/kcommon.cuh:
 * the statistics pre-pass, the fused kernels, device scratch).
 *
 * Each item of the plan is split into the configurations the fused kernels
 * evaluate (built-in, data-free), those a quantizer evaluates through its own
 * sweep_cuda / quantize_cuda (plugins, and built-in host families with a
 * CUDA path such as gptq), and the rest, which go to fr_exec_cpu at the end
 * (CPU-only quantizers, calibrated tensors over the staging cap).
 * Statistics without a Hessian stay on the host, where imat- and imat-ggml-
 * read them as their CPU paths do; their diagonal output term
 * (--diagonal-output-error) is computed here. A tensor with a Hessian also
 * gets its output-error terms here (docs/gpu.md, "Output error"): tr(W H W^T) once, and for every
 * configuration the family's quantize_cuda, then tr(dW H dW^T) with cuBLAS
 * (kernels/outerr.h); the error sums stay the fused sweep's.
 *
 * The GPU part is a pipeline of tasks, one per (tensor, row chunk, pass),
 * over two device input buffers and two pinned host staging buffers:
 *
 *   host:         fill pinned[b] (memcpy from the mapped file, or a float32
 *                 conversion for F8/F64/varint tensors)
 *   copy stream:  wait until task j-2 has finished with dev[b], then
 *                 pinned[b] -> dev[b]
 *   compute:      wait for the copy, then (generate synthetic data,)
 *                 statistics, fused sweep, the numeric flags' reduction
 *                 (kernels/numeric.h), results -> pinned host
 *   host:         harvest task j-1 while the GPU runs task j
 *
 * so the transfer of tensor j+1 and the host's staging of j+2 overlap the
 * sweep of tensor j. A tensor larger than the staging cap is cut into row
 * chunks (a multiple of 128 rows when a 128 x 128 tile configuration needs
 * them whole) and streamed twice: pass 1 gathers its whole-tensor statistics
 * (segment, row, tile and tensor bounds, nf4-dq scales), pass 2 evaluates.
 * Device memory is then bounded by two buffers of the cap (or of one row
 * slab, if a single slab is larger) plus the statistics (about 1/16 of the
 * largest tensor's bf16 size).
 *
 * The numeric flags of the fused and plugin rows (frontier/exec/numeric_flags.h)
 * come from the device reduction of each tensor to its group extremes and
 * counts; the rules are evaluated here on the host with the CPU's code
 * (fr_numeric_evaluate), so GPU rows carry the CPU's flags bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kcommon.cuh"
#include "kernels/numeric.h"
#include "kernels/outerr.h"

extern "C" {
#include "core/call.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/synthetic.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/numeric_flags.h"
}

#define FR_X_DEFAULT_CAP ((size_t)1 << 30)
/* bytes per parallel memcpy chunk when staging */
#define FR_X_COPY_GRAIN ((int64_t)8 << 20)

static double fr_x_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Where an item's bytes come from. */
enum fr_x_source { FR_X_RAW = 0, FR_X_CONVERT, FR_X_SYNTHETIC };

typedef struct fr_x_item {
    const fr_sweep_item *it;
    /* configurations by path; the indices are into it->configs */
    size_t n_fused, n_plugin, n_cpu;
    fr_kspec *specs;
    size_t *fused_idx, *plugin_idx, *cpu_idx;
    const fr_config_ref **cpu_cfgs;
    fr_kneeds needs;
    /* staging */
    int source;
    int dev_dtype;          /* enum frontier_dtype on the device */
    size_t esize;           /* device bytes per element */
    const uint8_t *raw;     /* FR_X_RAW: the mapped bytes */
    float *converted;       /* FR_X_CONVERT with several chunks: host float32 copy */
    fr_synthetic_params syn;
    int64_t chunk_rows, n_chunks;
    int two_pass;
    /* results */
    fr_kpart *acc;          /* n_fused + 1, summed over chunks in order */
    frontier_error_sums *plugin_sums;
    fr_status *plugin_status;
    char (*plugin_error)[256];
    double *plugin_seconds; /* per plugin configuration: each ends in a host read */
    double gpu_ms;
    int failed_stage;       /* staging failed: skipped with stage_reason */
    fr_status stage_status;
    char stage_reason[256];
    int norm_sent, done;
    /* output error on the GPU (a Hessian of cols x cols and cuBLAS) */
    int calib_gpu;
    double *out_fused, *out_plugin; /* tr(dW H dW^T) per configuration */
    double out_ref;                 /* tr(W H W^T) */
    int h_ready;                    /* X->h_dev holds this tensor's H (written on X->compute) */
    int out_diag;                   /* the output term is the diagonal's: X->h_dev holds
                                       act_mean_sq (--diagonal-output-error) */
    uint64_t h_serial;              /* that upload's number (frontier_call.hessian_serial) */
    fr_status out_status;           /* the terms could not be computed: the rows fail */
    char out_error[256];
    /* numeric flags (frontier/exec/numeric_flags.h) of the fused and plugin
     * configurations, from the device reduction (kernels/numeric.h); the
     * CPU part's come from fr_exec_cpu */
    fr_scale_rule *num_rules;       /* per configuration index */
    const fr_scale_rule **num_refs; /* of the n_num configurations measured here */
    size_t *num_cfg;                /* their configuration indices */
    size_t n_num;
    fr_group_extremes *num_shapes;
    size_t *num_shape_of, n_num_shapes;
    int64_t *num_tr, *num_tc;
    int num_ok;                     /* the reduction runs: the flags below are set */
    uint32_t *num_flags;            /* per configuration index, 0: not examined */
    fr_scale_detail *num_detail;
} fr_x_item;

typedef struct fr_x_task {
    size_t item;
    int64_t chunk;
    int pass;               /* 1: statistics only, 2: evaluation (single chunk: both) */
} fr_x_task;

typedef struct fr_x {
    const fr_registry *reg;
    const fr_sweep_item *items;
    size_t n_items;
    const fr_executor_options *opt;
    const fr_sweep_sink *sink;
    int device;
    char device_name[16];
    fr_pool *pool;
    fr_x_item *x;
    fr_x_task *tasks;
    size_t n_tasks;
    size_t cap;             /* bytes per staging / device input buffer */
    cudaStream_t compute, copy;
    void *dev[2];
    void *pinned[2];
    size_t buf_bytes, pinned_bytes;
    fr_kpart *results_host[2]; /* pinned, FR_K_MAX_SPECS + 1 per batch, all batches */
    size_t results_cap;
    cudaEvent_t h2d_done[2], compute_done[2];
    cudaEvent_t x_start[2], x_end[2], c_start[2], c_gen[2], c_end[2];
    cudaEvent_t n_start[2], n_end[2];
    int has_copy[2], has_gen[2], has_num[2];
    /* the numeric-flag reduction and its results on the host (pinned) */
    fr_cuda_numeric *numeric;
    void *num_host[2];
    size_t num_bytes;
    fr_kwork work;
    fr_cuda_run_stats stats;
    /* the CPU part */
    fr_sweep_item *cpu_items;
    size_t *cpu_map;
    size_t n_cpu_items;
    /* output error: cuBLAS, the item's H and a w^ buffer on the device */
    fr_cuda_blas *blas;
    float *h_dev, *w_hat_dev;
    size_t h_cap, w_hat_cap;
} fr_x;

/* ---- sizes ---- */

static int fr_x_device_dtype(fr_dtype dt, int *dev, size_t *esize)
{
    switch (dt) {
    case FR_DTYPE_F32: *dev = FRONTIER_DTYPE_F32; *esize = 4; return 1;
    case FR_DTYPE_F16: *dev = FRONTIER_DTYPE_F16; *esize = 2; return 1;
    case FR_DTYPE_BF16: *dev = FRONTIER_DTYPE_BF16; *esize = 2; return 1;
    default: return 0;
    }
}

/* ---- the plan ---- */

/* Whether a configuration of q runs through q's own CUDA functions on this
 * tensor: with an output term on the device (calib_gpu) only through
 * quantize_cuda (the term needs w^); with statistics but no output term
 * (host_stats) a quantizer needing activation statistics too, reading them
 * on the host as its CPU path does (imat-, imat-ggml-: the same weights,
 * bit for bit); one needing a Hessian only where the device has it. */
static int fr_x_plugin_gpu(const frontier_quantizer *q, int calib_gpu, int host_stats)
{
    if (!fr_quantizer_has_cuda(q))
        return 0;
    if (calib_gpu)
        return FR_QUANTIZER_HAS(q, quantize_cuda) && q->quantize_cuda != NULL;
    if (q->flags & FRONTIER_Q_NEEDS_HESSIAN)
        return 0;
    return !(q->flags & FRONTIER_Q_NEEDS_ACT_STATS) || host_stats;
}

static fr_status fr_x_classify(fr_x *X, fr_error *err)
{
    for (size_t i = 0; i < X->n_items; i++) {
        const fr_sweep_item *it = &X->items[i];
        fr_x_item *xi = &X->x[i];
        size_t n = it->n_configs;
        xi->it = it;
        xi->specs = (fr_kspec *)calloc(n + 1, sizeof *xi->specs);
        xi->fused_idx = (size_t *)calloc(n + 1, sizeof(size_t));
        xi->plugin_idx = (size_t *)calloc(n + 1, sizeof(size_t));
        xi->cpu_idx = (size_t *)calloc(n + 1, sizeof(size_t));
        xi->cpu_cfgs = (const fr_config_ref **)calloc(n + 1, sizeof *xi->cpu_cfgs);
        xi->plugin_sums = (frontier_error_sums *)calloc(n + 1, sizeof *xi->plugin_sums);
        xi->plugin_status = (fr_status *)calloc(n + 1, sizeof *xi->plugin_status);
        xi->plugin_error = (char(*)[256])calloc(n + 1, 256);
        xi->out_fused = (double *)calloc(n + 1, sizeof(double));
        xi->out_plugin = (double *)calloc(n + 1, sizeof(double));
        xi->plugin_seconds = (double *)calloc(n + 1, sizeof(double));
        if (!xi->specs || !xi->fused_idx || !xi->plugin_idx || !xi->cpu_idx || !xi->cpu_cfgs ||
            !xi->plugin_sums || !xi->plugin_status || !xi->plugin_error || !xi->out_fused ||
            !xi->out_plugin || !xi->plugin_seconds)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate the cuda executor's plan");
        const fr_tensor *t = it->tensor;
        /* with a Hessian the output error runs on the GPU too (cuBLAS; OpenBLAS
         * in the emulation), and so does the diagonal term of statistics
         * without one (--diagonal-output-error); without an output term (an
         * importance matrix, --diag-only) the statistics stay on the host,
         * read there by the quantizers that need them */
        const fr_out_basis basis =
            fr_out_basis_of(it->calib, it->cols, X->opt->diagonal_output_error);
        xi->calib_gpu = basis != FR_OUT_NONE && fr_cuda_blas_available();
        xi->out_diag = basis == FR_OUT_DIAGONAL;
        const int host_stats = it->calib && basis == FR_OUT_NONE && it->calib->cols == it->cols;
        int gpu_ok = (it->calib == NULL || xi->calib_gpu || host_stats) && it->rows > 0 &&
                     it->cols > 0;
        if (gpu_ok) {
            if (t->encoding == FR_ENC_SYNTHETIC) {
                fr_error e;
                if (fr_synthetic_params_of(it->src, t, &xi->syn, &e) != FR_OK ||
                    !fr_x_device_dtype((fr_dtype)xi->syn.dtype, &xi->dev_dtype, &xi->esize))
                    gpu_ok = 0;
                xi->source = FR_X_SYNTHETIC;
            } else if (t->encoding == FR_ENC_RAW &&
                       fr_x_device_dtype(t->dtype, &xi->dev_dtype, &xi->esize)) {
                xi->source = FR_X_RAW;
            } else if (fr_dtype_is_float(t->dtype) || fr_tensor_is_block_quantized(t)) {
                /* F8, F64, varint-encoded, a quantized source's tensor (GGUF
                 * blocks, compressed-tensors members): decoded to float32 on
                 * the host (docs/quantized-sources.md) */
                xi->source = FR_X_CONVERT;
                xi->dev_dtype = FRONTIER_DTYPE_F32;
                xi->esize = 4;
            } else {
                gpu_ok = 0;
            }
        }
        for (size_t c = 0; c < n; c++) {
            const fr_config_ref *ref = it->configs[c];
            if (gpu_ok && fr_kspec_of_ref(X->reg, ref, &xi->specs[xi->n_fused])) {
                xi->fused_idx[xi->n_fused++] = c;
            } else if (gpu_ok &&
                       fr_x_plugin_gpu(fr_config_quantizer(X->reg, ref), xi->calib_gpu,
                                       host_stats) &&
                       /* --isolate-plugins: plugins run their CPU path, in a child */
                       !(X->reg->isolate_timeout_s > 0 &&
                         strcmp(fr_config_origin(X->reg, ref), FR_ORIGIN_BUILTIN) != 0)) {
                xi->plugin_idx[xi->n_plugin++] = c;
            } else {
                xi->cpu_cfgs[xi->n_cpu] = ref;
                xi->cpu_idx[xi->n_cpu++] = c;
            }
        }
        xi->needs = fr_kneeds_of(xi->specs, xi->n_fused);
    }
    return FR_OK;
}

/* Chunking of one item under the cap; plugins need the tensor whole. */
static void fr_x_chunk(fr_x *X, fr_x_item *xi)
{
    const fr_sweep_item *it = xi->it;
    size_t row_bytes = (size_t)it->cols * xi->esize;
    size_t bytes = (size_t)it->rows * row_bytes;
    xi->chunk_rows = it->rows;
    xi->n_chunks = 1;
    if (bytes <= X->cap)
        return;
    int64_t slab = xi->needs.tiles ? 128 : 1;
    int64_t rows = (int64_t)(X->cap / row_bytes) / slab * slab;
    if (rows < slab)
        rows = slab; /* one slab over the cap: the buffers grow to it */
    if (rows >= it->rows)
        return;
    xi->chunk_rows = rows;
    xi->n_chunks = it->rows / rows + (it->rows % rows != 0);
    xi->two_pass = xi->needs.segs;
    /* a plugin's CUDA function needs the whole tensor on the device */
    for (size_t k = 0; k < xi->n_plugin; k++) {
        xi->cpu_cfgs[xi->n_cpu] = it->configs[xi->plugin_idx[k]];
        xi->cpu_idx[xi->n_cpu++] = xi->plugin_idx[k];
    }
    xi->n_plugin = 0;
    /* quantize_cuda of every configuration for the output error needs the
     * whole tensor too */
    if (xi->calib_gpu) {
        for (size_t k = 0; k < xi->n_fused; k++) {
            xi->cpu_cfgs[xi->n_cpu] = it->configs[xi->fused_idx[k]];
            xi->cpu_idx[xi->n_cpu++] = xi->fused_idx[k];
        }
        xi->n_fused = 0;
        xi->calib_gpu = 0;
        xi->n_chunks = 1;
        xi->two_pass = 0;
    }
}

/* The scale rules of the configurations measured here (fused, then
 * plugin) and their distinct group shapes (frontier/exec/numeric_flags.h). */
static fr_status fr_x_numeric_plan(fr_x_item *xi)
{
    const fr_sweep_item *it = xi->it;
    size_t n = it->n_configs;
    xi->num_rules = (fr_scale_rule *)calloc(n + 1, sizeof *xi->num_rules);
    xi->num_refs = (const fr_scale_rule **)calloc(n + 1, sizeof *xi->num_refs);
    xi->num_cfg = (size_t *)calloc(n + 1, sizeof *xi->num_cfg);
    xi->num_shapes = (fr_group_extremes *)calloc(n + 1, sizeof *xi->num_shapes);
    xi->num_shape_of = (size_t *)calloc(n + 1, sizeof *xi->num_shape_of);
    xi->num_tr = (int64_t *)calloc(n + 1, sizeof *xi->num_tr);
    xi->num_tc = (int64_t *)calloc(n + 1, sizeof *xi->num_tc);
    xi->num_flags = (uint32_t *)calloc(n + 1, sizeof *xi->num_flags);
    xi->num_detail = (fr_scale_detail *)calloc(n + 1, sizeof *xi->num_detail);
    if (!xi->num_rules || !xi->num_refs || !xi->num_cfg || !xi->num_shapes ||
        !xi->num_shape_of || !xi->num_tr || !xi->num_tc || !xi->num_flags || !xi->num_detail)
        return FR_E_NOMEM;
    xi->n_num = 0;
    for (size_t k = 0; k < xi->n_fused + xi->n_plugin; k++) {
        size_t c = k < xi->n_fused ? xi->fused_idx[k] : xi->plugin_idx[k - xi->n_fused];
        fr_scale_rule_parse(it->configs[c]->cfg->params_json, &xi->num_rules[c]);
        xi->num_refs[xi->n_num] = &xi->num_rules[c];
        xi->num_cfg[xi->n_num++] = c;
    }
    xi->n_num_shapes = fr_numeric_shapes(xi->num_refs, xi->n_num, it->rows, it->cols,
                                         xi->num_shapes, xi->num_shape_of);
    for (size_t k = 0; k < xi->n_num_shapes; k++) {
        xi->num_tr[k] = xi->num_shapes[k].tile_rows;
        xi->num_tc[k] = xi->num_shapes[k].tile_cols;
    }
    xi->num_ok = 1;
    return FR_OK;
}

/* The flags from the reduced values the device left in host memory. */
static void fr_x_numeric_flags(fr_x_item *xi, const void *host)
{
    fr_cuda_numeric_head head;
    memcpy(&head, host, sizeof head);
    const uint32_t *words = (const uint32_t *)((const uint8_t *)host + sizeof head);
    for (size_t k = 0; k < xi->n_num_shapes; k++) {
        fr_group_extremes *e = &xi->num_shapes[k];
        memcpy(&e->max_amax, &words[4 * k], sizeof(float));
        memcpy(&e->min_amax, &words[4 * k + 1], sizeof(float));
        memcpy(&e->max_range, &words[4 * k + 2], sizeof(float));
        memcpy(&e->min_range, &words[4 * k + 3], sizeof(float));
    }
    fr_numeric_totals t;
    t.n_nonzero = (int64_t)head.n_nonzero;
    t.n_subnormal = (int64_t)head.n_subnormal;
    t.n_neg_zero = (int64_t)head.n_neg_zero;
    t.max_mag = head.max_mag;
    uint32_t *flags = (uint32_t *)calloc(xi->n_num + 1, sizeof *flags);
    fr_scale_detail *detail = (fr_scale_detail *)calloc(xi->n_num + 1, sizeof *detail);
    if (!flags || !detail) {
        free(flags);
        free(detail);
        xi->num_ok = 0; /* not examined, as the CPU leaves a tensor without memory */
        return;
    }
    fr_tensor_facts facts;
    fr_numeric_evaluate(xi->num_refs, xi->n_num, xi->num_shapes, xi->num_shape_of, &t, flags,
                        detail, &facts);
    for (size_t k = 0; k < xi->n_num; k++) {
        xi->num_flags[xi->num_cfg[k]] = flags[k];
        xi->num_detail[xi->num_cfg[k]] = detail[k];
    }
    free(flags);
    free(detail);
}

static fr_status fr_x_build_tasks(fr_x *X, fr_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < X->n_items; i++) {
        fr_x_item *xi = &X->x[i];
        if (xi->n_fused + xi->n_plugin == 0)
            continue;
        fr_x_chunk(X, xi);
        if (xi->n_fused + xi->n_plugin == 0)
            continue; /* a calibrated tensor over the cap: all on the cpu */
        n += (size_t)xi->n_chunks * (xi->two_pass ? 2 : 1);
    }
    X->tasks = (fr_x_task *)calloc(n ? n : 1, sizeof *X->tasks);
    if (!X->tasks)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate %zu cuda tasks", n);
    for (size_t i = 0; i < X->n_items; i++) {
        fr_x_item *xi = &X->x[i];
        if (xi->n_fused + xi->n_plugin == 0)
            continue;
        xi->acc = (fr_kpart *)calloc(xi->n_fused + 1, sizeof *xi->acc);
        if (!xi->acc)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate error sums");
        if (fr_x_numeric_plan(xi) != FR_OK)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate the numeric flags' plan");
        if (FR_CUDA_NUMERIC_BYTES(xi->n_num_shapes) > X->num_bytes)
            X->num_bytes = FR_CUDA_NUMERIC_BYTES(xi->n_num_shapes);
        xi->acc[xi->n_fused].max_abs = -INFINITY; /* -(first non-finite index) */
        for (int pass = xi->two_pass ? 1 : 2; pass <= 2; pass++)
            for (int64_t c = 0; c < xi->n_chunks; c++)
                X->tasks[X->n_tasks++] = fr_x_task{i, c, pass};
        size_t chunk_bytes = (size_t)xi->chunk_rows * (size_t)xi->it->cols * xi->esize;
        if (chunk_bytes > X->buf_bytes)
            X->buf_bytes = chunk_bytes;
        if (xi->source != FR_X_SYNTHETIC && chunk_bytes > X->pinned_bytes)
            X->pinned_bytes = chunk_bytes;
        size_t batches = xi->n_fused / FR_K_MAX_SPECS + 1;
        if (batches * (FR_K_MAX_SPECS + 1) > X->results_cap)
            X->results_cap = batches * (FR_K_MAX_SPECS + 1);
    }
    return FR_OK;
}

/* ---- CUDA resources ---- */

static fr_status fr_x_open(fr_x *X, fr_error *err)
{
    fr_status st = FR_OK;
    size_t free_b = 0, total_b = 0;
    FR_CU(cudaSetDevice(X->device));
    FR_CU(cudaStreamCreateWithFlags(&X->compute, cudaStreamNonBlocking));
    FR_CU(cudaStreamCreateWithFlags(&X->copy, cudaStreamNonBlocking));
    for (int b = 0; b < 2; b++) {
        FR_CU(cudaEventCreateWithFlags(&X->h2d_done[b], cudaEventDisableTiming));
        FR_CU(cudaEventCreateWithFlags(&X->compute_done[b], cudaEventDisableTiming));
        FR_CU(cudaEventCreate(&X->x_start[b]));
        FR_CU(cudaEventCreate(&X->x_end[b]));
        FR_CU(cudaEventCreate(&X->c_start[b]));
        FR_CU(cudaEventCreate(&X->c_gen[b]));
        FR_CU(cudaEventCreate(&X->c_end[b]));
        FR_CU(cudaEventCreate(&X->n_start[b]));
        FR_CU(cudaEventCreate(&X->n_end[b]));
        /* recorded once so the first waits on them return at once */
        FR_CU(cudaEventRecord(X->h2d_done[b], X->copy));
        FR_CU(cudaEventRecord(X->compute_done[b], X->compute));
    }
    FR_CU(cudaMemGetInfo(&free_b, &total_b));
    fr_kwork_init(&X->work, X->compute);
    FR_TRY(fr_cuda_numeric_create((void *)X->compute, &X->numeric, err));
    /* the cap may not take more than a quarter of free memory per buffer */
    if (X->cap > free_b / 4 && free_b / 4 >= ((size_t)64 << 20))
        X->cap = free_b / 4;
cleanup:
    return st;
}

static fr_status fr_x_alloc_buffers(fr_x *X, fr_error *err)
{
    fr_status st = FR_OK;
    for (int b = 0; b < 2; b++) {
        if (X->buf_bytes)
            FR_CU(cudaMalloc(&X->dev[b], X->buf_bytes));
        if (X->pinned_bytes)
            FR_CU(cudaHostAlloc(&X->pinned[b], X->pinned_bytes, cudaHostAllocDefault));
        FR_CU(cudaHostAlloc((void **)&X->results_host[b],
                            (X->results_cap ? X->results_cap : 1) * sizeof(fr_kpart),
                            cudaHostAllocDefault));
        if (X->num_bytes)
            FR_CU(cudaHostAlloc(&X->num_host[b], X->num_bytes, cudaHostAllocDefault));
    }
cleanup:
    return st;
}

static void fr_x_close(fr_x *X)
{
    if (X->compute) {
        cudaStreamSynchronize(X->compute);
        fr_cuda_blas_destroy(X->blas);
        X->blas = NULL;
        cudaFree(X->h_dev);
        cudaFree(X->w_hat_dev);
        fr_cuda_release_kept();
        fr_kwork_free(&X->work);
        fr_cuda_numeric_destroy(X->numeric);
        X->numeric = NULL;
        cudaStreamSynchronize(X->compute);
    }
    if (X->copy)
        cudaStreamSynchronize(X->copy);
    for (int b = 0; b < 2; b++) {
        if (X->dev[b])
            cudaFree(X->dev[b]);
        if (X->pinned[b])
            cudaFreeHost(X->pinned[b]);
        if (X->results_host[b])
            cudaFreeHost(X->results_host[b]);
        if (X->num_host[b])
            cudaFreeHost(X->num_host[b]);
        cudaEvent_t *evs[] = {&X->h2d_done[b], &X->compute_done[b], &X->x_start[b], &X->x_end[b],
                              &X->c_start[b], &X->c_gen[b], &X->c_end[b], &X->n_start[b],
                              &X->n_end[b]};
        for (size_t k = 0; k < sizeof evs / sizeof evs[0]; k++)
            if (*evs[k])
                cudaEventDestroy(*evs[k]);
    }
    if (X->compute)
        cudaStreamDestroy(X->compute);
    if (X->copy)
        cudaStreamDestroy(X->copy);
}

/* ---- staging ---- */

typedef struct fr_x_copy_job {
    uint8_t *dst;
    const uint8_t *src;
} fr_x_copy_job;

static void fr_x_copy_range(void *arg, int64_t begin, int64_t end)
{
    fr_x_copy_job *job = (fr_x_copy_job *)arg;
    memcpy(job->dst + begin, job->src + begin, (size_t)(end - begin));
}

/* Fills pinned[b] with the chunk (host side). */
static fr_status fr_x_stage_host(fr_x *X, fr_x_item *xi, const fr_x_task *t, int b,
                                 size_t bytes, fr_error *err)
{
    const fr_sweep_item *it = xi->it;
    const int64_t row0 = t->chunk * xi->chunk_rows;
    if (xi->source == FR_X_CONVERT) {
        if (xi->n_chunks == 1)
            return fr_tensor_load_f32(it->src, it->tensor, (float *)X->pinned[b], err);
        if (!xi->converted) {
            size_t n = (size_t)(it->rows * it->cols);
            xi->converted = (float *)malloc(n * sizeof(float));
            if (!xi->converted)
                return fr_fail(err, FR_E_NOMEM, "cannot allocate %zu bytes for '%s' in float32",
                               n * sizeof(float), it->tensor->name);
            fr_status st = fr_tensor_load_f32(it->src, it->tensor, xi->converted, err);
            if (st != FR_OK)
                return st;
        }
        fr_x_copy_job job = {(uint8_t *)X->pinned[b],
                             (const uint8_t *)(xi->converted + row0 * it->cols)};
        fr_parallel_for(X->pool, (int64_t)bytes, FR_X_COPY_GRAIN, fr_x_copy_range, &job);
        return FR_OK;
    }
    if (!xi->raw) {
        xi->raw = (const uint8_t *)fr_tensor_raw(it->src, it->tensor);
        if (!xi->raw)
            return fr_fail(err, FR_E_IO, "cannot map the data of tensor '%s'", it->tensor->name);
    }
    fr_x_copy_job job = {(uint8_t *)X->pinned[b], xi->raw + (size_t)row0 * it->cols * xi->esize};
    fr_parallel_for(X->pool, (int64_t)bytes, FR_X_COPY_GRAIN, fr_x_copy_range, &job);
    return FR_OK;
}

/* The item's last use of its host data. */
static void fr_x_release_host(fr_x_item *xi)
{
    free(xi->converted);
    xi->converted = NULL;
    if (xi->source == FR_X_RAW && xi->raw)
        fr_tensor_release(xi->it->src, xi->it->tensor);
    xi->raw = NULL;
}

/* The item's output term of w - w_hat (w_hat NULL: of w) with what X->h_dev
 * holds for it: tr(D H D^T), or the diagonal's sum (--diagonal-output-error). */
static fr_status fr_x_out_term(fr_x *X, const fr_x_item *xi, const void *dev, const float *w_hat,
                               double *out, fr_error *err)
{
    const fr_sweep_item *it = xi->it;
    return xi->out_diag ? fr_cuda_output_term_diag(X->blas, dev, xi->dev_dtype, w_hat, it->rows,
                                                   it->cols, X->h_dev, out, err)
                        : fr_cuda_output_term(X->blas, dev, xi->dev_dtype, w_hat, it->rows,
                                              it->cols, X->h_dev, out, err);
}

/* ---- plugins with their own CUDA functions (whole tensor on the device) ---- */

/* Each plugin configuration through the registry's checked GPU calls:
 * sweep_cuda when the plugin has it, else quantize_cuda into a device
 * buffer and the host's own error sums (core/error_sums.h on the device). */
static void fr_x_run_plugins(fr_x *X, fr_x_item *xi, const void *dev)
{
    const fr_sweep_item *it = xi->it;
    float *w_hat = NULL;
    const size_t n = (size_t)(it->rows * it->cols);
    for (size_t k = 0; k < xi->n_plugin; k++) {
        const fr_config_ref *ref = it->configs[xi->plugin_idx[k]];
        const frontier_quantizer *q = fr_config_quantizer(X->reg, ref);
        frontier_call call;
        fr_error perr;
        fr_error_clear(&perr);
        fr_call_init(&call, X->pool, X->opt->seed, it->tensor->name, ref->cfg->name);
        /* the built-in families read H where the output terms have it; a
         * plugin's functions get the host statistics as the ABI says */
        if (xi->calib_gpu && xi->h_ready) {
            call.hessian_device = X->h_dev;
            call.hessian_serial = xi->h_serial;
        }
        fr_status pst;
        const double t0 = fr_x_now();
        /* the output error needs w^: quantize_cuda on a calibrated tensor */
        if (!xi->calib_gpu && FR_QUANTIZER_HAS(q, sweep_cuda) && q->sweep_cuda) {
            pst = fr_quantizer_sweep_cuda(X->reg, ref, dev, xi->dev_dtype, it->rows, it->cols,
                                          it->calib, it->tensor->name, (void *)X->compute, &call,
                                          &xi->plugin_sums[k], &perr);
        } else if (!w_hat && cudaMalloc((void **)&w_hat, n * sizeof(float)) != cudaSuccess) {
            cudaGetLastError();
            w_hat = NULL;
            pst = fr_fail(&perr, FR_E_NOMEM, "config '%s' on tensor '%s': cannot allocate %zu "
                          "device bytes for quantize_cuda", ref->cfg->name, it->tensor->name,
                          n * sizeof(float));
        } else {
            pst = fr_quantizer_quantize_cuda(X->reg, ref, dev, xi->dev_dtype, w_hat, it->rows,
                                             it->cols, it->calib, it->tensor->name,
                                             (void *)X->compute, &call, &perr);
            if (pst == FR_OK)
                pst = fr_cuda_error_sums(dev, xi->dev_dtype, w_hat, (int64_t)n,
                                         &xi->plugin_sums[k], (void *)X->compute, &perr);
            if (pst == FR_OK && !(isfinite(xi->plugin_sums[k].sq_hat) &&
                                  isfinite(xi->plugin_sums[k].max_abs_err)))
                pst = fr_fail(&perr, FR_E_PLUGIN,
                              "config '%s' on tensor '%s': quantize_cuda output is not finite "
                              "(quantizer '%s' from '%s')",
                              ref->cfg->name, it->tensor->name, q->name,
                              fr_config_origin(X->reg, ref));
            if (pst == FR_OK && xi->calib_gpu) {
                if (xi->out_status != FR_OK) {
                    pst = xi->out_status;
                    snprintf(perr.msg, sizeof perr.msg, "%s", xi->out_error);
                } else {
                    const double o0 = fr_x_now();
                    pst = fr_x_out_term(X, xi, dev, w_hat, &xi->out_plugin[k], &perr);
                    X->stats.plugin_out_s += fr_x_now() - o0;
                    if (pst != FR_OK)
                        fr_error_prefix(&perr, "output error: ");
                }
            }
        }
        /* the error sums and the output term end in host reads; a failed
         * call may leave work queued */
        cudaStreamSynchronize(X->compute);
        xi->plugin_seconds[k] = fr_x_now() - t0;
        X->stats.plugin_s += xi->plugin_seconds[k];
        xi->plugin_status[k] = pst;
        if (pst != FR_OK)
            snprintf(xi->plugin_error[k], 256, "%.250s", perr.msg);
        fr_call_release(&call);
    }
    if (w_hat)
        cudaFree(w_hat);
}

/* ---- the output error of a calibrated tensor (whole on the device) ---- */

/* Grows a device buffer to at least `bytes`. */
static fr_status fr_x_grow(void **p, size_t *cap, size_t bytes, fr_error *err)
{
    fr_status st = FR_OK;
    if (bytes <= *cap)
        return FR_OK;
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    FR_CU(cudaMalloc(p, bytes));
    *cap = bytes;
cleanup:
    return st;
}

/* Numbers every H upload of the process (frontier_call.hessian_serial). */
static uint64_t fr_x_h_uploads;

/* H to the device, tr(W H W^T), then for each fused configuration its w^
 * (the family's quantize_cuda through the registry) and tr(dW H dW^T). The
 * error sums stay the fused sweep's. A failure here fails the item's rows
 * (out_status), as the CPU executor fails a row whose output term fails. */
static void fr_x_run_outputs(fr_x *X, fr_x_item *xi, const void *dev)
{
    const fr_sweep_item *it = xi->it;
    fr_error perr;
    fr_error *err = &perr;
    fr_status st = FR_OK;
    const size_t n = (size_t)(it->rows * it->cols);
    const size_t hbytes =
        (size_t)(xi->out_diag ? it->cols : it->cols * it->cols) * sizeof(float);
    const double t0 = fr_x_now();
    fr_error_clear(&perr);
    xi->out_status = FR_OK;
    if (!X->blas)
        FR_TRY(fr_cuda_blas_create((void *)X->compute, X->opt->cuda_tf32, &X->blas, err));
    FR_TRY(fr_x_grow((void **)&X->h_dev, &X->h_cap, hbytes, err));
    FR_TRY(fr_x_grow((void **)&X->w_hat_dev, &X->w_hat_cap, n * sizeof(float), err));
    xi->h_ready = 0;
    FR_CU(cudaMemcpyAsync(X->h_dev, xi->out_diag ? it->calib->act_mean_sq : it->calib->hessian,
                          hbytes, cudaMemcpyHostToDevice, X->compute));
    if (!xi->out_diag) { /* only a Hessian is one for the quantizers */
        xi->h_ready = 1;
        xi->h_serial = __atomic_add_fetch(&fr_x_h_uploads, 1, __ATOMIC_RELAXED);
    }
    FR_TRY(fr_x_out_term(X, xi, dev, NULL, &xi->out_ref, err));
    for (size_t k = 0; k < xi->n_fused; k++) {
        const fr_config_ref *ref = it->configs[xi->fused_idx[k]];
        frontier_call call;
        fr_call_init(&call, X->pool, X->opt->seed, it->tensor->name, ref->cfg->name);
        st = fr_quantizer_quantize_cuda(X->reg, ref, dev, xi->dev_dtype, X->w_hat_dev, it->rows,
                                        it->cols, it->calib, it->tensor->name,
                                        (void *)X->compute, &call, err);
        fr_call_release(&call);
        if (st != FR_OK)
            goto cleanup;
        FR_TRY(fr_x_out_term(X, xi, dev, X->w_hat_dev, &xi->out_fused[k], err));
    }
cleanup:
    if (st != FR_OK) {
        xi->out_status = st;
        snprintf(xi->out_error, sizeof xi->out_error, "output error of tensor '%.100s': %.120s",
                 it->tensor->name, perr.msg);
    }
    X->stats.output_s += fr_x_now() - t0;
}

/* ---- one task ---- */

static fr_status fr_x_enqueue(fr_x *X, size_t j, fr_error *err)
{
    fr_status st = FR_OK;
    const fr_x_task *t = &X->tasks[j];
    fr_x_item *xi = &X->x[t->item];
    const fr_sweep_item *it = xi->it;
    const int b = (int)(j & 1);
    const int64_t row0 = t->chunk * xi->chunk_rows;
    const int64_t rows = it->rows - row0 < xi->chunk_rows ? it->rows - row0 : xi->chunk_rows;
    const size_t bytes = (size_t)rows * (size_t)it->cols * xi->esize;
    const int first_task = t->chunk == 0 && (t->pass == 1 || !xi->two_pass);
    const int last_pass1 = t->chunk == xi->n_chunks - 1 && (t->pass == 1 || !xi->two_pass);
    fr_kview view = {X->dev[b], xi->dev_dtype, it->rows, it->cols, row0, rows};
    X->has_copy[b] = X->has_gen[b] = X->has_num[b] = 0;

    /* host -> device */
    if (xi->source != FR_X_SYNTHETIC && !xi->failed_stage) {
        double h0 = fr_x_now();
        FR_CU(cudaEventSynchronize(X->h2d_done[b])); /* pinned[b] is free again */
        fr_error serr;
        fr_error_clear(&serr);
        fr_status sst = fr_x_stage_host(X, xi, t, b, bytes, &serr);
        X->stats.stage_s += fr_x_now() - h0;
        if (sst == FR_E_NOMEM || sst == FR_E_IO || sst == FR_E_FORMAT || sst == FR_E_USAGE ||
            sst == FR_E_FAIL) {
            /* unreadable tensor: skipped like the CPU executor skips it */
            xi->failed_stage = 1;
            xi->stage_status = sst;
            snprintf(xi->stage_reason, sizeof xi->stage_reason, "%.250s", serr.msg);
        } else if (sst != FR_OK) {
            st = sst;
            *err = serr;
            goto cleanup;
        }
        if (!xi->failed_stage) {
            FR_CU(cudaStreamWaitEvent(X->copy, X->compute_done[b], 0)); /* dev[b] is free */
            FR_CU(cudaEventRecord(X->x_start[b], X->copy));
            FR_CU(cudaMemcpyAsync(X->dev[b], X->pinned[b], bytes, cudaMemcpyHostToDevice, X->copy));
            FR_CU(cudaEventRecord(X->x_end[b], X->copy));
            X->has_copy[b] = 1;
            X->stats.h2d_bytes += bytes;
        }
        FR_CU(cudaEventRecord(X->h2d_done[b], X->copy));
        if (t->pass == 2 && t->chunk == xi->n_chunks - 1)
            fr_x_release_host(xi);
    }
    FR_CU(cudaStreamWaitEvent(X->compute, X->h2d_done[b], 0));
    FR_CU(cudaEventRecord(X->c_start[b], X->compute));
    if (xi->failed_stage)
        goto done;
    if (xi->source == FR_X_SYNTHETIC) {
        FR_TRY(fr_cuda_synthetic(xi->syn.dist, xi->syn.dtype, xi->syn.seed, xi->syn.tensor,
                                 (uint64_t)(row0 * it->cols), rows * it->cols, X->dev[b],
                                 (void *)X->compute, err));
        FR_CU(cudaEventRecord(X->c_gen[b], X->compute));
        X->has_gen[b] = 1;
    }
    if (first_task)
        FR_TRY(fr_kwork_reserve(&X->work, &xi->needs, it->rows, it->cols, err));
    if (t->pass == 1 || !xi->two_pass)
        FR_TRY(fr_kstats_chunk(&X->work, &xi->needs, &view, err));
    if (last_pass1)
        FR_TRY(fr_kstats_finish(&X->work, &xi->needs, it->rows, it->cols, err));
    if (t->pass == 2) {
        for (size_t first = 0; first < xi->n_fused; first += FR_K_MAX_SPECS) {
            int batch = (int)(xi->n_fused - first < FR_K_MAX_SPECS ? xi->n_fused - first
                                                                  : FR_K_MAX_SPECS);
            FR_TRY(fr_kfused(&X->work, xi->specs + first, batch, &view, NULL, err));
            FR_CU(cudaMemcpyAsync(X->results_host[b] + (first / FR_K_MAX_SPECS) * (FR_K_MAX_SPECS + 1),
                                  X->work.results.p, (size_t)(batch + 1) * sizeof(fr_kpart),
                                  cudaMemcpyDeviceToHost, X->compute));
        }
        if (xi->n_fused == 0) {
            /* plugins only: sum w^2 and the finiteness check still come from the
             * fused kernel, with one cheap configuration whose sums are dropped */
            fr_kspec probe;
            fr_kspec_norm_probe(&probe);
            FR_TRY(fr_kfused(&X->work, &probe, 1, &view, NULL, err));
            FR_CU(cudaMemcpyAsync(X->results_host[b], X->work.results.p, 2 * sizeof(fr_kpart),
                                  cudaMemcpyDeviceToHost, X->compute));
        }
        if (xi->num_ok) {
            /* the numeric flags' reduction, one read of the chunk per group
             * shape (docs/gpu.md, "Numeric flags") */
            FR_CU(cudaEventRecord(X->n_start[b], X->compute));
            X->has_num[b] = 1;
            if (t->chunk == 0) {
                fr_error nerr;
                fr_error_clear(&nerr);
                fr_status nst = fr_cuda_numeric_begin(X->numeric, xi->num_tr, xi->num_tc,
                                                      xi->n_num_shapes, it->rows, it->cols, &nerr);
                if (nst == FR_E_NOMEM) {
                    cudaGetLastError();
                    xi->num_ok = 0; /* not examined, as the CPU leaves a tensor without memory */
                    fr_log(FRONTIER_LOG_DEBUG, "%s: '%s': no device memory for the numeric flags",
                           X->device_name, it->tensor->name);
                } else if (nst != FR_OK) {
                    st = nst;
                    *err = nerr;
                    goto cleanup;
                }
            }
            if (xi->num_ok)
                FR_TRY(fr_cuda_numeric_chunk(X->numeric, X->dev[b], xi->dev_dtype, row0, rows, err));
            if (xi->num_ok && t->chunk == xi->n_chunks - 1)
                FR_TRY(fr_cuda_numeric_end(X->numeric, X->num_host[b], err));
            FR_CU(cudaEventRecord(X->n_end[b], X->compute));
        }
        if (xi->calib_gpu)
            fr_x_run_outputs(X, xi, X->dev[b]);
        if (xi->n_plugin)
            fr_x_run_plugins(X, xi, X->dev[b]);
    }
done:
    FR_CU(cudaEventRecord(X->c_end[b], X->compute));
    FR_CU(cudaEventRecord(X->compute_done[b], X->compute));
cleanup:
    return st;
}

/* ---- results ---- */

static void fr_x_numeric_outcome(const fr_x_item *xi, fr_sweep_outcome *o)
{
    if (!xi->num_ok)
        return; /* flags 0: not examined */
    o->flags = xi->num_flags[o->config];
    o->scale_largest = xi->num_detail[o->config].largest;
    o->scale_smallest = xi->num_detail[o->config].smallest;
}

static void fr_x_emit(fr_x *X, size_t i)
{
    fr_x_item *xi = &X->x[i];
    const fr_sweep_item *it = xi->it;
    const fr_sweep_sink *sink = X->sink;
    const fr_kpart *extra = &xi->acc[xi->n_fused];
    xi->done = 1;
    if (xi->failed_stage || extra->sq_hat + extra->dot > 0.0) {
        char reason[256];
        fr_status st = xi->failed_stage ? xi->stage_status : FR_E_FORMAT;
        if (xi->failed_stage)
            snprintf(reason, sizeof reason, "%s", xi->stage_reason);
        else
            snprintf(reason, sizeof reason,
                     "non-finite weights: %lld NaN and %lld Inf (first at element %lld)",
                     (long long)extra->sq_hat, (long long)extra->dot, (long long)(-extra->max_abs));
        if (sink->item_skipped)
            sink->item_skipped(sink->ctx, i, st, reason);
        xi->n_cpu = 0; /* nothing left to do on it */
        if (sink->item_done)
            sink->item_done(sink->ctx, i, it->tensor->nbytes);
        return;
    }
    if (sink->item_norm)
        sink->item_norm(sink->ctx, i, extra->sq_err);
    xi->norm_sent = 1;
    const double per_config = xi->n_fused ? xi->gpu_ms * 1e-3 / (double)xi->n_fused : 0.0;
    for (size_t k = 0; k < xi->n_fused; k++) {
        fr_sweep_outcome o;
        memset(&o, 0, sizeof o);
        o.item = i;
        o.config = xi->fused_idx[k];
        o.status = FR_OK;
        if (xi->calib_gpu && xi->out_status != FR_OK) {
            o.status = xi->out_status;
            snprintf(o.error, sizeof o.error, "config '%.60s': %.180s", it->configs[o.config]->cfg->name,
                     xi->out_error);
        }
        o.sums.sq_err = xi->acc[k].sq_err;
        o.sums.sq_ref = extra->sq_err;
        o.sums.sq_hat = xi->acc[k].sq_hat;
        o.sums.dot = xi->acc[k].dot;
        o.sums.max_abs_err = xi->acc[k].max_abs;
        o.out_sq_err = xi->calib_gpu && o.status == FR_OK ? xi->out_fused[k] : NAN;
        o.out_sq_ref = xi->calib_gpu && o.status == FR_OK ? xi->out_ref : NAN;
        fr_x_numeric_outcome(xi, &o);
        o.seconds = per_config;
        snprintf(o.device, sizeof o.device, "%s", X->device_name);
        sink->outcome(sink->ctx, &o);
    }
    for (size_t k = 0; k < xi->n_plugin; k++) {
        fr_sweep_outcome o;
        memset(&o, 0, sizeof o);
        o.item = i;
        o.config = xi->plugin_idx[k];
        o.status = xi->plugin_status[k];
        snprintf(o.error, sizeof o.error, "%s", xi->plugin_error[k]);
        o.sums = xi->plugin_sums[k];
        o.out_sq_err = xi->calib_gpu && o.status == FR_OK ? xi->out_plugin[k] : NAN;
        o.out_sq_ref = xi->calib_gpu && o.status == FR_OK ? xi->out_ref : NAN;
        fr_x_numeric_outcome(xi, &o);
        o.seconds = xi->plugin_seconds[k];
        snprintf(o.device, sizeof o.device, "%s", X->device_name);
        sink->outcome(sink->ctx, &o);
    }
    X->stats.fused_configs += xi->n_fused;
    X->stats.plugin_configs += xi->n_plugin;
    if (xi->n_cpu == 0 && sink->item_done)
        sink->item_done(sink->ctx, i, it->tensor->nbytes);
}

static fr_status fr_x_harvest(fr_x *X, size_t j, fr_error *err)
{
    fr_status st = FR_OK;
    const fr_x_task *t = &X->tasks[j];
    fr_x_item *xi = &X->x[t->item];
    const int b = (int)(j & 1);
    float ms = 0.0f;
    FR_CU(cudaEventSynchronize(X->compute_done[b]));
    FR_CU(cudaEventElapsedTime(&ms, X->c_start[b], X->c_end[b]));
    X->stats.gpu_s += ms * 1e-3;
    xi->gpu_ms += ms;
    if (X->has_gen[b]) {
        FR_CU(cudaEventElapsedTime(&ms, X->c_start[b], X->c_gen[b]));
        X->stats.generate_s += ms * 1e-3;
    }
    if (X->has_copy[b]) {
        FR_CU(cudaEventElapsedTime(&ms, X->x_start[b], X->x_end[b]));
        X->stats.h2d_s += ms * 1e-3;
    }
    if (X->has_num[b]) {
        FR_CU(cudaEventElapsedTime(&ms, X->n_start[b], X->n_end[b]));
        X->stats.numeric_s += ms * 1e-3;
    }
    if (t->pass == 2 && !xi->failed_stage) {
        const size_t n = xi->n_fused;
        const fr_kpart *r = X->results_host[b];
        /* the extra slot of the last batch (every batch computes the same) */
        const size_t last = n ? (n - 1) / FR_K_MAX_SPECS : 0;
        const fr_kpart *extra = n ? &r[last * (FR_K_MAX_SPECS + 1) + (n - last * FR_K_MAX_SPECS)]
                                  : &r[1];
        for (size_t k = 0; k < n; k++) {
            const fr_kpart *p = &r[(k / FR_K_MAX_SPECS) * (FR_K_MAX_SPECS + 1) + k % FR_K_MAX_SPECS];
            xi->acc[k].sq_err += p->sq_err;
            xi->acc[k].sq_hat += p->sq_hat;
            xi->acc[k].dot += p->dot;
            xi->acc[k].max_abs = fmax(xi->acc[k].max_abs, p->max_abs);
        }
        fr_kpart *e = &xi->acc[n];
        e->sq_err += extra->sq_err;
        e->sq_hat += extra->sq_hat;
        e->dot += extra->dot;
        e->max_abs = fmax(e->max_abs, extra->max_abs);
    }
    if (t->pass == 2 && t->chunk == xi->n_chunks - 1) {
        X->stats.tensor_bytes += xi->it->tensor->nbytes;
        X->stats.elements += (uint64_t)(xi->it->rows * xi->it->cols);
        if (xi->n_chunks > 1)
            X->stats.chunked_tensors++;
        if (xi->num_ok && !xi->failed_stage)
            fr_x_numeric_flags(xi, X->num_host[b]);
        fr_x_emit(X, t->item);
    }
cleanup:
    return st;
}

/* ---- the CPU part ---- */

static void fr_x_cpu_outcome(void *ctx, const fr_sweep_outcome *o)
{
    fr_x *X = (fr_x *)ctx;
    size_t i = X->cpu_map[o->item];
    fr_sweep_outcome c = *o;
    c.item = i;
    c.config = X->x[i].cpu_idx[o->config];
    X->sink->outcome(X->sink->ctx, &c);
}

static void fr_x_cpu_skipped(void *ctx, size_t item, fr_status st, const char *reason)
{
    fr_x *X = (fr_x *)ctx;
    if (X->sink->item_skipped)
        X->sink->item_skipped(X->sink->ctx, X->cpu_map[item], st, reason);
}

static void fr_x_cpu_done(void *ctx, size_t item, uint64_t bytes)
{
    fr_x *X = (fr_x *)ctx;
    if (X->sink->item_done)
        X->sink->item_done(X->sink->ctx, X->cpu_map[item], bytes);
}

static void fr_x_cpu_norm(void *ctx, size_t item, double sq_norm)
{
    fr_x *X = (fr_x *)ctx;
    size_t i = X->cpu_map[item];
    if (!X->x[i].norm_sent && X->sink->item_norm) {
        X->sink->item_norm(X->sink->ctx, i, sq_norm);
        X->x[i].norm_sent = 1;
    }
}

static int fr_x_cpu_cancelled(void *ctx)
{
    fr_x *X = (fr_x *)ctx;
    return X->sink->cancelled ? X->sink->cancelled(X->sink->ctx) : 0;
}

static fr_status fr_x_run_cpu(fr_x *X, fr_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < X->n_items; i++)
        if (X->x[i].n_cpu)
            n++;
    if (!n)
        return FR_OK;
    X->cpu_items = (fr_sweep_item *)calloc(n, sizeof *X->cpu_items);
    X->cpu_map = (size_t *)calloc(n, sizeof *X->cpu_map);
    if (!X->cpu_items || !X->cpu_map)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate the cpu part of the plan");
    for (size_t i = 0; i < X->n_items; i++) {
        fr_x_item *xi = &X->x[i];
        if (!xi->n_cpu)
            continue;
        X->cpu_items[X->n_cpu_items] = *xi->it;
        X->cpu_items[X->n_cpu_items].n_configs = xi->n_cpu;
        X->cpu_items[X->n_cpu_items].configs = xi->cpu_cfgs;
        X->cpu_map[X->n_cpu_items++] = i;
        X->stats.cpu_configs += xi->n_cpu;
    }
    fr_sweep_sink wrap;
    memset(&wrap, 0, sizeof wrap);
    wrap.ctx = X;
    wrap.outcome = fr_x_cpu_outcome;
    wrap.item_skipped = fr_x_cpu_skipped;
    wrap.item_done = fr_x_cpu_done;
    wrap.item_norm = fr_x_cpu_norm;
    wrap.cancelled = fr_x_cpu_cancelled;
    fr_log(FRONTIER_LOG_DEBUG, "%s: %zu configurations of %zu tensors have no cuda path: cpu",
           X->device_name, (size_t)X->stats.cpu_configs, X->n_cpu_items);
    return fr_exec_cpu(X->reg, X->cpu_items, X->n_cpu_items, X->opt, &wrap, err);
}

/* ---- entry ---- */

extern "C" fr_status fr_exec_cuda(const fr_registry *reg, const fr_sweep_item *items,
                                  size_t n_items, const fr_executor_options *opt,
                                  const fr_sweep_sink *sink, fr_error *err)
{
    fr_status st = FR_OK;
    fr_x X;
    double t0 = fr_x_now();
    memset(&X, 0, sizeof X);
    X.reg = reg;
    X.items = items;
    X.n_items = n_items;
    X.opt = opt;
    X.sink = sink;
    X.device = opt->device < 0 ? 0 : opt->device;
    X.cap = opt->cuda_buffer_bytes ? opt->cuda_buffer_bytes : FR_X_DEFAULT_CAP;
    snprintf(X.device_name, sizeof X.device_name, "cuda:%d", X.device);

    int count = fr_cuda_device_count();
    if (X.device >= count) {
        st = count ? fr_fail(err, FR_E_DEVICE, "no cuda device %d (%d present)", X.device, count)
                   : fr_fail(err, FR_E_DEVICE, "no cuda device is available");
        goto cleanup;
    }
    X.x = (fr_x_item *)calloc(n_items ? n_items : 1, sizeof *X.x);
    if (!X.x) {
        st = fr_fail(err, FR_E_NOMEM, "cannot allocate the cuda executor's plan");
        goto cleanup;
    }
    FR_TRY(fr_pool_create(opt->threads, &X.pool, err));
    FR_TRY(fr_x_classify(&X, err));
    FR_TRY(fr_x_open(&X, err));
    FR_TRY(fr_x_build_tasks(&X, err));
    FR_TRY(fr_x_alloc_buffers(&X, err));
    fr_log(FRONTIER_LOG_DEBUG,
           "%s: %zu tasks, staging buffers 2 x %zu bytes, device buffers 2 x %zu bytes",
           X.device_name, X.n_tasks, X.pinned_bytes, X.buf_bytes);

    for (size_t j = 0; j < X.n_tasks; j++) {
        if (sink->cancelled && sink->cancelled(sink->ctx)) {
            st = fr_fail(err, FR_E_INTERRUPT, "interrupted");
            goto cleanup;
        }
        FR_TRY(fr_x_enqueue(&X, j, err));
        /* the GPU runs task j while the host takes task j-1's results and
         * then stages task j+1 */
        if (j > 0) {
            FR_TRY(fr_x_harvest(&X, j - 1, err));
        }
    }
    if (X.n_tasks) {
        FR_TRY(fr_x_harvest(&X, X.n_tasks - 1, err));
    }
    if (X.work.tstats.p) {
        float tstats[4];
        FR_CU(cudaMemcpy(tstats, X.work.tstats.p, sizeof tstats, cudaMemcpyDeviceToHost));
        X.stats.nf4_mean_fallbacks = (uint64_t)tstats[3];
    }
    /* items whose configurations all run on the CPU, and the CPU part of the others */
    FR_TRY(fr_x_run_cpu(&X, err));

cleanup:
    if (X.x)
        fr_x_close(&X);
    X.stats.wall_s = fr_x_now() - t0;
    if (opt->cuda_stats)
        *opt->cuda_stats = X.stats;
    if (st == FR_OK) {
        double gb = (double)X.stats.tensor_bytes / 1e9;
        fr_info("%s: %.2f GB in %.3f s (%.1f GB/s); gpu %.3f s (generate %.3f s), "
                "host->device %.3f s for %.2f GB, staging %.3f s; %llu fused, %llu plugin, "
                "%llu cpu configurations",
                X.device_name, gb, X.stats.wall_s, X.stats.wall_s > 0 ? gb / X.stats.wall_s : 0.0,
                X.stats.gpu_s, X.stats.generate_s, X.stats.h2d_s,
                (double)X.stats.h2d_bytes / 1e9, X.stats.stage_s,
                (unsigned long long)X.stats.fused_configs,
                (unsigned long long)X.stats.plugin_configs,
                (unsigned long long)X.stats.cpu_configs);
    }
    if (X.x) {
        for (size_t i = 0; i < n_items; i++) {
            fr_x_item *xi = &X.x[i];
            free(xi->specs);
            free(xi->fused_idx);
            free(xi->plugin_idx);
            free(xi->cpu_idx);
            free(xi->cpu_cfgs);
            free(xi->plugin_sums);
            free(xi->plugin_status);
            free(xi->plugin_error);
            free(xi->acc);
            free(xi->converted);
            free(xi->out_fused);
            free(xi->out_plugin);
            free(xi->plugin_seconds);
            free(xi->num_rules);
            free(xi->num_refs);
            free(xi->num_cfg);
            free(xi->num_shapes);
            free(xi->num_shape_of);
            free(xi->num_tr);
            free(xi->num_tc);
            free(xi->num_flags);
            free(xi->num_detail);
        }
    }
    free(X.x);
    free(X.tasks);
    free(X.cpu_items);
    free(X.cpu_map);
    if (X.pool)
        fr_pool_destroy(X.pool);
    return st;
}
