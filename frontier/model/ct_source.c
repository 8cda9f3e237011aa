/*
 * compressed-tensors checkpoints read as one logical weight per quantized
 * module (frontier/model/ct_source.h). The facts are compressed-tensors'
 * (compressors/nvfp4, compressors/pack_quantized, compressors/mxfp4,
 * compressors/float_quantized, quantization/quant_args.py), as
 * docs/quantize.md states them for the writer:
 *  - nvfp4-pack-quantized: weight_packed U8 [out, in/2], element 2j the low
 *    nibble of byte j, nibble = sign << 3 | index into {0, .5, 1, 1.5, 2,
 *    3, 4, 6}; weight_scale E4M3 [out, in/16]; weight_global_scale [1], a
 *    divisor: W = E2M1 * s / gs.
 *  - mxfp4-pack-quantized: weight_packed as nvfp4's, weight_scale U8
 *    [out, in/32] the biased E8M0 exponent: W = E2M1 * 2^(byte - 127).
 *  - pack-quantized: weight_packed I32 [out, ceil(in*b/32)], element i of a
 *    row at bits [i b, i b + b) of the row's little-endian words, stored as
 *    code + 2^(b-1); weight_scale [out, groups]; weight_zero_point I32
 *    [ceil(out*b/32), groups] packed the same way along dim 0 (asym);
 *    weight_g_idx [in] the group of each column (activation ordering);
 *    weight_shape [2]: W = (q - z) * s.
 *  - float-quantized: weight F8 [out, in], weight_scale [1], [out, 1] or
 *    [ceil(out/br), ceil(in/bc)]: W = e * s.
 * An expert stack [E, out, in] has each member with a leading E
 * (weight_shape [3] excepted), as frontier's writer stores it.
 */
#include "frontier/model/ct_source.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/classify.h"
#include "core/readers.h"
#include "quantizers/mx_block.h"
#include "quantizers/nvfp4_group.h"

/* ---- decoding ---- */

static const float e2m1_values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* b-bit value i of a run of little-endian int32 words: dense packing, or
 * per_word values a word (ct_view.per_word). */
static uint32_t unpack_bits(const uint8_t *words, int64_t i, int bits, int per_word)
{
    if (per_word)
        return (get_le32(words + (uint64_t)(i / per_word) * 4) >> ((i % per_word) * bits)) &
               ((1u << bits) - 1u);
    uint64_t bit = (uint64_t)i * (uint64_t)bits;
    const uint8_t *w = words + (bit / 32) * 4;
    uint32_t off = (uint32_t)(bit % 32);
    uint64_t v = get_le32(w) >> off;
    if (off + (uint32_t)bits > 32)
        v |= (uint64_t)get_le32(w + 4) << (32 - off);
    return (uint32_t)(v & ((1u << bits) - 1u));
}

float fr_load_as_f32(fr_dtype dtype, const uint8_t *p)
{
    switch (dtype) {
    case FR_DTYPE_F16: return fr_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
    case FR_DTYPE_BF16: return fr_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
    case FR_DTYPE_F8_E4M3: return fr_e4m3_to_f32(p[0]);
    case FR_DTYPE_F8_E5M2: return fr_e5m2_to_f32(p[0]);
    default: return fr_bits_to_f32(get_le32(p));
    }
}

