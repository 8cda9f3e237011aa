/*
 * llama-quantize's stock mixes (frontier/analysis/llama_mix.h). The rules
 * are those of the pinned llama.cpp's llama-quant.cpp (llama_tensor_get_type,
 * its llama_tensor_get_type_impl and tensor_type_fallback,
 * tensor_allows_quantization, the tensor order of llama_model_loader's
 * weights_map), for the file types whose every type frontier's ggml-*
 * configurations measure, without an importance matrix; docs/llama-mixes.md
 * states them and the comparison with llama-quantize's own output.
 */
#include "frontier/analysis/llama_mix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "core/source.h"
#include "frontier/analysis/allocate_output.h" /* fr_gguf_tensor_name, the recipe */
#include "quantizers/ggml_blocks.h"            /* the ggml types and their fallback */

/* ---- the file types (llama.h, enum llama_ftype) ---- */

enum {
    FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10,
    FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15,
    FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30
};

static const struct {
    const char *name;
    int ftype;
    fr_ggml_qtype type; /* llama_ftype_get_default_type */
} mix_table[FR_LLAMA_N_MIXES] = {
    {"Q2_K", FT_Q2_K, FR_GGML_Q2_K},       {"Q3_K_S", FT_Q3_K_S, FR_GGML_Q3_K},
    {"Q3_K_M", FT_Q3_K_M, FR_GGML_Q3_K},   {"Q3_K_L", FT_Q3_K_L, FR_GGML_Q3_K},
    {"IQ4_XS", FT_IQ4_XS, FR_GGML_IQ4_XS}, {"Q4_0", FT_Q4_0, FR_GGML_Q4_0},
    {"IQ4_NL", FT_IQ4_NL, FR_GGML_IQ4_NL}, {"Q4_K_S", FT_Q4_K_S, FR_GGML_Q4_K},
    {"Q4_K_M", FT_Q4_K_M, FR_GGML_Q4_K},   {"Q4_1", FT_Q4_1, FR_GGML_Q4_1},
    {"Q5_0", FT_Q5_0, FR_GGML_Q5_0},       {"Q5_K_S", FT_Q5_K_S, FR_GGML_Q5_K},
    {"Q5_K_M", FT_Q5_K_M, FR_GGML_Q5_K},   {"Q5_1", FT_Q5_1, FR_GGML_Q5_1},
    {"Q6_K", FT_Q6_K, FR_GGML_Q6_K},       {"Q8_0", FT_Q8_0, FR_GGML_Q8_0},
};

const char *fr_llama_mix_name(int mix)
{
    return mix >= 0 && mix < FR_LLAMA_N_MIXES ? mix_table[mix].name : NULL;
}

int fr_llama_mix_from_name(const char *name)
{
    static const struct {
        const char *alias, *mix;
    } aliases[] = {{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};
    for (size_t a = 0; name && a < sizeof aliases / sizeof aliases[0]; a++)
        if (!strcasecmp(name, aliases[a].alias))
            name = aliases[a].mix;
    for (int m = 0; name && m < FR_LLAMA_N_MIXES; m++)
        if (!strcasecmp(name, mix_table[m].name))
            return m;
    return -1;
}

const char *fr_llama_mix_names(char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int m = 0; m < FR_LLAMA_N_MIXES && used < size; m++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", m ? ", " : "", mix_table[m].name);
    return buf;
}

/* ---- tensor categories and what llama-quantize quantizes ---- */

typedef enum category {
    CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV, CAT_ATTN_KV_B,
    CAT_ATTN_OUTPUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OUTPUT, CAT_OTHER
} category;

/* tensor_get_category: the first match in this order */
static category category_of(const char *name)
{
    static const struct {
        const char *part;
        category cat;
    } parts[] = {{"attn_qkv.weight", CAT_ATTN_QKV}, {"attn_kv_b.weight", CAT_ATTN_KV_B},
                 {"attn_v.weight", CAT_ATTN_V},     {"attn_k.weight", CAT_ATTN_K},
                 {"attn_q.weight", CAT_ATTN_Q},     {"attn_output.weight", CAT_ATTN_OUTPUT},
                 {"ffn_up", CAT_FFN_UP},            {"ffn_gate", CAT_FFN_GATE},
                 {"ffn_down", CAT_FFN_DOWN}};
    if (!strcmp(name, "output.weight"))
        return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight"))
        return CAT_TOKEN_EMBD;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i].part))
            return parts[i].cat;
    return CAT_OTHER;
}

