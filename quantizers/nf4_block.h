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

/*
 * ---- Fast form for the GPU (numerics.h, "Fast forms") ----
 * y = fl(x * r), r = fr_quot_recip(a), instead of fl(x / a), then the
 * nearest code. Near (take fr_nf4_dequant) when y is NaN or, inside
 * (-1, 1), when the two distances differ by at most 2^-19: the
 * definition's choice between codes c_i < c_i+1 switches at a point T_i
 * within 2^-24 of their midpoint (each distance is rounded once), |y| < 1
 * so |y - fl(x/a)| <= 2^-22.8, and the computed difference of distances is
 * within 3 * 2^-24 of twice y's distance to the midpoint: with more than
 * 2^-19 apart, fl(x/a) is on y's side of T_i. Should fl(x/a) cross a code
 * c_i instead, y is next to c_i and both choose it (codes are 0.08 apart).
 * Beyond +-1 the choice is the end code for y and fl(x/a) alike.
 */
FR_HD int fr_nf4_nearest_checked(float y, int *near)
{
    const float codes[16] = FR_NF4_CODES;
    if (y != y)
        *near = 1;
    if (!(y > codes[0]))
        return 0;
    if (!(y < codes[15]))
        return 15;
    int i = 0;
    float code_below = codes[0];
    float code_above = codes[15];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 1; j < 16; j++) {
        if (codes[j] <= y) {
            i = j;
            code_below = codes[j];
        }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 14; j >= 1; j--)
        if (codes[j] > y)
            code_above = codes[j];
    float below = y - code_below;
    float above = code_above - y;
    *near |= !(fabsf(above - below) > 1.9073486e-06f); /* 2^-19 */
    return above < below ? i + 1 : i;
}

FR_HD float fr_nf4_dequant_quot(float x, float a, float r, int *near)
{
    return fr_nf4_code(fr_nf4_nearest_checked(x * r, near)) * a;
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

#endif
