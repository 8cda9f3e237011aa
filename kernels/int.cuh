/*
 * Integer round-to-nearest on the device (docs/formats.md; quantizers/int.c
 * is the reference): scales from the group, row or tensor bounds, elements
 * through int_group.h's FR_HD rules.
 */
#ifndef FR_KINT_CUH
#define FR_KINT_CUH

#include "kstats.cuh"
#include "quantizers/int_group.h"

__device__ __forceinline__ void fr_kint8(const fr_kspec &s, float2 kc, const fr_klane &L,
                                         const float (&x)[FR_K_PER_LANE],
                                         float (&h)[FR_K_PER_LANE])
{
    if (s.kind == FR_K_INT_SYM) {
        float scale = kc.x; /* FR_KS_TENSOR: amax / qmax in fp32, no fp16 rounding */
        if (s.scope != FR_KS_TENSOR) {
            float lo, hi;
            fr_kbounds(s, L, lo, hi);
            scale = fr_int_sym_scale(fr_kamax(lo, hi), s.qmax);
        }
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_int_sym_dequant(x[e], scale, s.qmax);
    } else {
        float scale = kc.x, zero = kc.y;
        if (s.scope != FR_KS_TENSOR) {
            float lo, hi;
            fr_kbounds(s, L, lo, hi);
            scale = fr_int_asym_scale(lo, hi, s.qmax);
            zero = fr_int_asym_zero(lo, scale, s.qmax);
        }
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_int_asym_dequant(x[e], scale, zero, s.qmax);
    }
}

#endif
