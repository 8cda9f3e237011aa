/*
 * The CPU executor (frontier/exec/executor.h).
 *
 * Items are processed in plan order, in batches: consecutive small tensors
 * are loaded together (up to FR_CPU_BATCH_BYTES of float32 weights, and
 * FR_CPU_JOBS_PER_THREAD jobs per thread) and all their (tensor,
 * configuration) jobs run in parallel, one job per thread; a
 * large tensor forms a batch of its own, and when one float32 copy per
 * thread would exceed FR_CPU_PARALLEL_BYTES its configurations run one after
 * the other, each using every thread inside (the quantizer's parallel_for
 * and the error reduction). Results never depend on the schedule: every sum
 * is fr_error_sums_accumulate's (frontier/exec/metrics.h), reduced over fixed
 * chunks in chunk order, whatever the thread count. Each outcome reaches the sink as soon
 * as its job is done (from the worker that ran it, one call at a time under
 * a lock), so the engine commits rows while other jobs still run.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <pthread.h>

#include "core/call.h"
#include "core/parallel.h"
#include "core/synthetic.h"
#include "frontier/exec/blocked.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/numeric_flags.h"

/* Defaults; fr_executor_options.cpu_batch_bytes and cpu_parallel_bytes
 * override them (the command line's --cpu-batch-bytes and
 * --cpu-parallel-bytes: tests use tiny values to exercise every schedule). */
#define FR_CPU_BATCH_BYTES ((size_t)64 << 20)
#define FR_CPU_PARALLEL_BYTES ((size_t)1 << 30)
/* A batch stops growing once it holds this many jobs per thread. */
#define FR_CPU_JOBS_PER_THREAD 8
/* Floats past the end of every output buffer, checked after the call: a
 * quantizer writing more than rows x cols values is caught. */
#define FR_CPU_GUARD 16
#define FR_CPU_GUARD_BITS 0x7fa5a5a5u /* a NaN payload no arithmetic produces */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- batches ---- */

typedef struct loaded {
    float *w;              /* float32 copy of the tensor, NULL when skipped */
    double out_ref;        /* tr(W H W^T) with calibration statistics, else NaN */
    fr_status status;      /* why it was skipped */
    char reason[256];
    uint32_t *flags;       /* per configuration: FR_ROW_* (numeric_flags.h), or NULL */
    fr_scale_detail *detail;
} loaded;

typedef struct job {
    size_t item, config;
} job;

typedef struct batch {
    const fr_registry *reg;
    const fr_sweep_item *items;
    const fr_executor_options *opt;
    fr_pool *pool;
    size_t first, count;      /* items [first, first + count) */
    loaded *load;             /* per item of the batch */
    job *jobs;
    fr_sweep_outcome *outcomes;
    size_t n_jobs;
    const fr_sweep_sink *sink;
    pthread_mutex_t sink_lock; /* the sink sees one call at a time */
    size_t *remaining;         /* per item of the batch: jobs not reported yet */
    int stopped;               /* cancelled: no new job starts */
} batch;

