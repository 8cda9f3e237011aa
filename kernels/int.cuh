/*
 * Integer round-to-nearest on the device (docs/formats.md; quantizers/int.c
 * is the reference): one lane's 8 elements of one unit under one sym or
 * asym configuration. Scales are the definitions' (fp16(amax / qmax),
 * fp16((hi - lo) / (2^b - 1)), the zero point), computed by the fast forms
 * of int_group.h / numerics.h; codes are rint(x * r) with the proven
 * near-half-integer fallback to rint(x / s). Every fallback gives the
 * definition's value, so x^ is the CPU's bit for bit.
 *
 * The error terms skip x^ where they can: with an fp16 scale (groups, rows)
 * q * s is exact (8 x 11 significant bits), so x - x^ is one fma, sum x^^2
 * = s^2 sum q^2 (exact in float) and sum x x^ = s sum x q.
 */
#ifndef FR_KINT_CUH
#define FR_KINT_CUH

#include "kstats.cuh"
#include "quantizers/int_group.h"

/* x^ terms of 8 codes q (already clamped) with scale s. */
template <bool TENSOR, bool H>
__device__ __forceinline__ void fr_kint_terms(const float (&x)[FR_K_PER_LANE],
                                              const float (&q)[FR_K_PER_LANE], float s,
                                              fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    if constexpr (TENSOR) {
        /* fp32 scale: q * s rounds; the terms of x^ itself */
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = q[e] * s;
        fr_kterms_of(x, h, t);
    } else {
        float se = 0.0f, me = 0.0f, sq = 0.0f, sxq = 0.0f;
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++) {
            const float d = fmaf(-q[e], s, x[e]); /* x - q s, q s exact */
            se = fmaf(d, d, se);
            me = fmaxf(me, fabsf(d));
            sq = fmaf(q[e], q[e], sq);
            sxq = fmaf(x[e], q[e], sxq);
            if constexpr (H)
                h[e] = q[e] * s;
        }
        t.se = se;
        t.me = me;
        t.sh = (s * s) * sq;
        t.sd = s * sxq;
    }
}

/*
 * Each rule is split in two: the *scale* of a group (from its statistic st,
 * or the tensor constants of c), four floats that every lane of the group
 * shares, and its *application* to a lane's 8 elements. The fused kernel
 * computes the scales of a tile once per group into shared memory
 * (engine.cu); the streaming kernel computes them per lane. The arithmetic
 * is the same either way, so x^ is too.
 */

/* sym: {s, r, limit, clamp}: the fp16 scale, its reciprocal, the near
 * limit, and 1 when the clamp to +-qmax may act. The clamp only acts when
 * some |x / s| rounds past qmax, which a normal fp16 scale rules out
 * (|x / s| <= qmax (1 + 2^-10) < qmax + 1/2 for qmax <= 127): fl(amax r) <=
 * qmax + 1/4 proves it for the group (then |y| <= qmax + 1/4 and t, equal
 * to the definition's code, is at most qmax). */
template <bool TENSOR>
__device__ __forceinline__ float4 fr_kint_sym_scale(const fr_kconf &c, float2 st)
{
    float s = c.s, r = c.r, limit = c.limit, amax = c.amax;
    if constexpr (!TENSOR) {
        amax = fr_kamax(st.x, st.y);
        int near_s = 0;
        s = fr_round_minifloat_quot(amax, c.inv_q, 10, -14, 65504.0f, &near_s);
        if (FR_KNEAR(near_s))
            s = fr_int_sym_scale(amax, c.q);
        r = fr_quot_recip_fp16(s);
        limit = fr_int_quot_limit(amax, r);
    }
    return make_float4(s, r, limit, !(amax * r <= c.q + 0.25f) ? 1.0f : 0.0f);
}

template <bool TENSOR, bool H>
__device__ __forceinline__ void fr_kint_sym_apply(const fr_kconf &c,
                                                  const float (&x)[FR_K_PER_LANE], float4 sc,
                                                  fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    const float s = sc.x, r = sc.y, limit = sc.z;
    int near = 0;
    float q[FR_K_PER_LANE];
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        q[e] = fr_rint_quot(x[e], r, limit, &near);
    if (FR_KNEAR(near)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            q[e] = fr_int_sym_code(x[e], s, c.q);
    }
    /* a warp-uniform vote keeps the lanes together */
    if (__any_sync(0xffffffffu, sc.w != 0.0f)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            q[e] = fminf(fmaxf(q[e], -c.q), c.q);
    }
    fr_kint_terms<TENSOR, H>(x, q, s, t, h);
}

