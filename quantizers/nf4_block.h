/*
 * NormalFloat-4 (docs/formats.md, "NormalFloat"; QLoRA, Dettmers et al.
 * 2023): blocks of 64 with an fp32 absmax, optionally double-quantized to
 * int8 in groups of 256 blocks around the mean absmax. Shared by the CPU
 * reference (nf4.c) and the CUDA kernels.
 */
#ifndef FR_NF4_BLOCK_H
#define FR_NF4_BLOCK_H

#include "numerics.h"

#define FR_NF4_BLOCK 64
#define FR_NF4_DQ_GROUP 256 /* blocks per second-level int8 group */

/* frontier_config.impl of the nf4 configurations. */
typedef struct fr_nf4_params {
    int double_quant; /* nf4-g64-dq */
} fr_nf4_params;

/* x^ = code(nearest(x / a)) * a; a zero absmax gives 0. */
FR_HD float fr_nf4_dequant(float x, float a)
{
    if (a == 0.0f)
        return 0.0f;
    return fr_nf4_code(fr_nf4_nearest(x / a)) * a;
}

/* Second-level step of one group of 256 blocks: c = fp32(max|a - m| / 127). */
FR_HD float fr_nf4_dq_step(float max_dev)
{
    return max_dev / 127.0f;
}

/*
 * The block scale after double quantization, a' = k * c + m with
 * k = clamp(rint((a - m) / c), -127, 127). When c == 0 every a - m of the
 * group is 0 (or too small to matter), and k = 0 gives a' = m.
 */
FR_HD float fr_nf4_dq_absmax(float a, float m, float c)
{
    float k = 0.0f;
    if (c != 0.0f) {
        k = rintf((a - m) / c);
        k = k < -127.0f ? -127.0f : (k > 127.0f ? 127.0f : k);
    }
    return k * c + m;
}

/*
 * ---- Fast form for the GPU (numerics.h, "Fast forms") ----
 * y = fl(x * r), r = fr_quot_recip(a), instead of fl(x / a), and the
 * nearest code from a table of 128 buckets of width 1/64 over [-1, 1]
 * instead of a search. Bucket k holds the one midpoint between
 * neighbouring codes that lies within [-1 + k/64 - 0.01, -1 + (k+1)/64 +
 * 0.01] (midpoints are at least 0.079 apart, so there is at most one;
 * "none" is 3e38) and the codes below and above it (or the code of the
 * whole bucket twice). y is near (take fr_nf4_dequant) when it is NaN or
 * within 2^-20 of its bucket's midpoint; otherwise:
 * - every other midpoint is more than 0.01 from y (y lies in its bucket up
 *   to the rounding of (y + 1) * 64; y < -1 and y >= 1 fall in the end
 *   buckets, which have no midpoint beyond them);
 * - the definition picks, between codes c_i < c_i+1, c_i+1 exactly when its
 *   argument is at or past a switching point within 2^-24 of the midpoint
 *   (each distance it compares is rounded once); the table's midpoint is
 *   within 2^-25 of the true one; |y - fl(x/a)| <= 2^-22 (|y| < 1 where it
 *   matters; r within 2^-23 of 1/a). 2^-20 covers the three, so fl(x/a)
 *   and y get the same code:
 *   the one after the midpoints below y.
 */
#define FR_NF4_BUCKETS 128

typedef struct fr_nf4_bucket {
    float mid;     /* the midpoint in the bucket's range, or 3e38 */
    float code_lo; /* the nearest code below mid */
    float code_hi; /* ... and above it */
    float pad;
} fr_nf4_bucket;

FR_HD fr_nf4_bucket fr_nf4_bucket_make(int k)
{
    const float codes[16] = FR_NF4_CODES;
    const float lo = -1.0f + (float)k / 64.0f - 0.01f;
    const float hi = -1.0f + (float)(k + 1) / 64.0f + 0.01f;
    fr_nf4_bucket b;
    b.mid = 3e38f;
    b.code_lo = codes[0]; /* the code after the midpoints under the range */
    b.code_hi = codes[1];
    /* constant indices only (see fr_nf4_nearest) */
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 15; j++) {
        const float m = (codes[j] + codes[j + 1]) * 0.5f;
        if (m < lo) {
            b.code_lo = codes[j + 1];
            b.code_hi = codes[j + 2 < 16 ? j + 2 : 15];
        } else if (m <= hi) {
            b.mid = m;
        }
    }
    b.pad = 0.0f;
    return b;
}

FR_HD int fr_nf4_bucket_of(float y)
{
    float f = fmaxf((y + 1.0f) * 64.0f, 0.0f); /* NaN -> 0 */
    f = fminf(f, (float)(FR_NF4_BUCKETS - 1));
    return (int)f;
}

FR_HD float fr_nf4_dequant_quot(float x, float a, float r, const fr_nf4_bucket *table, int *near)
{
    const float y = x * r;
    const fr_nf4_bucket b = table[fr_nf4_bucket_of(y)];
    *near |= !(fabsf(y - b.mid) > 9.5367432e-07f); /* 2^-20 */
    return (y > b.mid ? b.code_hi : b.code_lo) * a;
}

#endif