static void fail_outcome(fr_sweep_outcome *o, fr_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_outcome(fr_sweep_outcome *o, fr_status st, const char *fmt, ...)
{
    /* a long message (plugin paths) is cut to the outcome's buffer */
    char msg[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = strnlen(msg, sizeof o->error - 1);
    memcpy(o->error, msg, len);
    o->error[len] = '\0';
    o->status = st;
}

/* The item's output error basis (executor.h: fr_out_basis_of). */
static fr_out_basis out_kind(const fr_sweep_item *it, const fr_executor_options *opt)
{
    return fr_out_basis_of(it->calib, it->cols, opt->diagonal_output_error);
}

/* Adds the output error term of rows x cols of w (against w_hat, or w's
 * own term when w_hat is NULL) to *out, on the basis kind. */
static fr_status out_accumulate(const fr_sweep_item *it, fr_out_basis kind, const float *w,
                                const float *w_hat, int64_t rows, fr_pool *pool, double *out,
                                fr_error *err)
{
    if (kind == FR_OUT_HESSIAN)
        return fr_output_error_accumulate(w, w_hat, rows, it->cols, it->calib->hessian, pool,
                                          out, err);
    return fr_output_error_diag_accumulate(w, w_hat, rows, it->cols, it->calib->act_mean_sq,
                                           pool, out, err);
}

/* Quantizes one (tensor, configuration) and reduces its error. */
static void run_job(const batch *b, const job *jb, fr_sweep_outcome *o, fr_pool *pool)
{
    const fr_sweep_item *it = &b->items[jb->item];
    const fr_config_ref *ref = it->configs[jb->config];
    const frontier_quantizer *q = fr_config_quantizer(b->reg, ref);
    const float *w = b->load[jb->item - b->first].w;
    int64_t n = it->rows * it->cols;
    float *w_hat = NULL;
    frontier_call call;
    double t0 = now_seconds();

    memset(o, 0, sizeof *o);
    o->item = jb->item;
    o->config = jb->config;
    o->out_sq_err = NAN;
    o->out_sq_ref = NAN;
    snprintf(o->device, sizeof o->device, "cpu");
    if (b->load[jb->item - b->first].flags) {
        o->flags = b->load[jb->item - b->first].flags[jb->config];
        o->scale_largest = b->load[jb->item - b->first].detail[jb->config].largest;
        o->scale_smallest = b->load[jb->item - b->first].detail[jb->config].smallest;
    }
    fr_call_init(&call, pool, b->opt->seed, it->tensor->name, ref->cfg->name);
    call.quantizer = q->name;
    call.has_group_amax = it->has_group_amax;
    call.group_amax = it->group_amax;

    size_t bytes = ((size_t)n + FR_CPU_GUARD) * sizeof(float);
    size_t rounded = (bytes + 63) / 64 * 64;
    if (posix_memalign((void **)&w_hat, 64, rounded) != 0) {
        w_hat = NULL;
        fail_outcome(o, FR_E_NOMEM, "cannot allocate %zu bytes for the output", rounded);
        goto done;
    }
    float guard = fr_bits_to_f32(FR_CPU_GUARD_BITS);
    for (int i = 0; i < FR_CPU_GUARD; i++)
        w_hat[n + i] = guard;

    /* the registry's checked call: poisons the output, calls the quantizer,
     * rejects an error code or any non-finite (or unwritten) element */
    fr_error qerr = {0};
    fr_status st = fr_quantizer_quantize_cpu(b->reg, ref, w, w_hat, it->rows, it->cols, it->calib,
                                             it->tensor->name, &call, &qerr);
    if (st != FR_OK) {
        fail_outcome(o, st, "%s", qerr.msg);
        goto done;
    }
    for (int i = 0; i < FR_CPU_GUARD; i++)
        if (fr_f32_to_bits(w_hat[n + i]) != FR_CPU_GUARD_BITS) {
            fail_outcome(o, FR_E_PLUGIN,
                         "config '%s' on tensor '%s': quantize_cpu wrote past the end of its "
                         "output (quantizer '%s')",
                         ref->cfg->name, it->tensor->name, q->name);
            goto done;
        }
    fr_error_sums_init(&o->sums);
    fr_error serr = {0};
    if (fr_error_sums_accumulate(w, w_hat, n, pool, &o->sums, &serr) != FR_OK) {
        fail_outcome(o, FR_E_NOMEM, "%s", serr.msg);
        goto done;
    }
    /* the output error on the calibration inputs (docs/formats.md) */
    const double out_ref = b->load[jb->item - b->first].out_ref;
    const fr_out_basis kind = out_kind(it, b->opt);
    if (kind != FR_OUT_NONE && !isnan(out_ref)) {
        o->out_sq_err = 0.0;
        if (out_accumulate(it, kind, w, w_hat, it->rows, pool, &o->out_sq_err, &serr) != FR_OK) {
            fail_outcome(o, serr.code, "config '%s' on tensor '%s': %s", ref->cfg->name,
                         it->tensor->name, serr.msg);
            goto done;
        }
        o->out_sq_ref = out_ref;
    }
done:
    o->seconds = now_seconds() - t0;
    free(w_hat);
    fr_call_release(&call);
}

static void examine_item(const fr_sweep_item *it, loaded *ld)
{
    size_t n = it->n_configs;
    fr_scale_rule *rules = calloc(n + 1, sizeof *rules);
    const fr_scale_rule **refs = calloc(n + 1, sizeof *refs);
    ld->flags = calloc(n + 1, sizeof *ld->flags);
    ld->detail = calloc(n + 1, sizeof *ld->detail);
    if (rules && refs && ld->flags && ld->detail) {
        fr_tensor_facts facts;
        for (size_t c = 0; c < n; c++) {
            fr_scale_rule_parse(it->configs[c]->cfg->params_json, &rules[c]);
            refs[c] = &rules[c];
        }
        if (fr_numeric_examine(ld->w, it->rows, it->cols, refs, n, ld->flags, ld->detail,
                               &facts) == 0) {
            free(rules);
            free(refs);
            return;
        }
    }
    free(rules);
    free(refs);
    free(ld->flags);
    free(ld->detail);
    ld->flags = NULL;
    ld->detail = NULL;
}

/* Loads item k of the batch into float32 and checks it is finite. */
static void load_item(const batch *b, size_t k, fr_pool *pool, frontier_error_sums *norm)
{
    const fr_sweep_item *it = &b->items[b->first + k];
    loaded *ld = &b->load[k];
    int64_t n = it->rows * it->cols;
    fr_error err = {0};
    ld->status = FR_OK;
    ld->out_ref = NAN;
    ld->w = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!ld->w) {
        ld->status = FR_E_NOMEM;
        snprintf(ld->reason, sizeof ld->reason, "cannot allocate %lld bytes for its float32 copy",
                 (long long)n * 4);
        return;
    }
    fr_status st;
    if (it->tensor->encoding == FR_ENC_SYNTHETIC)
        st = fr_synthetic_load(it->src, it->tensor, ld->w, pool, &err);
    else
        st = fr_tensor_load_f32(it->src, it->tensor, ld->w, &err);
    /* the float32 copy is all the jobs read: the mapped pages go now, not
     * after the jobs (2 bytes per BF16 element less at the peak) */
    if (it->tensor->encoding != FR_ENC_SYNTHETIC)
        fr_tensor_release(it->src, it->tensor);
    /* sum w^2 with the metrics' own chunked reduction (w against itself),
     * so it equals the sq_ref of every configuration bit for bit; it is
     * NaN or Inf exactly when w holds a NaN or an Inf (a finite float
     * squared cannot overflow a double) */
    fr_error_sums_init(norm);
    if (st == FR_OK)
        st = fr_error_sums_accumulate(ld->w, ld->w, n, pool, norm, &err);
    if (st == FR_OK && !isfinite(norm->sq_ref)) {
        int64_t first = -1, n_nan = 0, n_inf = 0;
        for (int64_t i = 0; i < n; i++) {
            if (isfinite(ld->w[i]))
                continue;
            if (first < 0)
                first = i;
            if (isnan(ld->w[i]))
                n_nan++;
            else
                n_inf++;
        }
        snprintf(ld->reason, sizeof ld->reason,
                 "non-finite weights: %lld NaN and %lld Inf (first at element %lld)",
                 (long long)n_nan, (long long)n_inf, (long long)first);
        st = FR_E_FORMAT;
    } else if (st != FR_OK) {
        /* truncation of a long reader message is acceptable */
        size_t len = strnlen(err.msg, sizeof ld->reason - 1);
        memcpy(ld->reason, err.msg, len);
        ld->reason[len] = '\0';
    }
    /* the numeric edge cases of each configuration, once per tensor
     * (frontier/exec/numeric_flags.h); without memory for them the rows say
     * "not examined" (flags 0) */
    if (st == FR_OK)
        examine_item(it, ld);
    /* the reference term of the output error, once per tensor */
    const fr_out_basis kind = out_kind(it, b->opt);
    if (st == FR_OK && kind != FR_OUT_NONE) {
        ld->out_ref = 0.0;
        st = out_accumulate(it, kind, ld->w, NULL, it->rows, pool, &ld->out_ref, &err);
        if (st != FR_OK) {
            size_t len = strnlen(err.msg, sizeof ld->reason - 1);
            memcpy(ld->reason, err.msg, len);
            ld->reason[len] = '\0';
        }
    }
    if (st != FR_OK) {
        ld->status = st;
        free(ld->w);
        ld->w = NULL;
    }
}

typedef struct par_ctx {
    batch *b;
    frontier_error_sums *norms;
} par_ctx;

static void load_range(void *arg, int64_t begin, int64_t end)
{
    par_ctx *c = arg;
    for (int64_t k = begin; k < end; k++)
        load_item(c->b, (size_t)k, c->b->pool, &c->norms[k]);
}

/* Reports a finished job (and its item, when it was the item's last one)
 * as soon as it is done, so the engine can commit rows while the others
 * run. Returns nonzero when the run is cancelled. */
static int report_job(batch *b, size_t j)
{
    const fr_sweep_sink *sink = b->sink;
    pthread_mutex_lock(&b->sink_lock);
    sink->outcome(sink->ctx, &b->outcomes[j]);
    size_t k = b->jobs[j].item - b->first;
    if (--b->remaining[k] == 0 && sink->item_done)
        sink->item_done(sink->ctx, b->jobs[j].item, b->items[b->jobs[j].item].tensor->nbytes);
    if (sink->cancelled && sink->cancelled(sink->ctx))
        b->stopped = 1;
    int stopped = b->stopped;
    pthread_mutex_unlock(&b->sink_lock);
    return stopped;
}

static int is_stopped(batch *b)
{
    pthread_mutex_lock(&b->sink_lock);
    int stopped = b->stopped;
    pthread_mutex_unlock(&b->sink_lock);
    return stopped;
}

static void jobs_range(void *arg, int64_t begin, int64_t end)
{
    batch *b = arg;
    for (int64_t j = begin; j < end; j++) {
        if (is_stopped(b))
            return;
        run_job(b, &b->jobs[j], &b->outcomes[j], b->pool);
        if (report_job(b, (size_t)j))
            return;
    }
}

static size_t item_bytes(const fr_sweep_item *it)
{
    return (size_t)(it->rows * it->cols) * sizeof(float);
}

/* ---- row blocks (--max-memory, frontier/exec/blocked.h) ---- */

/* Elements converted between two page releases of a block. */
#define FR_CPU_RELEASE_ELEMS ((int64_t)1 << 22)

/* Loads elements [begin, begin + n) of an item into w, releasing their
 * mapped pages piece by piece as they are converted (so a block's pages
 * never sit beside its float32 copy and the previous block's output). */
static fr_status load_block(const fr_sweep_item *it, int64_t begin, int64_t n, float *w,
                            fr_pool *pool, fr_error *err)
{
    if (it->tensor->encoding == FR_ENC_SYNTHETIC)
        return fr_synthetic_load_range(it->src, it->tensor, begin, n, w, pool, err);
    for (int64_t done = 0; done < n;) {
        int64_t m = n - done < FR_CPU_RELEASE_ELEMS ? n - done : FR_CPU_RELEASE_ELEMS;
        fr_status st = fr_tensor_load_f32_range(it->src, it->tensor, begin + done, m, w + done,
                                                err);
        fr_tensor_release_range(it->src, it->tensor, begin + done, m);
        if (st != FR_OK)
            return st;
        done += m;
    }
    return FR_OK;
}

/* Counts the non-finite elements of a block into *n_nan / *n_inf and
 * notes the first one's element index; widens [*lo, *hi]. */
static void scan_block(const float *w, int64_t begin, int64_t n, float *lo, float *hi,
                       int64_t *first, int64_t *n_nan, int64_t *n_inf)
{
    for (int64_t i = 0; i < n; i++) {
        float x = w[i];
        if (!isfinite(x)) {
            if (*first < 0)
                *first = begin + i;
            if (isnan(x))
                (*n_nan)++;
            else
                (*n_inf)++;
            continue;
        }
        *lo = x < *lo ? x : *lo;
        *hi = x > *hi ? x : *hi;
    }
}

/* One oversized item evaluated block by block: what run_blocked's steps
 * share; blocked_free releases what it holds. */
typedef struct blocked {
    batch *b;
    size_t index;
    const fr_sweep_item *it;
    size_t nc;
    fr_block_rule *rule;       /* per configuration */
    fr_sweep_outcome *out;     /* per configuration */
    float *w, *w_hat;          /* one block (+ the range's two rows), its output (+ guard) */
    char reason[256];
    fr_status skip;            /* why the item is skipped */
    frontier_error_sums norm;
    fr_error err;              /* a reader's or a reduction's failure */
    int64_t multiple, block, first_bad, n_nan, n_inf;
    int needs_range;
    fr_out_basis with_out;     /* the output error's basis, FR_OUT_NONE: none */
    float lo, hi;
    double out_ref;
    fr_scale_rule *rules;
    const fr_scale_rule **rule_refs;
    uint32_t *flags;
    fr_scale_detail *detail;
    fr_numeric_stream *numeric;
} blocked;

/* How a pass over the blocks ended: the report it leads to. */
enum { BLOCKS_DONE, BLOCKS_READ_FAILED, BLOCKS_NONFINITE, BLOCKS_CANCELLED };

/* The bookkeeping allocated, the numeric stream begun (without memory: rows "not examined"). */
static void blocked_begin(blocked *bl, batch *b, size_t index)
{
    const fr_sweep_item *it = &b->items[index];
    const size_t nc = it->n_configs;
    memset(bl, 0, sizeof *bl);
    bl->b = b;
    bl->index = index;
    bl->it = it;
    bl->nc = nc;
    bl->rule = calloc(nc + 1, sizeof *bl->rule);
    bl->out = calloc(nc + 1, sizeof *bl->out);
    bl->skip = FR_OK;
    bl->multiple = 1;
    bl->first_bad = -1;
    bl->lo = INFINITY;
    bl->hi = -INFINITY;
    bl->rules = calloc(nc + 1, sizeof *bl->rules);
    bl->rule_refs = calloc(nc + 1, sizeof *bl->rule_refs);
    bl->flags = calloc(nc + 1, sizeof *bl->flags);
    bl->detail = calloc(nc + 1, sizeof *bl->detail);
    fr_error_sums_init(&bl->norm);
    if (bl->rules && bl->rule_refs && bl->flags && bl->detail) {
        for (size_t c = 0; c < nc; c++) {
            fr_scale_rule_parse(it->configs[c]->cfg->params_json, &bl->rules[c]);
            bl->rule_refs[c] = &bl->rules[c];
        }
        bl->numeric = fr_numeric_stream_begin(bl->rule_refs, nc, it->cols);
    }
}

/* Outcomes, block rules, rows per block (every rule's multiple), buffers; nonzero: skipped. */
static int blocked_plan(blocked *bl, size_t max_memory)
{
    const fr_sweep_item *it = bl->it;
    const int64_t cols = it->cols;
    if (!bl->rule || !bl->out) {
        bl->skip = FR_E_NOMEM;
        snprintf(bl->reason, sizeof bl->reason, "cannot allocate the row blocks' bookkeeping");
        return 1;
    }
    for (size_t c = 0; c < bl->nc; c++) {
        fr_sweep_outcome *o = &bl->out[c];
        fr_block_rule *rule = &bl->rule[c];
        o->item = bl->index;
        o->config = c;
        o->out_sq_err = NAN;
        o->out_sq_ref = NAN;
        snprintf(o->device, sizeof o->device, "cpu");
        fr_error_sums_init(&o->sums);
        fr_block_rule_of(bl->b->reg, it->configs[c], rule);
        if (!rule->row_multiple) {
            /* the sweep's plan leaves such pairs out; another caller gets a failure */
            fail_outcome(o, FR_E_NOMEM, "config '%s' on tensor '%s': %s", it->configs[c]->cfg->name,
                         it->tensor->name, rule->reason);
            continue;
        }
        if (rule->row_multiple > bl->multiple)
            bl->multiple = rule->row_multiple;
        bl->needs_range |= rule->needs_range;
    }
    /* the output error's chunks of FR_OUTPUT_ROWS rows stay whole too */
    bl->with_out = out_kind(it, bl->b->opt);
    if (bl->with_out) {
        int64_t a = bl->multiple, g = FR_OUTPUT_ROWS; /* lcm(multiple, FR_OUTPUT_ROWS) */
        while (a % g) {
            int64_t t = a % g;
            a = g;
            g = t;
        }
        bl->multiple = bl->multiple / g * FR_OUTPUT_ROWS;
    }
    bl->block = fr_block_rows(it->rows, cols, bl->multiple, max_memory);
    const size_t cap = (size_t)(bl->block + 2) * (size_t)cols;
    bl->w = malloc(cap * sizeof *bl->w);
    bl->w_hat = malloc((cap + FR_CPU_GUARD) * sizeof *bl->w_hat);
    if (!bl->w || !bl->w_hat) {
        bl->skip = FR_E_NOMEM;
        snprintf(bl->reason, sizeof bl->reason,
                 "cannot allocate %zu bytes for a block of %lld rows", cap * 8,
                 (long long)bl->block);
        return 1;
    }
    return 0;
}

/* Nonzero (and the batch stopped) when the sink cancels the run. */
static int blocked_cancelled(blocked *bl)
{
    const fr_sweep_sink *sink = bl->b->sink;
    if (sink->cancelled && sink->cancelled(sink->ctx)) {
        bl->b->stopped = 1;
        return 1;
    }
    return 0;
}

/* The first pass, when a configuration needs it: the tensor's range and non-finite count. */
static int blocked_range(blocked *bl)
{
    const fr_sweep_item *it = bl->it;
    const int64_t rows = it->rows, cols = it->cols, block = bl->block;
    for (int64_t r0 = 0; bl->needs_range && r0 < rows; r0 += block) {
        int64_t nr = rows - r0 < block ? rows - r0 : block;
        if ((bl->skip = load_block(it, r0 * cols, nr * cols, bl->w, bl->b->pool, &bl->err)) !=
            FR_OK)
            return BLOCKS_READ_FAILED;
        scan_block(bl->w, r0 * cols, nr * cols, &bl->lo, &bl->hi, &bl->first_bad, &bl->n_nan,
                   &bl->n_inf);
        if (blocked_cancelled(bl))
            return BLOCKS_CANCELLED;
    }
    return bl->first_bad >= 0 ? BLOCKS_NONFINITE : BLOCKS_DONE;
}

/* Rows [r0, r0 + nr) have a non-finite norm: they and the rows after them scanned. */
static int blocked_scan_rest(blocked *bl, int64_t r0, int64_t nr)
{
    const fr_sweep_item *it = bl->it;
    const int64_t rows = it->rows, cols = it->cols, block = bl->block;
    scan_block(bl->w, r0 * cols, nr * cols, &bl->lo, &bl->hi, &bl->first_bad, &bl->n_nan,
               &bl->n_inf);
    for (int64_t r1 = r0 + nr; r1 < rows; r1 += block) {
        int64_t nr1 = rows - r1 < block ? rows - r1 : block;
        if ((bl->skip = load_block(it, r1 * cols, nr1 * cols, bl->w, bl->b->pool, &bl->err)) !=
            FR_OK)
            return BLOCKS_READ_FAILED;
        scan_block(bl->w, r1 * cols, nr1 * cols, &bl->lo, &bl->hi, &bl->first_bad, &bl->n_nan,
                   &bl->n_inf);
    }
    return BLOCKS_NONFINITE;
}

/* Every configuration still running quantizes rows [r0, r0 + nr); its sums grow in block order. */
static void blocked_quantize(blocked *bl, int64_t r0, int64_t nr)
{
    const batch *b = bl->b;
    const fr_sweep_item *it = bl->it;
    fr_pool *pool = b->pool;
    const int64_t cols = it->cols, n = nr * cols;
    float *w = bl->w, *w_hat = bl->w_hat;
    for (size_t c = 0; c < bl->nc; c++) {
        fr_sweep_outcome *o = &bl->out[c];
        if (o->status != FR_OK)
            continue;
        const fr_config_ref *ref = it->configs[c];
        const int64_t qrows = nr + (bl->rule[c].needs_range ? 2 : 0), qn = qrows * cols;
        frontier_call call;
        double t0 = now_seconds();
        float guard = fr_bits_to_f32(FR_CPU_GUARD_BITS);
        for (int i = 0; i < FR_CPU_GUARD; i++)
            w_hat[qn + i] = guard;
        fr_call_init(&call, pool, b->opt->seed, it->tensor->name, ref->cfg->name);
        call.quantizer = fr_config_quantizer(b->reg, ref)->name;
        call.has_group_amax = it->has_group_amax;
        call.group_amax = it->group_amax;
        fr_error qerr = {0};
        fr_status st = fr_quantizer_quantize_cpu(b->reg, ref, w, w_hat, qrows, cols, it->calib,
                                                 it->tensor->name, &call, &qerr);
        if (st != FR_OK)
            fail_outcome(o, st, "%s (rows %lld to %lld of a tensor over --max-memory)", qerr.msg,
                         (long long)r0, (long long)(r0 + nr));
        for (int i = 0; st == FR_OK && i < FR_CPU_GUARD; i++)
            if (fr_f32_to_bits(w_hat[qn + i]) != FR_CPU_GUARD_BITS) {
                fail_outcome(o, FR_E_PLUGIN,
                             "config '%s' on tensor '%s': quantize_cpu wrote past the end "
                             "of its output",
                             ref->cfg->name, it->tensor->name);
                st = FR_E_PLUGIN;
            }
        fr_error serr = {0};
        if (st == FR_OK && fr_error_sums_accumulate(w, w_hat, n, pool, &o->sums, &serr) != FR_OK)
            fail_outcome(o, FR_E_NOMEM, "%s", serr.msg);
        if (st == FR_OK && bl->with_out) {
            if (isnan(o->out_sq_err))
                o->out_sq_err = 0.0;
            if (out_accumulate(it, bl->with_out, w, w_hat, nr, pool, &o->out_sq_err, &serr) !=
                FR_OK)
                fail_outcome(o, serr.code, "config '%s' on tensor '%s': %s", ref->cfg->name,
                             it->tensor->name, serr.msg);
        }
        fr_call_release(&call);
        o->seconds += now_seconds() - t0;
    }
}

/* The measuring pass: each block read once, its norm, flags and reference term, then quantized. */
static int blocked_measure(blocked *bl)
{
    const fr_sweep_item *it = bl->it;
    fr_pool *pool = bl->b->pool;
    const int64_t rows = it->rows, cols = it->cols, block = bl->block;
    float *w = bl->w;
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
        int64_t nr = rows - r0 < block ? rows - r0 : block, n = nr * cols;
        if ((bl->skip = load_block(it, r0 * cols, n, w, pool, &bl->err)) != FR_OK)
            return BLOCKS_READ_FAILED;
        /* the norm with the metrics' own reduction, as load_item's */
        if ((bl->skip = fr_error_sums_accumulate(w, w, n, pool, &bl->norm, &bl->err)) != FR_OK)
            return BLOCKS_READ_FAILED;
        if (!isfinite(bl->norm.sq_ref))
            return blocked_scan_rest(bl, r0, nr);
        fr_numeric_stream_add(bl->numeric, w, r0, nr);
        if (bl->with_out &&
            (bl->skip = out_accumulate(it, bl->with_out, w, NULL, nr, pool, &bl->out_ref,
                                       &bl->err)) != FR_OK)
            return BLOCKS_READ_FAILED;
        if (bl->needs_range) {
            const float lo = bl->lo, hi = bl->hi;
            for (int64_t i = 0; i < cols; i++) {
                w[n + i] = lo;
                w[n + cols + i] = hi;
            }
        }
        blocked_quantize(bl, r0, nr);
        if (blocked_cancelled(bl))
            return BLOCKS_CANCELLED;
    }
    return BLOCKS_DONE;
}