static int is_attn_v(category c)
{
    return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B;
}

/* tensor_allows_quantization, without the options (--leave-output-tensor,
 * --only-copy) and the one architecture's list (glm5-next) */
static int allows_quantization(const char *name, int ndim)
{
    static const char *const never[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
        "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
        "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
        "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
        ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
        ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"};
    size_t len = strlen(name);
    if (ndim < 2 || len < 6 || strcmp(name + len - 6, "weight"))
        return 0;
    if (!strcmp(name, "position_embd.weight") || !strcmp(name, "token_types.weight"))
        return 0;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strstr(name, never[i]))
            return 0;
    return 1;
}

/* ---- llama_tensor_get_type_impl ---- */

/* quantize_state_impl: what the rules count as they go */
typedef struct rule_state {
    const fr_llama_model *m;
    int ftype;
    int n_attention_wv, i_attention_wv, i_ffn_down;
    int tied;        /* no output.weight: token_embd takes the output's rule */
    int falcon, is_70b;
} rule_state;

static int n_gqa(const fr_llama_model *m)
{
    return m->n_head_kv > 0 ? m->n_head / m->n_head_kv : 0;
}

static int use_more_bits(int i_layer, int n_layers)
{
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 ||
           (i_layer - n_layers / 8) % 3 == 2;
}

/* layer_info: the counter, or with experts the layer in the name */
static int layer_of(const rule_state *s, int counter, const char *name)
{
    int layer = counter;
    if (s->m->n_expert > 1 && sscanf(name, "blk.%d.", &layer) != 1)
        layer = counter;
    return layer;
}

static int block_of(fr_ggml_qtype t)
{
    const fr_ggml_params *p = fr_ggml_params_by_type(t);
    return p ? (int)p->block : 1;
}

/* output.weight, and token_embd when it is tied to it */
static fr_ggml_qtype output_rule(const rule_state *s, fr_ggml_qtype t, int64_t ne0)
{
    if (s->falcon || ne0 % block_of(t) != 0)
        return FR_GGML_Q8_0;
    return t != FR_GGML_Q8_0 ? FR_GGML_Q6_K : t;
}

static fr_ggml_qtype attn_v_rule(rule_state *s, fr_ggml_qtype t)
{
    const int f = s->ftype, gqa = n_gqa(s->m), i = s->i_attention_wv;
    if (f == FT_Q2_K)
        t = gqa >= 4 ? FR_GGML_Q4_K : FR_GGML_Q3_K;
    else if (f == FT_Q3_K_M)
        t = i < 2 ? FR_GGML_Q5_K : FR_GGML_Q4_K;
    else if (f == FT_Q3_K_L)
        t = FR_GGML_Q5_K;
    else if ((f == FT_IQ4_NL || f == FT_IQ4_XS) && gqa >= 4)
        t = FR_GGML_Q5_K;
    else if ((f == FT_Q4_K_M || f == FT_Q5_K_M) && use_more_bits(i, s->n_attention_wv))
        t = FR_GGML_Q6_K;
    else if (f == FT_Q4_K_S && i < 4)
        t = FR_GGML_Q5_K;
    if (s->is_70b && (t == FR_GGML_Q3_K || t == FR_GGML_Q4_K))
        t = FR_GGML_Q5_K;
    if (s->m->n_expert == 8)
        t = FR_GGML_Q8_0;
    s->i_attention_wv++;
    return t;
}

static fr_ggml_qtype ffn_down_rule(rule_state *s, fr_ggml_qtype t, const char *name)
{
    const int f = s->ftype, n = s->m->n_layer, i = layer_of(s, s->i_ffn_down, name);
    if (f == FT_Q2_K)
        t = FR_GGML_Q3_K;
    else if (f == FT_Q3_K_M)
        t = i < n / 16                              ? FR_GGML_Q5_K
            : !s->falcon || use_more_bits(i, n)     ? FR_GGML_Q4_K
                                                    : FR_GGML_Q3_K;
    else if (f == FT_Q3_K_L)
        t = s->falcon ? FR_GGML_Q4_K : FR_GGML_Q5_K;
    else if (f == FT_Q4_K_M) {
        if (s->falcon)
            t = i < n / 16 ? FR_GGML_Q6_K : use_more_bits(i, n) ? FR_GGML_Q5_K : FR_GGML_Q4_K;
        else if (use_more_bits(i, n))
            t = FR_GGML_Q6_K;
    } else if (i < n / 8 && (f == FT_IQ4_NL || f == FT_IQ4_XS))
        t = FR_GGML_Q5_K; /* without an importance matrix */
    else if (f == FT_Q5_K_M && use_more_bits(i, n))
        t = FR_GGML_Q6_K;
    else if (f == FT_Q4_K_S && !s->falcon && i < n / 8)
        t = FR_GGML_Q5_K;
    s->i_ffn_down++;
    return t;
}

