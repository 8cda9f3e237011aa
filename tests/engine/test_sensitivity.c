/*
 * test_sensitivity WORKDIR: frontier/engine/'s sensitivity measurement
 * without llama.cpp. The fit (slope through the origin and relative
 * residual, examples/calibration/capture.py's formula), the logsumexp and
 * the KL divergence of one position; the measurement on a small model of
 * this test's own (an embedding, a residual tanh layer and an output layer
 * behind the fr_lm interface): each tensor's KL recomputed here from the
 * quantizer's own Q(W), realised r^2, the restore, the levels, Gaussian
 * noise, the selection, a zero tensor and a configuration whose quantizer
 * fails skipped with their reasons, a failing model; and the calibration file:
 * read back by core/calib.h (module names, [alpha, residual], token_count,
 * metadata), refused without a measured tensor, and a write that cannot
 * happen leaves nothing behind.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "calib.h"
#include "check.h"
#include "core/call.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/engine/sensitivity.h"
#include "frontier/engine/sensitivity_file.h"
#include "frontier/exec/builtins.h"

#define V 16   /* vocabulary */
#define H 32   /* hidden size: one group of 32 per row */
#define N_T 4  /* tensors */

/* The toy model: h = E[tok]; g = h + tanh(A h); logits = O g. Z is a
 * tensor of zeros the model never reads (a tensor that cannot be
 * perturbed relatively). */
typedef struct toy {
    fr_lm lm;
    fr_lm_tensor t[N_T];
    float *w[N_T];
    long logits_calls;
    long fail_after; /* > 0: the call with this number fails */
} toy;

static fr_status toy_get(fr_lm *lm, size_t k, float *w, fr_error *err)
{
    toy *m = lm->state;
    (void)err;
    memcpy(w, m->w[k], (size_t)(m->t[k].rows * m->t[k].cols) * sizeof *w);
    return FR_OK;
}

static fr_status toy_set(fr_lm *lm, size_t k, const float *w, fr_error *err)
{
    toy *m = lm->state;
    (void)err;
    memcpy(m->w[k], w, (size_t)(m->t[k].rows * m->t[k].cols) * sizeof *w);
    return FR_OK;
}

/* The logits of one position from weights E, A, O. */
static void toy_position(float *const *w, int32_t tok, float *out)
{
    const float *e = w[0] + (size_t)tok * H;
    double g[H];
    for (int i = 0; i < H; i++) {
        double a = 0;
        for (int j = 0; j < H; j++)
            a += (double)w[1][i * H + j] * e[j];
        g[i] = e[i] + tanh(a);
    }
    for (int v = 0; v < V; v++) {
        double s = 0;
        for (int i = 0; i < H; i++)
            s += (double)w[2][v * H + i] * g[i];
        out[v] = (float)s;
    }
}

static fr_status toy_logits(fr_lm *lm, const int32_t *tokens, int64_t n, float *out, fr_error *err)
{
    toy *m = lm->state;
    if (m->fail_after > 0 && ++m->logits_calls == m->fail_after)
        return fr_fail(err, FR_E_FAIL, "the toy model fails on purpose");
    for (int64_t i = 0; i < n; i++)
        toy_position(m->w, tokens[i], out + i * V);
    return FR_OK;
}

static void toy_init(toy *m)
{
    static const char *names[N_T] = {"token_embd.weight", "blk.0.ffn_up.weight", "output.weight",
                                     "blk.0.zero.weight"};
    static const int64_t rows[N_T] = {V, H, V, 4};
    uint64_t state = 7;
    memset(m, 0, sizeof *m);
    for (int k = 0; k < N_T; k++) {
        m->t[k] = (fr_lm_tensor){.name = names[k], .rows = rows[k], .cols = H, .type_name = "f32"};
        m->w[k] = calloc((size_t)(rows[k] * H), sizeof(float));
        double scale = k == 0 ? 1.0 : k == 1 ? 0.3 : 0.5;
        for (int64_t i = 0; k < 3 && i < rows[k] * H; i++)
            m->w[k][i] = (float)(scale * (2 * fr_test_uniform(&state) - 1));
    }
    m->lm = (fr_lm){.state = m, .tensors = m->t, .n_tensors = N_T, .n_vocab = V,
                    .get = toy_get, .set = toy_set, .logits = toy_logits};
}