/* The item's outcomes, or why it is skipped, to the sink under its lock, with the numeric flags. */
static void blocked_report(blocked *bl, int end)
{
    const fr_sweep_sink *sink = bl->b->sink;
    if (end == BLOCKS_NONFINITE) {
        bl->skip = FR_E_FORMAT;
        snprintf(bl->reason, sizeof bl->reason,
                 "non-finite weights: %lld NaN and %lld Inf (first at element %lld)",
                 (long long)bl->n_nan, (long long)bl->n_inf, (long long)bl->first_bad);
    } else if (end == BLOCKS_READ_FAILED) {
        size_t len = strnlen(bl->err.msg, sizeof bl->reason - 1);
        memcpy(bl->reason, bl->err.msg, len);
        bl->reason[len] = '\0';
    }
    if (bl->numeric) {
        fr_tensor_facts facts;
        if (fr_numeric_stream_end(bl->numeric, bl->flags, bl->detail, &facts) == 0 &&
            bl->skip == FR_OK)
            for (size_t c = 0; c < bl->nc; c++) {
                bl->out[c].flags = bl->flags[c];
                bl->out[c].scale_largest = bl->detail[c].largest;
                bl->out[c].scale_smallest = bl->detail[c].smallest;
            }
        bl->numeric = NULL;
    }
    pthread_mutex_lock(&bl->b->sink_lock);
    if (bl->skip != FR_OK) {
        if (sink->item_skipped)
            sink->item_skipped(sink->ctx, bl->index, bl->skip, bl->reason);
    } else {
        if (sink->item_norm)
            sink->item_norm(sink->ctx, bl->index, bl->norm.sq_ref);
        for (size_t c = 0; c < bl->nc; c++) {
            if (bl->with_out && bl->out[c].status == FR_OK)
                bl->out[c].out_sq_ref = bl->out_ref;
            sink->outcome(sink->ctx, &bl->out[c]);
        }
    }
    if (sink->item_done)
        sink->item_done(sink->ctx, bl->index, bl->it->tensor->nbytes);
    if (sink->cancelled && sink->cancelled(sink->ctx))
        bl->b->stopped = 1;
    pthread_mutex_unlock(&bl->b->sink_lock);
}

