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

/* The same with the add-magic E4M3 rounding (numerics.h). */
FR_HD float fr_nvfp4_group_scale_fast(float amax_group, float gs)
{
    float v = amax_group / 6.0f * gs;
    return fr_round_minifloat_fast(v < 448.0f ? v : 448.0f, 3, -6, 448.0f);
}

/* x^ = E2M1(x * gs / s) * s / gs; a zero group scale gives 0. */
FR_HD float fr_nvfp4_dequant(float x, float s, float gs)
{
    if (s == 0.0f)
        return 0.0f;
    return fr_round_e2m1(x * gs / s) * s / gs;
}

/*
 * ---- Fast form for the GPU (numerics.h, "Fast forms") ----
 * Per group: r = fr_quot_recip(s), d1 = fl(s / gs), d15 = fl(1.5 s / gs).
 * The element: u = fl(x * gs) as the definition, E = E2M1(fl(u / s)) by
 * fr_round_minifloat_quot (near when u * r is close to an E2M1 midpoint),
 * and the dequantization fl(fl(E * s) / gs) without a division: E = p * m
 * with p = +-2^k (E's sign and exponent) and m in {1, 1.5} (its one
 * mantissa bit); E * s and m * s are exact (2 x 4 significant bits), and
 * rounding commutes with scaling by p while nothing under- or overflows,
 * so fl(E * s / gs) = p * fl(m * s / gs) = p * (m == 1 ? d1 : d15).
 * fr_nvfp4_group_quot makes r NaN (every element near) when d1 or d15 is
 * outside [2^-125, 2^124], where p * d could leave the normal range.
 */
FR_HD void fr_nvfp4_group_quot(float s, float gs, float *r, float *d1, float *d15)
{
    *r = fr_quot_recip(s);
    *d1 = s / gs;
    *d15 = (1.5f * s) / gs;
    if (s != 0.0f && !(*d1 >= 2.3509887e-38f && *d15 <= 2.1267648e+37f)) /* 2^-125, 2^124 */
        *r = fr_bits_to_f32(0x7fc00000u);
}

FR_HD float fr_nvfp4_dequant_quot(float x, float gs, float r, float d1, float d15, int *near)
{
    const float e = fr_round_minifloat_quot(x * gs, r, 1, 0, 6.0f, near);
    const uint32_t b = fr_f32_to_bits(e);
    const float p = fr_bits_to_f32(b & 0xff800000u);
    return p * ((b & 0x00400000u) ? d15 : d1);
}

#endif
