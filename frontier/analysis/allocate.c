/*
 * Mixed-precision allocation over a dataset (docs/analysis.md, "allocate"):
 * the tensors and their measured configurations turned into a
 * multiple-choice knapsack (frontier/analysis/mckp.h), solved for one budget or a
 * range of them. What an allocation is written as is in frontier/recipe/recipe.c.
 */
#include "frontier/analysis/allocate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/calib.h"
#include "core/log.h"
#include "core/pattern.h"
#include "frontier/analysis/units.h"
#include "frontier/dataset/keep_rows.h"

static int cmp_alloc_option(const void *a, const void *b)
{
    const fr_alloc_option *x = a, *y = b;
    if (x->total_bits != y->total_bits)
        return x->total_bits < y->total_bits ? -1 : 1;
    if (x->err_term != y->err_term)
        return x->err_term < y->err_term ? -1 : 1;
    return x->config < y->config ? -1 : x->config > y->config;
}

/* The --fixed rules resolved: cfg[f] is the position of rule f's
 * configuration and re[f] its compiled pattern. *n_re counts the patterns
 * compiled, which the caller frees, also on failure. */
static fr_status compile_fixed(const fr_dataset *ds, const fr_alloc_options *opt, regex_t *re,
                               int64_t *cfg, size_t *n_re, fr_error *err)
{
    fr_status st;
    for (size_t f = 0; f < opt->n_fixed; f++) {
        cfg[f] = fr_config_position(ds, opt->fixed[f].config);
        if (cfg[f] < 0)
            return fr_fail(err, FR_E_USAGE,
                           "unknown configuration '%s' in --fixed '%s=%s': it is not in the dataset",
                           opt->fixed[f].config, opt->fixed[f].pattern, opt->fixed[f].config);
        if ((st = fr_pattern_compile(&re[f], opt->fixed[f].pattern, "--fixed", err)) != FR_OK)
            return st;
        (*n_re)++;
    }
    return FR_OK;
}

/* The --fixed rule that pins a tensor, -1 for none: the last one matching
 * wins, as in llama.cpp. */
static int64_t pinning_rule(const fr_alloc_options *opt, const regex_t *re, const char *name)
{
    int64_t rule = -1;
    for (size_t f = 0; f < opt->n_fixed; f++)
        if (regexec(&re[f], name, 0, NULL, 0) == 0)
            rule = (int64_t)f;
    return rule;
}

int fr_alloc_unit_terms(const fr_alloc_problem *prob, size_t i, size_t c, uint64_t *bits,
                        double *err_term, double *norm_term, double *cost)
{
    const fr_alloc_tensor *at = &prob->tensors[i];
    uint64_t b = 0;
    double e = 0, n = 0, k = 0;
    for (size_t m = 0; m < at->n_members; m++) {
        size_t t = at->members[m];
        const fr_ds_result *r = fr_result_at(prob->ix, t, c);
        double em, nm;
        if (!r || !fr_metric_terms(at->metric, r, &prob->ds->tensors[t], &em, &nm))
            return 0;
        b += r->total_bits;
        e += em;
        n += nm;
        if (prob->objective == FR_OBJECTIVE_SENSITIVITY) /* alpha * err^2 */
            k += nm > 0 && !isnan(at->member_alpha[m]) ? at->member_alpha[m] * em / nm : 0.0;
    }
    *bits = b;
    *err_term = e;
    *norm_term = n;
    *cost = prob->objective == FR_OBJECTIVE_SENSITIVITY ? k : e;
    return 1;
}

/* Whether the target format stores configuration c on every member of a unit. */
static int unit_storable(const fr_alloc_options *opt, const fr_dataset *ds, const size_t *members,
                         size_t n_members, size_t c)
{
    if (!opt->storable)
        return 1;
    for (size_t m = 0; m < n_members; m++)
        if (!opt->storable[members[m] * ds->n_configs + c])
            return 0;
    return 1;
}

/* Whether some member has an output error (a finite out_sq_ref) on any
 * configuration: a tensor's rows all have one or none. */
static int any_output_error(const fr_alloc_problem *prob, const size_t *members,
                            size_t n_members)
{
    for (size_t m = 0; m < n_members; m++)
        for (size_t c = 0; c < prob->ds->n_configs; c++) {
            const fr_ds_result *r = fr_result_at(prob->ix, members[m], c);
            if (r && !isnan(r->out_sq_ref))
                return 1;
        }
    return 0;
}

