/*
 * Numeric edge cases of a (tensor, configuration) (frontier/exec/numeric_flags.h).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "frontier/exec/numeric_flags.h"
#include "quantizers/numerics.h"

/* ---- rules from params ---- */

typedef struct dtype_info {
    const char *name;
    int mbits, emin; /* mbits < 0: fp32 */
    float max;
} dtype_info;

/* Scale dtypes a rule can be evaluated for (docs/formats.md "Common rules"). */
static const dtype_info scale_dtypes[] = {
    {"fp16", 10, -14, 65504.0f},
    {"bf16", 7, -126, 3.38953139e38f},
    {"e4m3", 3, -6, 448.0f},
    {"fp32", -1, 0, FLT_MAX},
};

/* Element formats' largest values (docs/formats.md). */
static const struct {
    const char *name;
    float max;
} elements[] = {
    {"e4m3", 448.0f}, {"e5m2", 57344.0f}, {"e3m2", 28.0f}, {"e2m3", 7.5f},
    {"e2m1", 6.0f},   {"int8", 127.0f / 64.0f}, {"nf4", 1.0f},
};

static const char *json_str(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int json_int(const cJSON *root, const char *key, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (int64_t)v->valuedouble;
    return 1;
}

void fr_scale_rule_parse(const char *params_json, fr_scale_rule *rule)
{
    memset(rule, 0, sizeof *rule);
    rule->kind = FR_SCALE_NONE;
    cJSON *root = params_json ? cJSON_Parse(params_json) : NULL;
    if (!cJSON_IsObject(root))
        goto done;
    const char *dtype = json_str(root, "scale_dtype");
    if (!dtype || cJSON_GetObjectItemCaseSensitive(root, "method"))
        goto done;
    snprintf(rule->dtype, sizeof rule->dtype, "%s", dtype);

    /* the group shape */
    const char *gran = json_str(root, "granularity");
    int64_t g = 0;
    rule->tile_rows = 1;
    if (gran && !strcmp(gran, "tensor")) {
        rule->tile_rows = 0;
        rule->tile_cols = 0;
    } else if (gran && (!strcmp(gran, "row") || !strcmp(gran, "channel"))) {
        rule->tile_cols = 0;
    } else if (gran && !strncmp(gran, "block", 5)) {
        char *end = NULL;
        long n = strtol(gran + 5, &end, 10);
        if (end == gran + 5 || *end || n < 1 || n > 1 << 20)
            goto done;
        rule->tile_rows = rule->tile_cols = n;
    } else if ((!gran || !strcmp(gran, "group")) &&
               (json_int(root, "group_size", &g) || json_int(root, "block_size", &g))) {
        rule->tile_cols = g;
    } else {
        goto done;
    }

    /* what the scale divides: an integer grid (only with a granularity, as
     * docs/formats.md defines int<b>: other integer formats scale by their
     * own rules) or an element format's largest value */
    const char *elem = json_str(root, "element");
    int64_t bits = 0;
    if (elem) {
        size_t i = 0;
        while (i < sizeof elements / sizeof elements[0] && strcmp(elements[i].name, elem))
            i++;
        if (i == sizeof elements / sizeof elements[0])
            goto done;
        rule->divisor = elements[i].max;
    } else if (gran && json_int(root, "bits", &bits) && bits >= 2 && bits <= 16) {
        const cJSON *sym = cJSON_GetObjectItemCaseSensitive(root, "symmetric");
        rule->asym = cJSON_IsFalse(sym);
        rule->divisor = rule->asym ? (float)((1 << bits) - 1) : (float)((1 << (bits - 1)) - 1);
    } else {
        goto done;
    }

    if (!strcmp(dtype, "e8m0")) {
        if (!elem || rule->asym)
            goto done;
        rule->emax_elem = fr_floor_log2f(rule->divisor);
        rule->smax = 0x1p127f;
        rule->kind = FR_SCALE_POW2;
        goto done;
    }
    size_t d = 0;
    while (d < sizeof scale_dtypes / sizeof scale_dtypes[0] && strcmp(scale_dtypes[d].name, dtype))
        d++;
    if (d == sizeof scale_dtypes / sizeof scale_dtypes[0])
        goto done;
    rule->mbits = scale_dtypes[d].mbits;
    rule->emin = scale_dtypes[d].emin;
    rule->smax = scale_dtypes[d].max;
    rule->kind = json_str(root, "global_scale_dtype") ? FR_SCALE_TWO_LEVEL : FR_SCALE_DIV;
    if (rule->kind == FR_SCALE_TWO_LEVEL && rule->asym)
        rule->kind = FR_SCALE_NONE;
done:
    cJSON_Delete(root);
}

/* ---- the examination ---- */

/* Group statistics of one shape over the whole tensor (numeric_flags.h). */
typedef fr_group_extremes shape_stats;

/* One pass: every tile's amax and range, reduced to the extremes. */
static int shape_pass(const float *w, int64_t rows, int64_t cols, shape_stats *s)
{
    int64_t tr = s->tile_rows, tc = s->tile_cols;
    int64_t n_tiles = (cols + tc - 1) / tc;
    float *acc = malloc(sizeof(float) * 3 * (size_t)(n_tiles > 0 ? n_tiles : 1));
    if (!acc)
        return -1;
    s->max_amax = 0.0f;
    s->min_amax = INFINITY;
    s->max_range = 0.0f;
    s->min_range = INFINITY;
    for (int64_t r0 = 0; r0 < rows; r0 += tr) {
        int64_t r1 = r0 + tr < rows ? r0 + tr : rows;
        for (int64_t j = 0; j < 3 * n_tiles; j++)
            acc[j] = 0.0f; /* amax, hi = max(max x, 0), lo = min(min x, 0) */
        for (int64_t r = r0; r < r1; r++) {
            const float *row = w + r * cols;
            for (int64_t j = 0; j < n_tiles; j++) {
                int64_t c1 = (j + 1) * tc < cols ? (j + 1) * tc : cols;
                float a = acc[3 * j], hi = acc[3 * j + 1], lo = acc[3 * j + 2];
                for (int64_t c = j * tc; c < c1; c++) {
                    float x = row[c];
                    float ax = fabsf(x);
                    a = ax > a ? ax : a;
                    hi = x > hi ? x : hi;
                    lo = x < lo ? x : lo;
                }
                acc[3 * j] = a;
                acc[3 * j + 1] = hi;
                acc[3 * j + 2] = lo;
            }
        }
        for (int64_t j = 0; j < n_tiles; j++) {
            float a = acc[3 * j], range = acc[3 * j + 1] - acc[3 * j + 2];
            if (a > s->max_amax)
                s->max_amax = a;
            if (a > 0.0f && a < s->min_amax)
                s->min_amax = a;
            if (range > s->max_range)
                s->max_range = range;
            if (range > 0.0f && range < s->min_range)
                s->min_range = range;
        }
    }
    free(acc);
    return 0;
}

static float round_scale(const fr_scale_rule *r, float v)
{
    return r->mbits < 0 ? v : fr_round_minifloat(v, r->mbits, r->emin, r->smax);
}

/* Whether the scale of quotient v saturates: rounded without the dtype's
 * bound it would exceed the largest value (a quotient that merely rounds
 * down to it, 65504 < v < 65520 in fp16, is ordinary rounding). */
static int saturates(const fr_scale_rule *r, float v)
{
    if (r->mbits < 0)
        return !(v <= FLT_MAX);
    return fr_round_minifloat(v, r->mbits, r->emin, FLT_MAX) > r->smax;
}

/* The scale bits of one rule from its shape's extremes (and the tensor's amax). */
static uint32_t scale_flags(const fr_scale_rule *r, const shape_stats *s, float amax_tensor,
                            fr_scale_detail *d)
{
    uint32_t f = 0;
    float big = r->asym ? s->max_range : s->max_amax;
    float small = r->asym ? s->min_range : s->min_amax;
    int any = small < INFINITY; /* some group is not all zero */
    d->largest = d->smallest = NAN;
    switch (r->kind) {
    case FR_SCALE_DIV: {
        float vb = big / r->divisor, vs = any ? small / r->divisor : 0.0f;
        d->largest = vb;
        d->smallest = vs;
        if (saturates(r, vb))
            f |= FR_ROW_SCALE_OVERFLOW;
        if (any && round_scale(r, vs) == 0.0f)
            f |= FR_ROW_SCALE_UNDERFLOW;
        break;
    }
    case FR_SCALE_TWO_LEVEL: {
        /* gs = fp32(smax * emax / amax_tensor), 1 for an all-zero tensor,
         * at most FLT_MAX (docs/formats.md, NVFP4) */
        float gs = 1.0f;
        int gs_saturates = 0;
        if (amax_tensor > 0.0f) {
            gs = r->smax * r->divisor / amax_tensor;
            if (!(gs <= FLT_MAX)) {
                gs = FLT_MAX;
                gs_saturates = 1;
            }
        }
        float vb = big / r->divisor * gs, vs = any ? small / r->divisor * gs : 0.0f;
        /* the largest quotient: the global one (in double) when it is the
         * one that saturates */
        d->largest = gs_saturates ? (double)r->smax * r->divisor / amax_tensor : vb;
        d->smallest = vs;
        if (gs_saturates || saturates(r, vb))
            f |= FR_ROW_SCALE_OVERFLOW;
        if (any && round_scale(r, vs < r->smax ? vs : r->smax) == 0.0f)
            f |= FR_ROW_SCALE_UNDERFLOW;
        break;
    }
    case FR_SCALE_POW2:
        d->largest = big;
        d->smallest = any ? small : 0.0;
        if (big > 0.0f && fr_floor_log2f(big) - r->emax_elem > 127)
            f |= FR_ROW_SCALE_OVERFLOW;
        if (any && fr_floor_log2f(small) - r->emax_elem < -127)
            f |= FR_ROW_SCALE_UNDERFLOW;
        break;
    case FR_SCALE_NONE:
        f |= FR_ROW_SCALE_UNCHECKED;
        break;
    }
    return f;
}

size_t fr_numeric_shapes(const fr_scale_rule *const *rules, size_t n, int64_t rows, int64_t cols,
                         fr_group_extremes *shapes, size_t *shape_of)
{
    size_t n_shapes = 0;
    for (size_t c = 0; c < n; c++) {
        shape_of[c] = 0;
        if (rules[c]->kind == FR_SCALE_NONE)
            continue;
        int64_t tr = rules[c]->tile_rows ? rules[c]->tile_rows : rows;
        int64_t tc = rules[c]->tile_cols ? rules[c]->tile_cols : cols;
        if (tr < 1)
            tr = 1;
        if (tc < 1)
            tc = 1;
        size_t k = 0;
        while (k < n_shapes && (shapes[k].tile_rows != tr || shapes[k].tile_cols != tc))
            k++;
        if (k == n_shapes) {
            shapes[k] = (fr_group_extremes){.tile_rows = tr,
                                            .tile_cols = tc,
                                            .max_amax = 0.0f,
                                            .min_amax = INFINITY,
                                            .max_range = 0.0f,
                                            .min_range = INFINITY};
            n_shapes++;
        }
        shape_of[c] = k;
    }
    return n_shapes;
}

void fr_numeric_evaluate(const fr_scale_rule *const *rules, size_t n,
                         const fr_group_extremes *shapes, const size_t *shape_of,
                         const fr_numeric_totals *totals, uint32_t *flags,
                         fr_scale_detail *detail, fr_tensor_facts *facts)
{
    memset(facts, 0, sizeof *facts);
    facts->n_subnormal = totals->n_subnormal;
    facts->n_neg_zero = totals->n_neg_zero;
    facts->flags = FR_ROW_CHECKED | (totals->n_nonzero == 0 ? FR_ROW_ALL_ZERO : 0) |
                   (facts->n_subnormal ? FR_ROW_SUBNORMAL : 0) |
                   (facts->n_neg_zero ? FR_ROW_NEG_ZERO : 0);
    float amax_tensor;
    memcpy(&amax_tensor, &totals->max_mag, sizeof amax_tensor);
    for (size_t c = 0; c < n; c++) {
        fr_scale_detail d;
        const fr_scale_rule *r = rules[c];
        flags[c] = facts->flags | (r->kind == FR_SCALE_NONE
                                       ? FR_ROW_SCALE_UNCHECKED
                                       : scale_flags(r, &shapes[shape_of[c]], amax_tensor, &d));
        if (r->kind == FR_SCALE_NONE)
            d.largest = d.smallest = NAN;
        if (detail)
            detail[c] = d;
    }
}

int fr_numeric_examine(const float *w, int64_t rows, int64_t cols,
                       const fr_scale_rule *const *rules, size_t n, uint32_t *flags,
                       fr_scale_detail *detail, fr_tensor_facts *facts)
{
    int64_t numel = rows * cols;
    memset(facts, 0, sizeof *facts);
    for (size_t c = 0; c < n; c++)
        flags[c] = 0;
    /* the tensor facts: one pass over the bits */
    fr_numeric_totals t = {0};
    for (int64_t i = 0; i < numel; i++) {
        uint32_t u;
        memcpy(&u, &w[i], sizeof u);
        uint32_t mag = u & 0x7fffffffu;
        t.max_mag = mag > t.max_mag ? mag : t.max_mag; /* the magnitude's bits order like its value */
        if (mag == 0) {
            t.n_neg_zero += u != 0;
            continue;
        }
        t.n_nonzero++;
        t.n_subnormal += mag < 0x00800000u;
    }

    /* one pass per distinct group shape */
    shape_stats *shapes = calloc(n + 1, sizeof *shapes);
    size_t *shape_of = calloc(n + 1, sizeof *shape_of);
    int rc = 0;
    if (!shapes || !shape_of) {
        rc = -1;
        goto done;
    }
    size_t n_shapes = fr_numeric_shapes(rules, n, rows, cols, shapes, shape_of);
    for (size_t k = 0; k < n_shapes; k++)
        if (shape_pass(w, rows, cols, &shapes[k]) != 0) {
            rc = -1;
            goto done;
        }
    fr_numeric_evaluate(rules, n, shapes, shape_of, &t, flags, detail, facts);
done:
    if (rc != 0)
        for (size_t c = 0; c < n; c++)
            flags[c] = 0;
    free(shapes);
    free(shape_of);
    return rc;
}

/* ---- the same over row blocks (--max-memory) ---- */

struct fr_numeric_stream {
    const fr_scale_rule *const *rules;
    size_t n, n_shapes;
    int64_t cols;
    shape_stats *shapes;
    size_t *shape_of;
    float **whole;     /* per shape whose tiles span every row: amax, hi, lo per tile */
    int64_t n_nonzero, n_subnormal, n_neg_zero;
    uint32_t max_mag;
    int failed;
};

static int64_t tiles_of(const shape_stats *s, int64_t cols)
{
    return (cols + s->tile_cols - 1) / s->tile_cols;
}

fr_numeric_stream *fr_numeric_stream_begin(const fr_scale_rule *const *rules, size_t n,
                                           int64_t cols)
{
    fr_numeric_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->rules = rules;
    st->n = n;
    st->cols = cols;
    st->shapes = calloc(n + 1, sizeof *st->shapes);
    st->shape_of = calloc(n + 1, sizeof *st->shape_of);
    st->whole = calloc(n + 1, sizeof *st->whole);
    if (!st->shapes || !st->shape_of || !st->whole) {
        st->failed = 1;
        return st;
    }
    for (size_t c = 0; c < n; c++) {
        if (rules[c]->kind == FR_SCALE_NONE)
            continue;
        /* tile_rows 0: one tile over every row (resolved as 0 here) */
        int64_t tr = rules[c]->tile_rows > 0 ? rules[c]->tile_rows : 0;
        int64_t tc = rules[c]->tile_cols ? rules[c]->tile_cols : cols;
        if (tc < 1)
            tc = 1;
        size_t k = 0;
        while (k < st->n_shapes &&
               (st->shapes[k].tile_rows != tr || st->shapes[k].tile_cols != tc))
            k++;
        if (k == st->n_shapes) {
            shape_stats *sh = &st->shapes[k];
            sh->tile_rows = tr;
            sh->tile_cols = tc;
            sh->max_amax = 0.0f;
            sh->min_amax = INFINITY;
            sh->max_range = 0.0f;
            sh->min_range = INFINITY;
            if (tr == 0) {
                int64_t nt = tiles_of(sh, cols);
                st->whole[k] = calloc(3 * (size_t)(nt > 0 ? nt : 1), sizeof(float));
                if (!st->whole[k])
                    st->failed = 1;
            }
            st->n_shapes++;
        }
        st->shape_of[c] = k;
    }
    return st;
}

void fr_numeric_stream_add(fr_numeric_stream *st, const float *w, int64_t row0, int64_t rows)
{
    if (!st || st->failed)
        return;
    const int64_t cols = st->cols, numel = rows * cols;
    for (int64_t i = 0; i < numel; i++) {
        uint32_t u;
        memcpy(&u, &w[i], sizeof u);
        uint32_t mag = u & 0x7fffffffu;
        st->max_mag = mag > st->max_mag ? mag : st->max_mag;
        if (mag == 0) {
            st->n_neg_zero += u != 0;
            continue;
        }
        st->n_nonzero++;
        st->n_subnormal += mag < 0x00800000u;
    }
    for (size_t k = 0; k < st->n_shapes; k++) {
        shape_stats *sh = &st->shapes[k];
        if (sh->tile_rows == 0) {
            /* the tiles span every row: carried over the blocks */
            float *acc = st->whole[k];
            int64_t tc = sh->tile_cols, nt = tiles_of(sh, cols);
            for (int64_t r = 0; r < rows; r++) {
                const float *row = w + r * cols;
                for (int64_t j = 0; j < nt; j++) {
                    int64_t c1 = (j + 1) * tc < cols ? (j + 1) * tc : cols;
                    for (int64_t c = j * tc; c < c1; c++) {
                        float x = row[c], ax = fabsf(x);
                        acc[3 * j] = ax > acc[3 * j] ? ax : acc[3 * j];
                        acc[3 * j + 1] = x > acc[3 * j + 1] ? x : acc[3 * j + 1];
                        acc[3 * j + 2] = x < acc[3 * j + 2] ? x : acc[3 * j + 2];
                    }
                }
            }
            continue;
        }
        /* tiles of tile_rows rows: the block must start on a tile */
        if (row0 % sh->tile_rows != 0) {
            st->failed = 1;
            return;
        }
        shape_stats b = {.tile_rows = sh->tile_rows, .tile_cols = sh->tile_cols};
        if (shape_pass(w, rows, cols, &b) != 0) {
            st->failed = 1;
            return;
        }
        sh->max_amax = b.max_amax > sh->max_amax ? b.max_amax : sh->max_amax;
        sh->min_amax = b.min_amax < sh->min_amax ? b.min_amax : sh->min_amax;
        sh->max_range = b.max_range > sh->max_range ? b.max_range : sh->max_range;
        sh->min_range = b.min_range < sh->min_range ? b.min_range : sh->min_range;
    }
}

int fr_numeric_stream_end(fr_numeric_stream *st, uint32_t *flags, fr_scale_detail *detail,
                          fr_tensor_facts *facts)
{
    int rc = !st || st->failed ? -1 : 0;
    memset(facts, 0, sizeof *facts);
    size_t n = st ? st->n : 0;
    if (rc == 0) {
        for (size_t k = 0; k < st->n_shapes; k++) {
            shape_stats *sh = &st->shapes[k];
            if (sh->tile_rows != 0)
                continue;
            const float *acc = st->whole[k];
            for (int64_t j = 0; j < tiles_of(sh, st->cols); j++) {
                float a = acc[3 * j], range = acc[3 * j + 1] - acc[3 * j + 2];
                if (a > sh->max_amax)
                    sh->max_amax = a;
                if (a > 0.0f && a < sh->min_amax)
                    sh->min_amax = a;
                if (range > sh->max_range)
                    sh->max_range = range;
                if (range > 0.0f && range < sh->min_range)
                    sh->min_range = range;
            }
        }
        fr_numeric_totals t = {.n_nonzero = st->n_nonzero,
                               .n_subnormal = st->n_subnormal,
                               .n_neg_zero = st->n_neg_zero,
                               .max_mag = st->max_mag};
        fr_numeric_evaluate(st->rules, n, st->shapes, st->shape_of, &t, flags, detail, facts);
    } else {
        for (size_t c = 0; c < n; c++)
            flags[c] = 0;
    }
    if (st) {
        for (size_t k = 0; st->whole && k < st->n_shapes; k++)
            free(st->whole[k]);
        free(st->whole);
        free(st->shapes);
        free(st->shape_of);
        free(st);
    }
    return rc;
}

/* ---- warnings ---- */

static void report_problem(const char *tensor, uint32_t bit, const char *dtype, size_t n,
                           const char *const *names, const fr_scale_rule *const *rules,
                           const uint32_t *flags, const fr_scale_detail *detail,
                           void (*emit)(void *ctx, const char *line), void *ctx)
{
    char list[384];
    size_t used = 0, count = 0;
    double extreme = bit == FR_ROW_SCALE_OVERFLOW ? 0.0 : INFINITY;
    int pow2 = 0, two_level = 0;
    float smax = 0.0f;
    list[0] = '\0';
    for (size_t c = 0; c < n; c++) {
        if (!(flags[c] & bit) || strcmp(rules[c]->dtype, dtype) != 0)
            continue;
        if (count < 8 && used < sizeof list - 1)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", count ? ", " : "",
                                     names[c]);
        count++;
        pow2 = rules[c]->kind == FR_SCALE_POW2;
        two_level = rules[c]->kind == FR_SCALE_TWO_LEVEL;
        smax = rules[c]->smax;
        double v = bit == FR_ROW_SCALE_OVERFLOW ? detail[c].largest : detail[c].smallest;
        if (bit == FR_ROW_SCALE_OVERFLOW ? v > extreme : v < extreme)
            extreme = v;
    }
    if (!count)
        return;
    if (count > 8 && used < sizeof list - 1)
        snprintf(list + used, sizeof list - used, ", ... (%zu in all)", count);
    char line[640];
    if (bit == FR_ROW_SCALE_OVERFLOW && pow2)
        snprintf(line, sizeof line,
                 "'%s': %s scale exponents saturate at 127 in %s (largest group amax %.4g)",
                 tensor, dtype, list, extreme);
    else if (bit == FR_ROW_SCALE_OVERFLOW && two_level && extreme > FLT_MAX)
        snprintf(line, sizeof line,
                 "'%s': the fp32 global scale saturates in %s (it would be %.4g): the %s group "
                 "scales come out smaller than the rule's and small groups may flush to 0",
                 tensor, list, extreme, dtype);
    else if (bit == FR_ROW_SCALE_OVERFLOW)
        snprintf(line, sizeof line,
                 "'%s': %s scales overflow in %s: a scale quotient reaches %.4g, above the "
                 "largest %s (%.6g); the scale saturates and the largest values are clipped",
                 tensor, dtype, list, extreme, dtype, (double)smax);
    else if (pow2)
        snprintf(line, sizeof line,
                 "'%s': %s scale exponents are clamped at -127 in %s (smallest nonzero group "
                 "amax %.4g): those groups lose precision or flush to 0",
                 tensor, dtype, list, extreme);
    else
        snprintf(line, sizeof line,
                 "'%s': %s scales underflow to 0 in %s (smallest quotient of a group that is "
                 "not all zero: %.4g): those groups are reconstructed as 0",
                 tensor, dtype, list, extreme);
    emit(ctx, line);
}

