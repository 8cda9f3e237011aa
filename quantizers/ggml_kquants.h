/*
 * ggml's super-block types Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (256
 * elements) and IQ4_NL (32): the block layouts of ggml-common.h and the
 * scale searches of ggml-quants.c, so the bytes equal what llama-quantize
 * writes: without an importance matrix its quantize_q*_K calls the
 * reference quantize_row_q*_K_ref, with one the weighted quantize_row_q*_K_impl;
 * IQ4_NL and IQ4_XS always take quantize_iq4_nl/xs (7 trial scales each side;
 * quantize_row_iq4_nl_ref, with none, is not what llama-quantize writes).
 * docs/formats.md ("llama.cpp's K-quants and IQ4") states the rules.
 *
 * Bit-exactness rests on doing the same float32 operations in the same order
 * (sums left to right, a*b*c as (a*b)*c, no contraction: the build
 * disables it, as a build of ggml without FMA has it) and on ggml's integer
 * conversions (nearest_int's magic-number rounding, uint8_t/int8_t
 * truncations). The encoders take `qw`, the importance of each element (the
 * imatrix's mean x_j^2 of the element's column), or NULL. Everything is
 * FR_HD, so GPU kernels can run the same definitions (the header compiles
 * under nvcc -Werror all-warnings -fmad=false --std=c++17).
 *
 * A short super-block (n < 256 elements, the end of a row whose length is
 * not a multiple of 256; n < 32 for IQ4_NL) is stored as its elements
 * followed by zeros: the search of a partial sub-block runs over its own
 * elements only, sub-blocks past the end are all zero (which no search of
 * the super-block notices: ggml gives a zero sub-block a zero scale), and
 * the super-block's mean square divides by n. GGUF cannot store one (the
 * writer refuses such rows); the sweep can measure it.
 */
#ifndef FR_GGML_KQUANTS_H
#define FR_GGML_KQUANTS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/hd.h"
#include "ggml_fp16.h"

#define FR_GGML_QK_K 256   /* elements of a super-block */
#define FR_GGML_QK4_NL 32  /* elements of an IQ4_NL block */
#define FR_GGML_EPS 1e-15f /* ggml's GROUP_MAX_EPS: a smaller largest magnitude is zero */

#ifdef __cplusplus
#define FR_GGML_LAYOUT(type, bytes) static_assert(sizeof(type) == (bytes), #type " layout")
#else
#define FR_GGML_LAYOUT(type, bytes) _Static_assert(sizeof(type) == (bytes), #type " layout")
#endif

/* ---- the layouts (ggml-common.h), every field bytes: no padding, any alignment ---- */

/* Q2_K: 16 sub-blocks of 16, x^ = d sc q - dmin m; 84 bytes, 2.625 bits. */
typedef struct fr_ggml_block_q2_k {
    uint8_t scales[16]; /* sub-block j: scale code sc (low nibble), min code m (high) */
    uint8_t qs[64];     /* 2-bit q: element 128h + 32s + i in bits 2s of qs[32h + i] */
    uint8_t d[2];       /* fp16: step of the scale codes */
    uint8_t dmin[2];    /* fp16: step of the min codes */
} fr_ggml_block_q2_k;
FR_GGML_LAYOUT(fr_ggml_block_q2_k, 84);

/* Q3_K: 16 sub-blocks of 16, x^ = d (sc - 32) (q - 4); 110 bytes, 3.4375 bits. */
typedef struct fr_ggml_block_q3_k {
    uint8_t hmask[32];  /* third bit of q: element e at bit e / 32 of hmask[e % 32] */
    uint8_t qs[64];     /* low 2 bits of q, packed as Q2_K's */
    uint8_t scales[12]; /* 6-bit sc: low 4 bits in nibbles of [0..8), high 2 in [8..12) */
    uint8_t d[2];       /* fp16 */
} fr_ggml_block_q3_k;
FR_GGML_LAYOUT(fr_ggml_block_q3_k, 110);

/* Q4_K: 8 sub-blocks of 32, x^ = d sc q - dmin m; 144 bytes, 4.5 bits. */
typedef struct fr_ggml_block_q4_k {
    uint8_t d[2];       /* fp16: step of the 6-bit scale codes */
    uint8_t dmin[2];    /* fp16: step of the 6-bit min codes */
    uint8_t scales[12]; /* sc and m, 6 bits each (fr_ggml_k4_scale) */
    uint8_t qs[128];    /* 4-bit q: element 64h + i low nibble of qs[32h + i], 64h + 32 + i high */
} fr_ggml_block_q4_k;
FR_GGML_LAYOUT(fr_ggml_block_q4_k, 144);

/* Q5_K: Q4_K with a fifth bit; 176 bytes, 5.5 bits. */
typedef struct fr_ggml_block_q5_k {
    uint8_t d[2];
    uint8_t dmin[2];
    uint8_t scales[12];
    uint8_t qh[32];  /* fifth bit: element 32s + i at bit s of qh[i] */
    uint8_t qs[128]; /* low 4 bits, packed as Q4_K's */
} fr_ggml_block_q5_k;
FR_GGML_LAYOUT(fr_ggml_block_q5_k, 176);

