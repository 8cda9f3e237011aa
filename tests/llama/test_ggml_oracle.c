/*
 * The ggml family's blocks against the pinned llama.cpp's own ggml: this
 * program links its static libggml-base (real ggml code, not a
 * re-implementation) and, for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and
 * IQ4_XS on every row set below:
 *
 * - ggml_quantize_chunk without an importance matrix (what llama-quantize
 *   calls) gives the bytes of frontier's encoder (quantizers/ggml_blocks.h),
 *   and so does the type's quantize_row_*_ref, except IQ4_NL's (ggml's
 *   reference for IQ4_NL tries no scales; llama-quantize does not call it:
 *   the differing blocks are counted, and frontier follows llama-quantize);
 * - ggml_quantize_chunk with one (llama-quantize --imatrix) gives the bytes
 *   of frontier's weighted encoder, for Q4_0, Q4_1, Q5_0 and Q5_1 too
 *   (what llama-quantize --imatrix writes where a super-block type falls
 *   back to one of them; frontier's row encoder, with the row's sigma2);
 * - ggml's dequantize_row_* (type_traits to_float) of those bytes equals
 *   frontier's decoder bit for bit;
 * - the registry's Q(W) for ggml-<type>, and for imat-ggml-<type> with the
 *   importance as act_sq_mean, is ggml's dequantize of ggml's quantize;
 * - ggml's blocks of the digest set of tests/quantize/ggml_rows.h have the
 *   digests stored there, which the default suite holds frontier to.
 *
 * Row sets (every row a multiple of 256): data/stories260K's weights, four
 * 64-column rows to one row of 256 with the module's act_sq_mean repeated
 * as the importance, and all of them end to end with a random one;
 * gaussian, heavy-tailed, with zeros (whole super-blocks, sub-blocks,
 * scattered, one nonzero), tiny (down to subnormal) and huge scales,
 * constant, one-signed, ramps and outliers; importances random, with zero
 * columns, heavy-tailed, all ones.
 *
 * usage: test_ggml_oracle DATA_DIR
 */
#include <ggml.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/calib.h"
#include "core/call.h"
#include "core/source.h"
#include "frontier/exec/builtins.h"
#include "quantize/ggml_rows.h"
#include "quantizers/ggml_blocks.h"

static const struct {
    fr_ggml_qtype type;
    enum ggml_type gtype;
    const char *config;
} types[] = {
    {FR_GGML_Q2_K, GGML_TYPE_Q2_K, "ggml-q2_k"},       {FR_GGML_Q3_K, GGML_TYPE_Q3_K, "ggml-q3_k"},
    {FR_GGML_Q4_K, GGML_TYPE_Q4_K, "ggml-q4_k"},       {FR_GGML_Q5_K, GGML_TYPE_Q5_K, "ggml-q5_k"},
    {FR_GGML_Q6_K, GGML_TYPE_Q6_K, "ggml-q6_k"},       {FR_GGML_IQ4_NL, GGML_TYPE_IQ4_NL, "ggml-iq4_nl"},
    {FR_GGML_IQ4_XS, GGML_TYPE_IQ4_XS, "ggml-iq4_xs"},
    /* the legacy types: weighted only as a super-block type's fallback
     * (llama-quantize --imatrix on rows no super-block divides), so no
     * imat-ggml- configuration of their own */
    {FR_GGML_Q4_0, GGML_TYPE_Q4_0, "ggml-q4_0"},       {FR_GGML_Q4_1, GGML_TYPE_Q4_1, "ggml-q4_1"},
    {FR_GGML_Q5_0, GGML_TYPE_Q5_0, "ggml-q5_0"},       {FR_GGML_Q5_1, GGML_TYPE_Q5_1, "ggml-q5_1"},
    /* Q8_0 and MXFP4 take no importance */
    {FR_GGML_Q8_0, GGML_TYPE_Q8_0, "ggml-q8_0"},       {FR_GGML_MXFP4, GGML_TYPE_MXFP4, "ggml-mxfp4"},
};
#define N_IMAT 7      /* the first N_IMAT types have an imat-ggml- configuration */
#define N_WEIGHTED 11 /* the first N_WEIGHTED types have the weighted path */
#define N_TYPES (sizeof types / sizeof types[0])