/* What blocked_begin and blocked_plan allocated, and the stream a cancelled run left open. */
static void blocked_free(blocked *bl)
{
    if (bl->numeric) {
        fr_tensor_facts facts;
        fr_numeric_stream_end(bl->numeric, bl->flags, bl->detail, &facts);
    }
    free(bl->rules);
    free(bl->rule_refs);
    free(bl->flags);
    free(bl->detail);
    free(bl->rule);
    free(bl->out);
    free(bl->w);
    free(bl->w_hat);
}

/*
 * Evaluates one oversized item block by block: each block of whole rows is
 * read once (its pages released right after), every configuration
 * quantizes it and its error sums are accumulated in block order. Blocks
 * hold whole 65,536-element chunks, so every sum is the whole tensor's bit
 * for bit (fr_error_sums_accumulate adds chunk partials in chunk order).
 * Configurations that need the tensor's range get it from a first pass,
 * as two extra rows after the block (frontier/exec/blocked.h). The numeric
 * flags are gathered block by block (fr_numeric_stream_*), equal to
 * load_item's on the whole tensor.
 */
static void run_blocked(batch *b, size_t index, size_t max_memory)
{
    blocked bl;
    int end = BLOCKS_DONE; /* a plan that fails reports its own reason */
    blocked_begin(&bl, b, index);
    if (blocked_plan(&bl, max_memory) == 0) {
        end = blocked_range(&bl);
        if (end == BLOCKS_DONE)
            end = blocked_measure(&bl);
    }
    if (end != BLOCKS_CANCELLED)
        blocked_report(&bl, end);
    blocked_free(&bl);
}

