/*
 * test_calib DIR: the calibration-statistics reader (core/calib.h) on the
 * files make_calib.py wrote into DIR. The good files: every lookup rule
 * (own name, the fused q/k/v rule, a fused weight's own name, dimensions,
 * a sensitivity-only module), the unmatched-module listing, and the values
 * against the same formula recomputed here. cases.tsv: each bad file's
 * exact message and exit code, and the borderline files that must load.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "check.h"

#define TOKENS 16

/* make_calib.py's inputs(): x[t, j] = ((t*5 + j*3 + t*j + salt) % 7) - 3,
 * with the dead inputs zero; every mean of it is exact in float32. */
static double input(int t, int j, int salt, int dead)
{
    if (j == dead)
        return 0;
    return (double)((t * 5 + j * 3 + t * j + salt) % 7) - 3;
}

static void check_values(const fr_calib_stats *s, int in, int salt, int dead, const char *what)
{
    for (int i = 0; i < in; i++) {
        double abs_sum = 0, sq_sum = 0;
        for (int t = 0; t < TOKENS; t++) {
            double x = input(t, i, salt, dead);
            abs_sum += fabs(x);
            sq_sum += x * x;
        }
        if (s->calib.act_mean_abs)
            CHECK_MSG(s->calib.act_mean_abs[i] == (float)(abs_sum / TOKENS), "%s: act_abs_mean[%d]",
                      what, i);
        if (s->calib.act_mean_sq)
            CHECK_MSG(s->calib.act_mean_sq[i] == (float)(sq_sum / TOKENS), "%s: act_sq_mean[%d]",
                      what, i);
        if (!s->calib.hessian)
            continue;
        for (int j = 0; j < in; j++) {
            double sum = 0;
            for (int t = 0; t < TOKENS; t++)
                sum += input(t, i, salt, dead) * input(t, j, salt, dead);
            CHECK_MSG(s->calib.hessian[i * in + j] == (float)(sum / TOKENS), "%s: hessian[%d, %d]",
                      what, i, j);
        }
    }
}

/* A lookup that must find module's statistics, all three of them when full. */
static void expect_found(fr_calib_file *cf, const char *weight, int64_t cols, const char *module,
                         int salt, int dead, int full)
{
    fr_calib_stats s;
    fr_error err = {0};
    CHECK_OK(fr_calib_lookup(cf, weight, cols, &s, &err), err);
    CHECK_MSG(s.found, "%s: not found: %s", weight, s.skip_reason);
    if (!s.found)
        return;
    CHECK_STR(s.module, module);
    CHECK_STR(s.skip_reason, "");
    CHECK_EQ_U64(s.calib.cols, cols);
    if (full)
        CHECK_MSG(s.calib.hessian && s.calib.act_mean_abs && s.calib.act_mean_sq, "%s: parts missing",
                  weight);
    check_values(&s, (int)cols, salt, dead, weight);
    fr_calib_release(cf, &s);
}

static void expect_skip(fr_calib_file *cf, const char *weight, int64_t cols, const char *reason)
{
    fr_calib_stats s;
    fr_error err = {0};
    CHECK_OK(fr_calib_lookup(cf, weight, cols, &s, &err), err);
    CHECK_MSG(!s.found, "%s: found, expected a skip", weight);
    CHECK_STR(s.skip_reason, reason);
}

