/*
 * NVFP4 on the device (quantizers/nvfp4.c is the reference): E4M3 scale per
 * group of 16 from the group amax and the fp32 global scale gs (c.s,
 * computed once per block from the tensor amax), elements by
 * fr_nvfp4_dequant_quot (no per-element division) with the definition for
 * elements near an E2M1 midpoint.
 */
#ifndef FR_KNVFP4_CUH
#define FR_KNVFP4_CUH

#include "kstats.cuh"
#include "quantizers/nvfp4_group.h"

/* {s, r, d1, d15}: the group's E4M3 scale and the quotient constants of
 * fr_nvfp4_group_quot (the rule's scale half; int.cuh) */
__device__ __forceinline__ float4 fr_knvfp4_scale(const fr_kconf &c, float2 st)
{
    const float gs = c.s;
    const float s = fr_nvfp4_group_scale_fast(fr_kamax(st.x, st.y), gs);
    float r, d1, d15;
    fr_nvfp4_group_quot(s, gs, &r, &d1, &d15);
    return make_float4(s, r, d1, d15);
}

template <bool H>
__device__ __forceinline__ void fr_knvfp4_apply(const fr_kconf &c,
                                                const float (&x)[FR_K_PER_LANE], float4 sc,
                                                fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    const float gs = c.s, s = sc.x, r = sc.y, d1 = sc.z, d15 = sc.w;
    int near = 0;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_nvfp4_dequant_quot(x[e], gs, r, d1, d15, &near);
    if (FR_KNEAR(near)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_nvfp4_dequant(x[e], s, gs);
    }
    fr_kterms_of(x, h, t);
}

#endif
