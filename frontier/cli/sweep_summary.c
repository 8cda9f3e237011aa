/* The summary a sweep prints: model-level bits and error per configuration. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/analysis/pareto.h"
#include "frontier/cli/sweep_summary.h"

typedef struct class_sums {
    double sq_err, sq_norm;
} class_sums;

typedef struct config_summary {
    const fr_ds_config *cfg;
    size_t tensors;
    double total_bits, numel, sq_err, sq_norm;
    class_sums *cls; /* per class name index */
    int best, worst; /* class indices, -1 if none */
    double bits_per_weight, rel_err;
    double out_sq_err, out_sq_ref; /* over the rows with an output error (--calib) */
    size_t out_tensors;
    double out_rel_err;            /* NaN when no row has one */
} config_summary;

static double ratio_err(double sq_err, double sq_norm)
{
    if (sq_norm > 0)
        return sqrt(sq_err / sq_norm);
    return sq_err > 0 ? INFINITY : 0.0;
}

static int cmp_summary(const void *a, const void *b)
{
    const config_summary *x = a, *y = b;
    if (x->bits_per_weight != y->bits_per_weight)
        return x->bits_per_weight < y->bits_per_weight ? -1 : 1;
    if (x->rel_err != y->rel_err)
        return x->rel_err < y->rel_err ? -1 : 1;
    return strcmp(x->cfg->name, y->cfg->name);
}

static double class_err(const config_summary *s, int k)
{
    return ratio_err(s->cls[k].sq_err, s->cls[k].sq_norm);
}

/* What the summary shows, computed from the dataset alone. */
typedef struct summary {
    const char **class_names; /* tensor classes in order of appearance */
    size_t n_classes;
    int *tensor_class;        /* class index of every tensor */
    config_summary *sum;      /* configurations with rows, by bits then error */
    size_t n_sum;
    size_t n_skipped_tensors, n_failed, n_measured;
    int has_out;              /* some row has an output error */
} summary;

static void summary_free(summary *s)
{
    if (s->sum)
        for (size_t i = 0; i < s->n_sum; i++)
            free(s->sum[i].cls);
    free(s->sum);
    free(s->tensor_class);
    free(s->class_names);
}

/* Sums per configuration and per (configuration, class) over the result
 * rows; configurations without rows are dropped, the rest get their best
 * and worst class and are sorted. Returns 0 when out of memory (what was
 * allocated is in s, for summary_free). */
static int summary_build(summary *sm, const fr_dataset *ds)
{
    memset(sm, 0, sizeof *sm);
    sm->class_names = calloc(ds->n_tensors + 1, sizeof *sm->class_names);
    sm->tensor_class = calloc(ds->n_tensors + 1, sizeof *sm->tensor_class);
    sm->sum = calloc(ds->n_configs + 1, sizeof *sm->sum);
    if (!sm->class_names || !sm->tensor_class || !sm->sum)
        return 0;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        size_t c = 0;
        while (c < sm->n_classes && strcmp(sm->class_names[c], ds->tensors[t].cls) != 0)
            c++;
        if (c == sm->n_classes)
            sm->class_names[sm->n_classes++] = ds->tensors[t].cls;
        sm->tensor_class[t] = (int)c;
    }
    sm->n_sum = ds->n_configs;
    for (size_t c = 0; c < ds->n_configs; c++) {
        sm->sum[c].cfg = &ds->configs[c];
        sm->sum[c].cls = calloc(sm->n_classes + 1, sizeof *sm->sum[c].cls);
        if (!sm->sum[c].cls)
            return 0;
    }
    for (size_t r = 0; r < ds->n_results; r++) {
        const fr_ds_result *row = &ds->results[r];
        const fr_ds_tensor *t = fr_dataset_tensor(ds, row->tensor_id);
        const fr_ds_config *cfg = fr_dataset_config(ds, row->config_id);
        if (!t || !cfg)
            continue;
        config_summary *s = &sm->sum[cfg - ds->configs];
        s->tensors++;
        s->total_bits += (double)row->total_bits;
        s->numel += (double)t->numel;
        s->sq_err += row->sq_err;
        s->sq_norm += t->sq_norm;
        class_sums *cs = &s->cls[sm->tensor_class[t - ds->tensors]];
        cs->sq_err += row->sq_err;
        cs->sq_norm += t->sq_norm;
        if (isfinite(row->out_sq_err) && isfinite(row->out_sq_ref)) {
            s->out_sq_err += row->out_sq_err;
            s->out_sq_ref += row->out_sq_ref;
            s->out_tensors++;
        }
    }
    size_t kept = 0;
    for (size_t c = 0; c < sm->n_sum; c++) {
        config_summary *s = &sm->sum[c];
        if (!s->tensors) {
            free(s->cls);
            continue;
        }
        s->bits_per_weight = s->total_bits / s->numel;
        s->rel_err = ratio_err(s->sq_err, s->sq_norm);
        s->out_rel_err = s->out_tensors ? ratio_err(s->out_sq_err, s->out_sq_ref) : NAN;
        sm->has_out |= s->out_tensors > 0;
        s->best = s->worst = -1;
        for (size_t k = 0; k < sm->n_classes; k++) {
            if (s->cls[k].sq_norm <= 0 && s->cls[k].sq_err <= 0)
                continue;
            double e = ratio_err(s->cls[k].sq_err, s->cls[k].sq_norm);
            if (s->best < 0 || e < class_err(s, s->best))
                s->best = (int)k;
            if (s->worst < 0 || e > class_err(s, s->worst))
                s->worst = (int)k;
        }
        sm->sum[kept++] = *s;
    }
    sm->n_sum = kept;
    qsort(sm->sum, sm->n_sum, sizeof *sm->sum, cmp_summary);
    for (size_t k = 0; k < ds->n_skipped; k++) {
        if (ds->skipped[k].config[0])
            sm->n_failed++;
        else
            sm->n_skipped_tensors++;
    }
    for (size_t t = 0; t < ds->n_tensors; t++)
        sm->n_measured += !isnan(ds->tensors[t].sq_norm);
    return 1;
}

