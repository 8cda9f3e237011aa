/* What the analysis commands share: reading a dataset, number parsing, the
 * warning about tensors without results. */
#include "cli_analysis.h"

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
