/*
 * The synthetic generator: Philox4x32-10 known answers (Random123 and
 * cuRAND), the portable log/sin/cos against libm, the distributions'
 * moments, dtype rounding, spec parsing and thread-count independence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "core/synthetic.h"
#include "check.h"

/* Random123 kat_vectors, philox4x32 10 rounds: counter, key, expected. */
static const uint32_t random123_kat[3][10] = {
    {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
     0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
     0x94fdcceb, 0x5001e420, 0x24126ea1},
};

/* curand_init(seed, k, 4 * i, &s); curand4(&s) computed by cuRAND 13's
 * device API compiled for the host (QUALIFIERS with __host__), see
 * docs/synthetic.md: seed, k, i, words. */
static const struct {
    uint64_t seed, k, i;
    uint32_t w[4];
} curand_kat[] = {
    {0, 0, 1, {0xf8e4cca4, 0x5cb200db, 0xb1a574eb, 0x097eff67}},
    {0, 3, 4095, {0xeda7f0f1, 0x7a58063a, 0x795971c6, 0x65fbf01e}},
    {0, 4294967301ull, 8589934669ull, {0xd09d59ac, 0xc19f27e7, 0x3c501a80, 0xd1203f13}},
    {42, 0, 0, {0x9ceaf053, 0x77f5493b, 0x12bf50ad, 0x5742b3d7}},
    {42, 3, 1, {0x85a8df3c, 0x1d91b19b, 0xa9b1302c, 0x3faa46e6}},
    {0x123456789abcdefull, 4294967301ull, 4095, {0x71cef89b, 0x2c3d98dd, 0x59e0da14, 0x642596d3}},
    {0x123456789abcdefull, 3, 8589934669ull, {0x7ee538a4, 0x8c265a05, 0xf5dd215b, 0x50b5a6bb}},
};

static void test_philox(void)
{
    for (int v = 0; v < 3; v++) {
        const uint32_t *k = random123_kat[v];
        fr_philox_words w = fr_philox4x32_10(k[0], k[1], k[2], k[3], k[4], k[5]);
        for (int j = 0; j < 4; j++)
            CHECK_EQ_U64(w.w[j], k[6 + j]);
    }
    for (size_t v = 0; v < sizeof curand_kat / sizeof curand_kat[0]; v++) {
        fr_philox_words w = fr_philox_element(curand_kat[v].seed, curand_kat[v].k, curand_kat[v].i);
        for (int j = 0; j < 4; j++)
            CHECK_EQ_U64(w.w[j], curand_kat[v].w[j]);
    }
}

static void test_math(void)
{
    /* log over (0, 1] at every uniform the generator can produce near the
     * ends and on a stride in between: within 2 ulp-ish of libm */
    double worst = 0;
    for (uint32_t n = 1; n <= (1u << 24); n += (n < 4096 || n > (1u << 24) - 4096) ? 1 : 977) {
        float u = (float)n * 5.9604644775390625e-8f;
        double ref = log((double)u);
        double got = fr_syn_log(u);
        double e = fabs(got - ref) / (fabs(ref) > 1e-3 ? fabs(ref) : 1e-3);
        if (e > worst)
            worst = e;
    }
    CHECK(worst < 4e-7);
    /* also x > 1 (not produced, but the function is general) */
    CHECK(fabs(fr_syn_log(10.0f) - log(10.0)) < 1e-6);
    CHECK(fr_syn_log(1.0f) == 0.0f);
    double worst_sc = 0;
    for (uint32_t n = 1; n <= (1u << 24); n += 101) {
        float s, c;
        fr_syn_sincos_turn(n, &s, &c);
        double a = 2 * M_PI * (double)n / 16777216.0;
        double es = fabs(s - sin(a)), ec = fabs(c - cos(a));
        if (es > worst_sc)
            worst_sc = es;
        if (ec > worst_sc)
            worst_sc = ec;
    }
    CHECK(worst_sc < 3e-7);
}

/* P(|T| > t) for Student's t with 3 degrees of freedom: its CDF is
 * F(t) = 1/2 + (y / (1 + y^2) + atan(y)) / pi with y = t / sqrt(3). */
static double t3_tail(double t)
{
    double y = t / sqrt(3.0);
    return 1.0 - 2.0 * (y / (1 + y * y) + atan(y)) / M_PI;
}