static fr_ggml_qtype attn_output_rule(const rule_state *s, fr_ggml_qtype t)
{
    const int f = s->ftype;
    if (s->falcon)
        return f == FT_Q3_K_L ? FR_GGML_Q4_K : t;
    if (s->m->n_expert == 8)
        return f == FT_Q2_K || f == FT_Q3_K_S || f == FT_Q3_K_M || f == FT_IQ4_NL ||
                       f == FT_Q4_K_S || f == FT_Q4_K_M || f == FT_IQ4_XS
                   ? FR_GGML_Q5_K
                   : t;
    return f == FT_Q2_K     ? FR_GGML_Q3_K
           : f == FT_Q3_K_M ? FR_GGML_Q4_K
           : f == FT_Q3_K_L ? FR_GGML_Q5_K
                            : t;
}

/* The rules' type for one tensor llama-quantize quantizes, default t.
 * attn_qkv takes attn_v's rule: llama.cpp's own branch for it comes after
 * that one and is never reached. */
static fr_ggml_qtype rule_type(rule_state *s, fr_ggml_qtype t, const fr_llama_tensor *x)
{
    const category c = category_of(x->name);
    if (c == CAT_OUTPUT || (s->tied && c == CAT_TOKEN_EMBD))
        return output_rule(s, t, x->ne0);
    if (is_attn_v(c))
        return attn_v_rule(s, t);
    if (c == CAT_ATTN_K)
        return s->m->n_expert == 8 ? FR_GGML_Q8_0 : t;
    if (c == CAT_FFN_DOWN)
        return ffn_down_rule(s, t, x->name);
    if (c == CAT_ATTN_OUTPUT)
        return attn_output_rule(s, t);
    return t; /* token_embd untied, attn_q, ffn_gate, ffn_up: no rule for these types */
}

/* Which architectures' 80-layer (jais2: 68) models are LLM_TYPE_70B, whose
 * attn_v the rules give more bits (llama: only with grouped-query
 * attention, else it is the 65B). */
static int is_70b(const fr_llama_model *m)
{
    if (!strcmp(m->arch, "llama"))
        return m->n_layer == 80 && m->n_head != m->n_head_kv;
    if (!strcmp(m->arch, "qwen2") || !strcmp(m->arch, "deci") || !strcmp(m->arch, "olmo"))
        return m->n_layer == 80;
    return !strcmp(m->arch, "jais2") && m->n_layer == 68;
}

void fr_llama_mix_types(int mix, const fr_llama_model *m, const char **target,
                        const char **stored)
{
    rule_state s = {.m = m, .ftype = mix_table[mix].ftype, .tied = 1,
                    .falcon = !strcmp(m->arch, "falcon"), .is_70b = is_70b(m)};
    for (size_t i = 0; i < m->n_tensors; i++) {
        category c = category_of(m->tensors[i].name);
        s.n_attention_wv += is_attn_v(c);
        if (c == CAT_OUTPUT)
            s.tied = 0;
    }
    /* the tensors in llama-quantize's order (fr_llama_model_describe sorted them) */
    for (size_t i = 0; i < m->n_tensors; i++) {
        const fr_llama_tensor *x = &m->tensors[i];
        target[i] = stored[i] = NULL;
        if (!allows_quantization(x->name, x->ndim))
            continue;
        const fr_ggml_params *t = fr_ggml_params_by_type(rule_type(&s, mix_table[mix].type, x));
        target[i] = t->name;
        stored[i] = fr_ggml_stored_type(t, x->ne0)->name;
    }
}

/* ---- the model ---- */

void fr_llama_model_free(fr_llama_model *m)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        free(m->tensors[i].name);
    free(m->tensors);
    memset(m, 0, sizeof *m);
}

/* weight_name_comparer: by the layer of "blk.N." (-1 without), then by name */
static int layer_in(const char *name)
{
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1)
        layer = -1;
    return layer;
}

