/* The summary a sweep prints: model-level bits and error per configuration. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/sweep.h"

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

fr_status fr_sweep_summary_print(FILE *out, const fr_dataset *ds, const char *output,
                                 const fr_sweep_stats *stats, int json, fr_error *err)
{
    fr_status st = FR_OK;
    const char **class_names = NULL;
    size_t n_classes = 0;
    int *tensor_class = NULL;
    config_summary *sum = NULL;
    size_t n_sum = 0;
    cJSON *root = NULL;
    char *text = NULL;

    /* class index of every tensor (classes as they appear) */
    class_names = calloc(ds->n_tensors + 1, sizeof *class_names);
    tensor_class = calloc(ds->n_tensors + 1, sizeof *tensor_class);
    sum = calloc(ds->n_configs + 1, sizeof *sum);
    if (!class_names || !tensor_class || !sum)
        goto nomem;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        size_t c = 0;
        while (c < n_classes && strcmp(class_names[c], ds->tensors[t].cls) != 0)
            c++;
        if (c == n_classes)
            class_names[n_classes++] = ds->tensors[t].cls;
        tensor_class[t] = (int)c;
    }
    n_sum = ds->n_configs;
    for (size_t c = 0; c < ds->n_configs; c++) {
        sum[c].cfg = &ds->configs[c];
        sum[c].cls = calloc(n_classes + 1, sizeof *sum[c].cls);
        if (!sum[c].cls)
            goto nomem;
    }
    for (size_t r = 0; r < ds->n_results; r++) {
        const fr_ds_result *row = &ds->results[r];
        const fr_ds_tensor *t = fr_dataset_tensor(ds, row->tensor_id);
        const fr_ds_config *cfg = fr_dataset_config(ds, row->config_id);
        if (!t || !cfg)
            continue;
        config_summary *s = &sum[cfg - ds->configs];
        s->tensors++;
        s->total_bits += (double)row->total_bits;
        s->numel += (double)t->numel;
        s->sq_err += row->sq_err;
        s->sq_norm += t->sq_norm;
        class_sums *cs = &s->cls[tensor_class[t - ds->tensors]];
        cs->sq_err += row->sq_err;
        cs->sq_norm += t->sq_norm;
    }
    /* keep configurations with rows */
    size_t kept = 0;
    for (size_t c = 0; c < n_sum; c++) {
        config_summary *s = &sum[c];
        if (!s->tensors) {
            free(s->cls);
            continue;
        }
        s->bits_per_weight = s->total_bits / s->numel;
        s->rel_err = ratio_err(s->sq_err, s->sq_norm);
        s->best = s->worst = -1;
        for (size_t k = 0; k < n_classes; k++) {
            if (s->cls[k].sq_norm <= 0 && s->cls[k].sq_err <= 0)
                continue;
            double e = ratio_err(s->cls[k].sq_err, s->cls[k].sq_norm);
            if (s->best < 0 || e < ratio_err(s->cls[s->best].sq_err, s->cls[s->best].sq_norm))
                s->best = (int)k;
            if (s->worst < 0 || e > ratio_err(s->cls[s->worst].sq_err, s->cls[s->worst].sq_norm))
                s->worst = (int)k;
        }
        sum[kept++] = *s;
    }
    n_sum = kept;
    qsort(sum, n_sum, sizeof *sum, cmp_summary);

    size_t n_skipped_tensors = 0, n_failed = 0;
    for (size_t k = 0; k < ds->n_skipped; k++) {
        if (ds->skipped[k].config[0])
            n_failed++;
        else
            n_skipped_tensors++;
    }
    size_t n_measured = 0;
    for (size_t t = 0; t < ds->n_tensors; t++)
        n_measured += !isnan(ds->tensors[t].sq_norm);

    if (json) {
        root = cJSON_CreateObject();
        if (!root)
            goto nomem;
        cJSON_AddStringToObject(root, "output", output ? output : "");
        cJSON_AddNumberToObject(root, "rows", (double)ds->n_results);
        cJSON_AddNumberToObject(root, "tensors", (double)n_measured);
        cJSON_AddNumberToObject(root, "skipped_tensors", (double)n_skipped_tensors);
        cJSON_AddNumberToObject(root, "failed", (double)n_failed);
        if (stats) {
            cJSON_AddNumberToObject(root, "new_rows", (double)stats->n_rows_new);
            cJSON_AddNumberToObject(root, "seconds", stats->seconds);
            cJSON_AddStringToObject(root, "device", stats->device);
        }
        cJSON *arr = cJSON_AddArrayToObject(root, "configs");
        for (size_t i = 0; arr && i < n_sum; i++) {
            const config_summary *s = &sum[i];
            cJSON *o = cJSON_CreateObject();
            if (!o)
                goto nomem;
            cJSON_AddItemToArray(arr, o);
            cJSON_AddStringToObject(o, "name", s->cfg->name);
            cJSON_AddStringToObject(o, "family", s->cfg->family);
            cJSON_AddNumberToObject(o, "nominal_bits", s->cfg->nominal_bits);
            cJSON_AddNumberToObject(o, "bits_per_weight", s->bits_per_weight);
            /* JSON has no infinity: an infinite error is null */
            if (isfinite(s->rel_err))
                cJSON_AddNumberToObject(o, "rel_err", s->rel_err);
            else
                cJSON_AddNullToObject(o, "rel_err");
            cJSON_AddNumberToObject(o, "tensors", (double)s->tensors);
            for (int which = 0; which < 2; which++) {
                int k = which ? s->worst : s->best;
                if (k < 0) {
                    cJSON_AddNullToObject(o, which ? "worst_class" : "best_class");
                    continue;
                }
                cJSON *c = cJSON_AddObjectToObject(o, which ? "worst_class" : "best_class");
                double e = ratio_err(s->cls[k].sq_err, s->cls[k].sq_norm);
                cJSON_AddStringToObject(c, "class", class_names[k]);
                if (isfinite(e))
                    cJSON_AddNumberToObject(c, "rel_err", e);
                else
                    cJSON_AddNullToObject(c, "rel_err");
            }
        }
        text = cJSON_Print(root);
        if (!text)
            goto nomem;
        fprintf(out, "%s\n", text);
    } else {
        fprintf(out, "%zu rows in '%s': %zu tensors x %zu configurations", ds->n_results,
                output ? output : "", n_measured, n_sum);
        if (n_skipped_tensors)
            fprintf(out, "; %zu tensors skipped", n_skipped_tensors);
        if (n_failed)
            fprintf(out, "; %zu failures", n_failed);
        if (n_skipped_tensors || n_failed)
            fprintf(out, " (see /skipped)");
        fprintf(out, "\n\n");
        int width = 13;
        for (size_t i = 0; i < n_sum; i++)
            if ((int)strlen(sum[i].cfg->name) > width)
                width = (int)strlen(sum[i].cfg->name);
        fprintf(out, "%-*s  %8s  %10s  %7s  %-22s  %-22s\n", width, "configuration", "bits/w",
                "rel_err", "tensors", "best class (rel_err)", "worst class (rel_err)");
        for (size_t i = 0; i < n_sum; i++) {
            const config_summary *s = &sum[i];
            char best[64] = "-", worst[64] = "-";
            if (s->best >= 0)
                snprintf(best, sizeof best, "%s %.4g", class_names[s->best],
                         ratio_err(s->cls[s->best].sq_err, s->cls[s->best].sq_norm));
            if (s->worst >= 0)
                snprintf(worst, sizeof worst, "%s %.4g", class_names[s->worst],
                         ratio_err(s->cls[s->worst].sq_err, s->cls[s->worst].sq_norm));
            fprintf(out, "%-*s  %8.4f  %10.4g  %7zu  %-22s  %-22s\n", width, s->cfg->name,
                    s->bits_per_weight, s->rel_err, s->tensors, best, worst);
        }
    }
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    if (sum)
        for (size_t i = 0; i < n_sum; i++)
            free(sum[i].cls);
    free(sum);
    free(tensor_class);
    free(class_names);
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}
