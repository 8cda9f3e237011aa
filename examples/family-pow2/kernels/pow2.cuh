/*
 * Power-of-two group scales on the device (quantizers/pow2.c is the
 * reference): the scale from the group's bounds, the elements by the exact
 * definition of pow2_group.h (no fast form is needed: every step is a
 * multiplication by a power of two).
 */
#ifndef FR_KPOW2_CUH
#define FR_KPOW2_CUH

#include "kstats.cuh"
#include "quantizers/pow2_group.h"

/* The family's one variant: groups of 32 (level 1), {2^e, 2^-e} shared by
 * the group's 4 lanes; qmax travels in the configuration (c.q). */
struct fr_kpow2_traits : fr_kv_base {
    static constexpr int source = FR_KSRC_GROUP;
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        const int e = fr_pow2_scale_exp(fr_kamax(st.x, st.y), c.q);
        return make_float4(fr_pow2f(e), fr_pow2f(-e), 0.0f, 0.0f);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                                 float4 sc, const fr_nf4_bucket *nf4, fr_kterms &t,
                                                 float (&h)[FR_K_PER_LANE])
    {
        (void)nf4;
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = fr_pow2_dequant(x[e], sc.x, sc.y, c.q);
        fr_kterms_of(x, h, t);
    }
};

#define FR_KVARIANTS_pow2(X) X(POW2, (fr_kpow2_traits))

#endif
