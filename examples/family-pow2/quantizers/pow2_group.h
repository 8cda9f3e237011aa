/*
 * Symmetric integers with power-of-two group scales (docs/adding-a-quantizer.md,
 * the worked example; its docs/formats.md section is in that page): per group
 * of 32 consecutive elements of a row, s = 2^e with e the smallest integer
 * such that qmax * 2^e >= amax (clamped to the E8M0 range [-127, 127]), codes
 * q = clamp(rint(x / s), -qmax, qmax) with qmax = 2^(b-1) - 1, x^ = q s. The
 * scale is a shift: dequantization needs no multiplier, what integer-only
 * accelerators want. Every step is exact in float32 (powers of two), so the
 * CPU (pow2.c) and the kernels (kernels/pow2.cuh) share these definitions
 * without fast forms.
 */
#ifndef FR_POW2_GROUP_H
#define FR_POW2_GROUP_H

#include "numerics.h"

#define FR_POW2_GROUP 32

/* frontier_config.impl of every pow2 configuration. */
typedef struct fr_pow2_params {
    int bits; /* 2..8 */
} fr_pow2_params;

FR_HD float fr_pow2_qmax(int bits)
{
    return (float)((1 << (bits - 1)) - 1);
}

/* The scale exponent of a group with absolute maximum amax (finite, >= 0):
 * with A = floor(log2 amax) and Q = floor(log2 qmax), the answer is A - Q or
 * A - Q + 1, and qmax * 2^e is exact, so one comparison decides. */
FR_HD int fr_pow2_scale_exp(float amax, float qmax)
{
    if (!(amax > 0.0f))
        return -127;
    int e = fr_floor_log2f(amax) - fr_floor_log2f(qmax);
    e = e < -127 ? -127 : e;
    if (qmax * fr_pow2f(e) < amax)
        e++;
    return e > 127 ? 127 : e;
}

/* x^ under the scale 2^e: x * 2^-e and q * 2^e are exact (a zero from an
 * underflow of x * 2^-e is the code rint would give too). */
FR_HD float fr_pow2_dequant(float x, float s, float inv_s, float qmax)
{
    float q = rintf(x * inv_s);
    q = q < -qmax ? -qmax : (q > qmax ? qmax : q);
    return q * s;
}

#endif
