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

/* Offset of level L (group size 16 << L) in a unit's 31 group statistics:
 * 16 groups of 16, then 8 of 32, 4 of 64, 2 of 128, 1 of 256. */
__device__ __forceinline__ int fr_klevel_index(int level, int lane)
{
    return (32 - (32 >> level)) + (lane >> (level + 1));
}

__device__ __forceinline__ fr_minifloat fr_kelem_format(const fr_kspec &s)
{
    fr_minifloat f;
    f.mbits = s.mbits;
    f.emin = s.emin;
    f.max = s.fmax;
    return f;
}

/* Where one lane's 8 elements sit, and the statistics around them. */
typedef struct fr_klane {
    const float *group_lo; /* shared: the unit's 31 group minima (then maxima at +32) */
    int lane;
    int64_t row;           /* chunk-local */
    int64_t col;           /* first of the 8 columns */
    int64_t cols;
    const float *row_lohi; /* chunk-local rows, or NULL */
    const float *tile_amax; /* chunk-local tiles, or NULL */
    int64_t tiles_per_row;
    const float *nf4_scale; /* chunk-local blocks, or NULL */
    int64_t segs_per_row;
} fr_klane;

/* lo/hi of the lane's group at `level`, or of its row. */
__device__ __forceinline__ void fr_kbounds(const fr_kspec &s, const fr_klane &L, float &lo,
                                           float &hi)
{
    if (s.scope == FR_KS_ROW) {
        lo = L.row_lohi[2 * L.row];
        hi = L.row_lohi[2 * L.row + 1];
    } else {
        int g = fr_klevel_index(s.level, L.lane);
        lo = L.group_lo[g];
        hi = L.group_lo[32 + g];
    }
}

#endif