/* Blocks compared, per type: plain encoder, weighted encoder, decoder. */
static long n_plain[N_TYPES], n_weighted[N_TYPES], n_decoded[N_TYPES], n_ref_differs[N_TYPES];
static long n_rows_registry[N_TYPES];

static fr_registry reg;

/* One row set: rows x cols weights and one importance per column. */
typedef struct rowset {
    char name[96];
    int64_t rows, cols;
    float *w, *qw;
    int subnormal; /* has blocks whose legacy step is subnormal (1 / step overflows) */
} rowset;

/* ---- one comparison ---- */

/* Index of the first differing block of two rows of blocks, or -1. */
static int64_t first_block_diff(const uint8_t *a, const uint8_t *b, int64_t n_blocks, size_t bytes)
{
    for (int64_t k = 0; k < n_blocks; k++)
        if (memcmp(a + k * bytes, b + k * bytes, bytes))
            return k;
    return -1;
}

static int64_t count_block_diffs(const uint8_t *a, const uint8_t *b, int64_t n_blocks, size_t bytes)
{
    int64_t n = 0;
    for (int64_t k = 0; k < n_blocks; k++)
        n += memcmp(a + k * bytes, b + k * bytes, bytes) != 0;
    return n;
}

/* Q(W) of a configuration through the registry (calib: act_sq_mean = qw). */
static fr_status registry_qw(const char *config, const rowset *rs, const float *qw,
                             float *w_hat, fr_error *err)
{
    const fr_config_ref *ref = fr_registry_find_config(&reg, config);
    if (!ref)
        return fr_fail(err, FR_E_USAGE, "no configuration '%s'", config);
    frontier_calib calib = {.cols = rs->cols, .act_mean_sq = qw};
    frontier_call call;
    fr_call_init(&call, NULL, 0, rs->name, config);
    fr_status st = fr_quantizer_quantize_cpu(&reg, ref, rs->w, w_hat, rs->rows, rs->cols,
                                             qw ? &calib : NULL, rs->name, &call, err);
    fr_call_release(&call);
    return st;
}

static int all_finite(const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return 0;
    return 1;
}

static int same_bits(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) {
            *at = i;
            return 0;
        }
    return 1;
}