static void test_good(const char *path)
{
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    CHECK_OK(fr_calib_open(path, &cf, &err), err);
    if (!cf)
        return;
    CHECK_STR(fr_calib_path(cf), path);
    CHECK_EQ_U64(fr_calib_token_count(cf), TOKENS);
    CHECK_EQ_U64(fr_calib_module_count(cf), 8);
    CHECK_OK(fr_calib_check_values(cf, &err), err);

    const char *q0 = "model.layers.0.self_attn.q_proj";
    /* own name, then q/k/v stored once under q_proj serve all three */
    expect_found(cf, "model.layers.0.self_attn.q_proj.weight", 8, q0, 0, -1, 1);
    expect_found(cf, "model.layers.0.self_attn.k_proj.weight", 8, q0, 0, -1, 1);
    expect_found(cf, "model.layers.0.self_attn.v_proj.weight", 8, q0, 0, -1, 1);
    /* stored under k_proj: q_proj finds it there; v_proj has its own */
    expect_found(cf, "model.layers.1.self_attn.q_proj.weight", 8, "model.layers.1.self_attn.k_proj",
                 2, -1, 1);
    expect_found(cf, "model.layers.1.self_attn.v_proj.weight", 8, "model.layers.1.self_attn.v_proj",
                 3, -1, 1);
    /* a fused weight uses its own module name */
    expect_found(cf, "transformer.h.0.attn.c_attn.weight", 8, "transformer.h.0.attn.c_attn", 4, -1, 1);
    /* diagonal-only, with a dead input */
    expect_found(cf, "model.layers.0.mlp.down_proj.weight", 16, "model.layers.0.mlp.down_proj", 1, 3,
                 0);
    fr_calib_stats s;
    CHECK_OK(fr_calib_lookup(cf, "model.layers.0.mlp.down_proj.weight", 16, &s, &err), err);
    CHECK(s.found && !s.calib.hessian && !s.calib.act_mean_abs && s.calib.act_mean_sq);
    CHECK(s.found && s.calib.act_mean_sq[3] == 0.0f);
    CHECK_EQ_U64(s.n_sensitivity, 0);
    CHECK_OK(fr_calib_lookup(cf, "model.layers.0.self_attn.k_proj.weight", 8, &s, &err), err);
    CHECK_EQ_U64(s.n_sensitivity, 2);
    CHECK(s.sensitivity[0] == 0.25f && s.sensitivity[1] == 0.5f);

    expect_skip(cf, "model.layers.0.self_attn.o_proj.weight", 8,
                "no statistics for 'model.layers.0.self_attn.o_proj'");
    expect_skip(cf, "model.layers.2.self_attn.q_proj.weight", 8,
                "no statistics for 'model.layers.2.self_attn.q_proj'");
    /* only a whole name component fuses */
    expect_skip(cf, "model.layers.0.self_attn.xq_proj.weight", 8,
                "no statistics for 'model.layers.0.self_attn.xq_proj'");
    expect_skip(cf, "model.layers.0.self_attn.q_proj.weight", 64,
                "hessian of 'model.layers.0.self_attn.q_proj' is [8, 8], the weight has 64 input "
                "columns");
    expect_skip(cf, "model.layers.0.self_attn.k_proj.weight", 64,
                "hessian of 'model.layers.0.self_attn.q_proj' is [8, 8], the weight has 64 input "
                "columns");
    expect_skip(cf, "model.layers.0.mlp.down_proj.weight", 8,
                "act_sq_mean of 'model.layers.0.mlp.down_proj' is [16], the weight has 8 input "
                "columns");
    expect_skip(cf, "model.embed_tokens.weight", 8,
                "act_abs_mean of 'model.embed_tokens' is [4], the weight has 8 input columns");
    expect_skip(cf, "lm_head.weight", 8, "'lm_head' has only a sensitivity, no input statistics");
    CHECK_OK(fr_calib_lookup(cf, "lm_head.weight", 8, &s, &err), err);
    CHECK(s.n_sensitivity == 1 && s.sensitivity[0] == 1.5f);

    /* unmatched: the weights of a model without layer 9 nor embeddings in the file's sense */
    const char *weights[] = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.down_proj.weight",    "model.layers.1.self_attn.q_proj.weight",
        "model.layers.1.self_attn.v_proj.weight", "transformer.h.0.attn.c_attn.weight",
        "lm_head.weight",                         "model.norm.weight",
    };
    const char **names = NULL;
    size_t n_names = 99;
    CHECK_OK(fr_calib_unmatched(cf, weights, sizeof weights / sizeof weights[0], &names, &n_names,
                                &err),
             err);
    CHECK_EQ_U64(n_names, 2);
    if (n_names == 2) {
        CHECK_STR(names[0], "model.embed_tokens");
        CHECK_STR(names[1], "model.layers.9.mlp.up_proj");
    }
    free(names);
    /* layer 1's k_proj module is matched by its k_proj weight too */
    const char *all_but[] = {"model.layers.1.self_attn.k_proj.weight"};
    CHECK_OK(fr_calib_unmatched(cf, all_but, 1, &names, &n_names, &err), err);
    CHECK_EQ_U64(n_names, 7);
    for (size_t i = 0; i < n_names; i++)
        CHECK_MSG(strcmp(names[i], "model.layers.1.self_attn.k_proj"), "listed a matched module");
    free(names);
    CHECK_OK(fr_calib_unmatched(cf, NULL, 0, &names, &n_names, &err), err);
    CHECK_EQ_U64(n_names, 8);
    free(names);

    char buf[64];
    CHECK_STR(fr_calib_module_of("a.b.weight", buf, sizeof buf), "a.b");
    CHECK_STR(fr_calib_module_of("a.b.bias", buf, sizeof buf), "a.b.bias");
    CHECK_STR(fr_calib_module_of(".weight", buf, sizeof buf), ".weight");
    CHECK(fr_calib_module_of("a.b.weight", buf, 3) == NULL);
    fr_calib_close(cf);
}

