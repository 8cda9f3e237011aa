/*
 * csv and json exports (docs/analysis.md, "export"): tidy rows, one
 * observation each, for every selected result, every model-level point and
 * every point of the stored mixed-precision curve and every llama-quantize
 * stock mix (kind llama_mix: its name in config, family llama-quantize).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "frontier/export/export_rows.h"
#include "frontier/dataset/output_file.h"

static const char *const columns[] = {
    "kind", "group", "tensor", "class", "config", "family", "nominal_bits", "numel",
    "total_bits", "bits_per_weight", "rel_err", "sqnr_db", "out_rel_err", "max_abs_err",
    "cosine", "n_tensors", "on_frontier", "budget", "lower_bound",
};
#define N_COLUMNS (sizeof columns / sizeof columns[0])

/* One observation: strings NULL and numbers NaN when not applicable. */
typedef struct row {
    const char *kind, *group, *tensor, *cls, *config, *family;
    double num[N_COLUMNS - 6];
} row;

enum {
    C_NOMINAL, C_NUMEL, C_TOTAL, C_BPW, C_REL, C_SQNR, C_OUT, C_MAXABS, C_COS, C_NT, C_FRONT,
    C_BUDGET, C_LB
};

static void row_init(row *r, const char *kind)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    for (size_t i = 0; i < N_COLUMNS - 6; i++)
        r->num[i] = NAN;
}

/* Iterates the observations: fn(ctx, row) for results, points, mixed points. */
typedef int (*row_fn)(void *ctx, const row *r);

/* The llama-quantize mixes: one row each, model-level. */
static int each_mix_row(const fr_llama_mix_result *mixes, size_t n, row_fn fn, void *ctx)
{
    row r;
    for (size_t i = 0; i < n; i++) {
        const fr_llama_mix_result *m = &mixes[i];
        row_init(&r, "llama_mix");
        r.group = "model";
        r.config = fr_llama_mix_name(m->mix);
        r.family = "llama-quantize";
        r.num[C_NUMEL] = (double)m->numel;
        r.num[C_TOTAL] = (double)m->total_bits;
        r.num[C_BPW] = m->bits_per_weight;
        if (m->metric == FR_METRIC_OUT_REL_ERR) {
            r.num[C_OUT] = m->value;
        } else {
            double rel = fr_metric_value(FR_METRIC_REL_ERR, m->err_sum, m->norm_sum);
            r.num[C_REL] = rel;
            r.num[C_SQNR] = rel == 0 ? INFINITY : -20 * log10(rel);
        }
        r.num[C_NT] = (double)m->n_choices;
        if (!fn(ctx, &r))
            return 0;
    }
    return 1;
}

static int each_row(const fr_dataset *ds, const fr_result_index *ix, const fr_selector *sel,
                    const fr_pareto *p, const fr_rows_options *opt, row_fn fn, void *ctx)
{
    const fr_mixed_curve *mc = opt->mixed;
    row r;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        if (!fr_selector_tensor(sel, ten->name))
            continue;
        for (size_t c = 0; c < ds->n_configs; c++) {
            const fr_ds_config *cf = &ds->configs[c];
            const fr_ds_result *res = fr_result_at(ix, t, c);
            if (!res || !fr_selector_config(sel, cf->name))
                continue;
            row_init(&r, "result");
            r.tensor = ten->name;
            r.cls = ten->cls;
            r.config = cf->name;
            r.family = cf->family;
            r.num[C_NOMINAL] = cf->nominal_bits;
            r.num[C_NUMEL] = (double)ten->numel;
            r.num[C_TOTAL] = (double)res->total_bits;
            r.num[C_BPW] = res->bits_per_weight;
            r.num[C_REL] = res->rel_err;
            r.num[C_SQNR] = res->sqnr_db;
            r.num[C_OUT] = res->out_rel_err;
            r.num[C_MAXABS] = res->max_abs_err;
            r.num[C_COS] = res->cosine;
            if (!fn(ctx, &r))
                return 0;
        }
    }
    for (size_t i = 0; i < p->n_points; i++) {
        const fr_point *pt = &p->points[i];
        row_init(&r, "point");
        r.group = p->groups[pt->group].name;
        r.config = pt->config_name;
        r.family = pt->family;
        r.num[C_NOMINAL] = pt->nominal_bits;
        r.num[C_NUMEL] = (double)pt->numel;
        r.num[C_TOTAL] = (double)pt->total_bits;
        r.num[C_BPW] = pt->bits_per_weight;
        r.num[C_REL] = pt->rel_err;
        r.num[C_SQNR] = pt->sqnr_db;
        r.num[C_OUT] = pt->out_rel_err;
        r.num[C_NT] = (double)pt->n_tensors;
        r.num[C_FRONT] = pt->on_frontier;
        if (!fn(ctx, &r))
            return 0;
    }
    for (size_t i = 0; mc && i < mc->n_points; i++) {
        const fr_curve_point *cp = &mc->points[i];
        row_init(&r, "mixed");
        r.group = "model";
        r.num[C_NUMEL] = (double)mc->numel;
        r.num[C_TOTAL] = (double)cp->total_bits;
        r.num[C_BPW] = cp->bits_per_weight;
        if (mc->metric == FR_METRIC_OUT_REL_ERR) {
            r.num[C_OUT] = cp->rel_err;
            r.num[C_LB] = cp->lower_bound_value;
        } else {
            r.num[C_REL] = cp->rel_err;
            r.num[C_SQNR] = cp->rel_err == 0 ? INFINITY : -20 * log10(cp->rel_err);
            r.num[C_LB] = mc->metric == FR_METRIC_SQNR_DB
                              ? pow(10.0, -cp->lower_bound_value / 20.0) /* back to rel_err */
                              : cp->lower_bound_value;
        }
        r.num[C_NT] = (double)mc->n_tensors;
        r.num[C_FRONT] = 1;
        r.num[C_BUDGET] = cp->budget;
        if (!fn(ctx, &r))
            return 0;
    }
    return each_mix_row(opt->mixes, opt->n_mixes, fn, ctx);
}