static int llama_order(const void *a, const void *b)
{
    const fr_llama_tensor *x = a, *y = b;
    int lx = layer_in(x->name), ly = layer_in(y->name);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);
}

/* Appends a tensor (its name mapped to GGUF's); 0 when out of memory. */
static int add_tensor(fr_llama_model *m, const char *name, int64_t ne0, int ndim)
{
    fr_llama_tensor *more = realloc(m->tensors, (m->n_tensors + 1) * sizeof *more);
    if (!more)
        return 0;
    m->tensors = more;
    char gguf[512];
    fr_gguf_tensor_name(name, gguf, sizeof gguf);
    fr_llama_tensor *t = &m->tensors[m->n_tensors];
    *t = (fr_llama_tensor){.name = strdup(gguf), .ne0 = ne0, .ndim = ndim, .ds = -1};
    if (!t->name)
        return 0;
    m->n_tensors++;
    return 1;
}

/* A dataset shape "A x B x C" (C order): its last dimension and rank. */
static void parse_shape(const char *shape, int64_t *ne0, int *ndim)
{
    const char *last = shape;
    *ndim = 1;
    for (const char *p = shape; *p; p++)
        if (*p == 'x') {
            (*ndim)++;
            last = p + 1;
        }
    *ne0 = strtoll(last, NULL, 10);
}

static int metadata_int(const cJSON *meta, const char *arch, const char *key, int fallback)
{
    char full[160];
    snprintf(full, sizeof full, "%s%s%s", arch, arch[0] ? "." : "", key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, full);
    if (cJSON_IsArray(v)) /* per-layer values: layer 0's, as n_gqa() reads */
        v = cJSON_GetArrayItem(v, 0);
    return cJSON_IsNumber(v) ? (int)v->valuedouble : fallback;
}

/* The hyperparameters of a GGUF's metadata or a config.json. */
static void read_hparams(const fr_source *src, fr_llama_model *m)
{
    const cJSON *meta = src->metadata;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(meta, "general.architecture");
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(meta, "config");
    if (cJSON_IsString(arch)) {
        snprintf(m->arch, sizeof m->arch, "%s", arch->valuestring);
        m->n_layer = metadata_int(meta, m->arch, "block_count", 0);
        m->n_head = metadata_int(meta, m->arch, "attention.head_count", 0);
        m->n_head_kv = metadata_int(meta, m->arch, "attention.head_count_kv", m->n_head);
        m->n_expert = metadata_int(meta, m->arch, "expert_count", 0);
    } else if (cJSON_IsObject(config)) {
        /* convert_hf_to_gguf.py's names of the Llama-style architectures */
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(config, "model_type");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        snprintf(m->arch, sizeof m->arch, "%s", !strcmp(t, "mistral") ? "llama" : t);
        m->n_layer = metadata_int(config, "", "num_hidden_layers", 0);
        m->n_head = metadata_int(config, "", "num_attention_heads", 0);
        m->n_head_kv = metadata_int(config, "", "num_key_value_heads", m->n_head);
        m->n_expert = metadata_int(config, "", "num_local_experts",
                                   metadata_int(config, "", "num_experts", 0));
    }
}

/* What the dataset's tensors say where the model is not at hand. */
static void infer_hparams(fr_llama_model *m, const fr_dataset *ds)
{
    int64_t q_rows = 0, k_rows = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const fr_llama_tensor *t = &m->tensors[i];
        int layer = layer_in(t->name);
        if (layer + 1 > m->n_layer)
            m->n_layer = layer + 1;
        const fr_ds_tensor *d = t->ds >= 0 ? &ds->tensors[t->ds] : NULL;
        int64_t rows = d ? strtoll(d->shape, NULL, 10) : 0;
        if (layer == 0 && category_of(t->name) == CAT_ATTN_Q && t->ndim == 2)
            q_rows = rows;
        if (layer == 0 && category_of(t->name) == CAT_ATTN_K && t->ndim == 2)
            k_rows = rows;
        if (t->ndim == 3 && strstr(t->name, "_exps") && rows > m->n_expert)
            m->n_expert = (int)rows;
    }
    if (q_rows > 0 && k_rows > 0 && q_rows % k_rows == 0) {
        m->n_head = (int)(q_rows / k_rows); /* only their ratio is read */
        m->n_head_kv = 1;
    }
}

