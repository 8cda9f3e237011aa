/*
 * Device helpers every family shares: loading a lane's 8 elements in the
 * stored dtype, the group/row/tile statistics around them.
 */
#ifndef FR_KSTATS_CUH
#define FR_KSTATS_CUH

#include <cuda_fp16.h>

#include "kcommon.cuh"
#include "quantizers/numerics.h"

/* 32-bit words holding the raw bits of a lane's 8 elements. */
template <int DT> struct fr_kraw_words {
    static constexpr int n = DT == FRONTIER_DTYPE_F32 ? 8 : 4;
};

/*
 * Loads the raw bits of elements [col, col + 8) of `row` (zeros past cols or
 * when !ok). vec: cols % 8 == 0 and w is 16-byte aligned, so the 8 elements
 * are one (16-bit) or two (f32) aligned 16-byte loads, entirely inside the
 * row or entirely past its end.
 */
template <int DT>
__device__ __forceinline__ void fr_kload(const void *__restrict__ w, int64_t cols, int64_t row,
                                         int64_t col, bool ok, bool vec,
                                         uint32_t (&r)[fr_kraw_words<DT>::n])
{
#pragma unroll
    for (int k = 0; k < fr_kraw_words<DT>::n; k++)
        r[k] = 0u;
    if (!ok || col >= cols)
        return;
    const int64_t base = row * cols + col;
    if (vec) {
        const uint4 *p = reinterpret_cast<const uint4 *>(w) + (DT == FRONTIER_DTYPE_F32 ? base / 4 : base / 8);
        uint4 a = __ldg(p);
        r[0] = a.x;
        r[1] = a.y;
        r[2] = a.z;
        r[3] = a.w;
        if constexpr (DT == FRONTIER_DTYPE_F32) {
            uint4 b = __ldg(p + 1);
            r[4] = b.x;
            r[5] = b.y;
            r[6] = b.z;
            r[7] = b.w;
        }
        return;
    }
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++) {
        if (col + e < cols) {
            if constexpr (DT == FRONTIER_DTYPE_F32) {
                r[e] = __ldg(reinterpret_cast<const uint32_t *>(w) + base + e);
            } else {
                uint32_t v = __ldg(reinterpret_cast<const unsigned short *>(w) + base + e);
                r[e >> 1] |= v << (16 * (e & 1));
            }
        }
    }
}

/* a / b for non-negative operands, in 32 bits when they fit (a 64-bit
 * division is a long software sequence on the GPU). */
__device__ __forceinline__ int64_t fr_kdiv(int64_t a, int64_t b)
{
    if (((uint64_t)a | (uint64_t)b) < 4294967296ull)
        return (int64_t)((uint32_t)a / (uint32_t)b);
    return a / b;
}

/* Raw bits -> float32, exactly (bf16: the upper half of an f32; f16: the
 * hardware conversion, exact for every binary16 including subnormals). */
template <int DT>
__device__ __forceinline__ void fr_kconvert(const uint32_t (&r)[fr_kraw_words<DT>::n],
                                            float (&x)[FR_K_PER_LANE])
{
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++) {
        if constexpr (DT == FRONTIER_DTYPE_F32) {
            x[e] = __uint_as_float(r[e]);
        } else {
            uint32_t half_bits = (e & 1) ? (r[e >> 1] >> 16) : (r[e >> 1] & 0xffffu);
            if constexpr (DT == FRONTIER_DTYPE_BF16)
                x[e] = __uint_as_float(half_bits << 16);
            else
                x[e] = __half2float(__ushort_as_half((unsigned short)half_bits));
        }
    }
}

/* One element of a device tensor of dtype dt, as float32. */
__device__ __forceinline__ float fr_kelem(const void *__restrict__ w, int dt, int64_t i)
{
    if (dt == FRONTIER_DTYPE_F32)
        return __ldg(reinterpret_cast<const float *>(w) + i);
    uint32_t h = __ldg(reinterpret_cast<const unsigned short *>(w) + i);
    if (dt == FRONTIER_DTYPE_BF16)
        return __uint_as_float(h << 16);
    return __half2float(__ushort_as_half((unsigned short)h));
}

/* min(min x, 0) and max(max x, 0) with the CPU reference's comparisons, so
 * a -0.0 never becomes a bound (int.c: `lo = x < lo ? x : lo`). */
__device__ __forceinline__ void fr_klohi(float x, float &lo, float &hi)
{
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
}

/* amax = max|x| from the bounds (int.c: `-lo > hi ? -lo : hi`). */
__device__ __forceinline__ float fr_kamax(float lo, float hi)
{
    return -lo > hi ? -lo : hi;
}

/*
 * Per-configuration constants, computed once per block from the spec and
 * the tensor statistics (fr_kconf_make in kquant.cuh), read warp-uniformly
 * from shared memory.
 */
typedef struct fr_kconf {
    /* from fr_kspec; variant: enum fr_kvariant (kquant.cuh). Bytes, so
     * that 128 configurations' constants take 4.5 KiB of shared memory. */
    int8_t variant, level, is_int8, mbits, emin, emax_elem, bits, spare;
    float q;     /* int: qmax (sym) or 2^b - 1 (asym); fp8/mx: element max */
    float inv_q; /* fr_quot_recip(q): the int scale quotient amax / q */
    float s, r;  /* tensor scope: the scale and fr_quot_recip(s); nvfp4: s = gs */
    float limit; /* int tensor scope: fr_int_quot_limit(tensor amax, r) */
    float z;     /* int asym tensor scope: the zero point */
    float amax;  /* tensor scope: the tensor's amax */
} fr_kconf;

