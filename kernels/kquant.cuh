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
 * of the unit loops: a kernel switches on it once per configuration
 * (warp-uniform) and runs a loop specialised for it over its units.
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
    c.variant = fr_kvariant_of(s);
    c.q = (s.kind == FR_K_INT_SYM || s.kind == FR_K_INT_ASYM) ? s.qmax : s.fmax;
    c.inv_q = fr_quot_recip(c.q);
    c.s = c.r = c.z = 0.0f;
    c.limit = 0.5f;
    c.amax = c.pad = 0.0f;
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

/* x^ (when H) and the error terms of a lane's 8 elements under variant V;
 * st is the statistic fr_kstat<fr_kv_source(V)> gave; nf4 is the bucket
 * table (fr_nf4_bucket_make) in shared memory. */
template <int V, bool H>
__device__ __forceinline__ void fr_keval(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                         float2 st, const fr_nf4_bucket *nf4, fr_kterms &t,
                                         float (&h)[FR_K_PER_LANE])
{
    if constexpr (V == FR_KV_INT_SYM_GROUP || V == FR_KV_INT_SYM_ROW)
        fr_kint_sym<false, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_INT_SYM_TENSOR)
        fr_kint_sym<true, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_INT_ASYM_GROUP || V == FR_KV_INT_ASYM_ROW)
        fr_kint_asym<false, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_INT_ASYM_TENSOR)
        fr_kint_asym<true, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_FP8_TENSOR)
        fr_kfp8<true, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_FP8_ROW || V == FR_KV_FP8_TILE)
        fr_kfp8<false, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_NVFP4)
        fr_knvfp4<H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_MX)
        fr_kmx<false, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_MXINT8)
        fr_kmx<true, H>(c, x, st, t, h);
    else if constexpr (V == FR_KV_NF4)
        fr_knf4<false, H>(c, x, st, nf4, t, h);
    else
        fr_knf4<true, H>(c, x, st, nf4, t, h);
}

/* A compile-time variant for the dispatch below. */
template <int V> struct fr_kvc {
    static constexpr int value = V;
};

/* Calls f(fr_kvc<V>()) for the runtime variant v (warp-uniform); false for
 * an unknown variant. */
template <typename F> __device__ __forceinline__ bool fr_kv_dispatch(int v, F &&f)
{
    switch (v) {
    case FR_KV_INT_SYM_GROUP: f(fr_kvc<FR_KV_INT_SYM_GROUP>()); return true;
    case FR_KV_INT_SYM_ROW: f(fr_kvc<FR_KV_INT_SYM_ROW>()); return true;
    case FR_KV_INT_SYM_TENSOR: f(fr_kvc<FR_KV_INT_SYM_TENSOR>()); return true;
    case FR_KV_INT_ASYM_GROUP: f(fr_kvc<FR_KV_INT_ASYM_GROUP>()); return true;
    case FR_KV_INT_ASYM_ROW: f(fr_kvc<FR_KV_INT_ASYM_ROW>()); return true;
    case FR_KV_INT_ASYM_TENSOR: f(fr_kvc<FR_KV_INT_ASYM_TENSOR>()); return true;
    case FR_KV_FP8_TENSOR: f(fr_kvc<FR_KV_FP8_TENSOR>()); return true;
    case FR_KV_FP8_ROW: f(fr_kvc<FR_KV_FP8_ROW>()); return true;
    case FR_KV_FP8_TILE: f(fr_kvc<FR_KV_FP8_TILE>()); return true;
    case FR_KV_NVFP4: f(fr_kvc<FR_KV_NVFP4>()); return true;
    case FR_KV_MX: f(fr_kvc<FR_KV_MX>()); return true;
    case FR_KV_MXINT8: f(fr_kvc<FR_KV_MXINT8>()); return true;
    case FR_KV_NF4: f(fr_kvc<FR_KV_NF4>()); return true;
    case FR_KV_NF4_DQ: f(fr_kvc<FR_KV_NF4_DQ>()); return true;
    default: return false;
    }
}

#endif