void fr_numeric_report(const char *tensor, uint32_t tensor_flags, size_t n,
                       const char *const *config_names, const fr_scale_rule *const *rules,
                       const uint32_t *flags, const fr_scale_detail *detail,
                       void (*emit)(void *ctx, const char *line), void *ctx)
{
    char line[512];
    if (tensor_flags & FR_ROW_ALL_ZERO) {
        snprintf(line, sizeof line,
                 "'%s': every value is zero (rel_err is 0 where the reconstruction is zero too)",
                 tensor);
        emit(ctx, line);
    } else if (tensor_flags & FR_ROW_SUBNORMAL) {
        snprintf(line, sizeof line, "'%s': holds float32 subnormal values (below %.4g)", tensor,
                 (double)FLT_MIN);
        emit(ctx, line);
    }
    static const uint32_t bits[] = {FR_ROW_SCALE_OVERFLOW, FR_ROW_SCALE_UNDERFLOW};
    for (size_t b = 0; b < 2; b++)
        for (size_t c = 0; c < n; c++) {
            if (!(flags[c] & bits[b]))
                continue;
            /* one line per scale dtype: at its first configuration */
            size_t e = 0;
            while (e < c && !((flags[e] & bits[b]) && !strcmp(rules[e]->dtype, rules[c]->dtype)))
                e++;
            if (e == c)
                report_problem(tensor, bits[b], rules[c]->dtype, n, config_names, rules, flags,
                               detail, emit, ctx);
        }
}