static void compare(size_t k, const rowset *rs)
{
    const enum ggml_type gt = types[k].gtype;
    const fr_ggml_qtype ft = types[k].type;
    const struct ggml_type_traits *tr = ggml_get_type_traits(gt);
    const int64_t rows = rs->rows, cols = rs->cols, n = rows * cols;
    const int64_t per_row = cols / tr->blck_size, n_blocks = rows * per_row;
    const size_t bytes = tr->type_size, row_bytes = (size_t)per_row * bytes;
    CHECK_MSG(bytes == fr_ggml_block_bytes(ft) && tr->blck_size == fr_ggml_block_elems(ft),
              "%s: ggml's block is %zu bytes of %lld, ours %u of %d", tr->type_name, bytes,
              (long long)tr->blck_size, fr_ggml_block_bytes(ft), fr_ggml_block_elems(ft));
    uint8_t *theirs = malloc((size_t)n_blocks * bytes), *ours = malloc((size_t)n_blocks * bytes);
    uint8_t *ref = malloc((size_t)n_blocks * bytes);
    float *y_theirs = malloc((size_t)n * sizeof(float)), *y_ours = malloc((size_t)n * sizeof(float));
    float *q_reg = malloc((size_t)n * sizeof(float));
    if (!theirs || !ours || !ref || !y_theirs || !y_ours || !q_reg) {
        CHECK_MSG(0, "out of memory");
        goto done;
    }
    for (int weighted = 0; weighted < (k < N_WEIGHTED ? 2 : 1); weighted++) {
        const float *qw = weighted ? rs->qw : NULL;
        const char *path = weighted ? "with the importance matrix" : "without";
        size_t got = ggml_quantize_chunk(gt, rs->w, theirs, 0, rows, cols, qw);
        CHECK_MSG(got == (size_t)n_blocks * bytes, "%s: ggml wrote %zu bytes", tr->type_name, got);
        for (int64_t r = 0; r < rows; r++)
            fr_ggml_encode_row_weighted(ft, rs->w + r * cols, cols, qw ? qw : NULL,
                                        ours + (size_t)r * row_bytes);
        int64_t bad = first_block_diff(theirs, ours, n_blocks, bytes);
        CHECK_MSG(bad < 0, "%s %s on %s: block %lld (row %lld, block %lld of the row) differs",
                  tr->type_name, path, rs->name, (long long)bad, (long long)(bad / per_row),
                  (long long)(bad % per_row));
        if (bad < 0)
            *(weighted ? &n_weighted[k] : &n_plain[k]) += n_blocks;
        if (!weighted) {
            /* the reference quantizer: the same blocks, except IQ4_NL's */
            tr->from_float_ref(rs->w, ref, n);
            int64_t diffs = count_block_diffs(theirs, ref, n_blocks, bytes);
            if (ft == FR_GGML_IQ4_NL)
                n_ref_differs[k] += diffs;
            else
                CHECK_MSG(diffs == 0, "%s on %s: quantize_row_%s_ref differs from "
                          "ggml_quantize_chunk in %lld blocks", tr->type_name, rs->name,
                          tr->type_name, (long long)diffs);
        }
        /* decoding: ggml's to_float of ggml's blocks, ours of the same bytes */
        tr->to_float(theirs, y_theirs, n);
        for (int64_t r = 0; r < rows; r++)
            fr_ggml_decode_row(ft, theirs + (size_t)r * row_bytes, cols, y_ours + r * cols);
        int64_t at = 0;
        int same = same_bits(y_theirs, y_ours, n, &at);
        CHECK_MSG(same, "%s %s on %s: element %lld decodes to %.9g (ggml %.9g)", tr->type_name,
                  path, rs->name, (long long)at, y_ours[at], y_theirs[at]);
        if (same)
            n_decoded[k] += n_blocks;
        /* the registry's Q(W), what the sweep measures: ggml's dequantize of
         * ggml's quantize; refused where that is not finite (a step past
         * fp16's range), as every family's non-finite output is */
        char config[64];
        fr_error err = {0};
        snprintf(config, sizeof config, "%s%s", weighted ? "imat-" : "", types[k].config);
        if (weighted && k >= N_IMAT)
            continue; /* reached through a fallback only: tests/llama/quantize_compare.py */
        fr_status st = registry_qw(config, rs, qw, q_reg, &err);
        if (!all_finite(y_theirs, n)) {
            CHECK_MSG(st != FR_OK && strstr(err.msg, "output is"),
                      "%s on %s: non-finite Q(W) not refused (%s)", config, rs->name, err.msg);
        } else if (st != FR_OK) {
            CHECK_MSG(0, "%s on %s: %s", config, rs->name, err.msg);
        } else {
            same = same_bits(y_theirs, q_reg, n, &at);
            CHECK_MSG(same, "%s on %s: Q(W) element %lld is %.9g, ggml's dequantize(quantize) %.9g",
                      config, rs->name, (long long)at, q_reg[at], y_theirs[at]);
            n_rows_registry[k] += same ? rows : 0;
        }
    }
done:
    free(theirs);
    free(ours);
    free(ref);
    free(y_theirs);
    free(y_ours);
    free(q_reg);
}