/* Q6_K: 16 sub-blocks of 16, x^ = d sc (q - 32); 210 bytes, 6.5625 bits. */
typedef struct fr_ggml_block_q6_k {
    uint8_t ql[128];   /* low 4 bits: element 128h + 32s + i in ql[64h + 32 (s & 1) + i], high nibble for s >= 2 */
    uint8_t qh[64];    /* high 2 bits: element 128h + 32s + i at bits 2s of qh[32h + i] */
    int8_t scales[16]; /* sc, int8 */
    uint8_t d[2];      /* fp16 */
} fr_ggml_block_q6_k;
FR_GGML_LAYOUT(fr_ggml_block_q6_k, 210);

/* IQ4_NL: 32 elements, x^ = d kvalues[q]; 18 bytes, 4.5 bits. */
typedef struct fr_ggml_block_iq4_nl {
    uint8_t d[2];   /* fp16 */
    uint8_t qs[16]; /* element i low nibble of qs[i], i + 16 high */
} fr_ggml_block_iq4_nl;
FR_GGML_LAYOUT(fr_ggml_block_iq4_nl, 18);

/* IQ4_XS: 8 sub-blocks of 32, x^ = d (sc - 32) kvalues[q]; 136 bytes, 4.25 bits. */
typedef struct fr_ggml_block_iq4_xs {
    uint8_t d[2];        /* fp16 */
    uint8_t scales_h[2]; /* uint16 little-endian: bits 4-5 of sc of sub-block j at bits 2j */
    uint8_t scales_l[4]; /* bits 0-3 of sc: sub-block j in nibble j % 2 of scales_l[j / 2] */
    uint8_t qs[128];     /* sub-block j's 32 codes packed as IQ4_NL's, at qs[16 j] */
} fr_ggml_block_iq4_xs;
FR_GGML_LAYOUT(fr_ggml_block_iq4_xs, 136);

/* ---- ggml's rounding and small helpers ---- */

/* ggml's nearest_int: adding 1.5 * 2^23 rounds to an integer (ties to even)
 * held in the low mantissa bits. Exact for |f| < 2^22; beyond, the same
 * bits as ggml (whose assert is compiled out). A NaN (the searches make one
 * from Inf / Inf on rows whose squares overflow; weights are finite) gives
 * 0 explicitly: on the CPU it reads the default NaN's mantissa, quiet bit
 * only (x86 and Arm alike), which is 0 after the subtraction, but a CUDA
 * device's NaN has every mantissa bit set, which would read as 2^22 - 1. */
FR_HD int fr_ggml_nearest_int(float f)
{
    if (f != f)
        return 0;
    return (int)(fr_f32_to_bits(f + 12582912.0f) & 0x007fffffu) - 0x00400000;
}

FR_HD int fr_ggml_clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Level i of a table of 16 int8 levels held as two little-endian words of
 * bytes (levels 0..7 in lo, 8..15 in hi): arithmetic, so the device reads
 * no table from memory (a local array would be rebuilt per call there). */
FR_HD int fr_ggml_packed_level(uint64_t lo, uint64_t hi, int i)
{
    return (int8_t)(uint8_t)((i < 8 ? lo : hi) >> (8 * (i & 7)));
}

/* IQ4's 16 non-uniform levels (ggml's kvalues_iq4nl), ascending: -127,
 * -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113. */
FR_HD float fr_ggml_iq4nl_value(int i)
{
    return (float)fr_ggml_packed_level(0xf6eaddcfbfad9881ull, 0x7159453526190d01ull, i);
}

/* The index of the level nearest to x (ggml's best_index_int8 over
 * kvalues_iq4nl): bisection, the upper one on a tie. */
FR_HD int fr_ggml_iq4nl_index(float x)
{
    if (x <= fr_ggml_iq4nl_value(0))
        return 0;
    if (x >= fr_ggml_iq4nl_value(15))
        return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < fr_ggml_iq4nl_value(mid))
            hi = mid;
        else
            lo = mid;
    }
    return x - fr_ggml_iq4nl_value(hi - 1) < fr_ggml_iq4nl_value(hi) - x ? hi - 1 : hi;
}

/* Elements of sub-block j (of `size`) that a search sees in a super-block
 * of n: a partial last one its own; one past the end is all zero, seen whole. */
FR_HD int fr_ggml_sub_len(int n, int j, int size)
{
    int left = n - j * size;
    return left >= size || left <= 0 ? size : left;
}

/* x[0..n) then zeros up to `size`. */
FR_HD void fr_ggml_pad(const float *x, int n, int size, float *out)
{
    for (int i = 0; i < size; i++)
        out[i] = i < n ? x[i] : 0.0f;
}

