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

/* The family's one variant (kquant.cuh): groups of 16 under the tensor's
 * global scale gs = c.s, which has no reciprocal form (the group scale
 * divides by it exactly: nvfp4_group.h). */
struct fr_knvfp4_traits : fr_kv_base {
    static constexpr int source = FR_KSRC_GROUP;
    static constexpr int needs = FR_KNEED_ROWS | FR_KNEED_TENSOR;
    static constexpr bool scale_reciprocal = false;
    __device__ static __forceinline__ void tensor_constants(fr_kconf &c, float lo, float hi,
                                                            float amax)
    {
        (void)lo, (void)hi;
        c.s = fr_nvfp4_global_scale(amax);
    }
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        return fr_knvfp4_scale(c, st);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE], float4 sc,
                                                      const fr_nf4_bucket *nf4, fr_kterms &t,
                                                      float (&h)[FR_K_PER_LANE])
    {
        (void)nf4;
        fr_knvfp4_apply<H>(c, x, sc, t, h);
    }
};

#define FR_KVARIANTS_nvfp4(X) X(NVFP4, (fr_knvfp4_traits))

#endif