/* experts.safetensors (make_calib.py): per-expert statistics of a fused
 * stack, expert e's slice as an ordinary view; the zero-token fallback;
 * every one-sided or mismatched lookup. */
static void test_experts(const char *path)
{
    const char *stack = "model.layers.0.mlp.experts.gate_up_proj";
    const char *dead = "model.layers.1.mlp.experts.down_proj";
    const char *plain = "model.layers.0.self_attn.q_proj";
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    CHECK_OK(fr_calib_open(path, &cf, &err), err);
    if (!cf)
        return;
    CHECK_OK(fr_calib_check_values(cf, &err), err);
    CHECK_EQ_U64(fr_calib_module_experts(cf, stack), 3);
    CHECK_EQ_U64(fr_calib_module_experts(cf, plain), 0);
    CHECK(fr_calib_module_experts(cf, "nothing") == -1);
    CHECK_EQ_U64(fr_calib_module_in(cf, stack), 8);

    fr_calib_stats s, s0, s2;
    const int64_t tokens[3] = {16, 0, 8};
    for (int e = 0; e < 3; e += 2) {
        CHECK_OK(fr_calib_lookup_expert(cf, stack, 8, e, 3, &s, &err), err);
        CHECK_MSG(s.found && !s.fallback, "expert %d: %s", e, s.skip_reason);
        CHECK_STR(s.module, stack);
        CHECK(s.expert == e && s.expert_tokens == tokens[e]);
        CHECK(s.n_sensitivity == 2 && s.sensitivity[0] == 2.0f && s.sensitivity[1] == 0.125f);
        if (s.found)
            check_values(&s, 8, 10 + e, -1, e == 0 ? "expert 0" : "expert 2");
    }
    /* expert 1 had no tokens: the token-weighted mean of experts 0 and 2 */
    CHECK_OK(fr_calib_lookup_expert(cf, stack, 8, 0, 3, &s0, &err), err);
    CHECK_OK(fr_calib_lookup_expert(cf, stack, 8, 2, 3, &s2, &err), err);
    CHECK_OK(fr_calib_lookup_expert(cf, stack, 8, 1, 3, &s, &err), err);
    CHECK_MSG(s.found && s.fallback && s.expert_tokens == 0, "expert 1: %s", s.skip_reason);
    if (s.found && s0.found && s2.found) {
        for (int k = 0; k < 64; k++)
            CHECK_MSG(s.calib.hessian[k] == (float)((16.0 * s0.calib.hessian[k] +
                                                     8.0 * s2.calib.hessian[k]) / 24.0),
                      "fallback hessian[%d]", k);
        for (int j = 0; j < 8; j++) {
            CHECK(s.calib.act_mean_abs[j] ==
                  (float)((16.0 * s0.calib.act_mean_abs[j] + 8.0 * s2.calib.act_mean_abs[j]) / 24.0));
            CHECK(s.calib.act_mean_sq[j] == s.calib.hessian[j * 8 + j]);
        }
    }
    /* no expert had tokens: a skip reason for each */
    CHECK_OK(fr_calib_lookup_expert(cf, dead, 8, 1, 2, &s, &err), err);
    CHECK(!s.found);
    CHECK_STR(s.skip_reason, "no expert of 'model.layers.1.mlp.experts.down_proj' received a token "
                             "(expert_token_counts all 0)");
    /* the stack's statistics looked up as one plain matrix: a skip */
    expect_skip(cf, stack, 8,
                "hessian of 'model.layers.0.mlp.experts.gate_up_proj' is [3, 8, 8]: per-expert "
                "statistics, for a tensor handled expert by expert; "
                "'model.layers.0.mlp.experts.gate_up_proj' is handled here as one matrix");
    /* another input dimension: the ordinary skip */
    CHECK_OK(fr_calib_lookup_expert(cf, stack, 16, 0, 3, &s, &err), err);
    CHECK(!s.found);
    CHECK_STR(s.skip_reason, "hessian of 'model.layers.0.mlp.experts.gate_up_proj' is [3, 8, 8], "
                             "the weight has 16 input columns");
    /* another expert count: an error naming file, module, both counts */
    char want[6144];
    fr_error e4 = {0};
    CHECK(fr_calib_lookup_expert(cf, stack, 8, 0, 4, &s, &e4) == FR_E_FORMAT);
    snprintf(want, sizeof want,
             "cannot read calibration '%s': module 'model.layers.0.mlp.experts.gate_up_proj': "
             "hessian is [3, 8, 8], statistics of 3 experts; the tensor "
             "'model.layers.0.mlp.experts.gate_up_proj' has 4 experts",
             path);
    CHECK_STR(e4.msg, want);
    /* statistics without an expert axis for a stack: an error */
    fr_error e2 = {0};
    CHECK(fr_calib_lookup_expert(cf, plain, 8, 0, 2, &s, &e2) == FR_E_FORMAT);
    snprintf(want, sizeof want,
             "cannot read calibration '%s': module 'model.layers.0.self_attn.q_proj': hessian is "
             "[8, 8], without an expert axis: the expert stack 'model.layers.0.self_attn.q_proj' "
             "of 2 experts needs per-expert statistics (hessian [E, in, in])",
             path);
    CHECK_STR(e2.msg, want);
    fr_error eu = {0};
    CHECK(fr_calib_lookup_expert(cf, stack, 8, 3, 3, &s, &eu) == FR_E_USAGE);
    /* the plain module still works as before */
    expect_found(cf, "model.layers.0.self_attn.q_proj.weight", 8, plain, 0, -1, 1);
    fr_calib_close(cf);
}