/* Appends the unit of tensors members[0..n_members) (one tensor, or the
 * experts of an expert unit) to prob with its undominated options, by
 * increasing bits: the pinned configuration alone when pinned >= 0 (rule
 * says which --fixed did it), else every selected one measured on all
 * members, with the metric's terms summed. A unit left without an option is
 * counted in n_dropped instead; a pinned one fails with FR_E_USAGE.
 * Whatever was appended is freed with prob. */
static fr_status add_unit(fr_alloc_problem *prob, const fr_selector *sel,
                          const fr_alloc_options *opt, const fr_alloc_objective *obj,
                          const size_t *members, size_t n_members, int64_t rule, int64_t pinned,
                          fr_error *err)
{
    const fr_dataset *ds = prob->ds;
    const fr_ds_tensor *ten = &ds->tensors[members[0]];
    size_t i = prob->n_tensors;
    fr_alloc_tensor *at = &prob->tensors[i];
    memset(at, 0, sizeof *at);
    at->tensor = members[0];
    at->norm_term = NAN;
    at->metric = prob->metric;
    at->alpha = NAN;
    at->options = malloc((ds->n_configs ? ds->n_configs : 1) * sizeof *at->options);
    at->members = malloc(n_members * sizeof *at->members);
    at->member_alpha = malloc(n_members * sizeof *at->member_alpha);
    prob->n_tensors++;
    if (!at->options || !at->members || !at->member_alpha)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    at->n_members = n_members;
    for (size_t m = 0; m < n_members; m++) {
        size_t t = members[m];
        at->members[m] = t;
        at->numel += ds->tensors[t].numel;
        at->member_alpha[m] = NAN;
        if (obj->objective == FR_OBJECTIVE_SENSITIVITY) {
            double al = obj->sensitivity ? obj->sensitivity[t] : NAN;
            at->member_alpha[m] = isnan(al) ? obj->default_sensitivity : al;
        }
    }
    if (obj->objective == FR_OBJECTIVE_SENSITIVITY) {
        /* the unit's alpha: its single member's; NaN when a member has none */
        at->alpha = n_members == 1 ? at->member_alpha[0] : 0.0;
        for (size_t m = 0; m < n_members; m++)
            if (isnan(at->member_alpha[m]))
                at->alpha = NAN;
    }
    int unstorable = 0; /* a measured option the target cannot store */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t c = 0; c < ds->n_configs; c++) {
            if (pinned >= 0 ? (int64_t)c != pinned : !fr_selector_config(sel, ds->configs[c].name))
                continue;
            uint64_t bits;
            double e, n, cost;
            if (!fr_alloc_unit_terms(prob, i, c, &bits, &e, &n, &cost))
                continue;
            if (!unit_storable(opt, ds, members, n_members, c)) {
                unstorable = 1;
                continue;
            }
            if (isnan(at->norm_term))
                at->norm_term = n;
            at->options[at->n_options++] = (fr_alloc_option){c, bits, e, cost};
        }
        /* no output error anywhere: on its weight error, when asked (not
         * an expert unit some of whose members have one: their alphas
         * were rescaled for it) */
        if (at->n_options || unstorable || !obj->weight_fallback ||
            at->metric != FR_METRIC_OUT_REL_ERR || any_output_error(prob, members, n_members))
            break;
        at->metric = FR_METRIC_REL_ERR;
    }
    if (at->n_options && at->metric != prob->metric) {
        if (!prob->fallback_example)
            prob->fallback_example = ten->name;
        prob->n_fallback++;
    }
    if (pinned >= 0) {
        const fr_alloc_fixed *fx = &opt->fixed[rule];
        if (at->n_options == 0)
            return fr_fail(err, FR_E_USAGE,
                           "--fixed '%s=%s' pins tensor '%s'%s, which has no %s result under '%s'",
                           fx->pattern, fx->config, ten->name,
                           n_members > 1 ? " (or another expert of its unit)" : "",
                           fr_metric_name(opt->metric), fx->config);
        at->fixed = 1;
    }
    if (at->n_options == 0 && unstorable) {
        /* measured, but under --target nothing the writer stores */
        if (!prob->unstorable_example)
            prob->unstorable_example = ten->name;
        prob->n_unstorable++;
    } else if (at->n_options == 0) {
        /* nothing measured for this metric (no calibration for it, say) */
        if (!prob->dropped_example)
            prob->dropped_example = ten->name;
        prob->n_dropped++;
    }
    if (at->n_options == 0) {
        free(at->options);
        free(at->members);
        free(at->member_alpha);
        prob->n_tensors--;
        return FR_OK;
    }
    qsort(at->options, at->n_options, sizeof *at->options, cmp_alloc_option);
    /* undominated: less error, or (a unit whose members have different
     * alphas) less cost than every lighter option kept */
    size_t n = 0;
    for (size_t j = 0; j < at->n_options; j++) {
        const fr_alloc_option *o = &at->options[j], *last = n ? &at->options[n - 1] : NULL;
        if (!last || o->err_term < last->err_term || o->cost < last->cost)
            at->options[n++] = *o;
        else if (o->total_bits == last->total_bits && o->err_term == last->err_term &&
                 o->cost == last->cost && fr_dataset_is_keep(ds->configs[o->config].name))
            at->options[n - 1] = *o; /* a tie: the tensor stays as released */
    }
    at->n_options = n;
    if (obj->objective == FR_OBJECTIVE_SENSITIVITY && n_members == 1)
        for (size_t j = 0; j < n; j++) /* alpha * err^2; NaN alpha is refused by the caller */
            at->options[j].cost = at->norm_term > 0 && !isnan(at->alpha)
                                      ? at->alpha * at->options[j].err_term / at->norm_term
                                      : 0.0;
    prob->numel += at->numel;
    if (at->metric == prob->metric) /* a unit on its weight error has no term of the metric */
        prob->norm_sum += at->norm_term;
    prob->min_bits += at->options[0].total_bits;
    prob->max_bits += at->options[n - 1].total_bits;
    return FR_OK;
}

