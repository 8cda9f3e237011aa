/*
 * The sweep engine (frontier/sweep/sweep.h): selection, plan, rows, commits.
 *
 * Crash safety: the dataset lives in memory and is committed as a whole
 * file with fr_dataset_write (tmp + fsync + rename) right after planning and
 * then every commit interval, so the output always holds every row up to
 * the last commit. --resume reads it back, checks it was made from the same
 * sources and configurations, and plans only the missing (tensor,
 * configuration) pairs. Rows are ordered by (tensor_id, config_id) at every
 * commit, so a resumed run writes the same rows as an uninterrupted one.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/calib.h"
#include "core/call.h"
#include "core/classify.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/synthetic.h"
#include "frontier/exec/blocked.h"
#include "frontier/model/calib_attach.h"
#include "frontier/dataset/dataset_write.h"
#include "frontier/dataset/source_identity.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/executor.h"
#include "frontier/model/fused_scale.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/numeric_flags.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_commit.h"
#include "frontier/sweep/sweep_plan.h"
#include "frontier/sweep/sweep_select.h"
#include "quantizers/families.h"
#include "frontier/dataset/dataset_schema.h"

#ifdef FRONTIER_HAVE_CUDA
#include "kernels/launchers.h" /* fr_cuda_device_count */
#define FR_SWEEP_HAVE_CUDA 1
#endif

/* Warnings per configuration before further failures go to /skipped only. */
#define FR_WARNINGS_PER_CONFIG 3

/* One expert's outcome of one configuration, kept until every expert of
 * the stack has reported: the tensor's row sums them in expert order, so
 * it does not depend on the order outcomes arrive in. */
typedef struct expert_slot {
    frontier_error_sums sums;
    double out_sq_err, out_sq_ref, seconds;
    uint32_t flags; /* FR_ROW_* of this expert */
    char device[16];
} expert_slot;

/* What the experts of an expert stack (fr_plan_stack) reported. */
typedef struct expert_tally {
    size_t n_configs;        /* of each expert's item (set by the first outcome) */
    expert_slot *slots;      /* [n_configs x n_experts], while configurations are open */
    uint32_t *arrived;       /* per config: experts reported */
    uint8_t *failed;         /* per config: some expert failed (recorded once) */
    size_t n_closed;         /* configurations whose row is written or dropped */
    double *norms;           /* per expert: sum w^2 */
    uint32_t n_norms;
    int skipped;             /* some expert was skipped: the tensor is (recorded once) */
} expert_tally;

struct fr_sweep {
    const fr_registry *reg;
    fr_sweep_options opt;
    const fr_config_ref **configs; /* selected */
    size_t n_configs;
    fr_tensor_filter filter;       /* --include, --exclude */
    int device;                    /* -1: CPU, else the CUDA device index */
    const fr_source **sources;
    size_t n_sources;

    fr_dataset ds;
    fr_sweep_stats stats;

    fr_sweep_plan plan;            /* the items, their tensors and configurations */
    size_t *warnings;              /* per selected config */
    expert_tally *tallies;         /* per expert stack of the plan */

    fr_sweep_committer committer;  /* commits, progress, the first failure */

    /* numeric edge cases (frontier/exec/numeric_flags.h): per (item, config)
     * of the flat plan, the outcome's flags and scale quotients, gathered
     * for the item's warning lines */
    uint32_t *item_flags;
    fr_scale_detail *item_scale;
    size_t n_item_flags;
};

/* ---- device ---- */

static fr_status parse_device(const char *text, int *device, fr_error *err)
{
    const char *d = text ? text : "auto";
    int want_cuda = -2; /* -2: auto */
    if (!strcmp(d, "cpu")) {
        *device = -1;
        return FR_OK;
    }
    if (!strcmp(d, "cuda")) {
        want_cuda = 0;
    } else if (!strncmp(d, "cuda:", 5)) {
        char *end = NULL;
        errno = 0;
        long n = strtol(d + 5, &end, 10);
        if (errno || end == d + 5 || *end || n < 0 || n > 1024)
            return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (auto, cpu, cuda or cuda:N)", d);
        want_cuda = (int)n;
    } else if (strcmp(d, "auto") != 0) {
        return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (auto, cpu, cuda or cuda:N)", d);
    }
#ifdef FR_SWEEP_HAVE_CUDA
    int count = fr_cuda_device_count();
    if (want_cuda == -2) {
        *device = count > 0 ? 0 : -1;
        return FR_OK;
    }
    if (count <= 0)
        return fr_fail(err, FR_E_DEVICE, "--device %s: no CUDA device is available", d);
    if (want_cuda >= count)
        return fr_fail(err, FR_E_DEVICE, "--device %s: there are only %d CUDA devices", d, count);
    *device = want_cuda;
    return FR_OK;
#else
    if (want_cuda == -2) {
        *device = -1;
        return FR_OK;
    }
    return fr_fail(err, FR_E_DEVICE, "--device %s: this frontier was built without CUDA", d);
#endif
}