/* asym: {s, r, limit, z}. */
template <bool TENSOR>
__device__ __forceinline__ float4 fr_kint_asym_scale(const fr_kconf &c, float2 st)
{
    float s = c.s, r = c.r, limit = c.limit, z = c.z;
    if constexpr (!TENSOR) {
        const float lo = st.x, hi = st.y;
        const float amax = fr_kamax(lo, hi);
        int near_s = 0;
        s = fr_round_minifloat_quot(hi - lo, c.inv_q, 10, -14, 65504.0f, &near_s);
        if (FR_KNEAR(near_s))
            s = fr_int_asym_scale(lo, hi, c.q);
        r = fr_quot_recip_fp16(s);
        limit = fr_int_quot_limit(amax, r);
        int near_z = 0;
        z = fr_rint_quot(-lo, r, limit, &near_z); /* |lo| <= amax */
        z = z < 0.0f ? 0.0f : (z > c.q ? c.q : z);
        if (FR_KNEAR(near_z))
            z = fr_int_asym_zero(lo, s, c.q);
    }
    return make_float4(s, r, limit, z);
}

/* codes q - z = clamp(t, -z, L - z) (t + z and the clamp are exact small
 * integers, so this is clamp(t + z, 0, L) - z). */
template <bool TENSOR, bool H>
__device__ __forceinline__ void fr_kint_asym_apply(const fr_kconf &c,
                                                   const float (&x)[FR_K_PER_LANE], float4 sc,
                                                   fr_kterms &t, float (&h)[FR_K_PER_LANE])
{
    const float s = sc.x, r = sc.y, limit = sc.z, z = sc.w;
    int near = 0;
    float q[FR_K_PER_LANE];
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        q[e] = fr_rint_quot(x[e], r, limit, &near);
    if (FR_KNEAR(near)) {
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            q[e] = fr_int_asym_code(x[e], s, z, c.q);
    }
    const float qlo = -z, qhi = c.q - z;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        q[e] = fminf(fmaxf(q[e], qlo), qhi);
    fr_kint_terms<TENSOR, H>(x, q, s, t, h);
}

/* The family's variants (kquant.cuh): sym and asym, each with a scale per
 * group (16 << level elements), per row (gC) or per tensor (one fp32
 * scale and zero point, no storage rounding: int.c). */
template <bool SYM, int SRC> struct fr_kint_traits : fr_kv_base {
    static constexpr int source = SRC;
    static constexpr bool tensor = SRC == FR_KSRC_NONE;
    static constexpr int needs = tensor              ? FR_KNEED_ROWS | FR_KNEED_TENSOR
                                 : SRC == FR_KSRC_ROW ? FR_KNEED_ROWS
                                                      : 0;
    __device__ static __forceinline__ void tensor_constants(fr_kconf &c, float lo, float hi,
                                                            float amax)
    {
        if constexpr (tensor && SYM) {
            c.s = amax / c.q;
        } else if constexpr (tensor) {
            c.s = (hi - lo) / c.q;
            c.z = fr_int_asym_zero(lo, c.s, c.q);
        }
    }
    __device__ static __forceinline__ float4 scale(const fr_kconf &c, float2 st)
    {
        if constexpr (SYM)
            return fr_kint_sym_scale<tensor>(c, st);
        else
            return fr_kint_asym_scale<tensor>(c, st);
    }
    template <bool H>
    __device__ static __forceinline__ void apply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE], float4 sc,
                                                      const fr_nf4_bucket *nf4, fr_kterms &t,
                                                      float (&h)[FR_K_PER_LANE])
    {
        (void)nf4;
        if constexpr (SYM)
            fr_kint_sym_apply<tensor, H>(c, x, sc, t, h);
        else
            fr_kint_asym_apply<tensor, H>(c, x, sc, t, h);
    }
};

#define FR_KVARIANTS_int(X)                                                                  \
    X(INT_SYM_GROUP, (fr_kint_traits<true, FR_KSRC_GROUP>))                                  \
    X(INT_SYM_ROW, (fr_kint_traits<true, FR_KSRC_ROW>))                                      \
    X(INT_SYM_TENSOR, (fr_kint_traits<true, FR_KSRC_NONE>))                                  \
    X(INT_ASYM_GROUP, (fr_kint_traits<false, FR_KSRC_GROUP>))                                \
    X(INT_ASYM_ROW, (fr_kint_traits<false, FR_KSRC_ROW>))                                    \
    X(INT_ASYM_TENSOR, (fr_kint_traits<false, FR_KSRC_NONE>))

#endif
