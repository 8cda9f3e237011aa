/*
 * OCP MX on the device (quantizers/mx.c is the reference): E8M0 scale per
 * block of 32 from the block amax, elements through mx_block.h.
 */
#ifndef FR_KMX_CUH
#define FR_KMX_CUH

#include "kstats.cuh"
#include "quantizers/mx_block.h"

__device__ __forceinline__ void fr_kmx8(const fr_kspec &s, const fr_klane &L,
                                        const float (&x)[FR_K_PER_LANE],
                                        float (&h)[FR_K_PER_LANE])
{
    float lo, hi;
    fr_kbounds(s, L, lo, hi);
    const float scale = fr_mx_block_scale(fr_kamax(lo, hi), s.emax_elem);
    const fr_minifloat f = fr_kelem_format(s);
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_mx_dequant(x[e], scale, s.is_int8, f);
}

#endif