static void moments(const float *x, int64_t n, double *mean, double *std, double *exkurt)
{
    double s = 0, s2 = 0, s4 = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] - *mean;
        s2 += d * d;
        s4 += d * d * d * d;
    }
    double var = s2 / (double)n;
    *std = sqrt(var);
    *exkurt = s4 / (double)n / (var * var) - 3.0;
}

static void test_distributions(void)
{
    fr_source *src = NULL;
    fr_error err = {0};
    CHECK_OK(fr_synthetic_open("gaussian:512x512,laplace:512x512,student-t3:512x512,outliers:512x512",
                               7, &src, &err),
             err);
    if (!src)
        return;
    CHECK_EQ_U64(src->n_tensors, 4);
    CHECK_STR(src->tensors[2].name, "synthetic.2.student-t3");
    CHECK_STR(src->path, "gaussian:512x512,laplace:512x512,student-t3:512x512,outliers:512x512;seed=7");
    int64_t n = 512 * 512;
    float *x = malloc(sizeof *x * (size_t)n);
    double mean, std, kurt;

    CHECK_OK(fr_synthetic_load(src, &src->tensors[0], x, NULL, &err), err);
    moments(x, n, &mean, &std, &kurt);
    printf("gaussian:   mean %.3g std %.5f excess kurtosis %.3f\n", mean, std, kurt);
    CHECK(fabs(mean) < 5 * 0.02 / sqrt((double)n));
    CHECK(fabs(std - 0.02) < 0.02 * 0.01);
    CHECK(fabs(kurt) < 0.05); /* standard error sqrt(24/n) = 0.0096 */

    CHECK_OK(fr_synthetic_load(src, &src->tensors[1], x, NULL, &err), err);
    moments(x, n, &mean, &std, &kurt);
    printf("laplace:    mean %.3g std %.5f excess kurtosis %.3f\n", mean, std, kurt);
    CHECK(fabs(mean) < 5 * 0.02 / sqrt((double)n));
    CHECK(fabs(std - 0.02) < 0.02 * 0.015);
    CHECK(fabs(kurt - 3.0) < 0.4); /* Laplace: 3 */

    CHECK_OK(fr_synthetic_load(src, &src->tensors[2], x, NULL, &err), err);
    moments(x, n, &mean, &std, &kurt);
    /* t3 has no fourth moment: check its tails against the CDF instead */
    double scale = 0.02 / sqrt(3.0);
    int64_t over1 = 0, over3 = 0;
    for (int64_t i = 0; i < n; i++) {
        over1 += fabs(x[i] / scale) > 1.0;
        over3 += fabs(x[i] / scale) > 3.0;
    }
    double p1 = t3_tail(1.0), p3 = t3_tail(3.0);
    printf("student-t3: mean %.3g std %.5f P(|t|>1) %.4f (exact %.4f) P(|t|>3) %.4f (exact %.4f)\n",
           mean, std, (double)over1 / n, p1, (double)over3 / n, p3);
    CHECK(fabs((double)over1 / n - p1) < 5 * sqrt(p1 * (1 - p1) / n));
    CHECK(fabs((double)over3 / n - p3) < 5 * sqrt(p3 * (1 - p3) / n));
    CHECK(fabs(std - 0.02) < 0.02 * 0.15);

    /* outliers: gaussian bulk, exactly the elements whose w3 & 1023 == 0
     * multiplied by 16 */
    CHECK_OK(fr_synthetic_load(src, &src->tensors[3], x, NULL, &err), err);
    int64_t n_out = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        fr_philox_words w = fr_philox_element(7, 3, (uint64_t)i);
        float g = fr_synthetic_value(FR_SYN_GAUSSIAN, w);
        int is_out = (w.w[3] & 1023u) == 0;
        n_out += is_out;
        if (x[i] != (is_out ? g * 16.0f : g))
            bad++;
    }
    moments(x, n, &mean, &std, &kurt);
    printf("outliers:   %lld of %lld elements x16, std %.5f (expected %.5f)\n", (long long)n_out,
           (long long)n, std, 0.02 * sqrt(1 + 255.0 / 1024));
    CHECK_EQ_U64(bad, 0);
    CHECK(fabs((double)n_out - n / 1024.0) < 5 * sqrt(n / 1024.0));
    free(x);
    fr_synthetic_close(src);
}

