/*
 * FP8 E4M3 / E5M2 with fp32 scales on the device (quantizers/fp8.c is the
 * reference): s = amax / fmax of the tensor (c.s), row or 128 x 128 tile
 * (st = (lo, hi) or (0, amax)), elements by fr_fp8_dequant_quot (x * r and
 * the add-magic rounding) with the definition for elements near a midpoint.
 */
#ifndef FR_KFP8_CUH
#define FR_KFP8_CUH

#include "kstats.cuh"
#include "quantizers/fp8_group.h"

/* {s, r}: the scale and its reciprocal (the rule's scale half; int.cuh) */
template <bool TENSOR>
__device__ __forceinline__ float4 fr_kfp8_scale(const fr_kconf &c, float2 st)
{
    float s = c.s, r = c.r;
    if constexpr (!TENSOR) {
        s = fr_fp8_scale(fr_kamax(st.x, st.y), c.q);
        r = fr_quot_recip(s);
    }
    return make_float4(s, r, 0.0f, 0.0f);
}

template <bool H>
__device__ __forceinline__ void fr_kfp8_apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                              float4 sc, fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    const float s = sc.x, r = sc.y;
    const fr_minifloat f = {c.mbits, c.emin, c.q};
    int near = 0;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_fp8_dequant_quot(x[e], s, r, f, &near);
    if (FR_KNEAR(near)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_fp8_dequant(x[e], s, f);
    }
    fr_kterms_of(x, h, t);
}

/* The family's variants (kquant.cuh): one fp32 scale per tensor, per row
 * (channel) or per 128 x 128 tile (block128). */
template <int SRC> struct fr_kfp8_traits : fr_kv_base {
    static constexpr int source = SRC;
    static constexpr bool tensor = SRC == FR_KSRC_NONE;
    static constexpr int needs = tensor              ? FR_KNEED_ROWS | FR_KNEED_TENSOR
                                 : SRC == FR_KSRC_ROW ? FR_KNEED_ROWS
                                                      : FR_KNEED_TILES;
    __device__ static __forceinline__ void tensor_constants(fr_kconf &c, float lo, float hi,
                                                            float amax)
    {
        (void)lo, (void)hi;
        if constexpr (tensor)
            c.s = fr_fp8_scale(amax, c.q);
    }
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        return fr_kfp8_scale<tensor>(c, st);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE], float4 sc,
                                                      const fr_nf4_bucket *nf4, fr_kterms &t,
                                                      float (&h)[FR_K_PER_LANE])
    {
        (void)nf4;
        fr_kfp8_apply<H>(c, x, sc, t, h);
    }
};

#define FR_KVARIANTS_fp8(X)                                                                  \
    X(FP8_TENSOR, (fr_kfp8_traits<FR_KSRC_NONE>))                                            \
    X(FP8_ROW, (fr_kfp8_traits<FR_KSRC_ROW>))                                                \
    X(FP8_TILE, (fr_kfp8_traits<FR_KSRC_TILE>))

#endif