/* A signed integer element (I8, I16, I32, I64; U8 as unsigned). */
static int64_t load_int(fr_dtype dtype, const uint8_t *p)
{
    switch (dtype) {
    case FR_DTYPE_I8: return (int8_t)p[0];
    case FR_DTYPE_U8: return p[0];
    case FR_DTYPE_I16: return (int16_t)(p[0] | p[1] << 8);
    case FR_DTYPE_I64: return (int64_t)((uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32);
    default: return (int32_t)get_le32(p);
    }
}

static float e2m1_of(const uint8_t *packed, int64_t e)
{
    uint8_t nib = (uint8_t)(e % 2 ? packed[e / 2] >> 4 : packed[e / 2] & 0xf);
    float v = e2m1_values[nib & 7];
    return nib & 8 ? -v : v;
}

static fr_status decode_row(const fr_ct_view *v, int64_t r, float *out, fr_error *err)
{
    const int64_t cols = v->cols;
    const unsigned ss = fr_dtype_size(v->scale_dtype);
    switch (v->kind) {
    case FR_CT_NVFP4: {
        const float gs = fr_load_as_f32(v->global_dtype, v->global);
        if (!(gs > 0.0f) || !isfinite(gs))
            return fr_fail(err, FR_E_FORMAT, "weight_global_scale %g is not a positive number", gs);
        for (int64_t c = 0; c < cols; c++) {
            float s = fr_load_as_f32(v->scale_dtype, v->scale + (r * v->scale_cols + c / v->group) * ss);
            if (isnan(s))
                return fr_fail(err, FR_E_FORMAT, "weight_scale at row %lld is NaN", (long long)r);
            out[c] = e2m1_of(v->packed, r * cols + c) * s / gs;
        }
        return FR_OK;
    }
    case FR_CT_MXFP4:
        for (int64_t c = 0; c < cols; c++) {
            uint8_t x = v->scale[r * v->scale_cols + c / v->group];
            if (x == 0xff) /* E8M0's NaN */
                return fr_fail(err, FR_E_FORMAT, "weight_scale at row %lld, block %lld is NaN (255)",
                               (long long)r, (long long)(c / v->group));
            out[c] = e2m1_of(v->packed, r * cols + c) * fr_pow2f((int)x - 127);
        }
        return FR_OK;
    case FR_CT_PACK: {
        const int bits = v->bits, offset = 1 << (bits - 1);
        const int64_t words_per_row =
            v->per_word ? (cols + v->per_word - 1) / v->per_word : (cols * bits + 31) / 32;
        const uint8_t *row_words = v->packed + r * words_per_row * 4;
        const unsigned gsz = v->gidx ? fr_dtype_size(v->gidx_dtype) : 0;
        const unsigned zsz = v->zero && !v->zp_packed ? fr_dtype_size(v->zp_dtype) : 0;
        for (int64_t c = 0; c < cols; c++) {
            int64_t g = v->gidx ? load_int(v->gidx_dtype, v->gidx + c * gsz) : c / v->group;
            if (g < 0 || g >= v->scale_cols)
                return fr_fail(err, FR_E_FORMAT, "weight_g_idx[%lld] = %lld is not a group (0..%lld)",
                               (long long)c, (long long)g, (long long)v->scale_cols - 1);
            float sc = fr_load_as_f32(v->scale_dtype, v->scale + (r * v->scale_cols + g) * ss);
            int q = (int)unpack_bits(row_words, c, bits, v->per_word) - offset;
            int z = 0;
            if (v->zero && v->zp_packed) {
                /* column g of the zero points, packed along rows: word (k, g) */
                uint64_t bit = (uint64_t)r * (uint64_t)bits, k = bit / 32;
                uint32_t off = (uint32_t)(bit % 32);
                if (v->per_word) {
                    k = (uint64_t)(r / v->per_word);
                    off = (uint32_t)((r % v->per_word) * bits);
                }
                const uint8_t *w = v->zero + (k * (uint64_t)v->scale_cols + (uint64_t)g) * 4;
                uint64_t zv = get_le32(w) >> off;
                if (off + (uint32_t)bits > 32)
                    zv |= (uint64_t)get_le32(w + (uint64_t)v->scale_cols * 4) << (32 - off);
                z = (int)(zv & ((1u << bits) - 1u)) - offset;
            } else if (v->zero) {
                z = (int)load_int(v->zp_dtype, v->zero + (r * v->scale_cols + g) * zsz);
            }
            out[c] = (float)(q - z) * sc;
        }
        return FR_OK;
    }
    case FR_CT_FP8: {
        const unsigned es = fr_dtype_size(v->elem_dtype);
        for (int64_t c = 0; c < cols; c++) {
            int64_t k = (r / v->tile_rows) * v->scale_cols + c / v->group;
            float sc = fr_load_as_f32(v->scale_dtype, v->scale + k * ss);
            float x = fr_load_as_f32(v->elem_dtype, v->packed + (r * cols + c) * es);
            if (isnan(x))
                return fr_fail(err, FR_E_FORMAT, "NaN code at row %lld, column %lld",
                               (long long)r, (long long)c);
            out[c] = x * sc;
        }
        return FR_OK;
    }
    default:
        return fr_fail(err, FR_E_USAGE, "no compressed-tensors layout");
    }
}

fr_status fr_ct_decode_rows(const fr_ct_view *v, int64_t r0, int64_t r1, float *out,
                            fr_error *err)
{
    for (int64_t r = r0; r < r1; r++) {
        fr_status st = decode_row(v, r, out + (r - r0) * v->cols, err);
        if (st != FR_OK)
            return st;
    }
    return FR_OK;
}

const char *fr_ct_format_name(fr_ct_kind kind)
{
    switch (kind) {
    case FR_CT_NVFP4: return "nvfp4-pack-quantized";
    case FR_CT_PACK: return "pack-quantized";
    case FR_CT_FP8: return "float-quantized";
    case FR_CT_MXFP4: return "mxfp4-pack-quantized";
    default: return "dense";
    }
}

/* ---- the source's folded tensors ---- */

enum { M_PACKED, M_SCALE, M_GLOBAL, M_ZERO, M_GIDX, M_SHAPE, M_COUNT };
static const char *const member_suffix[M_COUNT] = {"_packed", "_scale", "_global_scale",
                                                   "_zero_point", "_g_idx", "_shape"};

typedef struct ct_entry {
    fr_ct_view view;       /* expert 0's (pointers NULL until decoding) */
    int64_t experts;       /* E of a stack, 0 for a matrix */
    fr_tensor member[M_COUNT]; /* name NULL: absent; M_PACKED: the FP8 weight itself too */
    fr_tensor list[M_COUNT];   /* the members present, for fr_ct_source_members */
    size_t n_list;
    char *group;           /* the config group's key, or NULL */
    int no_gidx;           /* weight_g_idx holds -1: column order, the member not read */
} ct_entry;

typedef struct ct_state {
    ct_entry *entries;
    size_t n;
} ct_state;

static void ct_state_free(void *p)
{
    ct_state *cs = p;
    if (!cs)
        return;
    for (size_t i = 0; i < cs->n; i++)
        for (int m = 0; m < M_COUNT; m++)
            free(cs->entries[i].member[m].name);
    for (size_t i = 0; i < cs->n; i++)
        free(cs->entries[i].group);
    free(cs->entries);
    free(cs);
}

static const uint8_t *member_bytes(const fr_source *src, const fr_tensor *m, int64_t e,
                                   int64_t experts)
{
    if (!m->name)
        return NULL;
    const uint8_t *p = src->files[m->file].base + m->offset;
    /* a stack's member holds expert e at slice e */
    return experts ? p + (uint64_t)e * (m->nbytes / (uint64_t)experts) : p;
}

static fr_status ct_decode_rows(const fr_source *src, const fr_tensor *t, int64_t begin, int64_t n,
                                float *dst, fr_error *err)
{
    const ct_state *cs = src->decode_state;
    if (!cs || t->synthetic_id >= cs->n)
        return fr_fail(err, FR_E_FAIL, "cannot load '%s': no compressed-tensors entry", t->name);
    const ct_entry *en = &cs->entries[t->synthetic_id];
    const int64_t rows = en->view.rows, cols = en->view.cols;
    /* an expert's view (fr_sweep_expert_view) says its expert by its offset */
    int64_t first = begin / cols;
    if (en->experts && t->ndim == 2)
        first += (int64_t)t->offset * rows;
    const int64_t count = n / cols;
    for (int64_t i = 0; i < count;) {
        int64_t row = first + i, e = en->experts ? row / rows : 0, r = row % rows;
        int64_t upto = rows - r < count - i ? rows - r : count - i;
        fr_ct_view v = en->view;
        v.packed = member_bytes(src, &en->member[M_PACKED], e, en->experts);
        v.scale = member_bytes(src, &en->member[M_SCALE], e, en->experts);
        v.global = member_bytes(src, &en->member[M_GLOBAL], e, en->experts);
        v.zero = member_bytes(src, &en->member[M_ZERO], e, en->experts);
        v.gidx = en->no_gidx ? NULL : member_bytes(src, &en->member[M_GIDX], e, en->experts);
        fr_status st = fr_ct_decode_rows(&v, r, r + upto, dst + i * cols, err);
        if (st != FR_OK) {
            if (en->experts)
                fr_error_prefix(err, "expert %lld: ", (long long)e);
            fr_error_prefix(err, "cannot load '%s' from '%s': ", t->name,
                            src->files[en->member[M_PACKED].file].path);
            return st;
        }
        i += upto;
    }
    return FR_OK;
}

static const ct_entry *entry_of(const fr_source *src, const fr_tensor *t)
{
    const ct_state *cs = src->decode_state;
    if (t->encoding != FR_ENC_MEMBERS || src->decode_rows != ct_decode_rows || !cs ||
        t->synthetic_id >= cs->n)
        return NULL;
    return &cs->entries[t->synthetic_id];
}

const fr_tensor *fr_ct_source_members(const fr_source *src, const fr_tensor *t, size_t *n_out)
{
    const ct_entry *en = entry_of(src, t);
    *n_out = en ? en->n_list : 0;
    return en ? en->list : NULL;
}

int fr_ct_source_origin(const fr_source *src, const fr_tensor *t, fr_ct_kind *kind,
                        const char **group)
{
    const ct_entry *en = entry_of(src, t);
    if (!en)
        return 0;
    *kind = en->view.kind;
    *group = en->group;
    return 1;
}

/* ---- quantization_config ---- */

/* The module of a logical weight: "<m>" of "<m>.weight", else the name
 * before its last dot (a stack "mlp.experts.gate_up_proj": "mlp.experts"). */
static size_t module_len(const char *logical)
{
    size_t l = strlen(logical);
    if (l >= 7 && !strcmp(logical + l - 7, ".weight"))
        return l - 7;
    const char *dot = strrchr(logical, '.');
    return dot ? (size_t)(dot - logical) : l;
}

/* How well a target names a module: 3 its name, 2 a "re:" pattern that
 * matches from its start (Python's re.match), 1 a class name ("Linear":
 * the members say it is a quantized layer), 0 not at all. */
static int target_match(const char *target, const char *module)
{
    if (!strcmp(target, module))
        return 3;
    if (!strncmp(target, "re:", 3)) {
        regex_t re;
        if (regcomp(&re, target + 3, REG_EXTENDED | REG_NOSUB) != 0)
            return 0;
        regmatch_t m;
        int ok = regexec(&re, module, 1, &m, 0) == 0;
        regfree(&re);
        if (!ok)
            return 0;
        /* anchored: compile again with ^ to be sure it matched at 0 */
        size_t l = strlen(target + 3);
        char *anch = malloc(l + 4);
        if (!anch)
            return 0;
        snprintf(anch, l + 4, "^(%s)", target + 3);
        ok = regcomp(&re, anch, REG_EXTENDED | REG_NOSUB) == 0;
        free(anch);
        if (!ok)
            return 0;
        ok = regexec(&re, module, 0, NULL, 0) == 0;
        regfree(&re);
        return ok ? 2 : 0;
    }
    return strchr(target, '.') ? 0 : 1;
}

/* The config group whose targets name the module best (first on a tie). */
static const cJSON *group_of(const cJSON *groups, const char *module)
{
    const cJSON *best = NULL, *g;
    int best_score = 0;
    cJSON_ArrayForEach(g, groups)
    {
        const cJSON *targets = cJSON_GetObjectItemCaseSensitive(g, "targets"), *t;
        cJSON_ArrayForEach(t, targets)
        {
            int s = cJSON_IsString(t) ? target_match(t->valuestring, module) : 0;
            if (s > best_score) {
                best_score = s;
                best = g;
            }
        }
    }
    return best;
}

static int json_int(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valueint : dflt;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- folding ---- */

typedef struct fold_ctx {
    fr_source *src;
    const cJSON *qc;
    size_t *sorted;
} fold_ctx;

static long find(const fold_ctx *c, const char *name)
{
    return fr_source_find_tensor(c->src, c->sorted, name);
}

static long find_member(const fold_ctx *c, const char *logical, const char *suffix)
{
    size_t l = strlen(logical) + strlen(suffix) + 1;
    char *name = malloc(l);
    if (!name)
        return -2;
    snprintf(name, l, "%s%s", logical, suffix);
    long i = find(c, name);
    free(name);
    return i;
}

#define BAD(...) fr_fail(err, FR_E_FORMAT, __VA_ARGS__)

/* Checks member m has dtype (any of two) and the given shape (experts
 * leading when a stack). */
static fr_status check_member(const fr_source *src, const char *logical, const fr_tensor *m,
                              int64_t experts, int ndim, const int64_t *shape, fr_error *err)
{
    const char *file = src->files[m->file].path;
    int64_t want[FR_MAX_DIMS];
    int wn = 0;
    if (experts)
        want[wn++] = experts;
    for (int d = 0; d < ndim; d++)
        want[wn++] = shape[d];
    /* [x] and [x, 1] and [] for one element are one layout to compressed-tensors */
    int64_t have = m->numel, need = 1;
    for (int d = 0; d < wn; d++)
        need *= want[d];
    int same = m->ndim == wn;
    for (int d = 0; same && d < wn; d++)
        same = m->shape[d] == want[d];
    if (!same && !(have == need && (ndim <= 1 || (ndim == 2 && shape[1] == 1))))
    {
        char a[96], b[96];
        return BAD("cannot read '%s': '%s' of '%s' has shape %s, the format needs %s", file,
                   m->name, logical, fr_shape_text(m->shape, m->ndim, a, sizeof a),
                   fr_shape_text(want, wn, b, sizeof b));
    }
    return FR_OK;
}

static fr_status check_dtype(const fr_source *src, const char *logical, const fr_tensor *m,
                             int ok, const char *want, fr_error *err)
{
    if (ok)
        return FR_OK;
    return BAD("cannot read '%s': '%s' of '%s' is %s, the format stores %s",
               src->files[m->file].path, m->name, logical, m->dtype_name, want);
}

static int is_float_scale(fr_dtype d)
{
    return d == FR_DTYPE_F32 || d == FR_DTYPE_F16 || d == FR_DTYPE_BF16 || d == FR_DTYPE_F8_E4M3;
}

static int is_int(fr_dtype d)
{
    return d == FR_DTYPE_I8 || d == FR_DTYPE_I16 || d == FR_DTYPE_I32 || d == FR_DTYPE_I64;
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* One logical weight being folded: its members and what they say. */
typedef struct fold_state {
    const fold_ctx *c;
    fr_source *src;
    const char *logical, *file;
    const fr_tensor *m[M_COUNT];
    const fr_tensor *p;           /* the packed (or fp8) weight member */
    const cJSON *grp, *w;         /* its config group and the group's weights */
    const char *strategy;
    fr_ct_kind kind;
    int symmetric;
    int pd;                       /* dimensions of p */
    int64_t experts, rows, cols, numel;
    ct_entry *en;
    char label[24], fmt[48];
} fold_state;

/* The format of the weight (its group's, the config's, or what the members
 * say) and the members that format needs. */
static fr_status fold_kind(fold_state *f, fr_error *err)
{
    const fr_tensor *const *m = f->m;
    const fr_tensor *p = f->p;
    const char *file = f->file, *logical = f->logical;
    const char *format = json_str(f->grp, "format");
    if (!format || !strcmp(format, "mixed-precision"))
        format = json_str(f->c->qc, "format");
    const int packed = strlen(p->name) > strlen(logical);
    if (packed && find(f->c, logical) >= 0)
        return BAD("cannot read '%s': both '%s' and '%s' are stored", file, logical, p->name);
    fr_ct_kind kind = FR_CT_NONE;
    if (!packed)
        kind = FR_CT_FP8;
    else if (format && !strcmp(format, "nvfp4-pack-quantized"))
        kind = FR_CT_NVFP4;
    else if (format && !strcmp(format, "mxfp4-pack-quantized"))
        kind = FR_CT_MXFP4;
    else if (format && !strcmp(format, "pack-quantized"))
        kind = FR_CT_PACK;
    else if (!format || !strcmp(format, "mixed-precision"))
        /* no format for this group: the members say which */
        kind = m[M_GLOBAL] ? FR_CT_NVFP4
               : p->dtype == FR_DTYPE_I32 ? FR_CT_PACK
               : m[M_SCALE] && m[M_SCALE]->dtype == FR_DTYPE_U8 ? FR_CT_MXFP4 : FR_CT_NONE;
    if (kind == FR_CT_NONE)
        return BAD("cannot read '%s': '%s' is stored as compressed-tensors format '%s', which "
                   "frontier does not read (it reads nvfp4-pack-quantized, mxfp4-pack-quantized, "
                   "pack-quantized, float-quantized)",
                   file, p->name, format ? format : "(none)");
    static const char *const need_name[M_COUNT] = {"", "weight_scale", "weight_global_scale",
                                                   "weight_zero_point", "", "weight_shape"};
    int need[M_COUNT] = {0, 1, kind == FR_CT_NVFP4, 0, 0, kind == FR_CT_PACK};
    /* symmetric as the group says; without a group, as the members say */
    const cJSON *sym = cJSON_GetObjectItemCaseSensitive(f->w, "symmetric");
    f->symmetric = cJSON_IsBool(sym) ? cJSON_IsTrue(sym) : !m[M_ZERO];
    if (kind == FR_CT_PACK && !f->symmetric)
        need[M_ZERO] = 1;
    for (int k = 0; k < M_COUNT; k++)
        if (need[k] && !m[k])
            return BAD("cannot read '%s': '%s' is %s but its %s%s (%s) is missing", file, logical,
                       fr_ct_format_name(kind), logical, member_suffix[k], need_name[k]);
    f->kind = kind;
    return FR_OK;
}

/* The logical shape: [experts,] rows x cols, from the packed member and
 * weight_shape when there is one. */
static fr_status fold_shape(fold_state *f, fr_error *err)
{
    const fr_tensor *p = f->p;
    const char *file = f->file, *logical = f->logical;
    int64_t experts = 0, rows, cols;
    int pd = p->ndim;
    if (pd != 2 && pd != 3)
        return BAD("cannot read '%s': '%s' has %d dimensions; compressed-tensors weights have 2 "
                   "(an expert stack 3)",
                   file, p->name, pd);
    if (pd == 3)
        experts = p->shape[0];
    rows = p->shape[pd - 2];
    if (f->m[M_SHAPE]) {
        const fr_tensor *s = f->m[M_SHAPE];
        const uint8_t *b = f->src->files[s->file].base + s->offset;
        if (!is_int(s->dtype) || s->numel != pd)
            return BAD("cannot read '%s': '%s' of '%s' is %s %lld elements, not %d integers", file,
                       s->name, logical, s->dtype_name, (long long)s->numel, pd);
        size_t es = fr_dtype_size(s->dtype);
        if ((pd == 3 && load_int(s->dtype, b) != experts) || load_int(s->dtype, b + (size_t)(pd - 2) * es) != rows)
            return BAD("cannot read '%s': '%s' of '%s' does not say the rows of '%s'", file,
                       s->name, logical, p->name);
        cols = load_int(s->dtype, b + (size_t)(pd - 1) * es);
    } else {
        cols = f->kind == FR_CT_FP8 ? p->shape[pd - 1] : 2 * p->shape[pd - 1];
    }
    if (cols <= 0 || rows <= 0 || experts < 0 || (pd == 3 && experts == 0))
        return BAD("cannot read '%s': '%s' has an empty shape", file, logical);
    int64_t numel;
    if (cols > ((int64_t)1 << 48) || __builtin_mul_overflow(rows, cols, &numel) ||
        __builtin_mul_overflow(numel, experts ? experts : 1, &numel))
        return BAD("cannot read '%s': '%s' says %lld columns, more than its members can hold",
                   file, logical, (long long)cols);
    f->pd = pd;
    f->experts = experts;
    f->rows = rows;
    f->cols = cols;
    f->numel = numel;
    return FR_OK;
}

/* The fold state's fields as the locals the view builders below read
 * (each reads most of them). */
#define FOLD_LOCALS(f)                                                                       \
    const fr_tensor *const *m = (f)->m;                                                      \
    const fr_tensor *p = (f)->p;                                                             \
    fr_source *src = (f)->src;                                                               \
    const char *file = (f)->file, *logical = (f)->logical;                                   \
    const int64_t experts = (f)->experts, rows = (f)->rows, cols = (f)->cols;                \
    fr_ct_view *v = &(f)->en->view;                                                          \
    char *label = (f)->label, *fmt = (f)->fmt;                                               \
    const size_t label_size = sizeof (f)->label, fmt_size = sizeof (f)->fmt;                 \
    int64_t sh[2];                                                                           \
    fr_status st = FR_OK

/* nvfp4- and mxfp4-pack-quantized: packed nibbles, group scales (and
 * NVFP4's global scale). */
static fr_status view_fp4(fold_state *f, fr_error *err)
{
    FOLD_LOCALS(f);
    const fr_ct_kind kind = f->kind;
    int64_t one = 1;
    v->group = kind == FR_CT_NVFP4 ? FR_NVFP4_GROUP : FR_MX_BLOCK;
    v->scale_cols = cdiv(cols, v->group);
    v->scale_dtype = m[M_SCALE]->dtype;
    sh[0] = rows;
    sh[1] = cols / 2;
    if ((st = check_dtype(src, logical, p, p->dtype == FR_DTYPE_U8, "U8", err)) != FR_OK ||
        (st = check_member(src, logical, p, experts, 2, sh, err)) != FR_OK || cols % 2)
        return st != FR_OK ? st : BAD("cannot read '%s': '%s' has an odd column count %lld", file, logical, (long long)cols);
    sh[1] = v->scale_cols;
    if (kind == FR_CT_NVFP4) {
        st = check_dtype(src, logical, m[M_SCALE], is_float_scale(m[M_SCALE]->dtype), "F8_E4M3", err);
        if (st == FR_OK)
            st = check_dtype(src, logical, m[M_GLOBAL], is_float_scale(m[M_GLOBAL]->dtype) && m[M_GLOBAL]->dtype != FR_DTYPE_F8_E4M3, "F32", err);
        if (st == FR_OK)
            st = check_member(src, logical, m[M_GLOBAL], experts, 1, &one, err);
        v->global_dtype = m[M_GLOBAL]->dtype;
        snprintf(label, label_size, "NVFP4");
    } else {
        st = check_dtype(src, logical, m[M_SCALE], m[M_SCALE]->dtype == FR_DTYPE_U8, "U8 (E8M0)", err);
        snprintf(label, label_size, "MXFP4");
    }
    if (st == FR_OK)
        st = check_member(src, logical, m[M_SCALE], experts, 2, sh, err);
    if (st != FR_OK)
        return st;
    snprintf(fmt, fmt_size, "%s", fr_ct_format_name(kind));
    return FR_OK;
}

/* pack-quantized int2..8: packed codes, group or channel scales, zero
 * points when asymmetric, g_idx when present. */
static fr_status view_pack(fold_state *f, fr_error *err)
{
    FOLD_LOCALS(f);
    const int pd = f->pd;
    const char *strategy = f->strategy;
    const cJSON *w = f->w;
    const int symmetric = f->symmetric;
    ct_entry *en = f->en;
    int bits = json_int(w, "num_bits", 0);
    if (bits < 2 || bits > 8)
        return BAD("cannot read '%s': '%s' is pack-quantized with num_bits %d in config.json "
                   "(quantization_config); frontier reads 2 to 8",
                   file, logical, bits);
    v->bits = bits;
    int gsize = json_int(w, "group_size", 0);
    int channel = (strategy && !strcmp(strategy, "channel")) || gsize <= 0;
    v->group = channel ? cols : gsize;
    v->scale_cols = channel ? 1 : cdiv(cols, gsize);
    v->scale_dtype = m[M_SCALE]->dtype;
    sh[0] = rows;
    sh[1] = cdiv(cols * bits, 32);
    /* a width only the 32/b-per-word packing gives: that packing */
    if (32 % bits && p->shape[pd - 1] != sh[1] && p->shape[pd - 1] == cdiv(cols, 32 / bits)) {
        v->per_word = 32 / bits;
        sh[1] = cdiv(cols, v->per_word);
    }
    if ((st = check_dtype(src, logical, p, p->dtype == FR_DTYPE_I32, "I32", err)) != FR_OK ||
        (st = check_member(src, logical, p, experts, 2, sh, err)) != FR_OK)
        return st;
    sh[1] = v->scale_cols;
    if ((st = check_dtype(src, logical, m[M_SCALE], is_float_scale(m[M_SCALE]->dtype), "F16, BF16 or F32", err)) != FR_OK ||
        (st = check_member(src, logical, m[M_SCALE], experts, 2, sh, err)) != FR_OK)
        return st;
    if (m[M_ZERO] && !symmetric) {
        const fr_tensor *z = m[M_ZERO];
        int64_t packed_rows = v->per_word ? cdiv(rows, v->per_word) : cdiv(rows * bits, 32);
        int zd = z->ndim - (experts ? 1 : 0);
        v->zp_packed = z->dtype == FR_DTYPE_I32 && zd == 2 && z->shape[z->ndim - 2] == packed_rows &&
                       packed_rows != rows;
        v->zp_dtype = z->dtype;
        sh[0] = v->zp_packed ? packed_rows : rows;
        if ((st = check_dtype(src, logical, z, is_int(z->dtype), "I32 (packed) or I8", err)) != FR_OK ||
            (st = check_member(src, logical, z, experts, 2, sh, err)) != FR_OK)
            return st;
    }
    if (m[M_GIDX]) {
        int64_t n1 = cols;
        v->gidx_dtype = m[M_GIDX]->dtype;
        if ((st = check_dtype(src, logical, m[M_GIDX], m[M_GIDX]->dtype == FR_DTYPE_I32 || m[M_GIDX]->dtype == FR_DTYPE_I64, "I32", err)) != FR_OK ||
            (st = check_member(src, logical, m[M_GIDX], experts, 1, &n1, err)) != FR_OK)
            return st;
        /* a -1 anywhere: g_idx not initialised, column order (compressed-tensors'
         * _process_quantization, is_column_order) */
        const uint8_t *gb = src->files[m[M_GIDX]->file].base + m[M_GIDX]->offset;
        size_t gs = fr_dtype_size(m[M_GIDX]->dtype);
        for (int64_t i = 0; i < m[M_GIDX]->numel && !en->no_gidx; i++)
            en->no_gidx = load_int(m[M_GIDX]->dtype, gb + (size_t)i * gs) == -1;
    }
    snprintf(label, label_size, "INT%d", bits);
    char g[16];
    if (channel)
        snprintf(g, sizeof g, "channel");
    else
        snprintf(g, sizeof g, "g%d", gsize);
    snprintf(fmt, fmt_size, "pack-quantized int%d %s %s%s", bits, g,
             symmetric ? "sym" : "asym", m[M_GIDX] && !en->no_gidx ? " g_idx" : "");
    return FR_OK;
}

/* float-quantized: fp8 elements, tensor, channel or block scales. */
static fr_status view_fp8(fold_state *f, fr_error *err)
{
    FOLD_LOCALS(f);
    const char *strategy = f->strategy;
    const cJSON *w = f->w;
    v->elem_dtype = p->dtype;
    v->scale_dtype = m[M_SCALE]->dtype;
    /* without a config group, the scale's shape says which */
    const char *scope = strategy ? strategy
                        : m[M_SCALE]->numel == (experts ? experts : 1) ? "tensor"
                        : m[M_SCALE]->numel == (experts ? experts : 1) * rows ? "channel"
                                                                               : "block";
    if (!strcmp(scope, "tensor")) {
        v->tile_rows = rows;
        v->group = cols;
        v->scale_cols = 1;
        sh[0] = 1;
        st = check_member(src, logical, m[M_SCALE], experts, 1, sh, err);
    } else if (!strcmp(scope, "channel")) {
        v->group = cols;
        v->scale_cols = 1;
        sh[0] = rows;
        sh[1] = 1;
        st = check_member(src, logical, m[M_SCALE], experts, 2, sh, err);
    } else if (!strcmp(scope, "block")) {
        const cJSON *bs = cJSON_GetObjectItemCaseSensitive(w, "block_structure");
        int br = cJSON_IsArray(bs) ? cJSON_GetArrayItem(bs, 0) ? cJSON_GetArrayItem(bs, 0)->valueint : 0 : 128;
        int bc = cJSON_IsArray(bs) ? cJSON_GetArrayItem(bs, 1) ? cJSON_GetArrayItem(bs, 1)->valueint : 0 : 128;
        if (br <= 0 || bc <= 0)
            return BAD("cannot read '%s': '%s': block_structure of its config group is not two positive integers",
                       file, logical);
        v->tile_rows = br;
        v->group = bc;
        v->scale_cols = cdiv(cols, bc);
        sh[0] = cdiv(rows, br);
        sh[1] = v->scale_cols;
        st = check_member(src, logical, m[M_SCALE], experts, 2, sh, err);
    } else {
        return BAD("cannot read '%s': '%s' is float-quantized with strategy '%s'; frontier "
                   "reads tensor, channel and block",
                   file, logical, scope);
    }
    if (st == FR_OK)
        st = check_dtype(src, logical, m[M_SCALE], is_float_scale(m[M_SCALE]->dtype) && m[M_SCALE]->dtype != FR_DTYPE_F8_E4M3, "F32, F16 or BF16", err);
    if (st != FR_OK)
        return st;
    const char *e = p->dtype == FR_DTYPE_F8_E5M2 ? "fp8-e5m2" : "fp8";
    snprintf(label, label_size, "%s", p->dtype == FR_DTYPE_F8_E5M2 ? "FP8_E5M2" : "FP8_E4M3");
    if (!strcmp(scope, "block"))
        snprintf(fmt, fmt_size, "float-quantized %s block %lldx%lld", e, (long long)v->tile_rows, (long long)v->group);
    else
        snprintf(fmt, fmt_size, "float-quantized %s %s", e, scope);
    return FR_OK;
}

/* The logical tensor lt the entry's members make. */
static fr_status fold_logical(fold_state *f, fr_tensor *lt, fr_error *err)
{
    fr_source *src = f->src;
    const fr_tensor *const *m = f->m;
    const fr_tensor *p = f->p;
    const char *logical = f->logical, *label = f->label, *fmt = f->fmt;
    const int64_t experts = f->experts, rows = f->rows, cols = f->cols, numel = f->numel;
    const cJSON *grp = f->grp;
    ct_entry *en = f->en;
    /* the logical tensor */
    memset(lt, 0, sizeof *lt);
    lt->name = strdup(logical);
    if (!lt->name)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
    lt->dtype = FR_DTYPE_QUANT;
    snprintf(lt->dtype_name, sizeof lt->dtype_name, "%s", label);
    snprintf(lt->source_format, sizeof lt->source_format, "%s", fmt);
    lt->ndim = experts ? 3 : 2;
    int d = 0;
    if (experts)
        lt->shape[d++] = experts;
    lt->shape[d++] = rows;
    lt->shape[d] = cols;
    lt->numel = numel;
    lt->cls = fr_classify(lt->name, lt->ndim);
    lt->file = p->file;
    lt->offset = 0;
    lt->encoding = FR_ENC_MEMBERS;
    lt->scale_tensor = -1;
    en->experts = experts;
    en->n_list = 0;
    en->group = grp && grp->string ? strdup(grp->string) : NULL;
    for (int k = 0; k < M_COUNT; k++) {
        if (!m[k])
            continue;
        lt->nbytes += m[k]->nbytes;
        en->member[k] = *m[k]; /* takes the name: the member leaves the list */
        en->list[en->n_list++] = *m[k];
    }
    return FR_OK;
}

/* Builds entry en for logical weight `logical` whose members (indices into
 * src->tensors, -1 absent) are idx[]; fills the logical tensor lt. */
static fr_status fold_one(const fold_ctx *c, const char *logical, const long *idx, ct_entry *en,
                          fr_tensor *lt, fr_error *err)
{
    fold_state f = {.c = c, .src = c->src, .logical = logical, .en = en};
    for (int k = 0; k < M_COUNT; k++)
        f.m[k] = idx[k] >= 0 ? &f.src->tensors[idx[k]] : NULL;
    f.p = f.m[M_PACKED];
    f.file = f.src->files[f.p->file].path;
    char modname[512];
    snprintf(modname, sizeof modname, "%.*s", (int)module_len(logical), logical);
    f.grp = group_of(cJSON_GetObjectItemCaseSensitive(c->qc, "config_groups"), modname);
    f.w = cJSON_GetObjectItemCaseSensitive(f.grp, "weights");
    f.strategy = json_str(f.w, "strategy");
    fr_status st = fold_kind(&f, err);
    if (st == FR_OK)
        st = fold_shape(&f, err);
    if (st != FR_OK)
        return st;
    fr_ct_view *v = &en->view;
    memset(v, 0, sizeof *v);
    v->kind = f.kind;
    v->rows = f.rows;
    v->cols = f.cols;
    v->tile_rows = 1;
    switch (f.kind) {
    case FR_CT_NVFP4:
    case FR_CT_MXFP4: st = view_fp4(&f, err); break;
    case FR_CT_PACK: st = view_pack(&f, err); break;
    case FR_CT_FP8: st = view_fp8(&f, err); break;
    default: st = BAD("cannot read '%s': '%s': no compressed-tensors layout", f.file, logical);
    }
    return st == FR_OK ? fold_logical(&f, lt, err) : st;
}

fr_status fr_ct_source_attach(fr_source *src, fr_error *err)
{
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(src->metadata, "config");
    const cJSON *qc = cJSON_GetObjectItemCaseSensitive(config, "quantization_config");
    if (!qc)
        qc = cJSON_GetObjectItemCaseSensitive(config, "compression_config");
    const char *method = json_str(qc, "quant_method");
    if (!method || strcmp(method, "compressed-tensors") || src->decode_state || !src->n_tensors ||
        (src->kind != FR_SOURCE_SAFETENSORS && src->kind != FR_SOURCE_SAFETENSORS_SHARDED))
        return FR_OK;
    fr_status st = FR_OK;
    const size_t n = src->n_tensors;
    fold_ctx c = {src, qc, fr_source_sorted_by_name(src)};
    /* at most one entry per "_packed" or F8 tensor (an entry holds its members) */
    size_t cand = 0;
    for (size_t i = 0; i < n; i++) {
        const fr_tensor *t = &src->tensors[i];
        size_t l = strlen(t->name);
        cand += (l > 7 && !strcmp(t->name + l - 7, "_packed")) || t->dtype == FR_DTYPE_F8_E4M3 ||
                t->dtype == FR_DTYPE_F8_E5M2;
    }
    int *role = calloc(n, sizeof *role); /* 0 kept, 1 a logical weight's first member, 2 folded */
    long *slot = malloc(n * sizeof *slot);
    ct_state *cs = calloc(1, sizeof *cs);
    fr_tensor *lts = calloc(cand ? cand : 1, sizeof *lts);
    fr_tensor *out = NULL;
    if (!c.sorted || !role || !slot || !cs || !lts ||
        !(cs->entries = calloc(cand ? cand : 1, sizeof *cs->entries))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
        goto done;
    }
    for (size_t i = 0; i < n && st == FR_OK; i++) {
        const fr_tensor *t = &src->tensors[i];
        size_t l = strlen(t->name);
        char *logical;
        if (l > 7 && !strcmp(t->name + l - 7, "_packed"))
            logical = strndup(t->name, l - 7);
        else if ((t->dtype == FR_DTYPE_F8_E4M3 || t->dtype == FR_DTYPE_F8_E5M2) &&
                 find_member(&c, t->name, "_scale") >= 0)
            logical = strdup(t->name);
        else
            continue;
        if (!logical) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
            break;
        }
        long idx[M_COUNT];
        idx[M_PACKED] = (long)i;
        for (int k = 1; k < M_COUNT; k++)
            idx[k] = find_member(&c, logical, member_suffix[k]);
        ct_entry *en = &cs->entries[cs->n];
        st = fold_one(&c, logical, idx, en, &lts[cs->n], err);
        if (st == FR_OK) {
            lts[cs->n].synthetic_id = cs->n;
            role[i] = 1;
            slot[i] = (long)cs->n;
            for (int k = 1; k < M_COUNT; k++)
                if (idx[k] >= 0)
                    role[idx[k]] = 2;
            cs->n++;
        }
        free(logical);
    }
    if (st != FR_OK)
        goto done;
    /* a weight member whose weight is not there (weight_packed missing) */
    for (size_t i = 0; i < n; i++) {
        const fr_tensor *t = &src->tensors[i];
        if (role[i])
            continue;
        /* (weight_shape alone is also a sparse format's member: not checked) */
        for (int k = 1; k < M_SHAPE; k++) {
            size_t l = strlen(t->name), s = strlen(member_suffix[k]);
            if (l > s + 6 && !strcmp(t->name + l - s, member_suffix[k]) &&
                !strncmp(t->name + l - s - 6, "weight", 6)) {
                /* its weight stored in another dtype (int8, bf16): listed as before */
                char *w = strndup(t->name, l - s);
                long there = w ? find(&c, w) : -1;
                free(w);
                if (there >= 0)
                    continue;
                st = BAD("cannot read '%s': '%s' is a compressed-tensors member of '%.*s', which "
                         "has no %.*s_packed (nor an FP8 %.*s)",
                         src->files[t->file].path, t->name, (int)(l - s), t->name, (int)(l - s),
                         t->name, (int)(l - s), t->name);
                goto done;
            }
        }
    }
    if (!cs->n)
        goto done;
    /* the new list: kept tensors and logical weights in the file's order */
    out = calloc(n, sizeof *out);
    if (!out) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
        goto done;
    }
    size_t k = 0;
    long *newidx = malloc(n * sizeof *newidx);
    if (!newidx) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (role[i] == 0) {
            newidx[i] = (long)k;
            out[k++] = src->tensors[i];
        } else if (role[i] == 1) {
            newidx[i] = -1;
            out[k++] = lts[slot[i]];
            lts[slot[i]].name = NULL;
        } else {
            newidx[i] = -1;
        }
    }
    for (size_t i = 0; i < k; i++)
        if (out[i].scale_tensor >= 0)
            out[i].scale_tensor = (int)newidx[out[i].scale_tensor];
    free(newidx);
    free(src->tensors);
    src->tensors = out;
    src->n_tensors = k;
    out = NULL;
    src->decode_state = cs;
    src->decode_state_free = ct_state_free;
    src->decode_rows = ct_decode_rows;
    cs = NULL;
done:
    if (cs) {
        /* nothing attached: the entries' member names still belong to the list */
        for (size_t i = 0; i < cs->n; i++) {
            free(lts[i].name);
            free(cs->entries[i].group);
        }
        free(cs->entries);
        free(cs);
    }
    free(lts);
    free(out);
    free(slot);
    free(role);
    free(c.sorted);
    return st;
}
