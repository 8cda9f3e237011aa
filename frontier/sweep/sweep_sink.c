/* The row sink of a sweep (frontier/sweep/sweep_sink.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/log.h"
#include "frontier/exec/metrics.h"
#include "frontier/sweep/gguf_fallback.h"
#include "frontier/sweep/sweep_sink.h"

/* What one outcome measured: a tensor's, made into its row at once, or one
 * expert's of one configuration, kept until every expert of the stack has
 * reported (the stack's row sums them in expert order, so it does not
 * depend on the order outcomes arrive in). */
typedef struct measured {
    frontier_error_sums sums;
    double out_sq_err, out_sq_ref, seconds;
    uint32_t flags; /* FR_ROW_* of this expert */
    char device[16];
} measured;

/* What the experts of an expert stack (fr_plan_stack) reported. */
typedef struct fr_expert_tally {
    size_t n_configs;        /* of each expert's item (set by the first outcome) */
    measured *slots;         /* [n_configs x n_experts], while configurations are open */
    uint32_t *arrived;       /* per config: experts reported */
    uint8_t *failed;         /* per config: some expert failed (recorded once) */
    size_t n_closed;         /* configurations whose row is written or dropped */
    double *norms;           /* per expert: sum w^2 */
    uint32_t n_norms;
    int skipped;             /* some expert was skipped: the tensor is (recorded once) */
} fr_expert_tally;

static double rel_err_of(double sq_err, double sq_ref)
{
    if (sq_ref > 0)
        return sqrt(sq_err / sq_ref);
    return sq_err > 0 ? INFINITY : 0.0;
}

static void measured_of(const fr_sweep_outcome *o, measured *x)
{
    x->sums = o->sums;
    x->out_sq_err = o->out_sq_err;
    x->out_sq_ref = o->out_sq_ref;
    x->seconds = o->seconds;
    x->flags = o->flags;
    snprintf(x->device, sizeof x->device, "%s", o->device);
}

/* The size of configuration ref on a rows x cols matrix of tensor `name`:
 * the quantizer's size_bits, through the registry's checked call (an error
 * code or a size outside [1, 2^63) is a failure). */
static fr_status size_bits_of(const fr_row_sink *s, const fr_config_ref *ref, int64_t rows,
                              int64_t cols, const char *name, uint64_t *bits, fr_error *err)
{
    frontier_call call;
    fr_call_init(&call, NULL, s->seed, name, ref->cfg->name);
    fr_status st = fr_quantizer_size_bits(s->plan->scope.reg, ref, rows, cols, name, &call, bits,
                                          err);
    fr_call_release(&call);
    return st;
}

/* A row (expert < 0: a tensor's own row in /results; else that expert's
 * row of an expert stack in /expert_results, --split-experts) of what x
 * measured, total_bits the size of its numel weights. */
static void add_row(fr_row_sink *s, uint32_t tensor_id, uint32_t config_id, uint64_t total_bits,
                    double numel, const measured *x, int64_t expert)
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
    fr_status st = expert < 0 ? fr_dataset_add_result(s->ds, &row, &err)
                              : fr_dataset_add_expert_result(s->ds, &row, (uint32_t)expert, &err);
    if (st != FR_OK)
        fr_sweep_commit_fail(s->committer, &err);
    if (st == FR_OK && expert < 0)
        s->stats->n_rows_new++;
}

static void record_failure(fr_row_sink *s, size_t item, const char *config, size_t config_index,
                           const char *reason)
{
    const fr_sweep_item *it = &s->plan->items[item];
    fr_error err = {0};
    fr_ds_skipped row = {.source_id = s->plan->entries[item].source_id, .name = it->tensor->name,
                         .reason = (char *)(uintptr_t)reason, .config = (char *)(uintptr_t)config};
    if (fr_dataset_add_skipped(s->ds, &row, &err) != FR_OK)
        fr_sweep_commit_fail(s->committer, &err);
    if (!config[0]) {
        fr_sweep_commit_clear_progress(s->committer);
        fr_warn("skipping '%s' in '%s': %s", it->tensor->name, it->src->path, reason);
        return;
    }
    s->stats->n_failed++;
    size_t *count = &s->warnings[config_index];
    if (*count < FR_WARNINGS_PER_CONFIG) {
        /* the reason names the configuration and the tensor already */
        fr_sweep_commit_clear_progress(s->committer);
        fr_warn("'%s': %s", it->src->path, reason);
    } else if (*count == FR_WARNINGS_PER_CONFIG) {
        fr_sweep_commit_clear_progress(s->committer);
        fr_warn("further failures of '%s' are recorded in /skipped only", config);
    }
    (*count)++;
}