static void toy_free(toy *m)
{
    for (int k = 0; k < N_T; k++)
        free(m->w[k]);
}

/* 2 sequences of 8 tokens. */
static const int32_t TOKENS[16] = {1, 5, 9, 2, 14, 3, 3, 7, 0, 11, 6, 15, 4, 8, 12, 10};

/* The mean KL of the toy with tensor k replaced by wk, computed here. */
static double expected_kl(toy *m, size_t k, const float *wk)
{
    float *w[N_T], ref[V], got[V];
    memcpy(w, m->w, sizeof w);
    float *const *orig = m->w;
    double sum = 0;
    for (int p = 0; p < 16; p++) {
        toy_position(orig, TOKENS[p], ref);
        w[k] = (float *)wk;
        toy_position(w, TOKENS[p], got);
        w[k] = m->w[k];
        sum += fr_sens_kl_row(ref, fr_sens_logsumexp(ref, V), got, fr_sens_logsumexp(got, V), V);
    }
    return sum / 16;
}

static void test_fit(void)
{
    double x[3] = {0.025 * 0.025, 0.05 * 0.05, 0.1 * 0.1}, y[3], a, r;
    for (int i = 0; i < 3; i++)
        y[i] = 3.25 * x[i];
    fr_sens_fit(x, y, 3, &a, &r);
    CHECK_NEAR(a, 3.25, 1e-14);
    CHECK(r < 1e-14);
    /* a = (1 + 6) / 5; residual ||(1 - 1.4, 3 - 2.8)|| / ||(1, 3)|| */
    double x2[2] = {1, 2}, y2[2] = {1, 3};
    fr_sens_fit(x2, y2, 2, &a, &r);
    CHECK_NEAR(a, 1.4, 1e-15);
    CHECK_NEAR(r, sqrt(0.2 / 10), 1e-14);
    double z[2] = {0, 0};
    fr_sens_fit(z, y2, 2, &a, &r);
    CHECK(a == 0 && r == 1);
    fr_sens_fit(x2, z, 2, &a, &r);
    CHECK(a == 0 && r == 0);
    fr_sens_fit(x2, y2, 1, &a, &r); /* one point: exact */
    CHECK(a == 1 && r == 0);
}

static void test_kl(void)
{
    float p[2] = {0, 0}, q[2] = {0, (float)log(3.0)};
    CHECK_NEAR(fr_sens_logsumexp(q, 2), log(4.0), 1e-7);
    CHECK_NEAR(fr_sens_logsumexp(p, 2), log(2.0), 1e-7);
    double want = 0.5 * log(2.0) + 0.5 * log(2.0 / 3.0);
    CHECK_NEAR(fr_sens_kl_row(p, log(2.0), q, log(4.0), 2), want, 1e-6);
    CHECK(fr_sens_kl_row(q, log(4.0), q, log(4.0), 2) == 0);
    float big[3] = {1000, 1000, -1000};
    CHECK_NEAR(fr_sens_logsumexp(big, 3), 1000 + log(2.0), 1e-12);
}

/* The natural quantization error of int4-g32-sym: each KL against the one
 * computed here from the quantizer's own Q(W). */
