/*
 * NVFP4 (docs/formats.md, "NVFP4"): E2M1 elements in groups of 16 with an
 * E4M3 group scale and an fp32 global scale. Shared by the CPU reference
 * (nvfp4.c) and the CUDA kernels.
 */
#ifndef FR_NVFP4_GROUP_H
#define FR_NVFP4_GROUP_H

#include "numerics.h"

#define FR_NVFP4_GROUP 16

/* Largest finite float32 (FLT_MAX, spelled out so device code needs no libc header). */
#define FR_F32_MAX 3.40282347e+38f

/*
 * gs = fp32(448 * 6 / amax_tensor): the E4M3 max times the E2M1 max, so the
 * largest group scale lands on 448. gs = 1 for an all-zero tensor. When
 * amax_tensor < 2688 / FLT_MAX (about 7.9e-36) the quotient overflows; gs is
 * then FLT_MAX (a decision of docs/formats.md: it keeps every later product
 * finite).
 */
FR_HD float fr_nvfp4_global_scale(float amax_tensor)
{
    if (!(amax_tensor > 0.0f))
        return 1.0f;
    float gs = 448.0f * 6.0f / amax_tensor;
    return gs <= FR_F32_MAX ? gs : FR_F32_MAX;
}

/* s = e4m3(min(amax_group / 6 * gs, 448)), round to nearest even. */
FR_HD float fr_nvfp4_group_scale(float amax_group, float gs)
{
    float v = amax_group / 6.0f * gs;
    return fr_round_e4m3(v < 448.0f ? v : 448.0f);
}

/* x^ = E2M1(x * gs / s) * s / gs; a zero group scale gives 0. */
FR_HD float fr_nvfp4_dequant(float x, float s, float gs)
{
    if (s == 0.0f)
        return 0.0f;
    return fr_round_e2m1(x * gs / s) * s / gs;
}

#endif