static size_t selected_index(const fr_row_sink *s, const fr_config_ref *ref)
{
    for (size_t j = 0; j < s->plan->scope.n_configs; j++)
        if (s->plan->scope.configs[j] == ref)
            return j;
    return 0;
}

static void on_expert_outcome(fr_row_sink *s, const fr_sweep_outcome *o);

/* ---- numeric edge cases: kept per (item, config), reported per item ---- */

static void keep_numeric_flags(fr_row_sink *s, const fr_sweep_outcome *o)
{
    if (!o->flags)
        return;
    if (!s->item_flags) {
        size_t n = 0;
        for (size_t k = 0; k < s->plan->n_items; k++)
            if (s->plan->entries[k].first_config + s->plan->items[k].n_configs > n)
                n = s->plan->entries[k].first_config + s->plan->items[k].n_configs;
        s->item_flags = calloc(n + 1, sizeof *s->item_flags);
        s->item_scale = calloc(n + 1, sizeof *s->item_scale);
        s->n_item_flags = s->item_flags && s->item_scale ? n : 0;
    }
    size_t at = s->plan->entries[o->item].first_config + o->config;
    if (at < s->n_item_flags) {
        s->item_flags[at] = o->flags;
        s->item_scale[at] = (fr_scale_detail){o->scale_largest, o->scale_smallest};
    }
}

static void emit_numeric_warning(void *ctx, const char *line)
{
    fr_row_sink *s = ctx;
    fr_sweep_commit_clear_progress(s->committer);
    fr_warn("%s", line);
}

/* One warning line per (tensor, kind of problem): the item's configurations
 * grouped by scale dtype (frontier/exec/numeric_flags.c). */
static void report_numeric_flags(fr_row_sink *s, size_t item)
{
    const fr_sweep_item *it = &s->plan->items[item];
    size_t first = s->plan->entries[item].first_config, n = it->n_configs;
    if (!s->n_item_flags || first + n > s->n_item_flags)
        return;
    uint32_t tensor_flags = 0;
    for (size_t c = 0; c < n; c++)
        tensor_flags |= s->item_flags[first + c];
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
        fr_numeric_report(it->tensor->name, tensor_flags, n, names, refs, &s->item_flags[first],
                          &s->item_scale[first], emit_numeric_warning, s);
    }
    free(rules);
    free(refs);
    free(names);
}

static void on_outcome(void *ctx, const fr_sweep_outcome *o)
{
    fr_row_sink *s = ctx;
    if (o->item >= s->plan->n_items || o->config >= s->plan->items[o->item].n_configs)
        return;
    if (s->plan->entries[o->item].stack != FR_PLAN_NO_STACK) {
        on_expert_outcome(s, o);
        return;
    }
    const fr_sweep_item *it = &s->plan->items[o->item];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(s, ref);
    if (o->status != FR_OK) {
        record_failure(s, o->item, ref->cfg->name, j, o->error);
        return;
    }
    uint64_t total_bits = 0;
    fr_error serr = {0};
    if (size_bits_of(s, ref, it->rows, it->cols, it->tensor->name, &total_bits, &serr) != FR_OK) {
        record_failure(s, o->item, ref->cfg->name, j, serr.msg);
        return;
    }
    const fr_plan_entry *entry = &s->plan->entries[o->item];
    measured x;
    measured_of(o, &x);
    if (fr_gguf_fallback_type(ref, it->cols))
        x.flags |= FR_ROW_GGUF_FALLBACK;
    keep_numeric_flags(s, o);
    add_row(s, s->ds->tensors[entry->ds_tensor].tensor_id,
            s->plan->item_config_ids[entry->first_config + o->config], total_bits,
            (double)(it->rows * it->cols), &x, -1);
    fr_sweep_commit_due(s->committer);
}

/* The experts' outcomes xs[0..n) of one configuration as the stack's:
 * error sums add in expert order, max_abs_err is the max, times add; a flag
 * that is a fact of any expert is the stack's, "checked" and "all zero"
 * only when they hold for every expert. */