/* One line of cases.tsv: file, stage, exit code, weight, message. */
static void run_case(const char *dir, char *line)
{
    char *field[5];
    int n = 0;
    for (char *p = line; n < 5; n++) {
        field[n] = p;
        char *tab = strchr(p, '\t');
        if (!tab) {
            n++;
            break;
        }
        *tab = '\0';
        p = tab + 1;
    }
    if (n != 5) {
        fr_test_fail(__FILE__, __LINE__, "cases.tsv: %d fields in '%s'", n, line);
        return;
    }
    const char *file = field[0], *stage = field[1], *weight = field[3], *message = field[4];
    int code = atoi(field[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    fr_status st = fr_calib_open(path, &cf, &err);
    if (!strcmp(stage, "open")) {
        CHECK_MSG(st == (fr_status)code, "%s: open returned %d, expected %d", file, st, code);
        CHECK_MSG(cf == NULL, "%s: a failed open returned a file", file);
        CHECK_STR(err.msg, message);
        fr_calib_close(cf);
        return;
    }
    CHECK_MSG(st == FR_OK, "%s: open failed: %s", file, err.msg);
    if (st != FR_OK)
        return;
    fr_calib_stats s;
    fr_error lookup_err = {0};
    fr_status lookup_st = fr_calib_lookup(cf, weight, 8, &s, &lookup_err);
    st = fr_calib_check_values(cf, &err);
    if (!strcmp(stage, "ok")) {
        CHECK_MSG(st == FR_OK, "%s: %s", file, err.msg);
        CHECK_MSG(lookup_st == FR_OK && s.found, "%s: lookup: %s", file, lookup_err.msg);
    } else {
        CHECK_MSG(st == (fr_status)code, "%s: check returned %d, expected %d", file, st, code);
        CHECK_STR(err.msg, message);
        CHECK_MSG(lookup_st == (fr_status)code, "%s: lookup returned %d, expected %d", file,
                  lookup_st, code);
        CHECK_STR(lookup_err.msg, message);
        /* a failed check is not remembered as passed */
        lookup_st = fr_calib_lookup(cf, weight, 8, &s, &lookup_err);
        CHECK_MSG(lookup_st == (fr_status)code, "%s: second lookup returned %d", file, lookup_st);
    }
    fr_calib_close(cf);
}

/* fr_calib_open("synthetic[:SEED]") (docs/calibration.md, "Synthetic
 * statistics"): every weight found, H symmetric with diag H = act_sq_mean,
 * correlations 0.9^|i-j| up to float32 rounding, act_abs_mean =
 * sqrt(2 / pi) sqrt(diag H), positive definite (a Cholesky factorisation in
 * double), one generation per width, the seed deciding the scales, and
 * malformed specs refused. */
static void test_synthetic(void)
{
    fr_calib_file *a = NULL, *b = NULL, *c = NULL;
    fr_error err;
    CHECK(fr_calib_open("synthetic", &a, &err) == FR_OK);
    CHECK(fr_calib_open("synthetic:1", &b, &err) == FR_OK);
    CHECK(fr_calib_open("synthetic:5", &c, &err) == FR_OK);
    if (!a || !b || !c)
        return;
    const int64_t n = 300;
    fr_calib_stats sa, sb, sc, sa2, sexp;
    CHECK(fr_calib_lookup(a, "model.layers.3.mlp.down_proj.weight", n, &sa, &err) == FR_OK);
    CHECK(fr_calib_lookup(a, "anything.else", n, &sa2, &err) == FR_OK);
    CHECK(fr_calib_lookup(b, "x.weight", n, &sb, &err) == FR_OK);
    CHECK(fr_calib_lookup(c, "x.weight", n, &sc, &err) == FR_OK);
    CHECK(fr_calib_lookup_expert(a, "experts.w1", n, 2, 4, &sexp, &err) == FR_OK);
    CHECK(sa.found && sa2.found && sb.found && sc.found && sexp.found);
    if (!sa.found || !sb.found || !sc.found)
        return;
    CHECK_MSG(sa.calib.hessian == sa2.calib.hessian && sa.calib.hessian == sexp.calib.hessian,
              "one generation per width");
    CHECK_MSG(!memcmp(sa.calib.hessian, sb.calib.hessian, (size_t)(n * n) * sizeof(float)),
              "'synthetic' is seed 1");
    CHECK_MSG(memcmp(sa.calib.hessian, sc.calib.hessian, (size_t)(n * n) * sizeof(float)) != 0,
              "another seed gives other statistics");
    const float *h = sa.calib.hessian;
    double worst = 0.0;
    double smin = INFINITY, smax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        CHECK_MSG(h[i * n + i] == sa.calib.act_mean_sq[i], "act_sq_mean[%lld] = H_ii", (long long)i);
        double want = 0.7978845608028654 * sqrt((double)h[i * n + i]);
        CHECK_MSG(fabs(sa.calib.act_mean_abs[i] - want) <= 1e-6 * want, "act_abs_mean[%lld]",
                  (long long)i);
        smin = fmin(smin, sqrt((double)h[i * n + i]));
        smax = fmax(smax, sqrt((double)h[i * n + i]));
        for (int64_t j = 0; j < n; j++) {
            CHECK_MSG(h[i * n + j] == h[j * n + i], "H symmetric at %lld,%lld", (long long)i,
                      (long long)j);
            double r = h[i * n + j] / sqrt((double)h[i * n + i] * h[j * n + j]);
            double e = pow(0.9, (double)(i > j ? i - j : j - i));
            if (e > 1e-30)
                worst = fmax(worst, fabs(r - e) / e);
        }
    }
    CHECK_MSG(worst < 1e-6, "correlations 0.9^|i-j|: worst relative deviation %.2e", worst);
    CHECK_MSG(smax / smin > 10.0, "feature scales %.3g .. %.3g should vary", smin, smax);
    /* positive definite: Cholesky in double */
    double *l = calloc((size_t)(n * n), sizeof *l);
    int pd = l != NULL;
    for (int64_t j = 0; pd && j < n; j++) {
        double d = h[j * n + j];
        for (int64_t k = 0; k < j; k++)
            d -= l[j * n + k] * l[j * n + k];
        if (!(d > 0)) {
            pd = 0;
            break;
        }
        l[j * n + j] = sqrt(d);
        for (int64_t i = j + 1; i < n; i++) {
            double v = h[i * n + j];
            for (int64_t k = 0; k < j; k++)
                v -= l[i * n + k] * l[j * n + k];
            l[i * n + j] = v / l[j * n + j];
        }
    }
    free(l);
    CHECK_MSG(pd, "synthetic H is positive definite");
    CHECK(!strcmp(fr_calib_path(a), "synthetic"));
    fr_calib_close(a);
    fr_calib_close(b);
    fr_calib_close(c);
    static const char *const bad[] = {"synthetic:", "synthetic:1x", "synthetic:-3",
                                      "synthetic:99999999999999999999999"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fr_calib_file *x = NULL;
        fr_error_clear(&err);
        CHECK_MSG(fr_calib_open(bad[k], &x, &err) == FR_E_USAGE && x == NULL &&
                      strstr(err.msg, "synthetic:SEED"),
                  "'%s' is refused: %s", bad[k], err.msg);
    }
    printf("synthetic statistics: correlations within %.1e, feature scales %.3g .. %.3g\n", worst,
           smin, smax);
}

int main(int argc, char **argv)
{
    test_synthetic();
    if (argc != 2) {
        fprintf(stderr, "usage: test_calib DIR (written by make_calib.py)\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/good.safetensors", argv[1]);
    test_good(path);
    snprintf(path, sizeof path, "%s/unaligned.safetensors", argv[1]);
    test_good(path);
    snprintf(path, sizeof path, "%s/experts.safetensors", argv[1]);
    test_experts(path);

    snprintf(path, sizeof path, "%s/cases.tsv", argv[1]);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open '%s'", path);
    int cases = 0;
    char line[8192];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) {
            run_case(argv[1], line);
            cases++;
        }
    }
    if (f)
        fclose(f);
    CHECK_MSG(cases >= 30, "only %d cases in cases.tsv", cases);
    printf("test_calib: %d cases\n", cases);
    return fr_test_finish("test_calib");
}
