/*
 * NormalFloat-4 on the device (quantizers/nf4.c is the reference): the
 * block absmax from the group bounds, or for -dq the double-quantized a'
 * computed by the pre-pass (engine.cu, fr_knf4_dq) and passed as st.y;
 * elements by fr_nf4_dequant_quot (x * (1/a) and the bucket table, which
 * the kernels keep in shared memory) with the definition for elements near
 * a switching point between two codes.
 */
#ifndef FR_KNF4_CUH
#define FR_KNF4_CUH

#include "kstats.cuh"
#include "quantizers/nf4_block.h"

/* {a, 1/a}: the block's absmax (or a') and its reciprocal (the rule's
 * scale half; int.cuh) */
template <bool DQ>
__device__ __forceinline__ float4 fr_knf4_scale(const fr_kconf &c, float2 st)
{
    (void)c;
    const float a = DQ ? st.y : fr_kamax(st.x, st.y);
    return make_float4(a, fr_quot_recip(a), 0.0f, 0.0f);
}

template <bool H>
__device__ __forceinline__ void fr_knf4_apply(const float (&x)[FR_K_PER_LANE], float4 sc,
                                              const fr_nf4_bucket *table, fr_kterms &t,
                                              float (&h)[FR_K_PER_LANE])
{
    const float a = sc.x, r = sc.y;
    int near = 0;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_nf4_dequant_quot(x[e], a, r, table, &near);
    if (FR_KNEAR(near)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_nf4_dequant(x[e], a);
    }
    fr_kterms_of(x, h, t);
}

/* The family's variants (kquant.cuh): the absmax of each block of 64, or
 * its double-quantized a' from the pre-pass (nf4-g64-dq); both read the
 * bucket table the kernels keep in shared memory. */
template <bool DQ> struct fr_knf4_traits : fr_kv_base {
    static constexpr int source = DQ ? FR_KSRC_DQ : FR_KSRC_GROUP;
    static constexpr int needs = DQ ? FR_KNEED_NF4DQ : 0;
    static constexpr bool nf4_table = true;
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        return fr_knf4_scale<DQ>(c, st);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE], float4 sc,
                                                      const fr_nf4_bucket *nf4, fr_kterms &t,
                                                      float (&h)[FR_K_PER_LANE])
    {
        (void)c;
        fr_knf4_apply<H>(x, sc, nf4, t, h);
    }
};

#define FR_KVARIANTS_nf4(X) X(NF4, (fr_knf4_traits<false>)) X(NF4_DQ, (fr_knf4_traits<true>))

#endif