static void test_quant(const fr_registry *reg)
{
    toy m;
    toy_init(&m);
    float *saved[N_T];
    for (int k = 0; k < N_T; k++) {
        size_t n = (size_t)(m.t[k].rows * H);
        saved[k] = malloc(n * sizeof(float));
        memcpy(saved[k], m.w[k], n * sizeof(float));
    }
    const fr_config_ref *ref = fr_registry_find_config(reg, "int4-g32-sym");
    CHECK(ref != NULL);
    fr_sens_options o = {.n_sequences = 2, .seq_len = 8, .noise = FR_SENS_QUANT, .seed = 1,
                         .reg = reg, .config = ref};
    fr_sens_result res[N_T];
    fr_sens_summary sum;
    fr_error err = {0};
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err), err);
    CHECK(sum.kl_repeat == 0 && sum.n_measured == 3 && sum.n_skipped == 1);
    for (int k = 0; k < 3; k++) {
        size_t n = (size_t)(m.t[k].rows * H);
        float *q = malloc(n * sizeof(float));
        frontier_call call;
        fr_call_init(&call, NULL, 1, m.t[k].name, "int4-g32-sym");
        CHECK_OK(fr_quantizer_quantize_cpu(reg, ref, m.w[k], q, m.t[k].rows, H, NULL, m.t[k].name,
                                           &call, &err), err);
        fr_call_release(&call);
        double e2 = 0, w2 = 0;
        for (size_t i = 0; i < n; i++) {
            e2 += ((double)q[i] - m.w[k][i]) * ((double)q[i] - m.w[k][i]);
            w2 += (double)m.w[k][i] * m.w[k][i];
        }
        CHECK_MSG(res[k].measured && res[k].n_points == 1, "%s", m.t[k].name);
        CHECK_NEAR(res[k].r2[0], e2 / w2, 1e-5);
        CHECK_NEAR(res[k].kl[0], expected_kl(&m, (size_t)k, q), 1e-4);
        CHECK_NEAR(res[k].alpha, res[k].kl[0] / res[k].r2[0], 1e-12);
        CHECK_MSG(res[k].alpha > 0 && res[k].residual < 1e-12, "%s: alpha %g", m.t[k].name,
                  res[k].alpha);
        CHECK_MSG(!memcmp(saved[k], m.w[k], n * sizeof(float)), "%s restored", m.t[k].name);
        free(q);
    }
    CHECK(!res[3].measured && res[3].skipped && strstr(res[3].skipped, "squared norm is 0"));
    for (int k = 0; k < N_T; k++)
        free(saved[k]);
    toy_free(&m);
}

static int progress_calls;
static void count_progress(void *ud, const fr_sens_progress *p)
{
    (void)ud;
    progress_calls++;
    CHECK(p->done == (size_t)progress_calls && p->total == 2 && p->eta >= 0);
}

/* Gaussian noise at three small levels: the realised r^2 are the levels',
 * the response quadratic; the same seed the same numbers, another not. */
static void test_gaussian(void)
{
    toy m;
    toy_init(&m);
    unsigned char sel[N_T] = {0, 1, 1, 0};
    fr_sens_options o = {.n_sequences = 2, .seq_len = 8, .noise = FR_SENS_GAUSSIAN, .seed = 3,
                         .levels = {0.001, 0.002, 0.004}, .n_levels = 3, .selected = sel,
                         .progress = count_progress};
    fr_sens_result res[N_T], again[N_T];
    fr_sens_summary sum;
    fr_error err = {0};
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err), err);
    CHECK(progress_calls == 2 && sum.n_measured == 2 && !res[0].measured && !res[0].skipped);
    for (int k = 1; k < 3; k++) {
        CHECK(res[k].measured && res[k].n_points == 3);
        for (int j = 0; j < 3; j++)
            CHECK_NEAR(res[k].r2[j], o.levels[j] * o.levels[j], 1e-3);
        CHECK_MSG(res[k].alpha > 0 && res[k].residual < 0.02, "%s: alpha %g residual %g",
                  m.t[k].name, res[k].alpha, res[k].residual);
    }
    o.progress = NULL;
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, again, &sum, &err), err);
    CHECK(again[1].alpha == res[1].alpha && again[2].kl[2] == res[2].kl[2]);
    o.seed = 4;
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, again, &sum, &err), err);
    CHECK(again[1].alpha != res[1].alpha);
    toy_free(&m);
}

/* Levels with the quantization error: its direction scaled to each r; a
 * configuration that cannot quantize the shape is skipped with its reason;
 * a model that fails ends the run with its error, the tensor restored. */
static void test_levels_and_failures(const fr_registry *reg)
{
    toy m;
    toy_init(&m);
    fr_sens_options o = {.n_sequences = 2, .seq_len = 8, .noise = FR_SENS_QUANT, .seed = 1,
                         .reg = reg, .config = fr_registry_find_config(reg, "ggml-q4_0"),
                         .levels = {0.01, 0.03}, .n_levels = 2};
    fr_sens_result res[N_T];
    fr_sens_summary sum;
    fr_error err = {0};
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err), err);
    for (int k = 0; k < 3; k++) {
        CHECK_NEAR(res[k].r2[0], 1e-4, 1e-3);
        CHECK_NEAR(res[k].r2[1], 9e-4, 1e-3);
        CHECK(res[k].measured && res[k].alpha > 0 && res[k].residual < 0.05);
    }
    /* a calibrated configuration has no statistics here: the quantizer call fails */
    o.config = fr_registry_find_config(reg, "gptq-int4-g32-sym");
    o.n_levels = 0;
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err), err);
    CHECK(sum.n_measured == 0 && sum.n_skipped == N_T);
    CHECK_MSG(res[1].skipped && strlen(res[1].skipped) > 10, "reason: %s", res[1].skipped);

    o.config = fr_registry_find_config(reg, "int4-g32-sym");
    float first = m.w[1][0];
    m.fail_after = 2 + 2 + 2 + 1; /* reference, repeat, tensor 0, then the first of tensor 1 */
    fr_status st = fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err);
    CHECK(st == FR_E_FAIL && strstr(err.msg, "on purpose"));
    CHECK(m.w[1][0] == first);
    toy_free(&m);
}