/* Each dataset tensor's model tensor, by GGUF name. */
static void match_dataset(fr_llama_model *m, const fr_dataset *ds)
{
    for (size_t i = 0; i < ds->n_tensors; i++) {
        char gguf[512];
        fr_gguf_tensor_name(ds->tensors[i].name, gguf, sizeof gguf);
        for (size_t k = 0; k < m->n_tensors; k++)
            if (m->tensors[k].ds < 0 && !strcmp(m->tensors[k].name, gguf)) {
                m->tensors[k].ds = (int64_t)i;
                break;
            }
    }
}

static fr_status from_model(const fr_dataset *ds, const char *path, fr_llama_model *m,
                            fr_error *err)
{
    fr_source *src;
    fr_status st = fr_source_open(path, &src, err);
    if (st != FR_OK)
        return st;
    read_hparams(src, m);
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        if (!add_tensor(m, t->name, t->ndim ? t->shape[t->ndim - 1] : 1, t->ndim)) {
            fr_source_close(src);
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        }
    }
    fr_source_close(src);
    qsort(m->tensors, m->n_tensors, sizeof *m->tensors, llama_order);
    match_dataset(m, ds);
    m->from_model = 1;
    snprintf(m->source, sizeof m->source, "%s", path);
    return FR_OK;
}

fr_status fr_llama_model_describe(const fr_dataset *ds, const char *model_path,
                                  fr_llama_model *m, fr_error *err)
{
    memset(m, 0, sizeof *m);
    if (model_path) {
        fr_status st = from_model(ds, model_path, m, err);
        if (st != FR_OK)
            fr_llama_model_free(m);
        return st;
    }
    if (ds->n_sources == 1) {
        fr_error ignored = {0};
        if (from_model(ds, ds->sources[0].path, m, &ignored) == FR_OK)
            return FR_OK;
        fr_llama_model_free(m);
        snprintf(m->source, sizeof m->source, "the dataset's tensors ('%.200s' cannot be read)",
                 ds->sources[0].path);
    } else {
        snprintf(m->source, sizeof m->source, "the dataset's tensors (%zu sources)",
                 ds->n_sources);
    }
    for (size_t i = 0; i < ds->n_tensors; i++) {
        int64_t ne0;
        int ndim;
        parse_shape(ds->tensors[i].shape, &ne0, &ndim);
        if (!add_tensor(m, ds->tensors[i].name, ne0, ndim)) {
            fr_llama_model_free(m);
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        }
        m->tensors[m->n_tensors - 1].ds = (int64_t)i;
    }
    qsort(m->tensors, m->n_tensors, sizeof *m->tensors, llama_order);
    infer_hparams(m, ds);
    return FR_OK;
}

/* ---- a mix on the dataset ---- */

void fr_llama_mix_result_free(fr_llama_mix_result *r)
{
    free(r->choices);
    memset(r, 0, sizeof *r);
}

/* The row standing for a tensor stored as `stored` (asked as `target`):
 * ggml-<stored>'s, else ggml-<target>'s, which measures the same blocks. */
static int find_row(const fr_dataset *ds, const fr_result_index *ix, size_t tensor,
                    fr_metric metric, fr_llama_mix_choice *ch)
{
    const char *types[2] = {ch->stored, ch->target};
    for (int k = 0; k < 2; k++) {
        char name[64];
        snprintf(name, sizeof name, "ggml-%s", types[k]);
        int64_t c = fr_config_position(ds, name);
        const fr_ds_result *r = c >= 0 ? fr_result_at(ix, tensor, (size_t)c) : NULL;
        if (r && fr_metric_terms(metric, r, &ds->tensors[tensor], &ch->err_term, &ch->norm_term)) {
            ch->config = c;
            ch->total_bits = r->total_bits;
            return 1;
        }
    }
    return 0;
}

