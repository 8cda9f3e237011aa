/*
 * What an allocation is written as (frontier/analysis/allocate_output.h):
 * the recipe (its JSON is frontier/recipe/recipe.c's), a llama.cpp
 * --tensor-type-file with the GGUF names and GGML types that stand for
 * frontier's configurations, and the tables people read.
 */
#include "frontier/analysis/allocate_output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/dataset/keep_rows.h"
#include "frontier/dataset/output_file.h"
#include "frontier/recipe/recipe.h"
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

/* ---- the recipe ---- */

/* The recipe of a's choices over ds; prob (NULL: a llama-quantize mix,
 * which minimised nothing) says the objective. */
static fr_status write_recipe(const fr_allocation *a, const fr_dataset *ds,
                              const fr_alloc_problem *prob, const char *dataset_path,
                              const char *llama_mix, const char *const *llama_types,
                              const char *path, fr_error *err)
{
    /* each tensor's error: rel_err under sqnr_db (a tensor's SQNR adds nothing) */
    fr_metric shown = a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric;
    fr_recipe r = {
        .n_tensors = a->n_choices,
        .tensors = calloc(a->n_choices ? a->n_choices : 1, sizeof *r.tensors),
        .dataset = dataset_path,
        .llama_mix = llama_mix,
        .metric = fr_metric_name(a->metric),
        .objective = prob ? fr_alloc_objective_name(prob) : NULL,
        .sensitivity_source = prob ? prob->sensitivity_source : NULL,
        .default_sensitivity = prob ? prob->default_sensitivity : NAN,
        .predicted_kl = a->objective == FR_OBJECTIVE_SENSITIVITY ? a->cost_sum : NAN,
        .error_name = fr_metric_name(shown),
        .budget_bits_per_weight = a->budget,
        .capacity_bits = a->capacity_bits,
        .total_bits = a->total_bits,
        .numel = a->numel,
        .bits_per_weight = a->bits_per_weight,
        .value = a->value,
        .has_rel_err = a->metric == FR_METRIC_SQNR_DB,
        .rel_err = fr_metric_value(FR_METRIC_REL_ERR, a->err_sum, a->norm_sum),
        .err_sum = a->err_sum,
        .norm_sum = a->norm_sum,
        .lower_bound = a->lower_bound_value,
        .optimal = a->stats.optimal,
        .search_states = a->stats.nodes,
    };
    if (!r.tensors)
        return fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const fr_ds_tensor *t = &ds->tensors[ch->tensor];
        const fr_ds_config *c = &ds->configs[ch->config];
        r.tensors[i] = (fr_recipe_tensor){
            .name = t->name,
            .config = c->name,
            .cls = t->cls,
            .family = c->family,
            .numel = ch->numel,
            .total_bits = ch->total_bits,
            .error = fr_metric_value(shown, ch->err_term, ch->norm_term),
            .err_term = ch->err_term,
            .fixed = ch->fixed,
            .source_format = t->source_format,
            .llama_type = llama_types ? llama_types[i] : NULL,
        };
    }
    fr_status st = fr_recipe_write(&r, path, err);
    free(r.tensors);
    return st;
}

fr_status fr_allocation_write_json(const fr_allocation *a, const fr_alloc_problem *prob,
                                   const char *dataset_path, const char *path, fr_error *err)
{
    return write_recipe(a, prob->ds, prob, dataset_path, NULL, NULL, path, err);
}

fr_status fr_allocation_write_recipe(const fr_allocation *a, const fr_dataset *ds,
                                     const char *dataset_path, const char *llama_mix,
                                     const char *const *llama_types, const char *path,
                                     fr_error *err)
{
    return write_recipe(a, ds, NULL, dataset_path, llama_mix, llama_types, path, err);
}

/* ---- the llama.cpp tensor-type file and the tables ---- */

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
        /* keep: the tensor's own type, which llama-quantize copies as it is */
        const char *config = prob->ds->configs[ch->config].name;
        char kept[32];
        const char *ggml = fr_dataset_is_keep(config)
                               ? fr_dataset_keep_type(prob->ds->tensors[ch->tensor].source_format,
                                                      kept, sizeof kept)
                               : fr_builtin_ggml_type(config);
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
    /* the bound is on the objective's metric; under sensitivity (the
     * predicted KL) there is none on the error shown here */
    char bound[48] = "";
    if (!isnan(a->lower_bound_value))
        snprintf(bound, sizeof bound, " (lower bound %.6g)", a->lower_bound_value);
    fprintf(out, "achieved %.6f bits per weight (%llu bits), %s %.6g%s%s\n",
            a->bits_per_weight, (unsigned long long)a->total_bits, m, a->value, bound,
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
