/*
 * Shared by the GPU tests (checks: tests/check.h): the skip rule (no
 * device: print why, exit 77, a CTest skip), a printed per-run seed, random
 * inputs in every dtype, and the comparisons.
 */
#ifndef FR_GPU_TEST_H
#define FR_GPU_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/dtype.h"
#include "kernels/launchers.h"
#include "quantizers/numerics.h"

/* A failed library call ends the test; `err` (an fr_error) must be in scope. */
#define GPU_OK(expr)                                                                         \
    do {                                                                                     \
        fr_status gpu_st_ = (expr);                                                          \
        if (gpu_st_ != FR_OK) {                                                              \
            fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, err.msg);     \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* Exits 77 with the reason when there is no device; selects device 0. */
static inline void gpu_require_device(void)
{
    if (fr_cuda_device_count() <= 0) {
        printf("SKIP: no CUDA device\n");
        fflush(stdout);
        exit(FR_TEST_SKIP);
    }
    fr_error err;
    char desc[256];
    if (fr_cuda_select(0, &err) != FR_OK || fr_cuda_device_describe(0, desc, sizeof desc, &err) != FR_OK) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        exit(1);
    }
    printf("device 0: %s\n", desc);
}

/* Fresh per run (time and pid), or FRONTIER_TEST_SEED to replay one. */
static inline uint64_t gpu_seed(void)
{
    const char *s = getenv("FRONTIER_TEST_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 0)
                            : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
    printf("seed %" PRIu64 " (replay with FRONTIER_TEST_SEED=%" PRIu64 ")\n", seed, seed);
    fflush(stdout);
    return seed;
}

static inline double gpu_normal(uint64_t *state)
{
    double u = fr_test_uniform_open(state), v = fr_test_uniform_open(state);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* float32 -> stored bits, round to nearest even (values are finite and in range). */
static inline uint16_t gpu_to_bf16(float v)
{
    uint32_t u = fr_f32_to_bits(v);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline uint16_t gpu_to_f16(float v)
{
    float r = fr_round_fp16(v); /* exact binary16 value, saturating */
    uint16_t sign = fr_f32_to_bits(r) >> 31 ? 0x8000u : 0;
    float a = fabsf(r);
    if (a == 0.0f)
        return sign;
    int e = fr_floor_log2f(a);
    if (e < -14) /* subnormal: a multiple of 2^-24 */
        return (uint16_t)(sign | (uint16_t)(a * 16777216.0f));
    uint32_t man = (uint32_t)(a * fr_pow2f(10 - e)) - 1024u;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)man);
}

/*
 * A rows x cols tensor in dtype (enum frontier_dtype): host bytes as stored
 * and the exact float32 values. The values mix what breaks quantizers: per-
 * row scales over five decades, all-zero groups and rows, negative-only
 * rows, outliers past the fp8/mx element range, tiny and subnormal values,
 * exact repeats.
 */
typedef struct gpu_tensor {
    int64_t rows, cols;
    int dtype;
    void *bytes;
    float *f32;
} gpu_tensor;

static inline size_t gpu_dtype_size(int dtype)
{
    return dtype == FRONTIER_DTYPE_F32 ? 4 : 2;
}

static inline const char *gpu_dtype_name(int dtype)
{
    return dtype == FRONTIER_DTYPE_F32 ? "f32" : dtype == FRONTIER_DTYPE_F16 ? "f16" : "bf16";
}

static inline void gpu_tensor_store(gpu_tensor *t, int64_t i, float v)
{
    if (t->dtype == FRONTIER_DTYPE_F32) {
        ((float *)t->bytes)[i] = v;
        t->f32[i] = v;
    } else if (t->dtype == FRONTIER_DTYPE_BF16) {
        uint16_t b = gpu_to_bf16(v);
        ((uint16_t *)t->bytes)[i] = b;
        t->f32[i] = fr_bf16_to_f32(b);
    } else {
        uint16_t b = gpu_to_f16(v);
        ((uint16_t *)t->bytes)[i] = b;
        t->f32[i] = fr_f16_to_f32(b);
    }
}

static inline void gpu_tensor_random(gpu_tensor *t, int64_t rows, int64_t cols, int dtype,
                                     uint64_t *rng, int all_zero)
{
    int64_t n = rows * cols;
    t->rows = rows;
    t->cols = cols;
    t->dtype = dtype;
    t->bytes = malloc((size_t)n * gpu_dtype_size(dtype));
    t->f32 = malloc((size_t)n * sizeof(float));
    if (!t->bytes || !t->f32) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
    /* f16 holds at most 65504: keep the outliers inside it */
    const double top = dtype == FRONTIER_DTYPE_F16 ? 6.0e4 : 3.0e5;
    for (int64_t r = 0; r < rows; r++) {
        double row_scale = pow(10.0, -3.0 + 5.0 * fr_test_uniform_open(rng));
        int row_kind = (int)(fr_test_splitmix64(rng) % 16); /* 0: zero row, 1: negative only */
        for (int64_t c = 0; c < cols; c++) {
            double v;
            uint64_t k = fr_test_splitmix64(rng) % 1000;
            if (all_zero || row_kind == 0 || (c / 32) % 11 == 7)
                v = 0.0;                                    /* zero rows and zero groups */
            else if (k < 3)
                v = gpu_normal(rng) * top * fr_test_uniform_open(rng); /* outliers */
            else if (k < 8)
                v = gpu_normal(rng) * 1e-39;                /* f32/bf16 subnormals */
            else if (k < 14)
                v = gpu_normal(rng) * 3e-6;                 /* f16 subnormal range */
            else if (k < 40 && c > 0)
                v = t->f32[r * cols + c - 1];               /* repeats */
            else
                v = gpu_normal(rng) * row_scale;
            if (row_kind == 1)
                v = -fabs(v);
            if (v > top)
                v = top;
            if (v < -top)
                v = -top;
            gpu_tensor_store(t, r * cols + c, (float)v);
        }
    }
}

static inline void gpu_tensor_free(gpu_tensor *t)
{
    free(t->bytes);
    free(t->f32);
    t->bytes = NULL;
    t->f32 = NULL;
}

/* a and b agree to tol relative (both zero counts as agreeing). */
static inline int gpu_close(double a, double b, double tol)
{
    if (a == b)
        return 1;
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= tol * m;
}

/* Same reconstruction: equal bits, or both zeros of any sign. */
static inline int gpu_same_value(float a, float b)
{
    return fr_f32_to_bits(a) == fr_f32_to_bits(b) || (a == 0.0f && b == 0.0f);
}

/* h = X^T X / T of the T x n tokens x in double (zero elements skipped),
 * rounded to float32. */
static inline void gpu_gram(const double *x, int64_t tokens, int64_t n, float *h)
{
    double *acc = calloc((size_t)(n * n), sizeof *acc);
    if (!acc) {
        fprintf(stderr, "gpu_gram: out of memory\n");
        exit(1);
    }
    for (int64_t t = 0; t < tokens; t++)
        for (int64_t i = 0; i < n; i++) {
            double xi = x[t * n + i];
            if (xi == 0.0)
                continue;
            for (int64_t j = 0; j < n; j++)
                acc[i * n + j] += xi * x[t * n + j];
        }
    for (int64_t i = 0; i < n * n; i++)
        h[i] = (float)(acc[i] / (double)tokens);
    free(acc);
}

/* H = X^T X / T of T correlated tokens (AR(1) over the features, varied
 * scales, every 17th feature x6), in double, rounded to float32; `dead`
 * columns (every 13th from 5) get zero rows and columns (H_jj = 0). The
 * GPU calibration tests' Hessian (malloc'd). */
static inline float *gpu_make_hessian(uint64_t *rng, int64_t n, int64_t tokens, int dead)
{
    double *x = malloc((size_t)(tokens * n) * sizeof *x);
    float *h = malloc((size_t)(n * n) * sizeof *h);
    double *scale = malloc((size_t)n * sizeof *scale);
    for (int64_t j = 0; j < n; j++)
        scale[j] = exp(0.5 * gpu_normal(rng)) * (j % 17 == 0 ? 6.0 : 1.0);
    for (int64_t t = 0; t < tokens; t++) {
        double a = gpu_normal(rng);
        for (int64_t j = 0; j < n; j++) {
            a = 0.8 * a + 0.6 * gpu_normal(rng);
            x[t * n + j] = (dead && j % 13 == 5) ? 0.0 : a * scale[j];
        }
    }
    gpu_gram(x, tokens, n, h);
    free(x);
    free(scale);
    return h;
}

#define GPU_POISON 0x7fc0deadu /* a NaN no arithmetic produces */

#endif