fr_status fr_exec_cpu(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                      const fr_executor_options *opt, const fr_sweep_sink *sink, fr_error *err)
{
    fr_status st = FR_OK;
    fr_pool *pool = NULL;
    batch b = {.reg = reg, .items = items, .opt = opt, .sink = sink};
    frontier_error_sums *norms = NULL;
    size_t cap_items = 0, cap_jobs = 0;

    st = fr_pool_create(opt->threads, &pool, err);
    if (st != FR_OK)
        return st;
    /* the output error's GEMMs run inside frontier's own parallel loops (by
     * job and by row chunk), so BLAS itself stays on one thread: no
     * oversubscription, and the sums do not depend on BLAS's threading */
    for (size_t i = 0; i < n_items; i++)
        if (items[i].calib && items[i].calib->hessian) {
            openblas_set_num_threads(1);
            break;
        }
    pthread_mutex_init(&b.sink_lock, NULL);
    b.pool = pool;
    int threads = fr_pool_threads(pool);
    size_t batch_bytes = opt->cpu_batch_bytes ? opt->cpu_batch_bytes : FR_CPU_BATCH_BYTES;
    size_t parallel_bytes =
        opt->cpu_parallel_bytes ? opt->cpu_parallel_bytes : FR_CPU_PARALLEL_BYTES;
    /* --max-memory: batches and parallel jobs stay under the bound too (a
     * batch's copies and one output per thread; a tensor's copy and an
     * output per thread), larger tensors go in row blocks */
    const size_t max_memory = opt->max_memory;
    if (max_memory) {
        size_t share = max_memory / (2 * ((size_t)threads + 1));
        batch_bytes = batch_bytes < share ? batch_bytes : (share ? share : 1);
        parallel_bytes = parallel_bytes < max_memory / 2 ? parallel_bytes : max_memory / 2;
    }

    for (size_t first = 0; first < n_items;) {
        if (sink->cancelled && sink->cancelled(sink->ctx)) {
            st = FR_E_INTERRUPT;
            break;
        }
        if (fr_block_needed(&items[first], max_memory)) {
            run_blocked(&b, first, max_memory);
            if (b.stopped) {
                st = FR_E_INTERRUPT;
                break;
            }
            first++;
            continue;
        }
        /* the batch: consecutive items up to the byte budget, and only as
         * many as it takes to keep every thread busy (a batch is loaded
         * before its first job runs: small batches report sooner) */
        size_t count = 1, bytes = item_bytes(&items[first]), n_jobs = items[first].n_configs;
        size_t enough_jobs = (size_t)threads * FR_CPU_JOBS_PER_THREAD;
        while (first + count < n_items && n_jobs < enough_jobs &&
               !fr_block_needed(&items[first + count], max_memory) &&
               bytes + item_bytes(&items[first + count]) <= batch_bytes) {
            bytes += item_bytes(&items[first + count]);
            n_jobs += items[first + count].n_configs;
            count++;
        }
        if (count > cap_items) {
            free(b.load);
            free(norms);
            free(b.remaining);
            b.load = calloc(count, sizeof *b.load);
            norms = calloc(count, sizeof *norms);
            b.remaining = calloc(count, sizeof *b.remaining);
            cap_items = count;
        }
        if (n_jobs > cap_jobs) {
            free(b.jobs);
            free(b.outcomes);
            b.jobs = malloc(sizeof *b.jobs * n_jobs);
            b.outcomes = malloc(sizeof *b.outcomes * n_jobs);
            cap_jobs = n_jobs;
        }
        if (!b.load || !norms || !b.remaining || (n_jobs && (!b.jobs || !b.outcomes))) {
            st = fr_fail(err, FR_E_NOMEM, "cannot allocate the cpu executor's batch");
            break;
        }
        memset(b.load, 0, sizeof *b.load * count);
        memset(norms, 0, sizeof *norms * count);
        b.first = first;
        b.count = count;

        par_ctx ctx = {&b, norms};
        fr_parallel_for(pool, (int64_t)count, 1, load_range, &ctx);

        /* norms (or why an item is skipped) before its outcomes */
        b.n_jobs = 0;
        for (size_t k = 0; k < count; k++) {
            b.remaining[k] = 0;
            if (b.load[k].w) {
                if (sink->item_norm)
                    sink->item_norm(sink->ctx, first + k, norms[k].sq_ref);
                for (size_t c = 0; c < items[first + k].n_configs; c++)
                    b.jobs[b.n_jobs++] = (job){first + k, c};
                b.remaining[k] = items[first + k].n_configs;
            } else if (sink->item_skipped) {
                sink->item_skipped(sink->ctx, first + k, b.load[k].status, b.load[k].reason);
            }
            if (b.remaining[k] == 0 && sink->item_done)
                sink->item_done(sink->ctx, first + k, items[first + k].tensor->nbytes);
        }
        /* one job per thread, unless a float32 output per thread is too much
         * memory: then jobs in turn, each parallel inside */
        if (count == 1 && item_bytes(&items[first]) * (size_t)threads > parallel_bytes) {
            for (size_t j = 0; j < b.n_jobs && !b.stopped; j++) {
                run_job(&b, &b.jobs[j], &b.outcomes[j], pool);
                report_job(&b, j);
            }
        } else {
            fr_parallel_for(pool, (int64_t)b.n_jobs, 1, jobs_range, &b);
        }
        for (size_t k = 0; k < count; k++) {
            const fr_sweep_item *it = &items[first + k];
            free(b.load[k].w);
            b.load[k].w = NULL;
            free(b.load[k].flags);
            free(b.load[k].detail);
            b.load[k].flags = NULL;
            b.load[k].detail = NULL;
            if (it->tensor->encoding != FR_ENC_SYNTHETIC)
                fr_tensor_release(it->src, it->tensor);
        }
        if (b.stopped) {
            st = FR_E_INTERRUPT;
            break;
        }
        first += count;
    }
    free(b.load);
    free(norms);
    free(b.remaining);
    free(b.jobs);
    free(b.outcomes);
    pthread_mutex_destroy(&b.sink_lock);
    fr_pool_destroy(pool);
    if (st == FR_E_INTERRUPT)
        fr_fail(err, FR_E_INTERRUPT, "interrupted");
    return st;
}
