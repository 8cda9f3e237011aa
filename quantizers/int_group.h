/*
 * Integer round-to-nearest (docs/formats.md, "Integer round-to-nearest"):
 * the per-group rules shared by the CPU reference (int.c) and the CUDA
 * kernels. Every function is FR_HD, float32 only, no FMA (the builds turn
 * contraction off), so both sides produce the same bits.
 */
#ifndef FR_INT_GROUP_H
#define FR_INT_GROUP_H

#include "numerics.h"

/* How many elements share one scale. */
enum fr_int_granularity {
    FR_INT_GROUP = 0,  /* runs of group_size elements of a row, fp16 scale */
    FR_INT_ROW = 1,    /* one group per row (`gC`), fp16 scale */
    FR_INT_TENSOR = 2  /* one fp32 scale for the tensor (ONNX Runtime style) */
};

/* frontier_config.impl of every int configuration. */
typedef struct fr_int_params {
    int bits;        /* 2..8 */
    int granularity; /* enum fr_int_granularity */
    int group_size;  /* FR_INT_GROUP only: 32, 64, 128 or 256 */
    int symmetric;   /* 1: sym, 0: asym with a b-bit zero point */
} fr_int_params;

/* sym: qmax = 2^(b-1) - 1 (codes -qmax..qmax). */
FR_HD float fr_int_sym_qmax(int bits)
{
    return (float)((1 << (bits - 1)) - 1);
}

/* asym: codes 0..2^b - 1. */
FR_HD float fr_int_asym_levels(int bits)
{
    return (float)((1 << bits) - 1);
}

/* Group scale of sym: fp16(amax / qmax). */
FR_HD float fr_int_sym_scale(float amax, float qmax)
{
    return fr_round_fp16(amax / qmax);
}

/* Group scale of asym: fp16((hi - lo) / (2^b - 1)), lo = min(min x, 0),
 * hi = max(max x, 0). */
FR_HD float fr_int_asym_scale(float lo, float hi, float levels)
{
    return fr_round_fp16((hi - lo) / levels);
}

/* The same scales with the add-magic fp16 rounding (numerics.h): equal to
 * the definitions for every input. */
FR_HD float fr_int_sym_scale_fast(float amax, float qmax)
{
    return fr_round_minifloat_fast(amax / qmax, 10, -14, 65504.0f);
}

FR_HD float fr_int_asym_scale_fast(float lo, float hi, float levels)
{
    return fr_round_minifloat_fast((hi - lo) / levels, 10, -14, 65504.0f);
}

/* Zero point of asym: clamp(rint(-lo / s), 0, 2^b - 1); 0 when s == 0. */
FR_HD float fr_int_asym_zero(float lo, float s, float levels)
{
    if (s == 0.0f)
        return 0.0f;
    float z = rintf(-lo / s);
    return z < 0.0f ? 0.0f : (z > levels ? levels : z);
}

/* x^ = clamp(rint(x / s), -qmax, qmax) * s; a zero scale gives 0. */
FR_HD float fr_int_sym_dequant(float x, float s, float qmax)
{
    if (s == 0.0f)
        return 0.0f;
    float q = rintf(x / s);
    q = q < -qmax ? -qmax : (q > qmax ? qmax : q);
    return q * s;
}

/* x^ = (clamp(rint(x / s) + z, 0, 2^b - 1) - z) * s; a zero scale gives 0. */
FR_HD float fr_int_asym_dequant(float x, float s, float z, float levels)
{
    if (s == 0.0f)
        return 0.0f;
    float q = rintf(x / s) + z;
    q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
    return (q - z) * s;
}

/*
 * ---- Fast forms for the GPU (numerics.h, "Fast forms") ----
 * rint(fl(x / s)) as t = rint(y), y = fl(x * r), r = fr_quot_recip(s).
 * fr_int_quot_limit(amax, r) is computed once per group from a bound amax
 * >= |x| of every element (the group's, row's or tensor's amax); an element
 * with |y - t| >= that limit is "near" a half-integer and must take the
 * definition. Proof (docs/formats.md, "GPU notes"): A = fl(amax * r) >= |y|
 * (rounding is monotonic); |y - x/s| <= 1.5 A 2^-23 (1 + 2^-21) (r within
 * 2^-23 of 1/s, y rounded once); a half-integer h next to y has
 * ulp(h)/2 <= (A + 0.5) 2^-24; the limit leaves (A + 1) 2^-21 (minus 2^-26
 * for its own rounding) between y and every half-integer, about twice what
 * fl(x/s) can move or tie, so rint(fl(x/s)) = t. When A >= 2^21 the limit is negative and every element
 * is near (y - t is exact only while |y| < 2^23). r = 0 (s = 0) gives t = 0
 * and x^ = 0 as the definition; r = NaN makes every element near.
 */
FR_HD float fr_int_quot_limit(float amax, float r)
{
    return 0.5f - (amax * r + 1.0f) * FR_QUOT_MARGIN;
}

FR_HD float fr_rint_quot(float x, float r, float limit, int *near)
{
    const float y = x * r;
    const float t = rintf(y);
    *near |= !(fabsf(y - t) < limit);
    return t;
}

/* The definitions' codes: q of sym (x^ = q * s), q - z of asym
 * (x^ = (q - z) * s), for the fallback of a near element. */
FR_HD float fr_int_sym_code(float x, float s, float qmax)
{
    if (s == 0.0f)
        return 0.0f;
    float q = rintf(x / s);
    return q < -qmax ? -qmax : (q > qmax ? qmax : q);
}

FR_HD float fr_int_asym_code(float x, float s, float z, float levels)
{
    if (s == 0.0f)
        return 0.0f;
    float q = rintf(x / s) + z;
    q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
    return q - z;
}

/* One sym group of n elements whose scale is s (already fp16-rounded for
 * groups and rows, fp32 for the tensor form). */
FR_HD void fr_int_sym_group(const float *x, float *x_hat, int64_t n, float s, float qmax)
{
    for (int64_t i = 0; i < n; i++)
        x_hat[i] = fr_int_sym_dequant(x[i], s, qmax);
}

FR_HD void fr_int_asym_group(const float *x, float *x_hat, int64_t n, float s, float z,
                             float levels)
{
    for (int64_t i = 0; i < n; i++)
        x_hat[i] = fr_int_asym_dequant(x[i], s, z, levels);
}

#endif
