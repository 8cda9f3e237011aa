/*
 * Seeded rows that make ggml's super-block searches take their unusual
 * branches, and importances to weigh them by: shared by the llama.cpp
 * oracle (tests/llama/test_ggml_oracle.c, which compares frontier's blocks
 * with ggml's own) and the default suite (tests/quantize/test_gguf.c, which
 * compares frontier's blocks with the digests of ggml's blocks stored
 * below, so the encoders are held to ggml without llama.cpp at hand).
 */
#ifndef FR_TEST_GGML_ROWS_H
#define FR_TEST_GGML_ROWS_H

#include <math.h>
#include <stdint.h>

#include "check.h"

static inline double fr_rows_uniform(uint64_t *s)
{
    return ((double)(fr_test_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
}

static inline float fr_rows_gaussian(uint64_t *s)
{
    double u1 = fr_rows_uniform(s), u2 = fr_rows_uniform(s);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Row kinds: 0 gaussian, 1 heavy tails, 2 zero super-blocks, 3 zero
 * sub-blocks of 16, 4 zero sub-blocks of 32, 5 scattered zeros, 6 a nonzero
 * here and there, 7 constant, 8 positive (min > 0), 9 negative, 10 an
 * integer ramp and 11 halves (ties), 12 outliers, 13 a scale per
 * super-block from 1e-40 to 1e18, 14.. one scale per row (the same ten). */
#define FR_ROWS_KINDS (14 + 10)

static const double fr_rows_scales[10] = {1e-40, 1e-20, 1e-16, 1e-12, 1e-3,
                                          1.0,   1e4,   1e8,   1e12,  1e18};

/* Whether a kind's steps pass fp16's range (65504), where ggml stores Inf
 * and the decoded row is not finite. */
static inline int fr_rows_overflow(int kind)
{
    return kind == 13 || kind >= 14 + 7;
}

static inline void fr_rows_fill(float *x, int64_t cols, int kind, uint64_t *s)
{
    for (int64_t j = 0; j < cols; j++) {
        float g = fr_rows_gaussian(s);
        switch (kind) {
        case 0: x[j] = g; break;
        case 1: x[j] = g / (float)sqrt(-log(fr_rows_uniform(s))); break;
        case 2: x[j] = (j / 256) % 2 ? 0.0f : g; break;
        case 3: x[j] = (j / 16) % 3 == 1 ? 0.0f : g; break;
        case 4: x[j] = (j / 32) % 3 == 2 ? 0.0f : g; break;
        case 5: x[j] = fr_rows_uniform(s) < 0.5 ? 0.0f : g; break;
        case 6: x[j] = j % 97 == 5 ? g : 0.0f; break;
        case 7: x[j] = 1.0f; break;
        case 8: x[j] = fabsf(g) + 0.5f; break;
        case 9: x[j] = -fabsf(g); break;
        case 10: x[j] = (float)(j % 256) - 128.0f; break;
        case 11: x[j] = (float)(j % 16) * 0.5f - 4.0f; break;
        case 12: x[j] = j % 64 == 7 ? 100.0f * g : 0.01f * g; break;
        case 13: x[j] = g * (float)fr_rows_scales[(j / 256) % 10]; break;
        default: x[j] = g * (float)fr_rows_scales[kind - 14]; break;
        }
    }
}

/* Importance kinds: 0 random mean x^2, 1 a quarter of the columns 0, 2
 * heavy-tailed, 3 all ones. */
static inline void fr_rows_importance(float *qw, int64_t cols, int kind, uint64_t *s)
{
    for (int64_t j = 0; j < cols; j++) {
        float g = fr_rows_gaussian(s);
        switch (kind % 4) {
        case 0: qw[j] = 0.01f + g * g; break;
        case 1: qw[j] = fr_rows_uniform(s) < 0.25 ? 0.0f : g * g; break;
        case 2: qw[j] = (float)exp(3.0 * g); break;
        default: qw[j] = 1.0f; break;
        }
    }
}

/* ---- the digest set ---- */

/* 2 rows of every kind, 512 columns, importance kind 1 (zero columns):
 * FR_ROWS_DIGEST_ROWS x FR_ROWS_DIGEST_COLS, seed 31. */
#define FR_ROWS_DIGEST_ROWS (2 * FR_ROWS_KINDS)
#define FR_ROWS_DIGEST_COLS 512

static inline void fr_rows_digest_set(float *w, float *qw)
{
    uint64_t s = 31;
    for (int r = 0; r < FR_ROWS_DIGEST_ROWS; r++)
        fr_rows_fill(w + (int64_t)r * FR_ROWS_DIGEST_COLS, FR_ROWS_DIGEST_COLS, r % FR_ROWS_KINDS,
                     &s);
    fr_rows_importance(qw, FR_ROWS_DIGEST_COLS, 1, &s);
}

/* FNV-1a, 64 bits, of a byte run. */
static inline uint64_t fr_rows_fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The digest of ggml's blocks of the digest set (ggml_quantize_chunk of the
 * pinned llama.cpp, printed by test_ggml_oracle, which checks it), per type
 * in the order Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS: without and
 * with the importance matrix. */
static const uint64_t fr_rows_ggml_digest[7][2] = {
    {0xf290fcabba985bb9ull, 0x665616372b6a6ad6ull}, /* Q2_K */
    {0x7d5486884e4d1542ull, 0x9377209a8ebdf8afull}, /* Q3_K */
    {0xeeecd71c97c340ceull, 0x1f2599c4051dd24bull}, /* Q4_K */
    {0xf84e8e4a30693dceull, 0x116b4c28d9829a47ull}, /* Q5_K */
    {0x8a2b9c494573b9d9ull, 0x2c0d0814fceeb912ull}, /* Q6_K */
    {0x4f7ed62ee439f5adull, 0xa1f41a5ab483ba7full}, /* IQ4_NL */
    {0x8ce7ed6f813f934bull, 0xbadaace7aa5c9992ull}, /* IQ4_XS */
};

#endif
