/*
 * OCP MX on the device (quantizers/mx.c is the reference): E8M0 scale X per
 * block of 32 from the block amax; x / X is exactly x * 2^-e, so no check
 * (mx_block.h, fr_mx_dequant_fast); elements by the add-magic rounding.
 */
#ifndef FR_KMX_CUH
#define FR_KMX_CUH

#include "kstats.cuh"
#include "quantizers/mx_block.h"

/* {2^e, 2^-e}: the block's E8M0 scale and its exact inverse (the rule's
 * scale half; int.cuh) */
__device__ __forceinline__ float4 fr_kmx_scale(const fr_kconf &c, float2 st)
{
    const int e = fr_mx_scale_exp(fr_kamax(st.x, st.y), c.emax_elem);
    return make_float4(fr_pow2f(e), fr_pow2f(-e), 0.0f, 0.0f);
}

template <bool INT8, bool H>
__device__ __forceinline__ void fr_kmx_apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                             float4 sc, fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    const float scale = sc.x, inv_scale = sc.y;
    const fr_minifloat f = {c.mbits, c.emin, c.q};
    if constexpr (INT8) {
#pragma unroll
        for (int k = 0; k < FR_K_PER_LANE; k++)
            h[k] = fr_round_mxint8(x[k] * inv_scale) * scale;
    } else {
#pragma unroll
        for (int k = 0; k < FR_K_PER_LANE; k++)
            h[k] = fr_round_fmt_fast(x[k] * inv_scale, f) * scale;
    }
    fr_kterms_of(x, h, t);
}

/* The family's variants (kquant.cuh): minifloat elements (mxfp8/6/4) and
 * MXINT8, both with an E8M0 scale per block of 32. */
template <bool INT8> struct fr_kmx_traits : fr_kv_base {
    static constexpr int source = FR_KSRC_GROUP;
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        return fr_kmx_scale(c, st);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE], float4 sc,
                                                      const fr_nf4_bucket *nf4, fr_kterms &t,
                                                      float (&h)[FR_K_PER_LANE])
    {
        (void)nf4;
        fr_kmx_apply<INT8, H>(c, x, sc, t, h);
    }
};

#define FR_KVARIANTS_mx(X) X(MX, (fr_kmx_traits<false>)) X(MXINT8, (fr_kmx_traits<true>))

#endif
