/*
 * NVFP4 on the device (quantizers/nvfp4.c is the reference): E4M3 scale per
 * group of 16 from the group amax and the fp32 global scale (computed once
 * per block from the tensor amax, fr_kspec_consts), elements through
 * nvfp4_group.h.
 */
#ifndef FR_KNVFP4_CUH
#define FR_KNVFP4_CUH

#include "kstats.cuh"
#include "quantizers/nvfp4_group.h"

__device__ __forceinline__ void fr_knvfp4_8(const fr_kspec &s, float2 kc, const fr_klane &L,
                                            const float (&x)[FR_K_PER_LANE],
                                            float (&h)[FR_K_PER_LANE])
{
    float lo, hi;
    fr_kbounds(s, L, lo, hi);
    const float gs = kc.x;
    const float scale = fr_nvfp4_group_scale(fr_kamax(lo, hi), gs);
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_nvfp4_dequant(x[e], scale, gs);
}

#endif