/* ---- the scale searches of ggml-quants.c ---- */

/*
 * Symmetric codes l in [-nmax, nmax) (stored l + nmax) and a scale s,
 * x^ = s l (make_qx_quants, rmse_type 1): the start maps the signed
 * extreme to -nmax; 18 starts -(nmax + k/10) / max around it (k = +-1..+-9)
 * are tried, each giving the weighted least-squares scale of its codes,
 * and one is kept when sum(w x l)^2 / sum(w l^2) grows. Weights qw, or x^2.
 */
FR_HD float fr_ggml_sym_search(int n, int nmax, const float *x, const float *qw, int8_t *L)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < FR_GGML_EPS) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = fr_ggml_clampi(fr_ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; k++) {
        if (k == 0)
            continue;
        iscale = -((float)nmax + 0.1f * (float)k) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = fr_ggml_clampi(fr_ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + fr_ggml_clampi(fr_ggml_nearest_int(iscale * x[i]), -nmax,
                                                      nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/*
 * Q3_K's reference codes (make_q3_quants with its refinement): start as
 * fr_ggml_sym_search does, then up to 5 sweeps in which each element's
 * code moves to the one its least-squares share suggests when that raises
 * sum(w x l)^2 / sum(w l^2), w = x^2; the scale is that fit's.
 */
FR_HD float fr_ggml_q3_search(int n, int nmax, const float *x, int8_t *L)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < FR_GGML_EPS) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = fr_ggml_clampi(fr_ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                int l = fr_ggml_clampi(fr_ggml_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (l != L[i]) {
                    slx += w * x[i] * (float)l;
                    sl2 += w * (float)l * (float)l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed)
            break;
    }
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/*
 * Codes q in [0, nmax], a scale s and a min m <= 0 with x^ = s q + m,
 * minimising sum w |x^ - x| (use_mad) or sum w (x^ - x)^2: the range
 * [min(0, min x), max x] first, then nstep + 1 trial steps
 * (rmin + rdelta k + nmax) / range, each with the weighted least-squares s
 * and m of its codes (m clamped at 0, refitting s alone), the best kept
 * (make_qkx2_quants; make_qkx3_quants is the same with explicit weights).
 * Returns s; *neg_min = -m.
 */
FR_HD float fr_ggml_min_search(int n, int nmax, const float *x, const float *w, uint8_t *L,
                               float *neg_min, float rmin, float rdelta, int nstep, int use_mad)
{
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f)
        min = 0.0f;
    if (max == min) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)fr_ggml_clampi(fr_ggml_nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    uint8_t Laux[32];
    for (int k = 0; k <= nstep; k++) {
        iscale = (rmin + rdelta * (float)k + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = fr_ggml_clampi(fr_ggml_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0.0f;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                error += w[i] * diff;
            }
            if (error < best_error) {
                for (int i = 0; i < n; i++)
                    L[i] = Laux[i];
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/*
 * Codes of non-negative values (the sub-block scales or mins of the
 * weighted K-quants) in [0, nmax] with one step (make_qp_quants): the
 * weighted squared error of nmax / max and 8 neighbours (nmax + k/10) / max
 * picks the start, then up to 5 refinement sweeps as fr_ggml_q3_search's;
 * returns the least-squares step of the final codes. L keeps ggml's uint8_t
 * truncation of a code.
 */
FR_HD float fr_ggml_step_search(int n, int nmax, const float *x, uint8_t *L, const float *qw)
{
    float max = 0.0f;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];
    if (max < FR_GGML_EPS) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)fr_ggml_nearest_int(iscale * x[i]);
    float scale = 1.0f / iscale;
    float best_mse = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = x[i] - scale * (float)L[i];
        best_mse += qw[i] * diff * diff;
    }
    for (int k = -4; k <= 4; k++) {
        if (k == 0)
            continue;
        float iscale_k = (0.1f * (float)k + (float)nmax) / max;
        float scale_k = 1.0f / iscale_k;
        float mse = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = fr_ggml_nearest_int(iscale_k * x[i]);
            l = l < nmax ? l : nmax;
            float diff = x[i] - scale_k * (float)l;
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_k;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = fr_ggml_nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * (float)l;
        suml2 += qw[i] * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = qw[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            float sl2 = suml2 - w * (float)L[i] * (float)L[i];
            if (slx > 0.0f && sl2 > 0.0f) {
                int l = fr_ggml_nearest_int(x[i] * sl2 / slx);
                l = l < nmax ? l : nmax;
                if (l != L[i]) {
                    slx += w * x[i] * (float)l;
                    sl2 += w * (float)l * (float)l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* ---- shared packing ---- */

/* 2-bit codes L[0..256) as Q2_K and Q3_K pack them: element 128h + 32s + i
 * at bits 2s of qs[32h + i]. */
FR_HD void fr_ggml_pack2(const uint8_t *L, uint8_t *qs)
{
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 32; i++) {
            const uint8_t *l = L + 128 * h + i;
            qs[32 * h + i] = (uint8_t)(l[0] | l[32] << 2 | l[64] << 4 | l[96] << 6);
        }
}

/* Q4_K/Q5_K's 6-bit scale code ls and min code lm of sub-block j: j < 4 in
 * the low 6 bits of s[j] and s[j + 4]; j >= 4 in the nibbles of s[j + 4],
 * their top 2 bits in the top bits of s[j - 4] and s[j]. */
FR_HD void fr_ggml_k4_put_scale(uint8_t *s, int j, uint8_t ls, uint8_t lm)
{
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        s[j - 4] = (uint8_t)(s[j - 4] | ((ls >> 4) << 6));
        s[j] = (uint8_t)(s[j] | ((lm >> 4) << 6));
    }
}

FR_HD void fr_ggml_k4_scale(const uint8_t *s, int j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Q3_K's 6-bit scale code (biased by 32) of sub-block j. */
FR_HD void fr_ggml_q3_put_scale(uint8_t *s, int j, int l)
{
    if (j < 8)
        s[j] = (uint8_t)(l & 0xF);
    else
        s[j - 8] = (uint8_t)(s[j - 8] | ((l & 0xF) << 4));
    s[8 + j % 4] = (uint8_t)(s[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
}

FR_HD int fr_ggml_q3_scale(const uint8_t *s, int j)
{
    int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    return (low | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* The sum of squares of x[0..256) and the super-block's mean square
 * factor / n (x zero past n, so the sum is the n elements'). */
FR_HD float fr_ggml_sigma2(const float *x, int n, float factor)
{
    float sum = 0.0f;
    for (int i = 0; i < FR_GGML_QK_K; i++)
        sum += x[i] * x[i];
    return factor * sum / (float)n;
}

/* ---- Q2_K ---- */

FR_HD void fr_ggml_q2_k_encode(const float *x_in, int n, const float *qw_in,
                               fr_ggml_block_q2_k *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K], scales[16], mins[16], w[16];
    uint8_t L[FR_GGML_QK_K] = {0};
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    if (!qw_in) { /* quantize_row_q2_K_ref */
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 16; j++) {
            int len = fr_ggml_sub_len(n, j, 16);
            for (int i = 0; i < len; i++)
                w[i] = fabsf(x[16 * j + i]);
            scales[j] = fr_ggml_min_search(len, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f,
                                           0.1f, 15, 1);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        if (max_scale > 0.0f) {
            float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; j++)
                y->scales[j] = (uint8_t)fr_ggml_nearest_int(iscale * scales[j]);
            fr_ggml_put_half(y->d, max_scale / 15.0f);
        } else {
            memset(y->scales, 0, sizeof y->scales);
            fr_ggml_put_half(y->d, 0.0f);
        }
        if (max_min > 0.0f) {
            float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; j++) {
                unsigned l = (unsigned)fr_ggml_nearest_int(iscale * mins[j]);
                y->scales[j] = (uint8_t)(y->scales[j] | (l << 4));
            }
            fr_ggml_put_half(y->dmin, max_min / 15.0f);
        } else {
            fr_ggml_put_half(y->dmin, 0.0f);
        }
    } else { /* quantize_row_q2_K_impl */
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
        float sigma2 = fr_ggml_sigma2(x, n, 1.0f), sw[16];
        for (int j = 0; j < 16; j++) {
            int len = fr_ggml_sub_len(n, j, 16);
            sw[j] = 0.0f;
            for (int i = 0; i < len; i++)
                w[i] = qw[16 * j + i] * sqrtf(sigma2 + x[16 * j + i] * x[16 * j + i]);
            for (int i = 0; i < len; i++)
                sw[j] += w[i];
            scales[j] = fr_ggml_min_search(len, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.9f,
                                           0.05f, 36, 0);
        }
        uint8_t Ls[16], Lm[16];
        float dm = fr_ggml_step_search(16, 15, scales, Ls, sw);
        float mm = fr_ggml_step_search(16, 15, mins, Lm, sw);
        fr_ggml_put_half(y->d, dm);
        fr_ggml_put_half(y->dmin, mm);
        for (int j = 0; j < 16; j++)
            y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    }
    /* the codes again, against the stored steps */
    const float d_all = fr_ggml_get_half(y->d), m_all = fr_ggml_get_half(y->dmin);
    for (int j = 0; j < 16; j++) {
        const float d = d_all * (float)(y->scales[j] & 0xF);
        if (d == 0.0f)
            continue;
        const float dm = m_all * (float)(y->scales[j] >> 4);
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (uint8_t)fr_ggml_clampi(
                fr_ggml_nearest_int((x[16 * j + i] + dm) / d), 0, 3);
    }
    fr_ggml_pack2(L, y->qs);
}

FR_HD void fr_ggml_q2_k_decode(const fr_ggml_block_q2_k *b, float *y)
{
    const float d = fr_ggml_get_half(b->d), min = fr_ggml_get_half(b->dmin);
    for (int e = 0; e < FR_GGML_QK_K; e++) {
        const int h = e / 128, s = (e % 128) / 32, i = e % 32;
        const uint8_t sc = b->scales[e / 16];
        const float dl = d * (float)(sc & 0xF), ml = min * (float)(sc >> 4);
        y[e] = dl * (float)((b->qs[32 * h + i] >> (2 * s)) & 3) - ml;
    }
}

/* ---- Q3_K ---- */

FR_HD void fr_ggml_q3_k_encode(const float *x_in, int n, const float *qw_in,
                               fr_ggml_block_q3_k *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K], scales[16];
    int8_t L[FR_GGML_QK_K] = {0};
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    memset(y->scales, 0, sizeof y->scales);
    if (!qw_in) { /* quantize_row_q3_K_ref */
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < 16; j++) {
            scales[j] = fr_ggml_q3_search(fr_ggml_sub_len(n, j, 16), 4, x + 16 * j, L + 16 * j);
            float a = fabsf(scales[j]);
            if (a > amax) {
                amax = a;
                max_scale = scales[j];
            }
        }
        if (max_scale != 0.0f) {
            float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; j++) {
                int8_t l = (int8_t)fr_ggml_nearest_int(iscale * scales[j]);
                fr_ggml_q3_put_scale(y->scales, j, fr_ggml_clampi(l, -32, 31) + 32);
            }
            fr_ggml_put_half(y->d, 1.0f / iscale);
        } else {
            fr_ggml_put_half(y->d, 0.0f);
        }
    } else { /* quantize_row_q3_K_impl */
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
        float sigma2 = fr_ggml_sigma2(x, n, 2.0f), sw[16], w[16];
        for (int j = 0; j < 16; j++) {
            int len = fr_ggml_sub_len(n, j, 16);
            for (int i = 0; i < len; i++)
                w[i] = qw[16 * j + i] * sqrtf(sigma2 + x[16 * j + i] * x[16 * j + i]);
            float sumw = 0.0f;
            for (int i = 0; i < len; i++)
                sumw += w[i];
            sw[j] = sumw;
            scales[j] = fr_ggml_sym_search(len, 4, x + 16 * j, w, L + 16 * j);
        }
        int8_t Ls[16];
        float d_block = fr_ggml_sym_search(16, 32, scales, sw, Ls);
        for (int j = 0; j < 16; j++)
            fr_ggml_q3_put_scale(y->scales, j, Ls[j]);
        fr_ggml_put_half(y->d, d_block);
    }
    const float d_all = fr_ggml_get_half(y->d);
    for (int j = 0; j < 16; j++) {
        const float d = d_all * (float)(int8_t)fr_ggml_q3_scale(y->scales, j);
        if (d == 0.0f)
            continue;
        for (int i = 0; i < 16; i++)
            L[16 * j + i] =
                (int8_t)(fr_ggml_clampi(fr_ggml_nearest_int(x[16 * j + i] / d), -4, 3) + 4);
    }
    uint8_t low[FR_GGML_QK_K];
    memset(y->hmask, 0, sizeof y->hmask);
    for (int e = 0; e < FR_GGML_QK_K; e++) {
        int l = L[e];
        if (l > 3) {
            y->hmask[e % 32] = (uint8_t)(y->hmask[e % 32] | (1u << (e / 32)));
            l -= 4;
        }
        low[e] = (uint8_t)l;
    }
    fr_ggml_pack2(low, y->qs);
}

FR_HD void fr_ggml_q3_k_decode(const fr_ggml_block_q3_k *b, float *y)
{
    const float d_all = fr_ggml_get_half(b->d);
    for (int e = 0; e < FR_GGML_QK_K; e++) {
        const int h = e / 128, s = (e % 128) / 32, i = e % 32;
        const float dl = d_all * (float)fr_ggml_q3_scale(b->scales, e / 16);
        const int q = (int8_t)((b->qs[32 * h + i] >> (2 * s)) & 3) -
                      ((b->hmask[i] >> (e / 32)) & 1 ? 0 : 4);
        y[e] = dl * (float)q;
    }
}

/* ---- Q4_K and Q5_K ---- */

/* The sub-block scales and mins of Q4_K (nmax 15) or Q5_K (31), stored in
 * d, dmin and s[12]; the codes L the searches gave. */
FR_HD void fr_ggml_k45_scales(const float *x, int n, const float *qw, int nmax, uint8_t *L,
                              uint8_t *d, uint8_t *dmin, uint8_t *s)
{
    float scales[8], mins[8], w[32];
    const int q5 = nmax == 31;
    if (!qw) { /* quantize_row_q4_K_ref / quantize_row_q5_K_ref */
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 8; j++) {
            int len = fr_ggml_sub_len(n, j, 32);
            float sum_x2 = 0.0f;
            for (int i = 0; i < len; i++)
                sum_x2 += x[32 * j + i] * x[32 * j + i];
            float av_x = sqrtf(sum_x2 / (float)len);
            for (int i = 0; i < len; i++)
                w[i] = av_x + fabsf(x[32 * j + i]);
            scales[j] = fr_ggml_min_search(len, nmax, x + 32 * j, w, L + 32 * j, &mins[j],
                                           q5 ? -0.5f : -1.0f, 0.1f, q5 ? 15 : 20, 0);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
        float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < 8; j++) {
            uint8_t ls = (uint8_t)fr_ggml_nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)fr_ggml_nearest_int(inv_min * mins[j]);
            fr_ggml_k4_put_scale(s, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
        }
        fr_ggml_put_half(d, max_scale / 63.0f);
        fr_ggml_put_half(dmin, max_min / 63.0f);
        return;
    }
    /* quantize_row_q4_K_impl / quantize_row_q5_K_impl */
    float sigma2 = fr_ggml_sigma2(x, n, 2.0f), sw[8];
    for (int j = 0; j < 8; j++) {
        int len = fr_ggml_sub_len(n, j, 32);
        for (int i = 0; i < len; i++)
            w[i] = qw[32 * j + i] * sqrtf(sigma2 + x[32 * j + i] * x[32 * j + i]);
        float sumw = 0.0f;
        for (int i = 0; i < len; i++)
            sumw += w[i];
        sw[j] = sumw;
        scales[j] = fr_ggml_min_search(len, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.9f,
                                       0.05f, 36, 0);
    }
    uint8_t Ls[8], Lm[8];
    float d_block = fr_ggml_step_search(8, 63, scales, Ls, sw);
    float m_block = fr_ggml_step_search(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; j++) /* Q5_K clamps the codes, Q4_K stores them as they are */
        fr_ggml_k4_put_scale(s, j, q5 && Ls[j] > 63 ? 63 : Ls[j], q5 && Lm[j] > 63 ? 63 : Lm[j]);
    fr_ggml_put_half(d, d_block);
    fr_ggml_put_half(dmin, m_block);
}

/* The codes again, against the stored steps (sub-blocks whose scale code
 * is 0 keep the search's). */
FR_HD void fr_ggml_k45_codes(const float *x, int nmax, const uint8_t *d, const uint8_t *dmin,
                             const uint8_t *s, uint8_t *L)
{
    const float d_all = fr_ggml_get_half(d), m_all = fr_ggml_get_half(dmin);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        fr_ggml_k4_scale(s, j, &sc, &m);
        const float dj = d_all * (float)sc;
        if (dj == 0.0f)
            continue;
        const float dm = m_all * (float)m;
        for (int i = 0; i < 32; i++)
            L[32 * j + i] = (uint8_t)fr_ggml_clampi(
                fr_ggml_nearest_int((x[32 * j + i] + dm) / dj), 0, nmax);
    }
}

FR_HD void fr_ggml_q4_k_encode(const float *x_in, int n, const float *qw_in,
                               fr_ggml_block_q4_k *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K];
    uint8_t L[FR_GGML_QK_K] = {0};
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    if (qw_in)
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
    memset(y->scales, 0, sizeof y->scales);
    fr_ggml_k45_scales(x, n, qw_in ? qw : NULL, 15, L, y->d, y->dmin, y->scales);
    fr_ggml_k45_codes(x, 15, y->d, y->dmin, y->scales, L);
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < 32; i++)
            y->qs[32 * h + i] = (uint8_t)(L[64 * h + i] | L[64 * h + 32 + i] << 4);
}

FR_HD void fr_ggml_q4_k_decode(const fr_ggml_block_q4_k *b, float *y)
{
    const float d = fr_ggml_get_half(b->d), min = fr_ggml_get_half(b->dmin);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        fr_ggml_k4_scale(b->scales, j, &sc, &m);
        const float dl = d * (float)sc, ml = min * (float)m;
        for (int i = 0; i < 32; i++) {
            const uint8_t q = b->qs[32 * (j / 2) + i];
            y[32 * j + i] = dl * (float)(j % 2 ? q >> 4 : q & 0xF) - ml;
        }
    }
}

FR_HD void fr_ggml_q5_k_encode(const float *x_in, int n, const float *qw_in,
                               fr_ggml_block_q5_k *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K];
    uint8_t L[FR_GGML_QK_K] = {0};
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    if (qw_in)
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
    memset(y->scales, 0, sizeof y->scales);
    fr_ggml_k45_scales(x, n, qw_in ? qw : NULL, 31, L, y->d, y->dmin, y->scales);
    fr_ggml_k45_codes(x, 31, y->d, y->dmin, y->scales, L);
    memset(y->qh, 0, sizeof y->qh);
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < 32; i++) {
            int lo = L[64 * h + i], hi = L[64 * h + 32 + i];
            if (lo > 15) {
                lo -= 16;
                y->qh[i] = (uint8_t)(y->qh[i] | (1u << (2 * h)));
            }
            if (hi > 15) {
                hi -= 16;
                y->qh[i] = (uint8_t)(y->qh[i] | (2u << (2 * h)));
            }
            y->qs[32 * h + i] = (uint8_t)(lo | hi << 4);
        }
}