fr_status fr_alloc_prepare(const fr_dataset *ds, const fr_result_index *ix,
                           const fr_alloc_options *opt, fr_alloc_problem *prob, fr_error *err)
{
    return fr_alloc_prepare_objective(ds, ix, opt, NULL, prob, err);
}

fr_status fr_alloc_prepare_objective(const fr_dataset *ds, const fr_result_index *ix,
                                     const fr_alloc_options *opt, const fr_alloc_objective *obj,
                                     fr_alloc_problem *prob, fr_error *err)
{
    static const fr_alloc_objective error_objective = {FR_OBJECTIVE_ERROR, NULL, NAN, 0};
    if (!obj)
        obj = &error_objective;
    fr_status st = FR_OK;
    fr_selector sel;
    regex_t *fixed_re = NULL;
    int64_t *fixed_cfg = NULL;
    size_t n_re = 0, *fixed_hits = NULL;
    unsigned char *keep = NULL;
    fr_units units;
    int have_units = 0;

    memset(prob, 0, sizeof *prob);
    prob->ds = ds;
    prob->ix = ix;
    prob->metric = opt->metric;
    prob->objective = obj->objective;
    prob->max_nodes = opt->max_nodes;
    prob->default_sensitivity =
        obj->objective == FR_OBJECTIVE_SENSITIVITY ? obj->default_sensitivity : NAN;
    if ((unsigned)opt->metric >= FR_METRIC_COUNT)
        return fr_fail(err, FR_E_USAGE, "unknown metric");
    if ((st = fr_selector_init(&sel, &opt->selection, err)) != FR_OK)
        return st;
    if (opt->n_fixed) {
        fixed_re = calloc(opt->n_fixed, sizeof *fixed_re);
        fixed_cfg = calloc(opt->n_fixed, sizeof *fixed_cfg);
        if (!fixed_re || !fixed_cfg)
            goto nomem;
    }
    if ((st = compile_fixed(ds, opt, fixed_re, fixed_cfg, &n_re, err)) != FR_OK)
        goto done;
    prob->tensors = calloc(ds->n_tensors + 1, sizeof *prob->tensors);
    fixed_hits = calloc(opt->n_fixed + 1, sizeof *fixed_hits);
    if (!prob->tensors || !fixed_hits)
        goto nomem;
    keep = calloc(ds->n_tensors + 1, 1);
    if (!keep)
        goto nomem;
    for (size_t t = 0; t < ds->n_tensors; t++)
        keep[t] = ds->tensors[t].numel > 0 && fr_selector_tensor(&sel, ds->tensors[t].name);
    if ((st = fr_units_build(ds, keep, opt->expert_units, &units, err)) != FR_OK)
        goto done;
    have_units = 1;
    for (size_t u = 0; u < units.n_units; u++) {
        const size_t *mem = units.member + units.first[u];
        size_t n_mem = units.first[u + 1] - units.first[u];
        int64_t rule = pinning_rule(opt, fixed_re, ds->tensors[mem[0]].name);
        for (size_t m = 1; m < n_mem; m++)
            if (pinning_rule(opt, fixed_re, ds->tensors[mem[m]].name) != rule) {
                st = fr_fail(err, FR_E_USAGE,
                             "--fixed pins '%s' and '%s' of the expert unit '%s' differently: "
                             "with --expert-units a rule pins all experts of a unit or none",
                             ds->tensors[mem[0]].name, ds->tensors[mem[m]].name, units.name[u]);
                goto done;
            }
        if (rule >= 0)
            fixed_hits[rule]++;
        if ((st = add_unit(prob, &sel, opt, obj, mem, n_mem, rule,
                           rule >= 0 ? fixed_cfg[rule] : -1, err)) != FR_OK)
            goto done;
    }
    if (obj->objective == FR_OBJECTIVE_SENSITIVITY) {
        /* every allocated tensor needs an alpha: name those without one */
        size_t n_missing = 0, len = 0;
        char names[768] = "";
        for (size_t i = 0; i < prob->n_tensors; i++)
            for (size_t k = 0; k < prob->tensors[i].n_members; k++) {
                if (!isnan(prob->tensors[i].member_alpha[k]))
                    continue;
                const char *nm = ds->tensors[prob->tensors[i].members[k]].name;
                if (len + strlen(nm) + 8 < sizeof names)
                    len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                            n_missing ? ", " : "", nm);
                else if (len + 8 < sizeof names && !strstr(names, ", ..."))
                    len += (size_t)snprintf(names + len, sizeof names - len, ", ...");
                n_missing++;
            }
        if (n_missing) {
            st = fr_fail(err, FR_E_USAGE,
                         "%zu tensor%s ha%s no sensitivity: %s (give a calibration file with "
                         "<module>.sensitivity, --default-sensitivity X, or --exclude them)",
                         n_missing, n_missing == 1 ? "" : "s", n_missing == 1 ? "s" : "ve", names);
            goto done;
        }
    }
    for (size_t f = 0; f < opt->n_fixed; f++)
        if (fixed_hits[f] == 0)
            fr_warn("--fixed '%s=%s' matches no selected tensor", opt->fixed[f].pattern,
                    opt->fixed[f].config);
    if (prob->n_tensors == 0) {
        if (opt->metric == FR_METRIC_OUT_REL_ERR)
            st = fr_fail(err, FR_E_FORMAT,
                         "no selected result has out_rel_err (sweep with --calib to measure it)");
        else
            st = fr_fail(err, FR_E_FORMAT, "no selected tensor has a result to allocate");
    }
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    for (size_t f = 0; f < n_re; f++)
        regfree(&fixed_re[f]);
    free(fixed_re);
    free(fixed_cfg);
    free(fixed_hits);
    free(keep);
    if (have_units)
        fr_units_free(&units);
    fr_selector_free(&sel);
    if (st != FR_OK)
        fr_alloc_problem_free(prob);
    return st;
}