static void sum_experts(const measured *xs, uint32_t n, measured *sum)
{
    *sum = xs[0];
    sum->seconds = 0.0;
    fr_error_sums_init(&sum->sums);
    sum->out_sq_err = 0.0;
    sum->out_sq_ref = 0.0;
    const uint32_t all_of = FR_ROW_CHECKED | FR_ROW_ALL_ZERO;
    sum->flags = all_of;
    for (uint32_t k = 0; k < n; k++)
        sum->flags = (sum->flags & (xs[k].flags | ~all_of)) | (xs[k].flags & ~all_of);
    for (uint32_t k = 0; k < n; k++) {
        sum->sums.sq_err += xs[k].sums.sq_err;
        sum->sums.sq_ref += xs[k].sums.sq_ref;
        sum->sums.sq_hat += xs[k].sums.sq_hat;
        sum->sums.dot += xs[k].sums.dot;
        if (xs[k].sums.max_abs_err > sum->sums.max_abs_err || k == 0)
            sum->sums.max_abs_err = xs[k].sums.max_abs_err;
        sum->out_sq_err += xs[k].out_sq_err;
        sum->out_sq_ref += xs[k].out_sq_ref;
        sum->seconds += xs[k].seconds;
    }
}

/* Configuration c of the expert stack of item `item`, every expert of which
 * reported it without failure: the stack's row (its size E x size_bits of
 * one expert) and, with --split-experts, each expert's. */
static void add_stack_rows(fr_row_sink *s, size_t item, size_t c)
{
    const fr_sweep_item *it = &s->plan->items[item];
    const fr_plan_entry *entry = &s->plan->entries[item];
    const fr_plan_stack *stack = &s->plan->stacks[entry->stack];
    const fr_config_ref *ref = it->configs[c];
    uint64_t expert_bits = 0, total_bits = 0;
    fr_error serr = {0};
    fr_status st = size_bits_of(s, ref, stack->rows, stack->cols, it->tensor->name, &expert_bits,
                                &serr);
    if (st == FR_OK &&
        __builtin_mul_overflow(expert_bits, (uint64_t)stack->n_experts, &total_bits))
        st = fr_fail(&serr, FR_E_FAIL,
                     "config '%s' on tensor '%s': the size of %u experts overflows 64 bits",
                     ref->cfg->name, it->tensor->name, stack->n_experts);
    if (st != FR_OK) {
        record_failure(s, item, ref->cfg->name, selected_index(s, ref), serr.msg);
        return;
    }
    const measured *xs = &s->tallies[entry->stack].slots[c * stack->n_experts];
    measured sum;
    sum_experts(xs, stack->n_experts, &sum);
    uint32_t tensor_id = s->ds->tensors[stack->ds_tensor].tensor_id;
    uint32_t config_id = s->plan->item_config_ids[entry->first_config + c];
    double numel = (double)(stack->rows * stack->cols);
    add_row(s, tensor_id, config_id, total_bits, numel * stack->n_experts, &sum, -1);
    if (s->split_experts)
        for (uint32_t k = 0; k < stack->n_experts; k++)
            add_row(s, tensor_id, config_id, expert_bits, numel, &xs[k], k);
}

/* One expert's outcome of an expert stack. Once every expert of the stack
 * has reported a configuration, the tensor's row is their sum in expert
 * order (error sums add, max_abs_err is the max, sizes add: E x size_bits
 * of one expert), and with --split-experts each expert's own row follows.
 * A failure of any expert is recorded once and the pair has no row. */
static void on_expert_outcome(fr_row_sink *s, const fr_sweep_outcome *o)
{
    const fr_sweep_item *it = &s->plan->items[o->item];
    const fr_plan_stack *stack = &s->plan->stacks[s->plan->entries[o->item].stack];
    fr_expert_tally *g = &s->tallies[s->plan->entries[o->item].stack];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(s, ref);
    uint32_t e = s->plan->entries[o->item].expert;
    if (!g->slots) {
        g->n_configs = it->n_configs;
        g->slots = calloc(g->n_configs * stack->n_experts, sizeof *g->slots);
        g->arrived = calloc(g->n_configs, sizeof *g->arrived);
        g->failed = calloc(g->n_configs, 1);
        if (!g->slots || !g->arrived || !g->failed) {
            fr_error oom = {0};
            fr_fail(&oom, FR_E_NOMEM, "out of memory");
            fr_sweep_commit_fail(s->committer, &oom);
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
            record_failure(s, o->item, ref->cfg->name, j, why);
        }
        g->failed[c] = 1;
    } else {
        measured *slot = &g->slots[c * stack->n_experts + e];
        measured_of(o, slot);
        if (fr_gguf_fallback_type(ref, stack->cols))
            slot->flags |= FR_ROW_GGUF_FALLBACK;
    }
    if (++g->arrived[c] < stack->n_experts)
        return;
    if (!g->failed[c] && !g->skipped)
        add_stack_rows(s, o->item, c);
    if (++g->n_closed == g->n_configs) {
        free(g->slots);
        free(g->arrived);
        free(g->failed);
        g->slots = NULL;
        g->arrived = NULL;
        g->failed = NULL;
    }
    fr_sweep_commit_due(s->committer);
}