static void csv_string(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int csv_row(void *ctx, const row *r)
{
    FILE *f = ctx;
    const char *strs[6] = {r->kind, r->group, r->tensor, r->cls, r->config, r->family};
    for (size_t i = 0; i < 6; i++) {
        if (i)
            fputc(',', f);
        csv_string(f, strs[i]);
    }
    for (size_t i = 0; i < N_COLUMNS - 6; i++) {
        fputc(',', f);
        double v = r->num[i];
        if (isnan(v))
            continue;
        if (isinf(v))
            fputs(v > 0 ? "inf" : "-inf", f);
        else if (v == floor(v) && fabs(v) < 1e15)
            fprintf(f, "%.0f", v);
        else
            fprintf(f, "%.17g", v);
    }
    fputc('\n', f);
    return !ferror(f);
}

typedef struct json_ctx {
    cJSON *results, *points, *mixed, *mixes;
} json_ctx;

static int json_row(void *ctx, const row *r)
{
    json_ctx *j = ctx;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return 0;
    cJSON *arr = !strcmp(r->kind, "result")      ? j->results
                 : !strcmp(r->kind, "point")     ? j->points
                 : !strcmp(r->kind, "llama_mix") ? j->mixes
                                                 : j->mixed;
    cJSON_AddItemToArray(arr, o);
    const char *strs[6] = {r->kind, r->group, r->tensor, r->cls, r->config, r->family};
    for (size_t i = 0; i < 6; i++)
        if (strs[i])
            cJSON_AddStringToObject(o, columns[i], strs[i]);
    for (size_t i = 0; i < N_COLUMNS - 6; i++) {
        double v = r->num[i];
        if (isnan(v))
            continue;
        if (i == C_FRONT)
            cJSON_AddBoolToObject(o, columns[6 + i], v != 0);
        else
            cJSON_AddItemToObject(o, columns[6 + i],
                                  isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    }
    return 1;
}

static fr_status write_csv(const fr_dataset *ds, const fr_result_index *ix, const fr_selector *sel,
                           const fr_pareto *p, const fr_rows_options *opt, const char *path,
                           fr_error *err)
{
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st != FR_OK)
        return st;
    for (size_t i = 0; i < N_COLUMNS; i++)
        fprintf(f, "%s%s", i ? "," : "", columns[i]);
    fputc('\n', f);
    /* a failed write shows when the file is closed */
    each_row(ds, ix, sel, p, opt, csv_row, f);
    return fr_output_close(f, path, err);
}

static fr_status write_json(const fr_dataset *ds, const fr_result_index *ix, const fr_selector *sel,
                            const fr_pareto *p, const fr_rows_options *opt, const char *path,
                            fr_error *err)
{
    cJSON *root = cJSON_CreateObject();
    json_ctx j = {cJSON_CreateArray(), cJSON_CreateArray(), cJSON_CreateArray(),
                  cJSON_CreateArray()};
    if (!root || !j.results || !j.points || !j.mixed || !j.mixes) {
        cJSON_Delete(root);
        cJSON_Delete(j.results);
        cJSON_Delete(j.points);
        cJSON_Delete(j.mixed);
        cJSON_Delete(j.mixes);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(root, "format", "frontier-export");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "dataset", opt->dataset_path ? opt->dataset_path : "");
    cJSON_AddStringToObject(root, "metric", fr_metric_name(opt->y));
    cJSON_AddStringToObject(root, "by", fr_group_by_name(opt->by));
    cJSON_AddItemToObject(root, "results", j.results);
    cJSON_AddItemToObject(root, "points", j.points);
    cJSON_AddItemToObject(root, "mixed", j.mixed);
    cJSON_AddItemToObject(root, "llama_mixes", j.mixes);
    int ok = each_row(ds, ix, sel, p, opt, json_row, &j);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st == FR_OK) {
        fputs(text, f);
        fputc('\n', f);
        st = fr_output_close(f, path, err);
    }
    cJSON_free(text);
    return st;
}

fr_status fr_export_rows(const fr_dataset *ds, const fr_result_index *ix, const fr_pareto *p,
                         const fr_rows_options *opt, const char *path, fr_error *err)
{
    fr_selector sel;
    fr_status st = fr_selector_init(&sel, opt->selection, err);
    if (st != FR_OK)
        return st;
    if (!opt->json)
        st = write_csv(ds, ix, &sel, p, opt, path, err);
    else
        st = write_json(ds, ix, &sel, p, opt, path, err);
    fr_selector_free(&sel);
    return st;
}
