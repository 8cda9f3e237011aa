/* What the analysis commands share: reading a dataset, number parsing, the
 * warning about tensors without results. */
#include "cli_analysis.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

fr_status cli_read_dataset(const char *path, fr_dataset *ds, fr_result_index *ix, fr_error *err)
{
    memset(ds, 0, sizeof *ds);
    memset(ix, 0, sizeof *ix);
    fr_status st = fr_dataset_read(path, ds, err);
    if (st != FR_OK)
        return st;
    if (ds->n_results == 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s' has no results (did the sweep finish?)", path);
    } else if ((st = fr_result_index_build(ds, ix, err)) != FR_OK) {
        fr_error_prefix(err, "'%s': ", path);
    }
    if (st != FR_OK)
        fr_dataset_free(ds);
    return st;
}

int cli_parse_double(const char *text, double *out)
{
    char *end;
    if (!text || !*text)
        return 0;
    double v = strtod(text, &end);
    if (*end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

int cli_parse_range(const char *text, double default_step, double *lo, double *hi, double *step)
{
    char buf[128];
    if (!text || strlen(text) >= sizeof buf)
        return 0;
    strcpy(buf, text);
    char *dots = strstr(buf, "..");
    if (!dots)
        return 0;
    *dots = '\0';
    char *hi_text = dots + 2, *colon = strchr(hi_text, ':');
    *step = default_step;
    if (colon) {
        *colon = '\0';
        if (!cli_parse_double(colon + 1, step) || *step <= 0)
            return 0;
    }
    return cli_parse_double(buf, lo) && cli_parse_double(hi_text, hi) && *lo > 0 && *hi >= *lo;
}

void cli_warn_unmeasured(const fr_dataset *ds, const fr_result_index *ix, const fr_selection *spec)
{
    fr_selector sel;
    fr_error err;
    if (fr_selector_init(&sel, spec, &err) != FR_OK)
        return; /* the computation above reported a bad selection */
    /* the selected configurations, matched once rather than per tensor */
    size_t n_cfg = ds->n_configs < ix->n_configs ? ds->n_configs : ix->n_configs;
    unsigned char *cfg_on = malloc(n_cfg ? n_cfg : 1);
    if (!cfg_on) {
        fr_selector_free(&sel);
        return; /* a warning only: nothing to report it with */
    }
    for (size_t c = 0; c < n_cfg; c++)
        cfg_on[c] = (unsigned char)(fr_selector_config(&sel, ds->configs[c].name) != 0);
    size_t n_sel = 0, n_none = 0;
    const char *example = NULL;
    for (size_t t = 0; t < ds->n_tensors && t < ix->n_tensors; t++) {
        if (!fr_selector_tensor(&sel, ds->tensors[t].name))
            continue;
        n_sel++;
        int any = 0;
        for (size_t c = 0; c < n_cfg && !any; c++)
            any = cfg_on[c] && fr_result_at(ix, t, c);
        if (!any && n_none++ == 0)
            example = ds->tensors[t].name;
    }
    free(cfg_on);
    fr_selector_free(&sel);
    if (n_none)
        fr_warn("%zu of the dataset's %zu selected tensors (e.g. '%s') have no result yet and are "
                "left out (a sweep not finished? 'frontier sweep ... --resume' measures them)",
                n_none, n_sel, example);
}

const char *cli_llama_model_text(const fr_llama_model *m, char *buf, size_t size)
{
    snprintf(buf, size, "%s%.300s%s (%s, %d layers, %d/%d heads%s%.0d)", m->from_model ? "'" : "",
             m->source, m->from_model ? "'" : "", m->arch[0] ? m->arch : "architecture unknown",
             m->n_layer, m->n_head, m->n_head_kv, m->n_expert > 1 ? ", experts " : "",
             m->n_expert > 1 ? m->n_expert : 0);
    return buf;
}

void cli_llama_mixes_free(fr_llama_mix_result *mixes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fr_llama_mix_result_free(&mixes[i]);
    free(mixes);
}

fr_status cli_llama_mixes(const fr_dataset *ds, const fr_result_index *ix,
                          const fr_selection *spec, fr_metric metric, const char *model_path,
                          fr_llama_mix_result **out, size_t *n)
{
    fr_error err = {0};
    fr_selector sel;
    fr_llama_model m;
    *out = NULL;
    *n = 0;
    /* no ggml-* configuration, no mix: the model is not opened */
    int any = 0;
    for (size_t c = 0; c < ds->n_configs && !any; c++)
        any = !strncmp(ds->configs[c].name, "ggml-", 5);
    if (!any)
        return FR_OK;
    fr_status st = fr_selector_init(&sel, spec, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    if ((st = fr_llama_model_describe(ds, model_path, &m, &err)) == FR_OK) {
        st = fr_llama_mixes_complete(ds, ix, &m, metric, &sel, out, n, &err);
        char text[512];
        if (st == FR_OK && *n)
            fr_info("llama-quantize's stock mixes: rules read from %s",
                    cli_llama_model_text(&m, text, sizeof text));
        fr_llama_model_free(&m);
    }
    if (st != FR_OK)
        fr_error_log("%s", err.msg);
    fr_selector_free(&sel);
    return st;
}

static cJSON *json_num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *cli_measured_json(const char *path, const char *metric_name, cli_predict_fn predict,
                         void *ctx)
{
    fr_measured *rows = NULL;
    size_t n = 0;
    fr_error err;
    if (fr_measured_read(path, &rows, &n, &err) != FR_OK) {
        fr_warn("%s (the measured results are not listed)", err.msg);
        return NULL;
    }
    cJSON *arr = n ? cJSON_CreateArray() : NULL;
    for (size_t i = 0; arr && i < n; i++) {
        const fr_measured *m = &rows[i];
        double mv = NAN, pk = NAN;
        if (predict)
            predict(m, ctx, &mv, &pk);
        cJSON *q = cJSON_CreateObject();
        if (!q || !cJSON_AddItemToArray(arr, q)) {
            cJSON_Delete(q);
            cJSON_Delete(arr);
            arr = NULL;
            break;
        }
        cJSON_AddStringToObject(q, "name", m->name);
        cJSON_AddStringToObject(q, "kind", m->kind);
        cJSON_AddItemToObject(q, "bits_per_weight", json_num_or_null(m->bits_per_weight));
        cJSON_AddItemToObject(q, metric_name, json_num_or_null(mv));
        cJSON_AddItemToObject(q, "predicted_kl", json_num_or_null(pk));
        cJSON_AddItemToObject(q, "kl_mean", json_num_or_null(m->kl_mean));
        cJSON_AddItemToObject(q, "kl_stderr", json_num_or_null(m->kl_stderr));
        cJSON_AddItemToObject(q, "ppl_quant", json_num_or_null(m->ppl_quant));
        cJSON_AddItemToObject(q, "ppl_orig", json_num_or_null(m->ppl_orig));
        cJSON_AddItemToObject(q, "top1_agreement", json_num_or_null(m->top1_agreement));
        cJSON_AddItemToObject(q, "positions", json_num_or_null(m->positions));
    }
    fr_measured_free_all(rows, n);
    return arr;
}

void cli_print_measured(FILE *out, const char *path, const char *metric_name,
                        cli_predict_fn predict, void *ctx)
{
    fr_measured *rows = NULL;
    size_t n = 0;
    fr_error err;
    if (fr_measured_read(path, &rows, &n, &err) != FR_OK) {
        fr_warn("%s (the measured results are not shown)", err.msg);
        return;
    }
    if (n == 0)
        return;
    fprintf(out, "\nmeasured with an engine (/frontier/measured: frontier evaluate, annotate) "
            "beside the prediction\n");
    fprintf(out, "  %-34s %-6s %8s %11s %12s %22s %10s %10s %8s\n", "name", "kind", "bits/w",
            metric_name, "predicted_KL", "measured KLD", "PPL", "PPL orig", "same top");
    for (size_t i = 0; i < n; i++) {
        const fr_measured *m = &rows[i];
        double mv = NAN, pk = NAN;
        if (predict)
            predict(m, ctx, &mv, &pk);
        char kld[64], mvs[32], pks[32], top[32];
        snprintf(kld, sizeof kld, isnan(m->kl_stderr) ? "%.6g" : "%.6g +/- %.2g", m->kl_mean,
                 m->kl_stderr);
        snprintf(mvs, sizeof mvs, isnan(mv) ? "-" : "%.4e", mv);
        snprintf(pks, sizeof pks, isnan(pk) ? "-" : "%.6g", pk);
        snprintf(top, sizeof top, isnan(m->top1_agreement) ? "-" : "%.2f%%",
                 100 * m->top1_agreement);
        fprintf(out, "  %-34s %-6s %8.4f %11s %12s %22s %10.5g %10.5g %8s\n", m->name, m->kind,
                m->bits_per_weight, mvs, pks, kld, m->ppl_quant, m->ppl_orig, top);
    }
    fr_measured_free_all(rows, n);
}