void fr_alloc_problem_free(fr_alloc_problem *prob)
{
    if (prob->tensors)
        for (size_t i = 0; i < prob->n_tensors; i++) {
            free(prob->tensors[i].options);
            free(prob->tensors[i].members);
            free(prob->tensors[i].member_alpha);
        }
    free(prob->tensors);
    memset(prob, 0, sizeof *prob);
}

double fr_alloc_min_bpw(const fr_alloc_problem *prob)
{
    return prob->numel ? (double)prob->min_bits / (double)prob->numel : NAN;
}

/* floor(budget * numel) in long double: a budget like 3.5 is exact; the
 * product of a decimal budget is rounded down, never up. */
static uint64_t capacity_of(double budget, uint64_t numel)
{
    long double c = floorl((long double)budget * (long double)numel);
    if (c >= 18446744073709551615.0L)
        return UINT64_MAX;
    return c <= 0 ? 0 : (uint64_t)c;
}

/* The budget rounded up to 4 decimals, so the printed minimum is accepted. */
static double ceil4(double v)
{
    return ceil(v * 1e4 - 1e-6) / 1e4;
}

fr_status fr_alloc_solve(const fr_alloc_problem *prob, double budget, fr_allocation *out,
                         fr_error *err)
{
    fr_status st = FR_OK;
    fr_mckp_item *items = NULL;
    uint64_t *w = NULL;
    double *e = NULL;
    size_t *choice = NULL;

    memset(out, 0, sizeof *out);
    out->metric = prob->metric;
    out->budget = budget;
    if (!isfinite(budget) || budget <= 0)
        return fr_fail(err, FR_E_USAGE, "budget must be a positive number of bits per weight");
    out->capacity_bits = capacity_of(budget, prob->numel);
    if (out->capacity_bits < prob->min_bits)
        return fr_fail(err, FR_E_USAGE,
                       "budget %g bits per weight is below the smallest achievable size: "
                       "%.4f bits per weight (%llu bits over %zu tensors)",
                       budget, ceil4(fr_alloc_min_bpw(prob)), (unsigned long long)prob->min_bits,
                       prob->n_tensors);

    size_t total = 0, n_members = 0;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        total += prob->tensors[i].n_options;
        n_members += prob->tensors[i].n_members;
    }
    items = calloc(prob->n_tensors + 1, sizeof *items);
    w = malloc((total + 1) * sizeof *w);
    e = malloc((total + 1) * sizeof *e);
    choice = calloc(prob->n_tensors + 1, sizeof *choice);
    out->choices = calloc(n_members + 1, sizeof *out->choices);
    if (!items || !w || !e || !choice || !out->choices) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        const fr_alloc_tensor *at = &prob->tensors[i];
        items[i] = (fr_mckp_item){at->n_options, w + k, e + k};
        for (size_t j = 0; j < at->n_options; j++, k++) {
            w[k] = at->options[j].total_bits;
            e[k] = at->options[j].cost;
        }
    }
    if ((st = fr_mckp_solve(items, prob->n_tensors, out->capacity_bits, prob->max_nodes, choice,
                            &out->stats, err)) != FR_OK)
        goto done;
    out->objective = prob->objective;
    out->numel = prob->numel;
    out->norm_sum = prob->norm_sum;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        const fr_alloc_tensor *at = &prob->tensors[i];
        const fr_alloc_option *o = &at->options[choice[i]];
        const int own = at->metric == prob->metric; /* else no term of the metric: NaN */
        if (at->n_members == 1) {
            out->choices[out->n_choices++] = (fr_alloc_choice){
                at->tensor, o->config, o->total_bits, at->numel, own ? o->err_term : NAN,
                own ? at->norm_term : NAN, at->fixed};
        } else {
            /* every expert of the unit with the unit's configuration and its own terms */
            for (size_t m = 0; m < at->n_members; m++) {
                size_t t = at->members[m];
                const fr_ds_result *r = fr_result_at(prob->ix, t, o->config);
                double em = NAN, nm = NAN;
                if (r && own)
                    fr_metric_terms(prob->metric, r, &prob->ds->tensors[t], &em, &nm);
                out->choices[out->n_choices++] = (fr_alloc_choice){
                    t, o->config, r ? r->total_bits : 0, prob->ds->tensors[t].numel, em, nm,
                    at->fixed};
            }
        }
        out->total_bits += o->total_bits;
        if (own)
            out->err_sum += o->err_term;
        out->cost_sum += o->cost;
    }
    out->bits_per_weight = (double)out->total_bits / (double)out->numel;
    out->value = fr_metric_value(prob->metric, out->err_sum, out->norm_sum);
    /* the LP bound is in the objective's units: a metric value only for the error */
    out->lower_bound_value = prob->objective == FR_OBJECTIVE_ERROR
                                 ? fr_metric_value(prob->metric, out->stats.lower_bound,
                                                   out->norm_sum)
                                 : NAN;