/* A lane's error terms over its 8 elements of one unit, in float:
 * sum (x - x^)^2, sum x^2 hat, sum x x^, max |x - x^|. */
typedef struct fr_kterms {
    float se, sh, sd, me;
} fr_kterms;

/* The terms from the reconstruction (fused multiply-adds: the error sums
 * are specified to 1e-6, not to the bit; docs/gpu.md, "Reductions"). */
__device__ __forceinline__ void fr_kterms_of(const float (&x)[FR_K_PER_LANE],
                                             const float (&h)[FR_K_PER_LANE], fr_kterms &t)
{
    float se = 0.0f, sh = 0.0f, sd = 0.0f, me = 0.0f;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++) {
        const float d = x[e] - h[e];
        se = fmaf(d, d, se);
        sh = fmaf(h[e], h[e], sh);
        sd = fmaf(x[e], h[e], sd);
        me = fmaxf(me, fabsf(d));
    }
    t.se = se;
    t.sh = sh;
    t.sd = sd;
    t.me = me;
}

/*
 * The test of a lane's "near" flag before the fallback to the definitions.
 * bench/sass/count.sh builds with FR_PROBE_FALLBACK_TRAP to count the fast
 * path's instructions alone (the fallback becomes a trap).
 */
#ifdef FR_PROBE_FALLBACK_TRAP
#define FR_KNEAR(flag) ((flag) ? (__trap(), false) : false)
#else
#define FR_KNEAR(flag) (flag)
#endif

/* Where a configuration's statistic comes from (the template parameter of
 * the unit loops): the lane's group in the unit, its row, its 128 x 128
 * tile, the nf4-dq scale of its block, or nothing (tensor constants). */
enum fr_ksource { FR_KSRC_GROUP = 0, FR_KSRC_ROW, FR_KSRC_TILE, FR_KSRC_DQ, FR_KSRC_NONE };

/* Offset of level L (group size 16 << L) in a unit's 31 group statistics:
 * 16 groups of 16, then 8 of 32, 4 of 64, 2 of 128, 1 of 256. */
__device__ __forceinline__ int fr_klevel_index(int level, int lane)
{
    return (32 - (32 >> level)) + (lane >> (level + 1));
}

/* The pre-pass statistics a launch reads (chunk-local), or NULL. */
typedef struct fr_kstatbufs {
    const float2 *row_lohi;
    const float *tile_amax;
    const float *nf4_scale;
    int64_t cols, tpr, spr;
} fr_kstatbufs;

/*
 * The statistic of a lane's 8 elements at (row, col) as (lo, hi): lo/hi of
 * the group or row; (0, amax) of the tile; (0, a') for nf4-dq. `group` is
 * the unit's lo/hi of the lane's group at the configuration's level (only
 * read for FR_KSRC_GROUP). Lanes past the row end hold zeros and have no
 * tile or nf4 block of their own: (0, 0).
 */
template <int SRC>
__device__ __forceinline__ float2 fr_kstat(const fr_kstatbufs &b, int64_t row, int64_t col,
                                           float2 group)
{
    if constexpr (SRC == FR_KSRC_GROUP) {
        return group;
    } else if constexpr (SRC == FR_KSRC_ROW) {
        return b.row_lohi[row];
    } else if constexpr (SRC == FR_KSRC_TILE) {
        return make_float2(0.0f, col < b.cols ? b.tile_amax[(row >> 7) * b.tpr + (col >> 7)] : 0.0f);
    } else if constexpr (SRC == FR_KSRC_DQ) {
        return make_float2(0.0f, col < b.cols ? b.nf4_scale[row * b.spr + (col >> 6)] : 0.0f);
    } else {
        return make_float2(0.0f, 0.0f);
    }
}

/*
 * What the pre-pass must gather for a variant (fr_kneeds_of): per-row
 * bounds, the tensor's bounds (reduced from the rows), the amax of 128 x 128
 * tiles, the nf4 double-quantized block scales.
 */
enum fr_kneed { FR_KNEED_ROWS = 1, FR_KNEED_TENSOR = 2, FR_KNEED_TILES = 4, FR_KNEED_NF4DQ = 8 };

/*
 * The traits of a variant (one family x scope): what a family's header
 * defines for each of its variants, by deriving from this base and
 * overriding what differs (kernels/int.cuh is the fullest example):
 *
 *   source              where a group's statistic comes from (fr_ksource)
 *   needs               FR_KNEED_* bits of the pre-pass
 *   nf4_table           the kernels build the nf4 bucket table in shared memory
 *   scale_reciprocal    fr_kconf_make derives r and limit from the tensor scale s
 *   tensor_constants()  what depends on the whole tensor (lo, hi, amax):
 *                       c.s, c.z; nothing for per-group scales
 *   scale(c, st)        the scale half of the rule: four floats a group shares
 *   apply<H>(...)       the rule on a lane's 8 elements with that scale,
 *                       giving the error terms and (when H) x^
 */
typedef struct fr_nf4_bucket fr_nf4_bucket; /* quantizers/nf4_block.h */

struct fr_kv_base {
    static constexpr int needs = 0;
    static constexpr bool nf4_table = false;
    static constexpr bool scale_reciprocal = true;
    __device__ static __forceinline__ void tensor_constants(fr_kconf &c, float lo, float hi,
                                                            float amax)
    {
        (void)c, (void)lo, (void)hi, (void)amax;
    }
};

#endif