FR_HD void fr_ggml_q5_k_decode(const fr_ggml_block_q5_k *b, float *y)
{
    const float d = fr_ggml_get_half(b->d), min = fr_ggml_get_half(b->dmin);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        fr_ggml_k4_scale(b->scales, j, &sc, &m);
        const float dl = d * (float)sc, ml = min * (float)m;
        for (int i = 0; i < 32; i++) {
            const uint8_t q = b->qs[32 * (j / 2) + i];
            const int v = (j % 2 ? q >> 4 : q & 0xF) + ((b->qh[i] >> j) & 1 ? 16 : 0);
            y[32 * j + i] = dl * (float)v - ml;
        }
    }
}

/* ---- Q6_K ---- */

FR_HD void fr_ggml_q6_k_encode(const float *x_in, int n, const float *qw_in,
                               fr_ggml_block_q6_k *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K], scales[16];
    int8_t L[FR_GGML_QK_K] = {0};
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    if (qw_in)
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int j = 0; j < 16; j++) {
        /* the importance itself weighs Q6_K's search (quantize_row_q6_K_impl),
         * x^2 without (quantize_row_q6_K_ref) */
        scales[j] = fr_ggml_sym_search(fr_ggml_sub_len(n, j, 16), 32, x + 16 * j,
                                       qw_in ? qw + 16 * j : NULL, L + 16 * j);
        float a = fabsf(scales[j]);
        if (a > max_abs_scale) {
            max_abs_scale = a;
            max_scale = scales[j];
        }
    }
    if (max_abs_scale < FR_GGML_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    float iscale = -128.0f / max_scale;
    const float d_all = fr_ggml_put_half(y->d, 1.0f / iscale);
    for (int j = 0; j < 16; j++) {
        int l = fr_ggml_nearest_int(iscale * scales[j]);
        y->scales[j] = (int8_t)(l < 127 ? l : 127);
    }
    for (int j = 0; j < 16; j++) {
        const float d = d_all * (float)y->scales[j];
        if (d == 0.0f)
            continue;
        for (int i = 0; i < 16; i++)
            L[16 * j + i] =
                (int8_t)(fr_ggml_clampi(fr_ggml_nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 32; i++) {
            const int8_t *l = L + 128 * h + i;
            y->ql[64 * h + i] = (uint8_t)((l[0] & 0xF) | (l[64] & 0xF) << 4);
            y->ql[64 * h + 32 + i] = (uint8_t)((l[32] & 0xF) | (l[96] & 0xF) << 4);
            y->qh[32 * h + i] =
                (uint8_t)(l[0] >> 4 | (l[32] >> 4) << 2 | (l[64] >> 4) << 4 | (l[96] >> 4) << 6);
        }
}

FR_HD void fr_ggml_q6_k_decode(const fr_ggml_block_q6_k *b, float *y)
{
    const float d = fr_ggml_get_half(b->d);
    for (int e = 0; e < FR_GGML_QK_K; e++) {
        const int h = e / 128, s = (e % 128) / 32, i = e % 32;
        const uint8_t ql = b->ql[64 * h + 32 * (s & 1) + i];
        const int low = s < 2 ? ql & 0xF : ql >> 4;
        const int8_t q = (int8_t)((low | ((b->qh[32 * h + i] >> (2 * s)) & 3) << 4) - 32);
        y[e] = d * (float)b->scales[e / 16] * (float)q;
    }
}

/* ---- IQ4_NL and IQ4_XS ---- */

/*
 * One IQ4 block (quantize_row_iq4_nl_impl with 7 trials each side): each
 * sub-block of 32 gets the least-squares scale of the best of 15 trial
 * steps (itry + kvalues[0]) / max, weights qw sqrt(sigma2 + x^2) or x^2;
 * IQ4_XS then codes the sub-block scales with one fp16 step, IQ4_NL stores
 * its one scale. Codes: the level nearest to x / scale (unrounded scale).
 */
FR_HD float fr_ggml_iq4_sub_scale(const float *xb, int len, const float *w)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < len; j++) {
        float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < FR_GGML_EPS)
        return 0.0f;
    float d = -max / fr_ggml_iq4nl_value(0);
    float id = 1.0f / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < len; j++) {
        float q = fr_ggml_iq4nl_value(fr_ggml_iq4nl_index(id * xb[j]));
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -7; itry <= 7; itry++) {
        id = (float)(itry + (int)fr_ggml_iq4nl_value(0)) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < len; j++) {
            float q = fr_ggml_iq4nl_value(fr_ggml_iq4nl_index(id * xb[j]));
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Weights of IQ4 sub-block elements (qw NULL: x^2). */
FR_HD void fr_ggml_iq4_weights(const float *xb, const float *qwb, float sigma2, float *w)
{
    for (int j = 0; j < 32; j++)
        w[j] = qwb ? qwb[j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
}

FR_HD void fr_ggml_iq4_pack(const uint8_t *L, int size, uint8_t *qs)
{
    for (int b = 0; b < size / 32; b++)
        for (int j = 0; j < 16; j++)
            qs[16 * b + j] = (uint8_t)(L[32 * b + j] | L[32 * b + 16 + j] << 4);
}

FR_HD void fr_ggml_iq4_nl_encode(const float *x_in, int n, const float *qw_in,
                                 fr_ggml_block_iq4_nl *y)
{
    float x[FR_GGML_QK4_NL], qw[FR_GGML_QK4_NL], w[FR_GGML_QK4_NL];
    uint8_t L[FR_GGML_QK4_NL];
    fr_ggml_pad(x_in, n, FR_GGML_QK4_NL, x);
    if (qw_in)
        fr_ggml_pad(qw_in, n, FR_GGML_QK4_NL, qw);
    float sigma2 = 0.0f;
    for (int j = 0; j < FR_GGML_QK4_NL; j++)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.0f / (float)n;
    fr_ggml_iq4_weights(x, qw_in ? qw : NULL, sigma2, w);
    const float d = fr_ggml_iq4_sub_scale(x, n, w);
    fr_ggml_put_half(y->d, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < FR_GGML_QK4_NL; j++)
        L[j] = (uint8_t)fr_ggml_iq4nl_index(id * x[j]);
    fr_ggml_iq4_pack(L, FR_GGML_QK4_NL, y->qs);
}

FR_HD void fr_ggml_iq4_nl_decode(const fr_ggml_block_iq4_nl *b, float *y)
{
    const float d = fr_ggml_get_half(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * fr_ggml_iq4nl_value(b->qs[j] & 0xF);
        y[j + 16] = d * fr_ggml_iq4nl_value(b->qs[j] >> 4);
    }
}

FR_HD void fr_ggml_iq4_xs_encode(const float *x_in, int n, const float *qw_in,
                                 fr_ggml_block_iq4_xs *y)
{
    float x[FR_GGML_QK_K], qw[FR_GGML_QK_K], w[32], scales[8];
    uint8_t L[FR_GGML_QK_K];
    fr_ggml_pad(x_in, n, FR_GGML_QK_K, x);
    if (qw_in)
        fr_ggml_pad(qw_in, n, FR_GGML_QK_K, qw);
    float sigma2 = 0.0f;
    for (int j = 0; j < FR_GGML_QK_K; j++)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.0f / (float)n;
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int b = 0; b < 8; b++) {
        fr_ggml_iq4_weights(x + 32 * b, qw_in ? qw + 32 * b : NULL, sigma2, w);
        scales[b] = fr_ggml_iq4_sub_scale(x + 32 * b, fr_ggml_sub_len(n, b, 32), w);
        float a = fabsf(scales[b]);
        if (a > amax_scale) {
            amax_scale = a;
            max_scale = scales[b];
        }
    }
    const float d = -max_scale / 32.0f;
    fr_ggml_put_half(y->d, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t scales_h = 0;
    for (int b = 0; b < 8; b++) {
        int l = fr_ggml_clampi(fr_ggml_nearest_int(id * scales[b]), -32, 31);
        const float dl = d * (float)l;
        const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
        for (int j = 0; j < 32; j++)
            L[32 * b + j] = (uint8_t)fr_ggml_iq4nl_index(idl * x[32 * b + j]);
        l += 32;
        if (b % 2 == 0)
            y->scales_l[b / 2] = (uint8_t)(l & 0xF);
        else
            y->scales_l[b / 2] = (uint8_t)(y->scales_l[b / 2] | (l & 0xF) << 4);
        scales_h = (uint16_t)(scales_h | (l >> 4) << (2 * b));
    }
    fr_ggml_put16(y->scales_h, scales_h);
    fr_ggml_iq4_pack(L, FR_GGML_QK_K, y->qs);
}

FR_HD void fr_ggml_iq4_xs_decode(const fr_ggml_block_iq4_xs *b, float *y)
{
    const float d = fr_ggml_get_half(b->d);
    const unsigned scales_h = fr_ggml_get16(b->scales_h);
    for (int s = 0; s < 8; s++) {
        const int ls = ((b->scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | ((scales_h >> (2 * s)) & 3) << 4;
        const float dl = d * (float)(ls - 32);
        for (int j = 0; j < 16; j++) {
            y[32 * s + j] = dl * fr_ggml_iq4nl_value(b->qs[16 * s + j] & 0xF);
            y[32 * s + j + 16] = dl * fr_ggml_iq4nl_value(b->qs[16 * s + j] >> 4);
        }
    }
}

#endif