fr_status fr_llama_mix_evaluate(const fr_dataset *ds, const fr_result_index *ix,
                                const fr_llama_model *m, int mix, fr_metric metric,
                                const fr_selector *sel, fr_llama_mix_result *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->mix = mix;
    out->metric = metric;
    const char **target = calloc(m->n_tensors + 1, sizeof *target);
    const char **stored = calloc(m->n_tensors + 1, sizeof *stored);
    unsigned char *in_model = calloc(ds->n_tensors + 1, 1);
    out->choices = calloc(m->n_tensors + 1, sizeof *out->choices);
    if (!target || !stored || !in_model || !out->choices) {
        free(target);
        free(stored);
        free(in_model);
        fr_llama_mix_result_free(out);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    fr_llama_mix_types(mix, m, target, stored);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const int64_t t = m->tensors[i].ds;
        if (t < 0 || (sel && !fr_selector_tensor(sel, ds->tensors[t].name)))
            continue;
        in_model[t] = stored[i] != NULL;
        if (!stored[i])
            continue;
        fr_llama_mix_choice *ch = &out->choices[out->n_choices++];
        *ch = (fr_llama_mix_choice){.tensor = (size_t)t, .target = target[i],
                                    .stored = stored[i], .config = -1,
                                    .numel = ds->tensors[t].numel};
        if (!find_row(ds, ix, (size_t)t, metric, ch)) {
            if (!out->n_missing++)
                out->missing_example = ds->tensors[t].name;
            continue;
        }
        out->total_bits += ch->total_bits;
        out->numel += ch->numel;
        out->err_sum += ch->err_term;
        out->norm_sum += ch->norm_term;
    }
    for (size_t t = 0; t < ds->n_tensors; t++)
        if (!in_model[t] && (!sel || fr_selector_tensor(sel, ds->tensors[t].name)))
            out->n_unquantized++;
    out->bits_per_weight = out->numel ? (double)out->total_bits / (double)out->numel : NAN;
    out->value = out->numel ? fr_metric_value(metric, out->err_sum, out->norm_sum) : NAN;
    free(target);
    free(stored);
    free(in_model);
    return FR_OK;
}

static int by_size(const void *a, const void *b)
{
    const fr_llama_mix_result *x = a, *y = b;
    return x->bits_per_weight < y->bits_per_weight ? -1 : x->bits_per_weight > y->bits_per_weight;
}

fr_status fr_llama_mixes_complete(const fr_dataset *ds, const fr_result_index *ix,
                                  const fr_llama_model *m, fr_metric metric,
                                  const fr_selector *sel, fr_llama_mix_result **out, size_t *n,
                                  fr_error *err)
{
    *n = 0;
    *out = calloc(FR_LLAMA_N_MIXES, sizeof **out);
    if (!*out)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (int mix = 0; mix < FR_LLAMA_N_MIXES; mix++) {
        fr_llama_mix_result r;
        fr_status st = fr_llama_mix_evaluate(ds, ix, m, mix, metric, sel, &r, err);
        if (st != FR_OK) {
            for (size_t i = 0; i < *n; i++)
                fr_llama_mix_result_free(&(*out)[i]);
            free(*out);
            *out = NULL;
            *n = 0;
            return st;
        }
        if (r.n_choices && !r.n_missing)
            (*out)[(*n)++] = r;
        else
            fr_llama_mix_result_free(&r);
    }
    if (*n == 0) { /* no mix is complete on these tensors: nothing to hand back */
        free(*out);
        *out = NULL;
        return FR_OK;
    }
    qsort(*out, *n, sizeof **out, by_size);
    return FR_OK;
}

/* ---- the mix as a recipe ---- */

fr_status fr_llama_mix_write_recipe(const fr_llama_mix_result *r, const fr_dataset *ds,
                                    const char *dataset_path, const char *path, fr_error *err)
{
    if (r->n_missing)
        return fr_fail(err, FR_E_FORMAT,
                       "%s cannot be written: %zu tensors (e.g. '%s') have no row of their type",
                       fr_llama_mix_name(r->mix), r->n_missing, r->missing_example);
    /* the mix as an allocation of no budget, its recipe allocate's */
    fr_allocation a = {.metric = r->metric, .budget = NAN, .total_bits = r->total_bits,
                       .numel = r->numel, .bits_per_weight = r->bits_per_weight,
                       .err_sum = r->err_sum, .norm_sum = r->norm_sum, .value = r->value,
                       .lower_bound_value = NAN, .n_choices = r->n_choices,
                       .choices = calloc(r->n_choices + 1, sizeof *a.choices)};
    const char **types = calloc(r->n_choices + 1, sizeof *types);
    fr_status st = FR_OK;
    if (!a.choices || !types) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
        goto done;
    }
    for (size_t i = 0; i < r->n_choices; i++) {
        const fr_llama_mix_choice *ch = &r->choices[i];
        a.choices[i] = (fr_alloc_choice){.tensor = ch->tensor, .config = (size_t)ch->config,
                                         .total_bits = ch->total_bits, .numel = ch->numel,
                                         .err_term = ch->err_term, .norm_term = ch->norm_term};
        types[i] = ch->stored;
    }
    st = fr_allocation_write_recipe(&a, ds, dataset_path, fr_llama_mix_name(r->mix), types, path,
                                    err);