/* JSON has no infinity: an infinite error is null. */
static void add_error(cJSON *o, const char *name, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, name, v);
    else
        cJSON_AddNullToObject(o, name);
}

static fr_status print_json(FILE *out, const fr_dataset *ds, const char *output,
                            const fr_sweep_stats *stats, const summary *sm, fr_error *err)
{
    fr_status st = FR_OK;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        goto nomem;
    cJSON_AddStringToObject(root, "output", output ? output : "");
    cJSON_AddNumberToObject(root, "rows", (double)ds->n_results);
    cJSON_AddNumberToObject(root, "tensors", (double)sm->n_measured);
    cJSON_AddNumberToObject(root, "skipped_tensors", (double)sm->n_skipped_tensors);
    cJSON_AddNumberToObject(root, "failed", (double)sm->n_failed);
    if (stats) {
        cJSON_AddNumberToObject(root, "new_rows", (double)stats->n_rows_new);
        cJSON_AddNumberToObject(root, "seconds", stats->seconds);
        cJSON_AddStringToObject(root, "device", stats->device);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "configs");
    for (size_t i = 0; arr && i < sm->n_sum; i++) {
        const config_summary *s = &sm->sum[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto nomem;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", s->cfg->name);
        cJSON_AddStringToObject(o, "family", s->cfg->family);
        cJSON_AddNumberToObject(o, "nominal_bits", s->cfg->nominal_bits);
        cJSON_AddNumberToObject(o, "bits_per_weight", s->bits_per_weight);
        add_error(o, "rel_err", s->rel_err);
        add_error(o, "out_rel_err", s->out_rel_err);
        cJSON_AddNumberToObject(o, "out_tensors", (double)s->out_tensors);
        cJSON_AddNumberToObject(o, "tensors", (double)s->tensors);
        for (int which = 0; which < 2; which++) {
            int k = which ? s->worst : s->best;
            if (k < 0) {
                cJSON_AddNullToObject(o, which ? "worst_class" : "best_class");
                continue;
            }
            cJSON *c = cJSON_AddObjectToObject(o, which ? "worst_class" : "best_class");
            cJSON_AddStringToObject(c, "class", sm->class_names[k]);
            add_error(c, "rel_err", class_err(s, k));
        }
    }
    text = cJSON_Print(root);
    if (!text)
        goto nomem;
    fprintf(out, "%s\n", text);
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}

/* The first line of both tables: what the dataset holds. */
static void print_counts(FILE *out, const fr_dataset *ds, const char *output, const summary *sm)
{
    fprintf(out, "%zu rows in '%s': %zu tensors x %zu configurations", ds->n_results,
            output ? output : "", sm->n_measured, sm->n_sum);
    if (sm->n_skipped_tensors)
        fprintf(out, "; %zu tensors skipped", sm->n_skipped_tensors);
    /* /skipped holds both the pairs that failed and those not run by design
     * (statistics a tensor lacks, --max-memory): the reasons say which */
    if (sm->n_failed)
        fprintf(out, "; %zu (tensor, configuration) pairs not measured", sm->n_failed);
    if (sm->n_skipped_tensors || sm->n_failed)
        fprintf(out, " (see /skipped)");
    fprintf(out, "\n\n");
}

static void print_table(FILE *out, const fr_dataset *ds, const char *output, const summary *sm)
{
    print_counts(out, ds, output, sm);
    int width = 13;
    for (size_t i = 0; i < sm->n_sum; i++)
        if ((int)strlen(sm->sum[i].cfg->name) > width)
            width = (int)strlen(sm->sum[i].cfg->name);
    /* with --calib, the output error over the tensors that have statistics
     * comes after the best and worst classes, so the columns before it keep
     * their places */
    fprintf(out, "%-*s  %8s  %10s  %7s  %-22s  %-22s%s\n", width, "configuration", "bits/w",
            "rel_err", "tensors", "best class (rel_err)", "worst class (rel_err)",
            sm->has_out ? "  out_rel_err" : "");
    for (size_t i = 0; i < sm->n_sum; i++) {
        const config_summary *s = &sm->sum[i];
        char best[64] = "-", worst[64] = "-";
        if (s->best >= 0)
            snprintf(best, sizeof best, "%s %.4g", sm->class_names[s->best], class_err(s, s->best));
        if (s->worst >= 0)
            snprintf(worst, sizeof worst, "%s %.4g", sm->class_names[s->worst],
                     class_err(s, s->worst));
        fprintf(out, "%-*s  %8.4f  %10.4g  %7zu  %-22s  %-22s", width, s->cfg->name,
                s->bits_per_weight, s->rel_err, s->tensors, best, worst);
        if (sm->has_out)
            fprintf(out, "  %11.4g", s->out_rel_err);
        fputc('\n', out);
    }
}

/* ---- the compact table: the least error in each band of bits per weight ---- */

static double summary_err(const config_summary *s, int by_out)
{
    return by_out ? s->out_rel_err : s->rel_err;
}

/* The configuration of band b with the least rel_err (by_out: out_rel_err),
 * then the fewest bits, then the first in the dataset, among those measured
 * on n_full tensors (and out_full with an output error): configurations
 * measured on fewer tensors are not compared, their errors cover other
 * weights. NULL when the band has none. */
static const config_summary *band_best(const summary *sm, int band, int by_out, size_t n_full,
                                       size_t out_full)
{
    const config_summary *best = NULL;
    for (size_t i = 0; i < sm->n_sum; i++) {
        const config_summary *s = &sm->sum[i];
        double e = summary_err(s, by_out);
        if (s->tensors != n_full || (by_out && s->out_tensors != out_full) || isnan(e) ||
            fr_bpw_band(s->bits_per_weight) != band)
            continue;
        if (best) {
            double be = summary_err(best, by_out);
            if (e > be || (e == be && (s->bits_per_weight > best->bits_per_weight ||
                                       (s->bits_per_weight == best->bits_per_weight &&
                                        s->cfg > best->cfg))))
                continue;
        }
        best = s;
    }
    return best;
}

static int same_sum(double a, double b)
{
    return isnan(a) ? isnan(b) : a == b;
}

/* The other configurations with the same rows as s on every tensor. */
static void print_same_rows(FILE *out, const fr_dataset *ds, const summary *sm,
                            const fr_result_index *ix, const config_summary *s)
{
    const char *sep = "  ";
    for (size_t i = 0; i < sm->n_sum; i++) {
        const config_summary *o = &sm->sum[i];
        if (o == s || o->tensors != s->tensors || o->total_bits != s->total_bits ||
            !same_sum(o->sq_err, s->sq_err) || !same_sum(o->out_sq_err, s->out_sq_err) ||
            !fr_configs_same_rows(ix, (size_t)(s->cfg - ds->configs),
                                  (size_t)(o->cfg - ds->configs), NULL))
            continue;
        fprintf(out, "%s%s", sep, o->cfg->name);
        sep = " ";
    }
}

static void print_bands(FILE *out, const fr_dataset *ds, const char *output, const summary *sm,
                        const fr_result_index *ix)
{
    print_counts(out, ds, output, sm);
    if (sm->n_sum == 0)
        return;
    size_t n_full = 0, out_full = 0, n_compared = 0;
    for (size_t i = 0; i < sm->n_sum; i++)
        if (sm->sum[i].tensors > n_full)
            n_full = sm->sum[i].tensors;
    for (size_t i = 0; i < sm->n_sum; i++)
        if (sm->sum[i].tensors == n_full) {
            n_compared++;
            if (sm->sum[i].out_tensors > out_full)
                out_full = sm->sum[i].out_tensors;
        }
    int has_out = out_full > 0;
    const config_summary *rows[FR_BPW_BANDS][2] = {{NULL}};
    int width = 13;
    for (int b = 0; b < FR_BPW_BANDS; b++)
        for (int by_out = 0; by_out <= has_out; by_out++) {
            const config_summary *s = band_best(sm, b, by_out, n_full, out_full);
            rows[b][by_out] = s;
            if (s && (int)strlen(s->cfg->name) > width)
                width = (int)strlen(s->cfg->name);
        }
    fprintf(out, "the least error in each band of bits per weight, over the %zu tensors", n_full);
    if (n_compared < sm->n_sum)
        fprintf(out, " (%zu configurations measured on fewer are left out)", sm->n_sum - n_compared);
    fprintf(out, ":\n%-6s  %s%-*s  %8s  %10s%s  %s\n", "band", has_out ? "least        " : "",
            width, "configuration", "bits/w", "rel_err", has_out ? "  out_rel_err" : "",
            "same rows on every tensor");
    for (int b = 0; b < FR_BPW_BANDS; b++)
        for (int by_out = 0; by_out <= has_out; by_out++) {
            const config_summary *s = rows[b][by_out];
            if (!s || (by_out && s == rows[b][0]))
                continue;
            fprintf(out, "%-6s  ", fr_bpw_band_name(b));
            if (has_out)
                fprintf(out, "%-11s  ", by_out ? "out_rel_err" : s == rows[b][1] ? "both" : "rel_err");
            fprintf(out, "%-*s  %8.4f  %10.4g", width, s->cfg->name, s->bits_per_weight, s->rel_err);
            if (has_out)
                fprintf(out, "  %11.4g", s->out_rel_err);
            if (ix)
                print_same_rows(out, ds, sm, ix, s);
            fputc('\n', out);
        }
    /* what the columns mean, for the reader who has not read docs/analysis.md */
    fprintf(out, "rel_err: the weights' relative error ||W - Q(W)|| / ||W|| (squares summed over "
                 "the tensors)\n");
    if (has_out) {
        fprintf(out, "out_rel_err: the layer outputs' relative error ||(W - Q(W)) X|| / ||W X|| on "
                     "the calibration inputs X\n");
        size_t n_diag = fr_dataset_diagonal_out_tensors(ds);
        if (n_diag)
            fprintf(out, "  on %zu tensor%s from the diagonal of X^T X only (--diagonal-output-error: "
                         "the inputs' correlations left out)\n",
                    n_diag, n_diag == 1 ? "" : "s");
    }
    fprintf(out, "every configuration: frontier pareto %s --verbose; per tensor class: --by class "
                 "(docs/analysis.md)\n",
            output && *output ? output : "RUN.h5");
}

fr_status fr_sweep_summary_print(FILE *out, const fr_dataset *ds, const char *output,
                                 const fr_sweep_stats *stats, int json, int verbose,
                                 fr_error *err)
{
    fr_status st = FR_OK;
    summary sm;
    fr_result_index ix;
    memset(&ix, 0, sizeof ix);
    if (!summary_build(&sm, ds)) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
    } else if (json) {
        st = print_json(out, ds, output, stats, &sm, err);
    } else if (verbose) {
        print_table(out, ds, output, &sm);
    } else {
        /* the index only names the configurations with the same rows: a
         * dataset it refuses (two rows for one pair) is printed without them */
        fr_error ierr;
        fr_status ist = fr_result_index_build(ds, &ix, &ierr);
        if (ist == FR_E_NOMEM)
            st = fr_fail(err, FR_E_NOMEM, "%s", ierr.msg);
        else
            print_bands(out, ds, output, &sm, ist == FR_OK ? &ix : NULL);
    }
    fr_result_index_free(&ix);
    summary_free(&sm);
    return st;
}
