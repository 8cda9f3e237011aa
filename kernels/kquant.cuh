/*
 * Device side of the built-in formats: one configuration applied to a
 * lane's 8 elements of one unit. Every rounding rule is the CPU reference's
 * own FR_HD definition or its proven-equal fast form (the _group.h and
 * _block.h headers of quantizers/, numerics.h "Fast forms"), called from the
 * traits of its variant in kernels/<family>.cuh: the kernels decide only
 * where each statistic comes from. Built with -fmad=false and IEEE
 * division, so the dequantized values are the CPU's, bit for bit.
 *
 * A configuration's *variant* (family, scope) is a compile-time parameter
 * of the kernels: the host launches the instance of the variant (one
 * launch per variant, FR_KV_FOR_EACH), so a kernel holds one variant's
 * code. Each rule comes in two halves, the group's scale (fr_kscale) and
 * its application to a lane's elements (fr_kapply). The variants are the
 * union of the families' lists (FR_KVARIANTS_<family> in each family
 * header), in the order of quantizers/families.h; nothing here names a
 * family.
 */
#ifndef FR_KQUANT_CUH
#define FR_KQUANT_CUH

#include "fp8.cuh"
#include "int.cuh"
#include "kstats.cuh"
#include "mx.cuh"
#include "nf4.cuh"
#include "nvfp4.cuh"
#include "quantizers/families.h"

/* Each family's list of variants, X(name, (traits)), expanded through
 * FR_KV_X: the family table's macro passes one argument to its X, so the
 * variant-level macro is named FR_KV_X and defined around each use. */
#define FR_KV_OF_FAMILY(ID, stem, ggml) FR_KVARIANTS_##stem(FR_KV_X)

/* The variants, numbered in table order. */
#define FR_KV_STRIP(...) __VA_ARGS__
#define FR_KV_ENUM(name, traits) FR_KV_##name,
#define FR_KV_X FR_KV_ENUM
enum fr_kvariant {
    FR_BUILTIN_FAMILIES(FR_KV_OF_FAMILY) FR_KV_COUNT,
    FR_KV_UNKNOWN = -1
};
#undef FR_KV_X

/* fr_kv<V>: the traits of variant V (kstats.cuh, fr_kv_base). */
template <int V> struct fr_kv;
#define FR_KV_TRAITS(name, traits)                                                           \
    template <> struct fr_kv<FR_KV_##name> : FR_KV_STRIP traits {};
#define FR_KV_X FR_KV_TRAITS
FR_BUILTIN_FAMILIES(FR_KV_OF_FAMILY)
#undef FR_KV_X

/* Where variant V's statistic comes from (enum fr_ksource). */
template <int V> __host__ __device__ constexpr int fr_kv_source()
{
    return fr_kv<V>::source;
}

/* What the pre-pass gathers for each variant (FR_KNEED_*), by variant. */
#define FR_KV_NEEDS(name, traits) fr_kv<FR_KV_##name>::needs,
#define FR_KV_X FR_KV_NEEDS
static constexpr int fr_kv_needs_table[FR_KV_COUNT] = {FR_BUILTIN_FAMILIES(FR_KV_OF_FAMILY)};
#undef FR_KV_X

/*
 * The constants of configuration s for a block: its variant's fields, and
 * what depends on the whole tensor, from the tensor's lo/hi (min(min w, 0),
 * max(max w, 0)): the variant's tensor_constants (the int tensor scale and
 * zero point, the fp8 tensor scale, the nvfp4 global scale) and the
 * reciprocals of the fast forms.
 */
template <int V>
__device__ __forceinline__ fr_kconf fr_kconf_make(const fr_kspec &s, const float *tensor_lohi)
{
    fr_kconf c;
    c.variant = s.variant;
    c.level = s.level;
    c.is_int8 = s.is_int8;
    c.mbits = s.mbits;
    c.emin = s.emin;
    c.emax_elem = s.emax_elem;
    c.bits = s.bits;
    c.spare = 0;
    c.q = s.q;
    c.inv_q = fr_quot_recip(c.q);
    c.s = c.r = c.z = 0.0f;
    c.limit = 0.5f;
    c.amax = 0.0f;
    if (!tensor_lohi)
        return c;
    const float lo = tensor_lohi[0], hi = tensor_lohi[1];
    const float amax = fr_kamax(lo, hi);
    c.amax = amax;
    fr_kv<V>::tensor_constants(c, lo, hi, amax);
    if constexpr (fr_kv<V>::scale_reciprocal) {
        c.r = fr_quot_recip(c.s);
        c.limit = fr_int_quot_limit(amax, c.r);
    }
    return c;
}

/* The scale half of variant V's rule for a group with statistic st
 * (fr_kstat<fr_kv_source<V>()>; ignored by the tensor scopes): four floats
 * that every lane of the group shares (the family headers say which). */
template <int V> __device__ __forceinline__ float4 fr_kscale(const fr_kconf &c, float2 st)
{
    return fr_kv<V>::scale(c, st);
}

/* x^ (when H) and the error terms of a lane's 8 elements under variant V
 * with its group's scale sc (fr_kscale); nf4 is the bucket table
 * (fr_nf4_bucket_make) in shared memory when the variant uses it. */
template <int V, bool H>
__device__ __forceinline__ void fr_kapply(const fr_kconf &c, const float (&x)[FR_K_PER_LANE],
                                          float4 sc, const fr_nf4_bucket *nf4, fr_kterms &t,
                                          float (&h)[FR_K_PER_LANE])
{
    fr_kv<V>::template apply<H>(c, x, sc, nf4, t, h);
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
    constexpr int src = fr_kv_source<V>();
    return src == FR_KSRC_GROUP  ? level + 1
           : src == FR_KSRC_TILE ? 4
           : src == FR_KSRC_DQ   ? 3
                                 : 5; /* a row, or the tensor constants */
}

#endif