/* The legacy types run where ggml's conversions are defined: a subnormal
 * step makes its (int8_t) conversion of an infinite x / step undefined,
 * where frontier clamps (quantizers/ggml_blocks.h). */
static void run_all(const rowset *rs)
{
    for (size_t k = 0; k < N_TYPES; k++)
        if (k < N_IMAT || !rs->subnormal)
            compare(k, rs);
}

/* ---- the row sets ---- */

static rowset *rowset_new(const char *name, int64_t rows, int64_t cols)
{
    rowset *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    snprintf(rs->name, sizeof rs->name, "%s", name);
    rs->rows = rows;
    rs->cols = cols;
    rs->w = calloc((size_t)(rows * cols), sizeof(float));
    rs->qw = calloc((size_t)cols, sizeof(float));
    if (!rs->w || !rs->qw) {
        free(rs->w);
        free(rs->qw);
        free(rs);
        return NULL;
    }
    return rs;
}

static void rowset_free(rowset *rs)
{
    if (!rs)
        return;
    free(rs->w);
    free(rs->qw);
    free(rs);
}

static void synthetic_sets(void)
{
    uint64_t s = 20260501;
    const int64_t cols = 2560; /* 10 super-blocks, 80 IQ4_NL blocks */
    for (int imp = 0; imp < 4; imp++)
        for (int over = 0; over < 3; over++) {
            /* 0: ordinary, 1: steps past fp16's range, 2: subnormal steps */
            int kinds[FR_ROWS_KINDS], n_kinds = 0;
            for (int kind = 0; kind < FR_ROWS_KINDS; kind++)
                if ((over == 2) == (kind == 14) && (kind == 14 || fr_rows_overflow(kind) == over))
                    kinds[n_kinds++] = kind;
            rowset *rs = rowset_new("", 2 * n_kinds, cols);
            if (!rs) {
                CHECK_MSG(0, "out of memory");
                return;
            }
            snprintf(rs->name, sizeof rs->name, "synthetic rows%s, importance kind %d",
                     over == 1 ? " past fp16's range" : over == 2 ? " of scale 1e-40" : "", imp);
            rs->subnormal = over != 0; /* kind 13 has a super-block of 1e-40 too */
            for (int64_t r = 0; r < rs->rows; r++)
                fr_rows_fill(rs->w + r * cols, cols, kinds[r % n_kinds], &s);
            fr_rows_importance(rs->qw, cols, imp, &s);
            run_all(rs);
            rowset_free(rs);
        }
}

/* stories260K: each 64-column weight with statistics, four rows to one of
 * 256, its act_sq_mean four times; then every weight end to end. */