/* ---- creation ---- */

fr_status fr_sweep_create(const fr_registry *reg, const fr_sweep_options *opt, fr_sweep **out,
                          fr_error *err)
{
    fr_status st = FR_OK;
    *out = NULL;
    if (!opt->output || !*opt->output)
        return fr_fail(err, FR_E_USAGE, "no output file (-o FILE.h5)");
    if (opt->min_numel < 0)
        return fr_fail(err, FR_E_USAGE, "--min-numel must not be negative");
    fr_sweep *sw = calloc(1, sizeof *sw);
    if (!sw)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    sw->reg = reg;
    sw->opt = *opt;
    sw->device = -1;
    if ((st = fr_sweep_select_configs(reg, opt->bits, opt->quantizers, opt->calib != NULL, &sw->configs,
                                      &sw->n_configs, err)) != FR_OK)
        goto fail;
    if (opt->fused_global_scale &&
        (st = fr_sweep_select_fused(reg, &sw->configs, &sw->n_configs, err)) != FR_OK)
        goto fail;
    if ((st = fr_tensor_filter_compile(&sw->filter, opt->include, opt->exclude, err)) != FR_OK)
        goto fail;
    if ((st = parse_device(opt->device, &sw->device, err)) != FR_OK)
        goto fail;
    /* the output: refused early, before any work, when it exists and
     * --resume was not given; left untouched either way */
    struct stat sb;
    if (stat(opt->output, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = fr_fail(err, FR_E_OUTPUT, "'%s' is a folder; -o names the dataset file to write",
                     opt->output);
        goto fail;
    }
    if (access(opt->output, F_OK) == 0 && !opt->resume) {
        st = fr_fail(err, FR_E_OUTPUT,
                     "'%s' already exists; use --resume to continue it, or choose another output",
                     opt->output);
        goto fail;
    }
    sw->stats.n_configs = sw->n_configs;
    *out = sw;
    return FR_OK;
fail:
    fr_sweep_destroy(sw);
    return st;
}

fr_status fr_sweep_add_source(fr_sweep *sw, const fr_source *src, fr_error *err)
{
    const fr_source **grown = realloc(sw->sources, sizeof *grown * (sw->n_sources + 1));
    if (!grown)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    sw->sources = grown;
    sw->sources[sw->n_sources++] = src;
    return FR_OK;
}

void fr_sweep_destroy(fr_sweep *sw)
{
    if (!sw)
        return;
    fr_tensor_filter_free(&sw->filter);
    free(sw->configs);
    free(sw->sources);
    fr_dataset_free(&sw->ds);
    free(sw->warnings);
    free(sw->item_flags);
    free(sw->item_scale);
    for (size_t g = 0; sw->tallies && g < sw->plan.n_stacks; g++) {
        free(sw->tallies[g].slots);
        free(sw->tallies[g].arrived);
        free(sw->tallies[g].failed);
        free(sw->tallies[g].norms);
    }
    free(sw->tallies);
    fr_sweep_plan_free(&sw->plan);
    free(sw);
}

const fr_dataset *fr_sweep_dataset(const fr_sweep *sw)
{
    return &sw->ds;
}

const fr_sweep_stats *fr_sweep_get_stats(const fr_sweep *sw)
{
    return &sw->stats;
}

/* ---- the sink ---- */

static double rel_err_of(double sq_err, double sq_ref)
{
    if (sq_ref > 0)
        return sqrt(sq_err / sq_ref);
    return sq_err > 0 ? INFINITY : 0.0;
}

static void record_failure(fr_sweep *sw, size_t item, const char *config, size_t config_index,
                           const char *reason)
{
    const fr_sweep_item *it = &sw->plan.items[item];
    fr_error err = {0};
    fr_ds_skipped row = {.source_id = sw->plan.entries[item].source_id, .name = it->tensor->name,
                         .reason = (char *)(uintptr_t)reason, .config = (char *)(uintptr_t)config};
    if (fr_dataset_add_skipped(&sw->ds, &row, &err) != FR_OK)
        fr_sweep_commit_fail(&sw->committer, &err);
    if (!config[0]) {
        fr_sweep_commit_clear_progress(&sw->committer);
        fr_warn("skipping '%s' in '%s': %s", it->tensor->name, it->src->path, reason);
        return;
    }
    sw->stats.n_failed++;
    size_t *count = &sw->warnings[config_index];
    if (*count < FR_WARNINGS_PER_CONFIG) {
        /* the reason names the configuration and the tensor already */
        fr_sweep_commit_clear_progress(&sw->committer);
        fr_warn("'%s': %s", it->src->path, reason);
    } else if (*count == FR_WARNINGS_PER_CONFIG) {
        fr_sweep_commit_clear_progress(&sw->committer);
        fr_warn("further failures of '%s' are recorded in /skipped only", config);
    }
    (*count)++;
}

static size_t selected_index(const fr_sweep *sw, const fr_config_ref *ref)
{
    for (size_t j = 0; j < sw->n_configs; j++)
        if (sw->configs[j] == ref)
            return j;
    return 0;
}

static void on_expert_outcome(fr_sweep *sw, const fr_sweep_outcome *o);

/* ---- numeric edge cases: kept per (item, config), reported per item ---- */

static void keep_numeric_flags(fr_sweep *sw, const fr_sweep_outcome *o)
{
    if (!o->flags)
        return;
    if (!sw->item_flags) {
        size_t n = 0;
        for (size_t k = 0; k < sw->plan.n_items; k++)
            if (sw->plan.entries[k].first_config + sw->plan.items[k].n_configs > n)
                n = sw->plan.entries[k].first_config + sw->plan.items[k].n_configs;
        sw->item_flags = calloc(n + 1, sizeof *sw->item_flags);
        sw->item_scale = calloc(n + 1, sizeof *sw->item_scale);
        sw->n_item_flags = sw->item_flags && sw->item_scale ? n : 0;
    }
    size_t at = sw->plan.entries[o->item].first_config + o->config;
    if (at < sw->n_item_flags) {
        sw->item_flags[at] = o->flags;
        sw->item_scale[at] = (fr_scale_detail){o->scale_largest, o->scale_smallest};
    }
}

static void emit_numeric_warning(void *ctx, const char *line)
{
    fr_sweep *sw = ctx;
    fr_sweep_commit_clear_progress(&sw->committer);
    fr_warn("%s", line);
}

/* One warning line per (tensor, kind of problem): the item's configurations
 * grouped by scale dtype (frontier/exec/numeric_flags.c). */
static void report_numeric_flags(fr_sweep *sw, size_t item)
{
    const fr_sweep_item *it = &sw->plan.items[item];
    size_t first = sw->plan.entries[item].first_config, n = it->n_configs;
    if (!sw->n_item_flags || first + n > sw->n_item_flags)
        return;
    uint32_t tensor_flags = 0;
    for (size_t c = 0; c < n; c++)
        tensor_flags |= sw->item_flags[first + c];
    if (!(tensor_flags & (FR_ROW_ALL_ZERO | FR_ROW_SUBNORMAL | FR_ROW_SCALE_OVERFLOW |
                          FR_ROW_SCALE_UNDERFLOW)))
        return;
    fr_scale_rule *rules = calloc(n, sizeof *rules);
    const fr_scale_rule **refs = calloc(n, sizeof *refs);
    const char **names = calloc(n, sizeof *names);
    if (rules && refs && names) {
        for (size_t c = 0; c < n; c++) {
            fr_scale_rule_parse(it->configs[c]->cfg->params_json, &rules[c]);
            refs[c] = &rules[c];
            names[c] = it->configs[c]->cfg->name;
        }
        fr_numeric_report(it->tensor->name, tensor_flags, n, names, refs, &sw->item_flags[first],
                          &sw->item_scale[first], emit_numeric_warning, sw);
    }
    free(rules);
    free(refs);
    free(names);
}

static void on_outcome(void *ctx, const fr_sweep_outcome *o)
{
    fr_sweep *sw = ctx;
    if (o->item >= sw->plan.n_items || o->config >= sw->plan.items[o->item].n_configs)
        return;
    if (sw->plan.entries[o->item].stack != FR_PLAN_NO_STACK) {
        on_expert_outcome(sw, o);
        return;
    }
    const fr_sweep_item *it = &sw->plan.items[o->item];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(sw, ref);
    if (o->status != FR_OK) {
        record_failure(sw, o->item, ref->cfg->name, j, o->error);
        return;
    }
    /* the size comes from the quantizer's size_bits, through the registry's
     * checked call (an error code or a size outside [1, 2^63) is a failure) */
    uint64_t total_bits = 0;
    frontier_call call;
    fr_error serr = {0};
    fr_call_init(&call, NULL, sw->opt.seed, it->tensor->name, ref->cfg->name);
    fr_status st = fr_quantizer_size_bits(sw->reg, ref, it->rows, it->cols, it->tensor->name,
                                          &call, &total_bits, &serr);
    fr_call_release(&call);
    if (st != FR_OK) {
        record_failure(sw, o->item, ref->cfg->name, j, serr.msg);
        return;
    }
    fr_metrics m;
    fr_metrics_from_sums(&o->sums, &m);
    double numel = (double)(it->rows * it->cols);
    fr_ds_result row = {
        .tensor_id = sw->ds.tensors[sw->plan.entries[o->item].ds_tensor].tensor_id,
        .config_id = sw->plan.item_config_ids[sw->plan.entries[o->item].first_config + o->config],
        .bits_per_weight = (double)total_bits / numel,
        .total_bits = total_bits,
        .rel_err = m.rel_err,
        .sqnr_db = m.sqnr_db,
        .max_abs_err = m.max_abs_err,
        .cosine = m.cosine,
        .out_rel_err = isnan(o->out_sq_err) || isnan(o->out_sq_ref) ? NAN : rel_err_of(o->out_sq_err, o->out_sq_ref),
        .sq_err = o->sums.sq_err,
        .out_sq_err = o->out_sq_err,
        .out_sq_ref = o->out_sq_ref,
        .seconds = o->seconds,
        .flags = o->flags,
    };
    snprintf(row.device, sizeof row.device, "%s", o->device);
    keep_numeric_flags(sw, o);
    fr_error err = {0};
    if (fr_dataset_add_result(&sw->ds, &row, &err) != FR_OK) {
        fr_sweep_commit_fail(&sw->committer, &err);
        return;
    }
    sw->stats.n_rows_new++;
    fr_sweep_commit_due(&sw->committer);
}

/* A row of an expert stack (expert < 0: the tensor's own row in /results;
 * else that expert's row in /expert_results, --split-experts). */
static void add_expert_row(fr_sweep *sw, uint32_t tensor_id, uint32_t config_id,
                           uint64_t total_bits, double numel, const expert_slot *x, int64_t expert)
{
    fr_metrics m;
    fr_metrics_from_sums(&x->sums, &m);
    fr_ds_result row = {
        .tensor_id = tensor_id,
        .config_id = config_id,
        .bits_per_weight = (double)total_bits / numel,
        .total_bits = total_bits,
        .rel_err = m.rel_err,
        .sqnr_db = m.sqnr_db,
        .max_abs_err = m.max_abs_err,
        .cosine = m.cosine,
        .out_rel_err = isnan(x->out_sq_err) || isnan(x->out_sq_ref)
                           ? NAN
                           : rel_err_of(x->out_sq_err, x->out_sq_ref),
        .sq_err = x->sums.sq_err,
        .out_sq_err = x->out_sq_err,
        .out_sq_ref = x->out_sq_ref,
        .seconds = x->seconds,
        .flags = x->flags,
    };
    snprintf(row.device, sizeof row.device, "%s", x->device);
    fr_error err = {0};
    fr_status st = expert < 0 ? fr_dataset_add_result(&sw->ds, &row, &err)
                              : fr_dataset_add_expert_result(&sw->ds, &row, (uint32_t)expert, &err);
    if (st != FR_OK)
        fr_sweep_commit_fail(&sw->committer, &err);
    if (st == FR_OK && expert < 0)
        sw->stats.n_rows_new++;
}

/* One expert's outcome of an expert stack. Once every expert of the stack
 * has reported a configuration, the tensor's row is their sum in expert
 * order (error sums add, max_abs_err is the max, sizes add: E x size_bits
 * of one expert), and with --split-experts each expert's own row follows.
 * A failure of any expert is recorded once and the pair has no row. */
static void on_expert_outcome(fr_sweep *sw, const fr_sweep_outcome *o)
{
    const fr_sweep_item *it = &sw->plan.items[o->item];
    const fr_plan_stack *stack = &sw->plan.stacks[sw->plan.entries[o->item].stack];
    expert_tally *g = &sw->tallies[sw->plan.entries[o->item].stack];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(sw, ref);
    uint32_t e = sw->plan.entries[o->item].expert;
    if (!g->slots) {
        g->n_configs = it->n_configs;
        g->slots = calloc(g->n_configs * stack->n_experts, sizeof *g->slots);
        g->arrived = calloc(g->n_configs, sizeof *g->arrived);
        g->failed = calloc(g->n_configs, 1);
        if (!g->slots || !g->arrived || !g->failed) {
            fr_error oom = {0};
            fr_fail(&oom, FR_E_NOMEM, "out of memory");
            fr_sweep_commit_fail(&sw->committer, &oom);
            return;
        }
    }
    size_t c = o->config;
    if (c >= g->n_configs)
        return;
    if (o->status != FR_OK) {
        if (!g->failed[c]) {
            char why[FR_ERROR_MSG_MAX];
            snprintf(why, sizeof why, "expert %u: %s", e, o->error);
            record_failure(sw, o->item, ref->cfg->name, j, why);
        }
        g->failed[c] = 1;
    } else {
        expert_slot *x = &g->slots[c * stack->n_experts + e];
        x->sums = o->sums;
        x->out_sq_err = o->out_sq_err;
        x->out_sq_ref = o->out_sq_ref;
        x->seconds = o->seconds;
        x->flags = o->flags;
        snprintf(x->device, sizeof x->device, "%s", o->device);
    }
    if (++g->arrived[c] < stack->n_experts)
        return;
    if (!g->failed[c] && !g->skipped) {
        uint64_t expert_bits = 0, total_bits = 0;
        frontier_call call;
        fr_error serr = {0};
        fr_call_init(&call, NULL, sw->opt.seed, it->tensor->name, ref->cfg->name);
        fr_status st = fr_quantizer_size_bits(sw->reg, ref, stack->rows, stack->cols, it->tensor->name,
                                              &call, &expert_bits, &serr);
        fr_call_release(&call);
        if (st == FR_OK && __builtin_mul_overflow(expert_bits, (uint64_t)stack->n_experts, &total_bits))
            st = fr_fail(&serr, FR_E_FAIL,
                         "config '%s' on tensor '%s': the size of %u experts overflows 64 bits",
                         ref->cfg->name, it->tensor->name, stack->n_experts);
        if (st != FR_OK) {
            record_failure(sw, o->item, ref->cfg->name, j, serr.msg);
        } else {
            const expert_slot *xs = &g->slots[c * stack->n_experts];
            expert_slot sum = xs[0];
            sum.seconds = 0.0;
            fr_error_sums_init(&sum.sums);
            sum.out_sq_err = 0.0;
            sum.out_sq_ref = 0.0;
            /* flags: a fact of any expert is the stack's; "checked" and
             * "all zero" only when they hold for every expert */
            const uint32_t all_of = FR_ROW_CHECKED | FR_ROW_ALL_ZERO;
            sum.flags = all_of;
            for (uint32_t k = 0; k < stack->n_experts; k++)
                sum.flags = (sum.flags & (xs[k].flags | ~all_of)) | (xs[k].flags & ~all_of);
            for (uint32_t k = 0; k < stack->n_experts; k++) {
                sum.sums.sq_err += xs[k].sums.sq_err;
                sum.sums.sq_ref += xs[k].sums.sq_ref;
                sum.sums.sq_hat += xs[k].sums.sq_hat;
                sum.sums.dot += xs[k].sums.dot;
                if (xs[k].sums.max_abs_err > sum.sums.max_abs_err || k == 0)
                    sum.sums.max_abs_err = xs[k].sums.max_abs_err;
                sum.out_sq_err += xs[k].out_sq_err;
                sum.out_sq_ref += xs[k].out_sq_ref;
                sum.seconds += xs[k].seconds;
            }
            uint32_t tensor_id = sw->ds.tensors[stack->ds_tensor].tensor_id;
            uint32_t config_id = sw->plan.item_config_ids[sw->plan.entries[o->item].first_config + c];
            double numel = (double)(stack->rows * stack->cols);
            add_expert_row(sw, tensor_id, config_id, total_bits, numel * stack->n_experts, &sum, -1);
            if (sw->opt.split_experts)
                for (uint32_t k = 0; k < stack->n_experts; k++)
                    add_expert_row(sw, tensor_id, config_id, expert_bits, numel, &xs[k], k);
        }
    }
    if (++g->n_closed == g->n_configs) {
        free(g->slots);
        free(g->arrived);
        free(g->failed);
        g->slots = NULL;
        g->arrived = NULL;
        g->failed = NULL;
    }
    fr_sweep_commit_due(&sw->committer);
}

static void on_item_skipped(void *ctx, size_t item, fr_status status, const char *reason)
{
    fr_sweep *sw = ctx;
    (void)status;
    if (item >= sw->plan.n_items)
        return;
    if (sw->plan.entries[item].stack != FR_PLAN_NO_STACK) {
        /* one expert unreadable (NaN weights): the stack is skipped as a
         * whole, once; its other experts' outcomes never make a row */
        expert_tally *g = &sw->tallies[sw->plan.entries[item].stack];
        if (g->skipped)
            return;
        g->skipped = 1;
        char why[320];
        snprintf(why, sizeof why, "expert %u: %s", sw->plan.entries[item].expert, reason);
        sw->ds.tensors[sw->plan.stacks[sw->plan.entries[item].stack].ds_tensor].sq_norm = NAN;
        sw->stats.n_skipped++;
        if (sw->stats.n_selected)
            sw->stats.n_selected--;
        record_failure(sw, item, "", 0, why);
        return;
    }
    sw->ds.tensors[sw->plan.entries[item].ds_tensor].sq_norm = NAN;
    sw->stats.n_skipped++;
    if (sw->stats.n_selected)
        sw->stats.n_selected--;
    record_failure(sw, item, "", 0, reason);
}

static void on_item_norm(void *ctx, size_t item, double sq_norm)
{
    fr_sweep *sw = ctx;
    if (item >= sw->plan.n_items)
        return;
    if (sw->plan.entries[item].stack != FR_PLAN_NO_STACK) {
        /* the stack's norm: the experts' norms summed in expert order once
         * all are known (so it equals the sq_ref of its rows bit for bit) */
        const fr_plan_stack *stack = &sw->plan.stacks[sw->plan.entries[item].stack];
        expert_tally *g = &sw->tallies[sw->plan.entries[item].stack];
        g->norms[sw->plan.entries[item].expert] = sq_norm;
        if (++g->n_norms == stack->n_experts && !g->skipped) {
            double sum = 0.0;
            for (uint32_t e = 0; e < stack->n_experts; e++)
                sum += g->norms[e];
            sw->ds.tensors[stack->ds_tensor].sq_norm = sum;
        }
        return;
    }
    sw->ds.tensors[sw->plan.entries[item].ds_tensor].sq_norm = sq_norm;
}

static void on_item_done(void *ctx, size_t item, uint64_t bytes)
{
    fr_sweep *sw = ctx;
    if (item < sw->plan.n_items)
        report_numeric_flags(sw, item);
    fr_sweep_commit_item_done(&sw->committer, bytes);
}

static int on_cancelled(void *ctx)
{
    fr_sweep *sw = ctx;
    return (sw->opt.stop && *sw->opt.stop) || fr_sweep_commit_failed(&sw->committer);
}

/* ---- root attributes ---- */

static fr_status set_root(fr_sweep *sw, int resuming, const char *devices, fr_error *err)
{
    fr_status st;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    if ((st = fr_dataset_set_string(&sw->ds.tool_version, FRONTIER_VERSION, err)) != FR_OK)
        return st;
    sw->ds.schema_version = FR_SCHEMA_VERSION;
    if (resuming) {
        /* the first run's created/command_line/host stay; devices gathers
         * every device that contributed rows */
        if (!strstr(sw->ds.devices ? sw->ds.devices : "", devices)) {
            size_t len = strlen(sw->ds.devices ? sw->ds.devices : "") + strlen(devices) + 3;
            char *joined = malloc(len);
            if (!joined)
                return fr_fail(err, FR_E_NOMEM, "out of memory");
            snprintf(joined, len, "%s%s%s", sw->ds.devices ? sw->ds.devices : "",
                     sw->ds.devices && sw->ds.devices[0] ? "; " : "", devices);
            free(sw->ds.devices);
            sw->ds.devices = joined;
        }
        return FR_OK;
    }
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((st = fr_dataset_set_string(&sw->ds.format, "frontier", err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.created, created, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.command_line, sw->opt.command_line, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.host, host, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.devices, devices, err)) != FR_OK)
        return st;
    return FR_OK;
}

/* ---- execution ---- */

/* The output as it stands: a new file (refused if it exists without
 * --resume), or a dataset of this schema to continue, read into sw->ds.
 * Nothing is written before every check has passed. */
static fr_status open_output(fr_sweep *sw, int *resuming, fr_error *err)
{
    *resuming = 0;
    if (sw->opt.resume && access(sw->opt.output, F_OK) == 0) {
        int64_t version = 0;
        fr_status st = fr_dataset_probe(sw->opt.output, &version, err);
        if (st != FR_OK) {
            fr_error_prefix(err, "cannot resume: ");
            return st;
        }
        if (version != FR_SCHEMA_VERSION)
            return fr_fail(err, FR_E_MISMATCH,
                           "cannot resume '%s': it has schema version %lld, this frontier writes "
                           "version %d",
                           sw->opt.output, (long long)version, FR_SCHEMA_VERSION);
        fr_dataset_free(&sw->ds);
        if ((st = fr_dataset_read(sw->opt.output, &sw->ds, err)) != FR_OK)
            return st;
        *resuming = 1;
        /* commits rewrite the file from the rows alone: tables derived from
         * the old rows would no longer match them */
        if (ds_has_derived(sw->opt.output))
            fr_warn("'%s': the derived tables under /frontier (pareto, allocate) are dropped "
                    "by --resume; run those commands again", sw->opt.output);
    } else if (sw->opt.resume) {
        fr_info("'%s' does not exist yet: starting a new run", sw->opt.output);
    } else if (access(sw->opt.output, F_OK) == 0) {
        return fr_fail(err, FR_E_OUTPUT,
                       "'%s' already exists; use --resume to continue it, or choose another output",
                       sw->opt.output);
    }
    return FR_OK;
}

/* Runs the plan on the chosen executor; the rows reach the dataset through
 * the sink as they come. Returns the executor's status (xerr its error). */
static fr_status run_executor(fr_sweep *sw, fr_error *xerr)
{
    fr_sweep_sink sink = {.ctx = sw, .outcome = on_outcome, .item_skipped = on_item_skipped,
                          .item_done = on_item_done, .item_norm = on_item_norm,
                          .cancelled = on_cancelled};
    fr_executor_options xopt = {.threads = sw->opt.threads,
                                .device = sw->device,
                                .seed = sw->opt.seed,
                                .cpu_batch_bytes = sw->opt.cpu_batch_bytes,
                                .cpu_parallel_bytes = sw->opt.cpu_parallel_bytes,
                                .max_memory = sw->opt.max_memory,
                                .cuda_buffer_bytes = sw->opt.cuda_buffer_bytes,
                                .cuda_stats = sw->opt.cuda_stats,
                                .cuda_tf32 = sw->opt.cuda_tf32};
    fr_sweep_commit_run_start(&sw->committer, sw->plan.n_items, sw->stats.bytes, sw->opt.quiet);
    fr_status xst;
    if (sw->opt.executor)
        xst = sw->opt.executor->run(sw->opt.executor->ctx, sw->reg, sw->plan.items,
                                    sw->plan.n_items, &xopt, &sink, xerr);
    else
#ifdef FR_SWEEP_HAVE_CUDA
    if (sw->device >= 0)
        xst = fr_exec_cuda(sw->reg, sw->plan.items, sw->plan.n_items, &xopt, &sink, xerr);
    else
#endif
        xst = fr_exec_cpu(sw->reg, sw->plan.items, sw->plan.n_items, &xopt, &sink, xerr);
    sw->stats.seconds = fr_sweep_commit_run_end(&sw->committer);
    return xst;
}

fr_status fr_sweep_execute(fr_sweep *sw, fr_error *err)
{
    fr_status st = FR_OK;
    int resuming = 0;
    if (sw->n_sources == 0)
        return fr_fail(err, FR_E_USAGE, "no model to sweep");

    /* a calibration file that cannot be read stops the run before the
     * output is touched */
    fr_plan_scope scope = {.reg = sw->reg, .configs = sw->configs, .n_configs = sw->n_configs,
                           .sources = sw->sources, .n_sources = sw->n_sources,
                           .filter = &sw->filter, .min_numel = sw->opt.min_numel,
                           .max_memory = sw->opt.max_memory,
                           .fused_global_scale = sw->opt.fused_global_scale,
                           .output = sw->opt.output};
    if ((st = fr_sweep_plan_open(&sw->plan, &scope, sw->opt.calib, err)) != FR_OK)
        return st;
    if ((st = open_output(sw, &resuming, err)) != FR_OK)
        return st;
    /* a resumed output is replaced by each commit, a new one created */
    fr_sweep_commit_init(&sw->committer, sw->opt.output, &sw->ds, &sw->stats,
                         sw->opt.commit_interval, resuming);

    if ((st = fr_sweep_plan_build(&sw->plan, &sw->ds, resuming, &sw->stats, err)) != FR_OK)
        return st;
    sw->warnings = calloc(sw->n_configs, sizeof *sw->warnings);
    sw->tallies = calloc(sw->plan.n_stacks + 1, sizeof *sw->tallies);
    if (!sw->warnings || !sw->tallies)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t g = 0; g < sw->plan.n_stacks; g++)
        if (!(sw->tallies[g].norms = calloc(sw->plan.stacks[g].n_experts,
                                            sizeof *sw->tallies[g].norms)))
            return fr_fail(err, FR_E_NOMEM, "out of memory");

    int threads = sw->opt.threads > 0 ? sw->opt.threads : fr_cpu_count();
    if (sw->device < 0)
        snprintf(sw->stats.device, sizeof sw->stats.device, "cpu (%d thread%s)", threads,
                 threads == 1 ? "" : "s");
    else
        snprintf(sw->stats.device, sizeof sw->stats.device, "cuda:%d%s", sw->device,
                 sw->opt.cuda_tf32 ? " tf32" : "");
    if (sw->opt.executor && sw->opt.executor->device)
        snprintf(sw->stats.device, sizeof sw->stats.device, "%s", sw->opt.executor->device);
    if ((st = set_root(sw, resuming, sw->stats.device, err)) != FR_OK)
        return st;

    if (resuming)
        fr_info("resuming '%s': %zu rows present, %zu tensors with work left", sw->opt.output,
                sw->stats.n_rows_resumed, sw->plan.n_items);
    fr_info("measuring %zu tensors x %zu configurations on %s; %zu tensors skipped%s",
            sw->stats.n_selected, sw->n_configs, sw->stats.device, sw->stats.n_skipped,
            sw->stats.n_excluded ? ", others excluded by --include/--exclude" : "");

    if (sw->stats.n_selected == 0)
        fr_warn("no tensor is selected for measurement (see /skipped in '%s')", sw->opt.output);

    /* the first commit creates the output before any work, so an
     * unwritable path fails now, not after hours */
    if ((st = fr_sweep_commit(&sw->committer, err)) != FR_OK)
        return st;

    fr_error xerr = {0};
    fr_status xst = run_executor(sw, &xerr);

    /* the final commit, whatever happened: every row measured is kept */
    fr_status cst = fr_sweep_commit_final(&sw->committer, err);
    if (cst != FR_OK)
        return cst;
    if (xst == FR_E_INTERRUPT || (sw->opt.stop && *sw->opt.stop))
        return fr_fail(err, FR_E_INTERRUPT,
                       "interrupted: %zu rows committed to '%s'; run again with --resume to finish",
                       sw->ds.n_results, sw->opt.output);
    if (xst != FR_OK) {
        *err = xerr;
        fr_error_prefix(err, "sweep stopped (%zu rows committed to '%s'): ", sw->ds.n_results,
                        sw->opt.output);
        return xst;
    }
    if (sw->stats.n_failed)
        return fr_fail(err, FR_E_FAIL, "%zu (tensor, configuration) pairs failed; see /skipped in '%s'",
                       sw->stats.n_failed, sw->opt.output);
    return FR_OK;
}
