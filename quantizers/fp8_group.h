/*
 * FP8 with fp32 scales (docs/formats.md, "FP8"): s = fp32(amax / fmax) over
 * the tensor, a row, or a 128 x 128 tile; x^ = fp8(x / s) * s. Shared by the
 * CPU reference (fp8.c) and the CUDA kernels.
 */
#ifndef FR_FP8_GROUP_H
#define FR_FP8_GROUP_H

#include "numerics.h"

enum fr_fp8_granularity {
    FR_FP8_TENSOR = 0,
    FR_FP8_CHANNEL = 1,  /* one scale per row (output channel) */
    FR_FP8_BLOCK128 = 2  /* one scale per 128 x 128 tile of the matrix view */
};

#define FR_FP8_TILE 128

/* frontier_config.impl of every fp8 configuration. */
typedef struct fr_fp8_params {
    fr_minifloat elem; /* FR_FMT_E4M3 or FR_FMT_E5M2 */
    int granularity;   /* enum fr_fp8_granularity */
} fr_fp8_params;

/* fp32(amax / fmax): the division is the only rounding. */
FR_HD float fr_fp8_scale(float amax, float fmax)
{
    return amax / fmax;
}

/* fp8(x / s) * s, round to nearest even, saturating; a zero scale gives 0. */
FR_HD float fr_fp8_dequant(float x, float s, fr_minifloat elem)
{
    if (s == 0.0f)
        return 0.0f;
    return fr_round_fmt(x / s, elem) * s;
}

/* The fast form (numerics.h): r = fr_quot_recip(s); *near as in
 * fr_round_fmt_quot, and then the caller takes fr_fp8_dequant. */
FR_HD float fr_fp8_dequant_quot(float x, float s, float r, fr_minifloat elem, int *near)
{
    return fr_round_fmt_quot(x, r, elem, near) * s;
}

#endif
