/*
 * Device side of the built-in formats: one configuration applied to a
 * lane's 8 elements of one unit. Every rounding rule is the CPU reference's
 * own FR_HD definition or its proven-equal fast form (the _group.h and
 * _block.h headers of quantizers/, numerics.h "Fast forms"), called from one kernels/<family>.cuh
 * per family: the kernels decide only where each statistic comes from.
 * Built with -fmad=false and IEEE division, so the dequantized values are
 * the CPU's, bit for bit.
 *
 * A configuration's *variant* (family, scope) is a compile-time parameter
 * of the kernels: the host launches the instance of the variant (one
 * launch per variant, FR_KV_FOR_EACH), so a kernel holds one variant's
 * code. Each rule comes in two halves, the group's scale (fr_kscale) and
 * its application to a lane's elements (fr_kapply).
 */
#ifndef FR_KQUANT_CUH
#define FR_KQUANT_CUH

#include "fp8.cuh"
#include "int.cuh"
#include "kstats.cuh"
#include "mx.cuh"
#include "nf4.cuh"
#include "nvfp4.cuh"

enum fr_kvariant {
    FR_KV_INT_SYM_GROUP = 0,
    FR_KV_INT_SYM_ROW,
    FR_KV_INT_SYM_TENSOR,
    FR_KV_INT_ASYM_GROUP,
    FR_KV_INT_ASYM_ROW,
    FR_KV_INT_ASYM_TENSOR,
    FR_KV_FP8_TENSOR,
    FR_KV_FP8_ROW,
    FR_KV_FP8_TILE,
    FR_KV_NVFP4,
    FR_KV_MX,
    FR_KV_MXINT8,
    FR_KV_NF4,
    FR_KV_NF4_DQ,
    FR_KV_COUNT,
    FR_KV_UNKNOWN = -1
};

/* Where variant V's statistic comes from (enum fr_ksource). */
__host__ __device__ constexpr int fr_kv_source(int v)
{
    return v == FR_KV_INT_SYM_ROW || v == FR_KV_INT_ASYM_ROW || v == FR_KV_FP8_ROW ? FR_KSRC_ROW
           : v == FR_KV_INT_SYM_TENSOR || v == FR_KV_INT_ASYM_TENSOR || v == FR_KV_FP8_TENSOR
               ? FR_KSRC_NONE
           : v == FR_KV_FP8_TILE ? FR_KSRC_TILE
           : v == FR_KV_NF4_DQ   ? FR_KSRC_DQ
                                 : FR_KSRC_GROUP;
}

__host__ __device__ inline int fr_kvariant_of(const fr_kspec &s)
{
    switch (s.kind) {
    case FR_K_INT_SYM:
    case FR_K_INT_ASYM: {
        const int base = s.kind == FR_K_INT_SYM ? FR_KV_INT_SYM_GROUP : FR_KV_INT_ASYM_GROUP;
        return base + (s.scope == FR_KS_ROW ? 1 : s.scope == FR_KS_TENSOR ? 2 : 0);
    }
    case FR_K_FP8:
        return s.scope == FR_KS_TENSOR ? FR_KV_FP8_TENSOR
               : s.scope == FR_KS_ROW  ? FR_KV_FP8_ROW
                                       : FR_KV_FP8_TILE;
    case FR_K_NVFP4:
        return FR_KV_NVFP4;
    case FR_K_MX:
        return s.is_int8 ? FR_KV_MXINT8 : FR_KV_MX;
    case FR_K_NF4:
        return FR_KV_NF4;
    case FR_K_NF4_DQ:
        return FR_KV_NF4_DQ;
    default:
        return FR_KV_UNKNOWN;
    }
}

/*
 * The constants of configuration s for a block: its variant, and what
 * depends on the whole tensor, from the tensor's lo/hi (min(min w, 0),
 * max(max w, 0)): the int tensor scale and zero point (int.c), the fp8
 * tensor scale (fp8.c), the nvfp4 global scale (nvfp4.c), with their
 * reciprocals for the fast forms.
 */
__device__ __forceinline__ fr_kconf fr_kconf_make(const fr_kspec &s, const float *tensor_lohi)
{
    fr_kconf c;
    c.kind = s.kind;
    c.scope = s.scope;
    c.level = s.level;
    c.is_int8 = s.is_int8;
    c.mbits = s.mbits;
    c.emin = s.emin;
    c.emax_elem = s.emax_elem;
    c.variant = (int8_t)fr_kvariant_of(s);
    c.q = (s.kind == FR_K_INT_SYM || s.kind == FR_K_INT_ASYM) ? s.qmax : s.fmax;
    c.inv_q = fr_quot_recip(c.q);
    c.s = c.r = c.z = 0.0f;
    c.limit = 0.5f;
    c.amax = 0.0f;
    if (!tensor_lohi)
        return c;
    const float lo = tensor_lohi[0], hi = tensor_lohi[1];
    const float amax = fr_kamax(lo, hi);
    c.amax = amax;
    if (c.variant == FR_KV_INT_SYM_TENSOR) {
        c.s = amax / s.qmax; /* one fp32 scale: no storage rounding (int.c) */
    } else if (c.variant == FR_KV_INT_ASYM_TENSOR) {
        c.s = (hi - lo) / s.qmax;
        c.z = fr_int_asym_zero(lo, c.s, s.qmax);
    } else if (c.variant == FR_KV_FP8_TENSOR) {
        c.s = fr_fp8_scale(amax, s.fmax);
    } else if (c.variant == FR_KV_NVFP4) {
        c.s = fr_nvfp4_global_scale(amax);
    }
    if (c.variant != FR_KV_NVFP4) {
        c.r = fr_quot_recip(c.s);
        c.limit = fr_int_quot_limit(amax, c.r);
    }
    return c;
}