done:
    free(a.choices);
    free(types);
    return st;
}

/* ---- tables ---- */

/* A uniform point of the model-level group that dominates (bits, metric)
 * of a mix: no more bits and no worse, one of them strictly; the one with
 * the fewest bits, NULL when none or p covers other tensors. */
static const fr_point *dominated_by(const fr_llama_mix_result *r, const fr_pareto *p)
{
    if (!p || p->by != FR_BY_CONFIG || !p->n_groups || p->groups[0].common_numel != r->numel)
        return NULL;
    const fr_pareto_group *g = &p->groups[0];
    const int higher = r->metric == FR_METRIC_SQNR_DB; /* sqnr_db: more is better */
    for (size_t i = g->first_point; i < g->first_point + g->n_points; i++) {
        const fr_point *pt = &p->points[i];
        double v = fr_point_metric(pt, r->metric);
        int no_worse = higher ? v >= r->value : v <= r->value;
        int strictly = pt->total_bits < r->total_bits || (higher ? v > r->value : v < r->value);
        if (pt->total_bits <= r->total_bits && no_worse && strictly)
            return pt; /* points are by increasing bits */
    }
    return NULL;
}

void fr_llama_mixes_print(FILE *out, const fr_llama_mix_result *mixes, size_t n,
                          const fr_pareto *p)
{
    if (!n)
        return;
    const char *m = fr_metric_name(mixes[0].metric);
    fprintf(out, "\nllama-quantize's stock mixes (llama_tensor_get_type on the ggml-* rows; %zu "
                 "tensors, %llu parameters)\n",
            mixes[0].n_choices, (unsigned long long)mixes[0].numel);
    fprintf(out, "  %-8s %9s %12s  %s\n", "mix", "bits/w", m,
            p && p->by == FR_BY_CONFIG ? "a uniform configuration with no more bits and less error" : "");
    for (size_t i = 0; i < n; i++) {
        const fr_point *d = dominated_by(&mixes[i], p);
        char beside[160] = "";
        if (d)
            snprintf(beside, sizeof beside, "%s (%.4f, %.4g)", d->config_name, d->bits_per_weight,
                     fr_point_metric(d, mixes[i].metric));
        fprintf(out, "  %-8s %9.4f %12.6g  %s\n", fr_llama_mix_name(mixes[i].mix),
                mixes[i].bits_per_weight, mixes[i].value, beside);
    }
}

void fr_llama_mix_print(FILE *out, const fr_llama_mix_result *r, const fr_dataset *ds,
                        int per_tensor)
{
    const char *m = fr_metric_name(r->metric);
    fprintf(out, "llama-quantize %s over %zu tensors (%llu parameters): %.6f bits per weight "
                 "(%llu bits), %s %.6g\n",
            fr_llama_mix_name(r->mix), r->n_choices, (unsigned long long)r->numel,
            r->bits_per_weight, (unsigned long long)r->total_bits, m, r->value);
    if (!per_tensor)
        return;
    size_t w = 6;
    for (size_t i = 0; i < r->n_choices; i++)
        if (strlen(ds->tensors[r->choices[i].tensor].name) > w)
            w = strlen(ds->tensors[r->choices[i].tensor].name);
    fr_metric shown = r->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : r->metric;
    fprintf(out, "  %-*s %-7s %-14s %9s %12s  %s\n", (int)w, "tensor", "type", "config", "bits/w",
            fr_metric_name(shown), "note");
    for (size_t i = 0; i < r->n_choices; i++) {
        const fr_llama_mix_choice *ch = &r->choices[i];
        char note[128] = "";
        if (strcmp(ch->target, ch->stored))
            snprintf(note, sizeof note, "for %s: llama-quantize's fallback (%lld columns)",
                     ch->target, (long long)ds->tensors[ch->tensor].cols);
        fprintf(out, "  %-*s %-7s %-14s %9.4f %12.4e  %s\n", (int)w,
                ds->tensors[ch->tensor].name, ch->stored,
                ch->config >= 0 ? ds->configs[ch->config].name : "(no row)",
                (double)ch->total_bits / (double)ch->numel,
                fr_metric_value(shown, ch->err_term, ch->norm_term), note);
    }
}