static void test_dtypes_and_threads(void)
{
    fr_source *src = NULL;
    fr_error err = {0};
    CHECK_OK(fr_synthetic_open("gaussian:300x200:bf16,laplace:300x200:f16*2,outliers:64", 123, &src,
                               &err),
             err);
    if (!src)
        return;
    CHECK_EQ_U64(src->n_tensors, 4);
    CHECK_STR(src->tensors[0].dtype_name, "BF16");
    CHECK_STR(src->tensors[2].name, "synthetic.2.laplace");
    CHECK_EQ_U64(src->tensors[1].nbytes, 300 * 200 * 2);
    CHECK_EQ_U64(src->tensors[3].ndim, 1);
    int64_t n = 300 * 200;
    float *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    CHECK_OK(fr_synthetic_load(src, &src->tensors[0], a, NULL, &err), err);
    int not_bf16 = 0;
    for (int64_t i = 0; i < n; i++)
        not_bf16 += (fr_f32_to_bits(a[i]) & 0xffffu) != 0;
    CHECK_EQ_U64(not_bf16, 0);
    /* f16: every value converts to fp16 and back unchanged, and is the
     * nearest fp16 to the float32 value */
    CHECK_OK(fr_synthetic_load(src, &src->tensors[1], a, NULL, &err), err);
    int not_nearest = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = fr_synthetic_value(FR_SYN_LAPLACE, fr_philox_element(123, 1, (uint64_t)i));
        /* neighbours of a[i] in fp16 are a[i] +- ulp; v must be within half an ulp */
        float a_abs = fabsf(a[i]);
        int e = a_abs > 0 ? (int)floorf(log2f(a_abs)) : -24;
        if (e < -14)
            e = -14;
        double ulp = ldexp(1.0, e - 10);
        if (fabs((double)v - (double)a[i]) > ulp / 2 * (1 + 1e-9))
            not_nearest++;
    }
    CHECK_EQ_U64(not_nearest, 0);
    /* thread count never changes a tensor */
    fr_pool *pool = NULL;
    CHECK_OK(fr_pool_create(3, &pool, &err), err);
    CHECK_OK(fr_synthetic_load(src, &src->tensors[2], a, NULL, &err), err);
    CHECK_OK(fr_synthetic_load(src, &src->tensors[2], b, pool, &err), err);
    CHECK(memcmp(a, b, sizeof *a * (size_t)n) == 0);
    /* and the readers' entry point generates the same through the hook */
    CHECK_OK(fr_tensor_load_f32(src, &src->tensors[2], b, &err), err);
    CHECK(memcmp(a, b, sizeof *a * (size_t)n) == 0);
    fr_pool_destroy(pool);
    free(a);
    free(b);
    fr_synthetic_close(src);
}

static void test_bad_specs(void)
{
    static const char *const bad[] = {
        "", "gaussian", "gauss:4x4", "gaussian:", "gaussian:4x", "gaussian:0x4", "gaussian:-4x4",
        "gaussian:4x4:f8", "gaussian:4x4*0", "gaussian:4x4*x", "gaussian:4x4,", ",gaussian:4x4",
        "gaussian:1x2x3x4x5x6x7x8x9", "gaussian:4294967296x4294967296x4294967296",
        "gaussian:4x4*2000000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_source *src = NULL;
        fr_error err = {0};
        fr_status st = fr_synthetic_open(bad[i], 0, &src, &err);
        if (st != FR_E_USAGE || src != NULL)
            fprintf(stderr, "spec '%s' gave status %d\n", bad[i], (int)st);
        CHECK_EQ_U64(st, FR_E_USAGE);
        CHECK(src == NULL);
        CHECK(err.msg[0] != '\0');
    }
    fr_error err = {0};
    fr_source *src = NULL;
    fr_synthetic_open("gauss:4x4", 0, &src, &err);
    CHECK_STR(err.msg, "invalid synthetic tensor 'gauss:4x4': unknown distribution 'gauss' "
                       "(gaussian, laplace, student-t3, outliers)");
}

int main(void)
{
    test_philox();
    test_math();
    test_distributions();
    test_dtypes_and_threads();
    test_bad_specs();
    return fr_test_finish("test_synthetic");
}
