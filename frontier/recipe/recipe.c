/*
 * What an allocation is written as (docs/analysis.md, "allocate"): the
 * recipe JSON, a llama.cpp --tensor-type-file with the GGUF names and GGML
 * types that stand for frontier's configurations, and the tables people
 * read.
 */
#include "frontier/analysis/allocate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "frontier/dataset/output_file.h"
#include "quantizers/families.h" /* fr_builtin_ggml_type: the family table's GGML types */

/* ---- llama.cpp names and types ---- */

/* convert_hf_to_gguf.py's names for the Llama layout (gguf-py
 * tensor_mapping.py, MODEL_ARCH.LLAMA). */
static const struct {
    const char *hf, *gguf;
} gguf_block_names[] = {
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
};

void fr_gguf_tensor_name(const char *name, char *buf, size_t size)
{
    static const char *layers = "model.layers.";
    if (size == 0)
        return;
    if (!strcmp(name, "model.embed_tokens.weight")) {
        snprintf(buf, size, "token_embd.weight");
        return;
    }
    if (!strcmp(name, "lm_head.weight")) {
        snprintf(buf, size, "output.weight");
        return;
    }
    if (!strcmp(name, "model.norm.weight")) {
        snprintf(buf, size, "output_norm.weight");
        return;
    }
    if (!strncmp(name, layers, strlen(layers))) {
        const char *p = name + strlen(layers);
        char *end;
        unsigned long layer = strtoul(p, &end, 10);
        if (end != p && *end == '.') {
            const char *rest = end + 1;
            for (size_t i = 0; i < sizeof gguf_block_names / sizeof gguf_block_names[0]; i++) {
                size_t l = strlen(gguf_block_names[i].hf);
                if (!strncmp(rest, gguf_block_names[i].hf, l) && rest[l] == '.') {
                    snprintf(buf, size, "blk.%lu.%s%s", layer, gguf_block_names[i].gguf,
                             rest + l);
                    return;
                }
            }
        }
    }
    snprintf(buf, size, "%s", name);
}

/* ---- the recipe and the tables ---- */

/* A number printed so that it reads back as the same double (%.17g: cJSON's
 * own printing keeps 15 digits when they compare equal within its epsilon,
 * and the recipe's rel_err is checked bit for bit by frontier quantize),
 * null when not finite. */
static cJSON *json_number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return cJSON_CreateRaw(buf);
}

static fr_status write_text_file(const char *path, const char *text, fr_error *err)
{
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st != FR_OK)
        return st;
    fputs(text, f);
    return fr_output_close(f, path, err);
}

fr_status fr_allocation_write_json(const fr_allocation *a, const fr_alloc_problem *prob,
                                   const char *dataset_path, const char *path, fr_error *err)
{
    fr_status st = FR_OK;
    const fr_dataset *ds = prob->ds;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *recipe = cJSON_CreateObject();
    cJSON *tensors = cJSON_CreateArray();
    if (!root || !recipe || !tensors) {
        cJSON_Delete(recipe);
        cJSON_Delete(tensors);
        goto nomem;
    }
    cJSON_AddItemToObject(root, "recipe", recipe);
    cJSON_AddItemToObject(root, "tensors", tensors);
    cJSON_AddStringToObject(root, "format", "frontier-recipe");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "dataset", dataset_path ? dataset_path : "");
    cJSON_AddStringToObject(root, "metric", fr_metric_name(a->metric));
    cJSON_AddItemToObject(root, "budget_bits_per_weight", json_number(a->budget));
    cJSON_AddNumberToObject(root, "capacity_bits", (double)a->capacity_bits);
    cJSON_AddNumberToObject(root, "total_bits", (double)a->total_bits);
    cJSON_AddNumberToObject(root, "numel", (double)a->numel);
    cJSON_AddItemToObject(root, "bits_per_weight", json_number(a->bits_per_weight));
    cJSON_AddItemToObject(root, fr_metric_name(a->metric), json_number(a->value));
    if (a->metric == FR_METRIC_SQNR_DB)
        cJSON_AddItemToObject(root, "rel_err",
                              json_number(fr_metric_value(FR_METRIC_REL_ERR, a->err_sum, a->norm_sum)));
    cJSON_AddItemToObject(root, "err_sum", json_number(a->err_sum));
    cJSON_AddItemToObject(root, "norm_sum", json_number(a->norm_sum));
    cJSON_AddItemToObject(root, "lower_bound", json_number(a->lower_bound_value));
    cJSON_AddBoolToObject(root, "optimal", a->stats.optimal);
    cJSON_AddNumberToObject(root, "search_states", (double)a->stats.nodes);
    cJSON_AddNumberToObject(root, "n_tensors", (double)a->n_choices);
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const fr_ds_tensor *t = &ds->tensors[ch->tensor];
        const fr_ds_config *c = &ds->configs[ch->config];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto nomem;
        cJSON_AddItemToArray(tensors, o);
        cJSON_AddStringToObject(recipe, t->name, c->name);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "class", t->cls);
        cJSON_AddStringToObject(o, "config", c->name);
        cJSON_AddStringToObject(o, "family", c->family);
        const char *ggml = fr_builtin_ggml_type(c->name);
        cJSON_AddItemToObject(o, "llama_cpp_type", ggml ? cJSON_CreateString(ggml) : cJSON_CreateNull());
        cJSON_AddNumberToObject(o, "numel", (double)ch->numel);
        cJSON_AddNumberToObject(o, "total_bits", (double)ch->total_bits);
        cJSON_AddItemToObject(o, "bits_per_weight",
                              json_number((double)ch->total_bits / (double)ch->numel));
        cJSON_AddItemToObject(o, fr_metric_name(a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric),
                              json_number(fr_metric_value(a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric,
                                                          ch->err_term, ch->norm_term)));
        cJSON_AddItemToObject(o, "err_term", json_number(ch->err_term));
        cJSON_AddBoolToObject(o, "fixed", ch->fixed);
    }
    text = cJSON_Print(root);
    if (!text)
        goto nomem;
    size_t len = strlen(text);
    char *with_nl = realloc(text, len + 2);
    if (!with_nl)
        goto nomem;
    text = with_nl;
    text[len] = '\n';
    text[len + 1] = '\0';
    st = write_text_file(path, text, err);
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
done:
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}