done:
    free(items);
    free(w);
    free(e);
    free(choice);
    if (st != FR_OK)
        fr_allocation_free(out);
    return st;
}

void fr_allocation_free(fr_allocation *a)
{
    free(a->choices);
    a->choices = NULL;
    a->n_choices = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

fr_status fr_alloc_sweep(const fr_alloc_problem *prob, double lo, double hi, double step,
                         int uniform_too, fr_mixed_curve *out, fr_error *err)
{
    fr_status st = FR_OK;
    double *budgets = NULL;
    memset(out, 0, sizeof *out);
    out->metric = prob->metric;
    out->numel = prob->numel;
    out->n_tensors = prob->n_tensors;
    out->norm_sum = prob->norm_sum;
    if (!(lo > 0) || !(hi >= lo) || !(step > 0) || !isfinite(hi))
        return fr_fail(err, FR_E_USAGE, "bad budget range %g..%g:%g", lo, hi, step);
    double span = (hi - lo) / step;
    if (span > 1e6)
        return fr_fail(err, FR_E_USAGE, "budget range %g..%g:%g has more than a million steps",
                       lo, hi, step);
    size_t n_grid = (size_t)floor(span + 1e-9) + 1;
    size_t cap = n_grid + (uniform_too ? prob->ds->n_configs : 0);
    budgets = malloc(cap * sizeof *budgets);
    out->points = calloc(cap, sizeof *out->points);
    if (!budgets || !out->points) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t nb = 0;
    for (size_t k = 0; k < n_grid; k++)
        budgets[nb++] = lo + (double)k * step;
    for (size_t c = 0; uniform_too && c < prob->ds->n_configs; c++) {
        /* a uniform configuration: measured (for the metric) on every allocated tensor */
        uint64_t bits = 0;
        int all = 1;
        for (size_t i = 0; i < prob->n_tensors && all; i++) {
            uint64_t b;
            double e, n, k;
            if (!fr_alloc_unit_terms(prob, i, c, &b, &e, &n, &k))
                all = 0;
            else
                bits += b;
        }
        if (!all)
            continue;
        double bpw = (double)bits / (double)prob->numel;
        if (bpw >= lo && bpw <= hi)
            budgets[nb++] = bpw;
    }
    qsort(budgets, nb, sizeof *budgets, cmp_double);
    for (size_t k = 0; k < nb; k++) {
        if (k > 0 && budgets[k] == budgets[k - 1])
            continue;
        if (capacity_of(budgets[k], prob->numel) < prob->min_bits)
            continue;
        fr_allocation a;
        if ((st = fr_alloc_solve(prob, budgets[k], &a, err)) != FR_OK)
            goto done;
        fr_curve_point *p = &out->points[out->n_points++];
        p->budget = budgets[k];
        p->bits_per_weight = a.bits_per_weight;
        p->total_bits = a.total_bits;
        p->err_sum = a.err_sum;
        p->value = a.value;
        p->rel_err = fr_metric_value(prob->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR
                                                                        : prob->metric,
                                     a.err_sum, a.norm_sum);
        p->lower_bound_value = a.lower_bound_value;
        p->optimal = a.stats.optimal;
        fr_allocation_free(&a);
    }
    if (out->n_points == 0)
        st = fr_fail(err, FR_E_USAGE,
                     "every budget in %g..%g is below the smallest achievable size: %.4f bits per "
                     "weight",
                     lo, hi, ceil4(fr_alloc_min_bpw(prob)));
done:
    free(budgets);
    if (st != FR_OK)
        fr_mixed_curve_free(out);
    return st;
}

void fr_mixed_curve_free(fr_mixed_curve *c)
{
    free(c->points);
    c->points = NULL;
    c->n_points = 0;
}


fr_status fr_alloc_read_sensitivity(const fr_dataset *ds, const char *calib_path, double *alpha,
                                    fr_error *err)
{
    fr_calib_file *cf;
    fr_status st = fr_calib_open(calib_path, &cf, err);
    if (st != FR_OK)
        return st;
    int has_lm_head = 0;
    for (size_t t = 0; t < ds->n_tensors; t++)
        has_lm_head |= !strcmp(ds->tensors[t].cls, "lm_head");
    for (size_t t = 0; t < ds->n_tensors && st == FR_OK; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        alpha[t] = NAN;
        const char *names[2] = {ten->name, NULL};
        if (!has_lm_head && !strcmp(ten->cls, "embed"))
            names[1] = "lm_head.weight"; /* tied: the embedding is the output layer */
        for (int k = 0; k < 2 && names[k] && isnan(alpha[t]); k++) {
            char own[1024];
            fr_calib_stats cs;
            if (!fr_calib_module_of(names[k], own, sizeof own))
                continue;
            /* cols 0: only the sensitivity is wanted, not the input statistics */
            if ((st = fr_calib_lookup(cf, names[k], 0, &cs, err)) != FR_OK)
                break;
            if (cs.module && !strcmp(cs.module, own) && cs.n_sensitivity >= 1)
                alpha[t] = cs.sensitivity[0] < 0 ? 0.0 : (double)cs.sensitivity[0];
            fr_calib_release(cf, &cs);
        }
    }
    fr_calib_close(cf);
    return st;
}

fr_status fr_alloc_rescale_sensitivity(const fr_dataset *ds, const fr_result_index *ix,
                                       const char *ref, double *alpha, fr_error *err)
{
    int64_t c = fr_config_position(ds, ref);
    if (c < 0)
        return fr_fail(err, FR_E_USAGE, "--sensitivity-reference '%s' is not a configuration of "
                       "the dataset", ref);
    size_t rescaled = 0;
    const char *first = NULL; /* a tensor with an alpha and no output error */
    for (size_t t = 0; t < ds->n_tensors; t++) {
        if (isnan(alpha[t]))
            continue;
        const fr_ds_result *r = fr_result_at(ix, t, (size_t)c);
        if (r && isnan(r->out_sq_ref) && r->rel_err > 0 && isfinite(r->rel_err)) {
            /* no output error on this tensor (no statistics): it keeps its
             * alpha and is allocated on its weight error */
            if (!first)
                first = ds->tensors[t].name;
            continue;
        }
        if (!r || !(r->rel_err > 0) || !(r->out_rel_err > 0) || !isfinite(r->rel_err) ||
            !isfinite(r->out_rel_err))
            return fr_fail(err, FR_E_FORMAT, "tensor '%s' has no rel_err and out_rel_err under "
                           "--sensitivity-reference '%s' (sweep it with --calib and that "
                           "configuration)", ds->tensors[t].name, ref);
        double k = r->rel_err / r->out_rel_err;
        alpha[t] *= k * k;
        rescaled++;
    }
    if (!rescaled && first)
        return fr_fail(err, FR_E_FORMAT, "tensor '%s' has no rel_err and out_rel_err under "
                       "--sensitivity-reference '%s', nor does any other (sweep with --calib "
                       "and that configuration)", first, ref);
    return FR_OK;
}

const char *fr_alloc_objective_name(const fr_alloc_problem *prob)
{
    if (prob->objective == FR_OBJECTIVE_SENSITIVITY)
        return "sensitivity";
    return prob->metric == FR_METRIC_OUT_REL_ERR ? "output_error" : "weight_error";
}

size_t fr_alloc_count_sensitivity(const fr_dataset *ds, const double *alpha)
{
    size_t n = 0;
    for (size_t t = 0; alpha && t < ds->n_tensors; t++)
        n += ds->tensors[t].numel > 0 && !isnan(alpha[t]);
    return n;
}

double fr_alloc_predicted_uniform(const fr_dataset *ds, const fr_result_index *ix,
                                  fr_metric metric, const fr_selector *sel, const double *alpha,
                                  double default_alpha, size_t c, size_t *n_tensors)
{
    double sum = 0;
    size_t n = 0;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        if (ten->numel == 0 || (sel && !fr_selector_tensor(sel, ten->name)))
            continue;
        double a = alpha ? alpha[t] : NAN, e, nt;
        if (isnan(a))
            a = default_alpha;
        const fr_ds_result *r = fr_result_at(ix, t, c);
        if (!r || !fr_metric_terms(metric, r, ten, &e, &nt) || isnan(a)) {
            *n_tensors = n;
            return NAN;
        }
        sum += nt > 0 ? a * e / nt : 0.0;
        n++;
    }
    *n_tensors = n;
    return sum;
}