/* The scale half of variant V's rule for a group with statistic st
 * (fr_kstat<fr_kv_source(V)>; ignored by the tensor scopes): four floats
 * that every lane of the group shares (the family headers say which). */
template <int V> __device__ __forceinline__ float4 fr_kscale(const fr_kconf &c, float2 st)
{
    if constexpr (V == FR_KV_INT_SYM_GROUP || V == FR_KV_INT_SYM_ROW)
        return fr_kint_sym_scale<false>(c, st);
    else if constexpr (V == FR_KV_INT_SYM_TENSOR)
        return fr_kint_sym_scale<true>(c, st);
    else if constexpr (V == FR_KV_INT_ASYM_GROUP || V == FR_KV_INT_ASYM_ROW)
        return fr_kint_asym_scale<false>(c, st);
    else if constexpr (V == FR_KV_INT_ASYM_TENSOR)
        return fr_kint_asym_scale<true>(c, st);
    else if constexpr (V == FR_KV_FP8_TENSOR)
        return fr_kfp8_scale<true>(c, st);
    else if constexpr (V == FR_KV_FP8_ROW || V == FR_KV_FP8_TILE)
        return fr_kfp8_scale<false>(c, st);
    else if constexpr (V == FR_KV_NVFP4)
        return fr_knvfp4_scale(c, st);
    else if constexpr (V == FR_KV_MX || V == FR_KV_MXINT8)
        return fr_kmx_scale(c, st);
    else if constexpr (V == FR_KV_NF4)
        return fr_knf4_scale<false>(c, st);
    else
        return fr_knf4_scale<true>(c, st);
}

/* x^ (when H) and the error terms of a lane's 8 elements under variant V
 * with its group's scale sc (fr_kscale); nf4 is the bucket table
 * (fr_nf4_bucket_make) in shared memory. */
template <int V, bool H>
__device__ __forceinline__ void fr_kapply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                          float4 sc, const fr_nf4_bucket *nf4, fr_kterms &t,
                                          float (&h)[FR_K_PER_LANE])
{
    if constexpr (V == FR_KV_INT_SYM_GROUP || V == FR_KV_INT_SYM_ROW)
        fr_kint_sym_apply<false, H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_INT_SYM_TENSOR)
        fr_kint_sym_apply<true, H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_INT_ASYM_GROUP || V == FR_KV_INT_ASYM_ROW)
        fr_kint_asym_apply<false, H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_INT_ASYM_TENSOR)
        fr_kint_asym_apply<true, H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_FP8_TENSOR || V == FR_KV_FP8_ROW || V == FR_KV_FP8_TILE)
        fr_kfp8_apply<H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_NVFP4)
        fr_knvfp4_apply<H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_MX)
        fr_kmx_apply<false, H>(c, x, sc, t, h);
    else if constexpr (V == FR_KV_MXINT8)
        fr_kmx_apply<true, H>(c, x, sc, t, h);
    else
        fr_knf4_apply<H>(x, sc, nf4, t, h);
}

/* Both halves for one lane (the streaming kernel, the probe). */
template <int V, bool H>
__device__ __forceinline__ void fr_keval(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                         float2 st, const fr_nf4_bucket *nf4, fr_kterms &t,
                                         float (&h)[FR_K_PER_LANE])
{
    fr_kapply<V, H>(c, x, fr_kscale<V>(c, st), nf4, t, h);
}

/*
 * Lanes per scale of variant V as a shift: a lane's scale is entry
 * lane >> shift of its unit's 32 >> shift (groups of 16 << level elements:
 * 2 << level lanes; a row: the whole unit; a 128 x 128 tile: 16 lanes; an
 * nf4-dq block of 64: 8 lanes).
 */
template <int V> __device__ __forceinline__ int fr_kv_lane_shift(int level)
{
    constexpr int src = fr_kv_source(V);
    return src == FR_KSRC_GROUP  ? level + 1
           : src == FR_KSRC_TILE ? 4
           : src == FR_KSRC_DQ   ? 3
                                 : 5; /* a row, or the tensor constants */
}

/* Every variant, for the host's choice of a kernel instance (one per
 * variant: each gets the registers its own code needs, and the
 * instruction cache holds one variant's code). */
#define FR_KV_FOR_EACH(X)                                                                    \
    X(FR_KV_INT_SYM_GROUP) X(FR_KV_INT_SYM_ROW) X(FR_KV_INT_SYM_TENSOR)                        \
    X(FR_KV_INT_ASYM_GROUP) X(FR_KV_INT_ASYM_ROW) X(FR_KV_INT_ASYM_TENSOR)                     \
    X(FR_KV_FP8_TENSOR) X(FR_KV_FP8_ROW) X(FR_KV_FP8_TILE) X(FR_KV_NVFP4) X(FR_KV_MX)          \
    X(FR_KV_MXINT8) X(FR_KV_NF4) X(FR_KV_NF4_DQ)

#endif