/* The file: written, read back by the calibration reader. */
static void test_file(const char *dir, const fr_registry *reg)
{
    toy m;
    toy_init(&m);
    m.t[0].tied = 1;
    fr_sens_options o = {.n_sequences = 2, .seq_len = 8, .noise = FR_SENS_QUANT, .seed = 1,
                         .reg = reg, .config = fr_registry_find_config(reg, "int4-g32-sym")};
    fr_sens_result res[N_T];
    fr_sens_summary sum;
    fr_error err = {0};
    CHECK_OK(fr_sens_measure(&m.lm, TOKENS, &o, res, &sum, &err), err);
    char path[4096];
    snprintf(path, sizeof path, "%s/sens.safetensors", dir);
    fr_sens_meta meta = {.model = "toy.gguf sha256 00", .text = "text.txt", .engine = "the toy",
                         .noise = "int4-g32-sym's error", .tool = "test", .n_sequences = 2,
                         .seq_len = 8, .seed = 1};
    CHECK_OK(fr_sens_write(path, &m.lm, res, &o, &sum, &meta, &err), err);
    fr_calib_file *cf;
    CHECK_OK(fr_calib_open(path, &cf, &err), err);
    CHECK(fr_calib_token_count(cf) == 16 && fr_calib_module_count(cf) == 3);
    for (int k = 0; k < 3; k++) {
        fr_calib_stats s;
        CHECK_OK(fr_calib_lookup(cf, m.t[k].name, 0, &s, &err), err);
        char module[64];
        CHECK_STR(s.module, fr_calib_module_of(m.t[k].name, module, sizeof module));
        CHECK(s.n_sensitivity == 2 && s.sensitivity[0] == (float)res[k].alpha &&
              s.sensitivity[1] == (float)res[k].residual);
        fr_calib_release(cf, &s);
    }
    fr_calib_close(cf);
    fr_source *src;
    CHECK_OK(fr_source_open(path, &src, &err), err);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(src->metadata, "__metadata__");
    const char *keys[] = {"model", "sampling", "forward", "sensitivity", "sensitivity_noise",
                          "sensitivity_levels", "sensitivity_seed", "sensitivity_kl_repeat",
                          "sensitivity_tied", "sensitivity_skipped"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK_MSG(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(md, keys[i])), "key %s", keys[i]);
    const cJSON *tied = cJSON_GetObjectItemCaseSensitive(md, "sensitivity_tied");
    CHECK(cJSON_IsString(tied) && !strncmp(tied->valuestring, "token_embd.weight: also the output", 34));
    fr_source_close(src);

    /* nothing measured; a folder that is not there: no file, no leftover */
    fr_sens_result none[N_T];
    memset(none, 0, sizeof none);
    CHECK(fr_sens_write(path, &m.lm, none, &o, &sum, &meta, &err) == FR_E_USAGE);
    snprintf(path, sizeof path, "%s/missing/sens.safetensors", dir);
    CHECK(fr_sens_write(path, &m.lm, res, &o, &sum, &meta, &err) == FR_E_OUTPUT);
    CHECK(access(path, F_OK) != 0);
    toy_free(&m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_sensitivity WORKDIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }
    fr_registry reg;
    fr_error err = {0};
    if (fr_registry_init(&reg, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    test_fit();
    test_kl();
    test_quant(&reg);
    test_gaussian();
    test_levels_and_failures(&reg);
    test_file(argv[1], &reg);
    fr_registry_free(&reg);
    return fr_test_finish("test_sensitivity");
}