fr_status fr_allocation_write_tensor_types(const fr_allocation *a, const fr_alloc_problem *prob,
                                           const char *path, size_t *n_unmapped, fr_error *err)
{
    size_t unmapped = 0;
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st != FR_OK)
        return st;
    /* llama-quantize --tensor-type-file: `regex=type` per line, no comments;
     * the regex is lowercased and matched with std::regex_search, the last
     * match winning, so each name is escaped and anchored. */
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const char *ggml = fr_builtin_ggml_type(prob->ds->configs[ch->config].name);
        if (!ggml) {
            unmapped++;
            continue;
        }
        char gguf[512];
        fr_gguf_tensor_name(prob->ds->tensors[ch->tensor].name, gguf, sizeof gguf);
        fputc('^', f);
        for (const char *p = gguf; *p; p++) {
            if (strchr(".^$|()[]{}*+?\\", *p))
                fputc('\\', f);
            fputc(*p, f);
        }
        fprintf(f, "$=%s\n", ggml);
    }
    if ((st = fr_output_close(f, path, err)) != FR_OK)
        return st;
    if (n_unmapped)
        *n_unmapped = unmapped;
    return FR_OK;
}

void fr_allocation_print(FILE *out, const fr_allocation *a, const fr_alloc_problem *prob,
                         int per_tensor)
{
    const fr_dataset *ds = prob->ds;
    const char *m = fr_metric_name(a->metric);
    fprintf(out, "budget %.4g bits per weight over %zu tensors (%llu parameters): capacity %llu bits\n",
            a->budget, a->n_choices, (unsigned long long)a->numel,
            (unsigned long long)a->capacity_bits);
    fprintf(out, "achieved %.6f bits per weight (%llu bits), %s %.6g (lower bound %.6g)%s\n",
            a->bits_per_weight, (unsigned long long)a->total_bits, m, a->value,
            a->lower_bound_value,
            a->stats.optimal ? ", optimal" : ", NOT proven optimal: search limit reached");
    if (!per_tensor)
        return;
    size_t w = 6;
    for (size_t i = 0; i < a->n_choices; i++) {
        size_t l = strlen(ds->tensors[a->choices[i].tensor].name);
        if (l > w)
            w = l;
    }
    fprintf(out, "  %-*s %-20s %9s %12s\n", (int)w, "tensor", "config", "bits/w",
             a->metric == FR_METRIC_OUT_REL_ERR ? "out_rel_err" : "rel_err");
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        fr_metric shown = a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric;
        fprintf(out, "  %-*s %-20s %9.4f %12.4e%s\n", (int)w, ds->tensors[ch->tensor].name,
                ds->configs[ch->config].name, (double)ch->total_bits / (double)ch->numel,
                fr_metric_value(shown, ch->err_term, ch->norm_term), ch->fixed ? "  (fixed)" : "");
    }
}

void fr_mixed_curve_print(FILE *out, const fr_mixed_curve *c)
{
    fprintf(out, "# mixed-precision frontier, %s over %zu tensors (%llu parameters)\n",
            fr_metric_name(c->metric), c->n_tensors, (unsigned long long)c->numel);
    fprintf(out, "  %9s %9s %12s %12s %s\n", "budget", "bits/w", fr_metric_name(c->metric),
            "lower_bound", "optimal");
    for (size_t i = 0; i < c->n_points; i++) {
        const fr_curve_point *p = &c->points[i];
        fprintf(out, "  %9.4f %9.4f %12.6g %12.6g %s\n", p->budget, p->bits_per_weight, p->value,
                p->lower_bound_value, p->optimal ? "yes" : "no");
    }
}
