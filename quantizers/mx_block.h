/*
 * OCP Microscaling v1.0 (docs/formats.md, "OCP Microscaling"): blocks of 32
 * along a row share an E8M0 scale X = 2^e; elements are minifloats or
 * MXINT8. Shared by the CPU reference (mx.c) and the CUDA kernels.
 */
#ifndef FR_MX_BLOCK_H
#define FR_MX_BLOCK_H

#include "numerics.h"

#define FR_MX_BLOCK 32

/* frontier_config.impl of every mx configuration. */
typedef struct fr_mx_params {
    int is_int8;       /* MXINT8 (elements k/64) instead of a minifloat */
    fr_minifloat elem; /* the element format (unused for MXINT8) */
    int emax_elem;     /* exponent of the element's largest normal binade */
    int elem_bits;     /* 8, 6 or 4 */
} fr_mx_params;

/* The block's shared scale X = 2^e, e = fr_mx_scale_exp(amax, emax_elem). */
FR_HD float fr_mx_block_scale(float amax_block, int emax_elem)
{
    return fr_pow2f(fr_mx_scale_exp(amax_block, emax_elem));
}

/* x^ = round_elem(x / X) * X. X is never 0 (at least 2^-127). */
FR_HD float fr_mx_dequant(float x, float scale, int is_int8, fr_minifloat elem)
{
    float y = x / scale;
    float r = is_int8 ? fr_round_mxint8(y) : fr_round_fmt(y, elem);
    return r * scale;
}

/*
 * The fast form: inv_scale = 2^-e (fr_pow2f(-e), a float for every e in
 * [-127, 127], subnormal at e = 127 but exact). x * 2^-e and x / 2^e are
 * the correct roundings of the same real number, so y is the definition's
 * bit for bit and no check is needed; the element rounding is the
 * add-magic form, equal to fr_round_fmt everywhere.
 */
FR_HD float fr_mx_dequant_fast(float x, float scale, float inv_scale, int is_int8,
                               fr_minifloat elem)
{
    float y = x * inv_scale;
    float r = is_int8 ? fr_round_mxint8(y) : fr_round_fmt_fast(y, elem);
    return r * scale;
}

#endif