static void stories_sets(const char *data)
{
    char path[1024];
    fr_source *src = NULL;
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    snprintf(path, sizeof path, "%s/stories260K", data);
    if (fr_source_open(path, &src, &err) != FR_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    snprintf(path, sizeof path, "%s/stories260K/calib.safetensors", data);
    if (fr_calib_open(path, &cf, &err) != FR_OK) {
        CHECK_MSG(0, "%s", err.msg);
        fr_source_close(src);
        return;
    }
    int64_t total = 0;
    for (size_t i = 0; i < src->n_tensors; i++)
        if (src->tensors[i].ndim == 2)
            total += src->tensors[i].numel;
    rowset *all = rowset_new("stories260K, every weight end to end", total / 256, 256);
    uint64_t s = 7;
    int64_t at = 0, n_modules = 0;
    for (size_t i = 0; all && i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        if (t->ndim != 2)
            continue;
        float *w = malloc((size_t)t->numel * sizeof *w);
        if (!w || fr_tensor_load_f32(src, t, w, &err) != FR_OK) {
            CHECK_MSG(0, "%s: %s", t->name, err.msg);
            free(w);
            continue;
        }
        int64_t take = t->numel < total - at ? t->numel : total - at;
        memcpy(all->w + at, w, (size_t)take * sizeof *w);
        at += take;
        fr_calib_stats st;
        if (t->shape[1] == 64 && fr_calib_lookup(cf, t->name, 64, &st, &err) == FR_OK &&
            st.found && st.calib.act_mean_sq) {
            rowset *rs = rowset_new(t->name, t->shape[0] / 4, 256);
            if (rs) {
                memcpy(rs->w, w, (size_t)(rs->rows * 256) * sizeof *w);
                for (int j = 0; j < 256; j++)
                    rs->qw[j] = st.calib.act_mean_sq[j % 64];
                run_all(rs);
                n_modules++;
            }
            rowset_free(rs);
        }
        free(w);
    }
    CHECK_MSG(n_modules >= 6, "only %lld stories260K weights had statistics", (long long)n_modules);
    if (all) {
        fr_rows_importance(all->qw, 256, 0, &s);
        run_all(all);
    }
    rowset_free(all);
    fr_calib_close(cf);
    fr_source_close(src);
}

/* ggml's blocks of the digest set (tests/quantize/ggml_rows.h) against the
 * digests the default suite holds frontier's encoder to. */
static void digests(void)
{
    static float w[FR_ROWS_DIGEST_ROWS * FR_ROWS_DIGEST_COLS], qw[FR_ROWS_DIGEST_COLS];
    fr_rows_digest_set(w, qw);
    for (size_t k = 0; k < N_IMAT; k++) {
        const struct ggml_type_traits *tr = ggml_get_type_traits(types[k].gtype);
        size_t bytes = (size_t)(FR_ROWS_DIGEST_ROWS * FR_ROWS_DIGEST_COLS / tr->blck_size) *
                       tr->type_size;
        uint8_t *blocks = malloc(bytes);
        for (int weighted = 0; blocks && weighted < 2; weighted++) {
            ggml_quantize_chunk(types[k].gtype, w, blocks, 0, FR_ROWS_DIGEST_ROWS,
                                FR_ROWS_DIGEST_COLS, weighted ? qw : NULL);
            uint64_t h = fr_rows_fnv(blocks, bytes);
            printf("digest %-7s %s: 0x%016llxull\n", tr->type_name,
                   weighted ? "with an importance matrix" : "without", (unsigned long long)h);
            CHECK_MSG(h == fr_rows_ggml_digest[k][weighted],
                      "%s: ggml's digest 0x%016llx is not the stored 0x%016llx (ggml_rows.h)",
                      tr->type_name, (unsigned long long)h,
                      (unsigned long long)fr_rows_ggml_digest[k][weighted]);
        }
        free(blocks);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_ggml_oracle DATA_DIR\n");
        return 2;
    }
    fr_error err = {0};
    if (fr_registry_init(&reg, &err) != FR_OK) {
        fprintf(stderr, "registry: %s\n", err.msg);
        return 1;
    }
    digests();
    stories_sets(argv[1]);
    synthetic_sets();
    for (size_t k = 0; k < N_TYPES; k++) {
        printf("%-7s blocks equal to ggml: %ld without", ggml_get_type_traits(types[k].gtype)->type_name,
               n_plain[k]);
        if (k < N_WEIGHTED)
            printf(", %ld with an importance matrix", n_weighted[k]);
        printf("; %ld decoded equal; Q(W) through the registry equal on %ld rows", n_decoded[k],
               n_rows_registry[k]);
        if (types[k].type == FR_GGML_IQ4_NL)
            printf("; quantize_row_iq4_nl_ref (not llama-quantize's) differs in %ld", n_ref_differs[k]);
        printf("\n");
        CHECK_MSG(n_plain[k] > 0 && (k >= N_WEIGHTED || n_weighted[k] > 0), "%s: nothing compared",
                  types[k].config);
    }
    fr_registry_free(&reg);
    return fr_test_finish("test_ggml_oracle");
}