static void on_item_skipped(void *ctx, size_t item, fr_status status, const char *reason)
{
    fr_row_sink *s = ctx;
    (void)status;
    if (item >= s->plan->n_items)
        return;
    if (s->plan->entries[item].stack != FR_PLAN_NO_STACK) {
        /* one expert unreadable (NaN weights): the stack is skipped as a
         * whole, once; its other experts' outcomes never make a row */
        fr_expert_tally *g = &s->tallies[s->plan->entries[item].stack];
        if (g->skipped)
            return;
        g->skipped = 1;
        char why[320];
        snprintf(why, sizeof why, "expert %u: %s", s->plan->entries[item].expert, reason);
        s->ds->tensors[s->plan->stacks[s->plan->entries[item].stack].ds_tensor].sq_norm = NAN;
        s->stats->n_skipped++;
        if (s->stats->n_selected)
            s->stats->n_selected--;
        record_failure(s, item, "", 0, why);
        return;
    }
    s->ds->tensors[s->plan->entries[item].ds_tensor].sq_norm = NAN;
    s->stats->n_skipped++;
    if (s->stats->n_selected)
        s->stats->n_selected--;
    record_failure(s, item, "", 0, reason);
}

static void on_item_norm(void *ctx, size_t item, double sq_norm)
{
    fr_row_sink *s = ctx;
    if (item >= s->plan->n_items)
        return;
    if (s->plan->entries[item].stack != FR_PLAN_NO_STACK) {
        /* the stack's norm: the experts' norms summed in expert order once
         * all are known (so it equals the sq_ref of its rows bit for bit) */
        const fr_plan_stack *stack = &s->plan->stacks[s->plan->entries[item].stack];
        fr_expert_tally *g = &s->tallies[s->plan->entries[item].stack];
        g->norms[s->plan->entries[item].expert] = sq_norm;
        if (++g->n_norms == stack->n_experts && !g->skipped) {
            double sum = 0.0;
            for (uint32_t e = 0; e < stack->n_experts; e++)
                sum += g->norms[e];
            s->ds->tensors[stack->ds_tensor].sq_norm = sum;
        }
        return;
    }
    s->ds->tensors[s->plan->entries[item].ds_tensor].sq_norm = sq_norm;
}

static void on_item_done(void *ctx, size_t item, uint64_t bytes)
{
    fr_row_sink *s = ctx;
    if (item < s->plan->n_items)
        report_numeric_flags(s, item);
    fr_sweep_commit_item_done(s->committer, bytes);
}

static int on_cancelled(void *ctx)
{
    fr_row_sink *s = ctx;
    return (s->stop && *s->stop) || fr_sweep_commit_failed(s->committer);
}

/* ---- the sink ---- */

fr_status fr_row_sink_init(fr_row_sink *s, const fr_sweep_plan *plan, fr_dataset *ds,
                           fr_sweep_stats *stats, fr_sweep_committer *committer,
                           const fr_sweep_options *opt, fr_error *err)
{
    *s = (fr_row_sink){.plan = plan, .ds = ds, .stats = stats, .committer = committer,
                       .seed = opt->seed, .split_experts = opt->split_experts,
                       .stop = opt->stop};
    s->warnings = calloc(plan->scope.n_configs + 1, sizeof *s->warnings);
    s->tallies = calloc(plan->n_stacks + 1, sizeof *s->tallies);
    if (!s->warnings || !s->tallies)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t g = 0; g < plan->n_stacks; g++) {
        s->tallies[g].norms = calloc(plan->stacks[g].n_experts, sizeof *s->tallies[g].norms);
        if (!s->tallies[g].norms)
            return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    return FR_OK;
}

fr_sweep_sink fr_row_sink_callbacks(fr_row_sink *s)
{
    return (fr_sweep_sink){.ctx = s, .outcome = on_outcome, .item_skipped = on_item_skipped,
                           .item_done = on_item_done, .item_norm = on_item_norm,
                           .cancelled = on_cancelled};
}

void fr_row_sink_free(fr_row_sink *s)
{
    for (size_t g = 0; s->tallies && g < s->plan->n_stacks; g++) {
        free(s->tallies[g].slots);
        free(s->tallies[g].arrived);
        free(s->tallies[g].failed);
        free(s->tallies[g].norms);
    }
    free(s->tallies);
    free(s->warnings);
    free(s->item_flags);
    free(s->item_scale);
    *s = (fr_row_sink){0};
}
