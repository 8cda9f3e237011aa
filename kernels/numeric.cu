/*
 * The numeric-flag reduction (kernels/numeric.h): per group shape, a warp
 * takes pieces of group rows (G lanes per group, 32 / G groups side by side
 * when groups are narrower than a warp's 256 elements), each lane 8
 * consecutive elements at a time (1 when the columns do not allow 16-byte
 * loads), the lanes' (amax, hi, lo) reduced with shuffles. A piece that is a
 * whole group (one row, at most FR_KNUM_PIECE columns) goes straight into
 * the lane's running extremes; the pieces of a larger group are merged in
 * its (amax, hi, -lo) slot with atomicMax on the float bits (all three are
 * >= +0, whose bits order like their values), and end() reduces the slots.
 * The warps' extremes meet in the shape's four words, again by atomicMax /
 * atomicMin on bits: maxima and minima, exact in any order. The usual
 * tensors take one fused read for all their shapes instead (below).
 */
#include <stdlib.h>
#include <string.h>

#include "kstats.cuh"
#include "numeric.h"

#define FR_KNUM_INF_BITS 0x7f800000u

/* One shape's geometry and its device words. */
typedef struct fr_knum_shape {
    int64_t tr, tc, ntc;  /* tile rows, tile columns, groups per row */
    int g, t;             /* lanes per group, groups per warp */
    int64_t p, width;     /* pieces per group row, columns per piece */
    int64_t ipr;          /* warp items per row */
    int multi;            /* a group spans several pieces: slots in acc */
    int64_t n_groups;     /* multi: groups of the whole tensor */
    size_t acc_off;       /* multi: offset of its slots in acc (uint32) */
} fr_knum_shape;

struct fr_cuda_numeric {
    cudaStream_t stream;
    int64_t rows, cols;
    int fused;             /* every shape in one read (fr_knum_fusable) */
    size_t n_shapes, shapes_cap;
    fr_knum_shape *shapes;
    unsigned *res;         /* device: head, then 4 words per shape */
    size_t res_bytes;
    unsigned *acc;         /* device: 3 words per group of the multi shapes */
    size_t acc_bytes;
};

typedef struct fr_knum_args {
    const void *w;
    int dtype;
    int64_t cols, row0, chunk_rows;
    int64_t tr, tc, ntc, p, width, ipr;
    int g, t, multi;
    unsigned *acc;                 /* multi: this shape's slots */
    unsigned *ext;                 /* this shape's four words, or NULL (facts only) */
    fr_cuda_numeric_head *head;    /* the tensor facts, or NULL */
} fr_knum_args;

__device__ __forceinline__ void fr_knum_extremes(float a, float range, float &max_a, float &min_a,
                                                 float &max_r, float &min_r)
{
    max_a = a > max_a ? a : max_a;
    if (a > 0.0f && a < min_a)
        min_a = a;
    max_r = range > max_r ? range : max_r;
    if (range > 0.0f && range < min_r)
        min_r = range;
}

/* The warp's running values to the shape's words and the facts, lane 0. */
__device__ __forceinline__ void fr_knum_flush(const fr_knum_args &a, int lane, float max_a,
                                              float min_a, float max_r, float min_r,
                                              unsigned long long nz, unsigned long long sub,
                                              unsigned long long negz, unsigned maxmag)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, max_a, off);
        max_a = o > max_a ? o : max_a;
        o = __shfl_xor_sync(0xffffffffu, min_a, off);
        min_a = o < min_a ? o : min_a;
        o = __shfl_xor_sync(0xffffffffu, max_r, off);
        max_r = o > max_r ? o : max_r;
        o = __shfl_xor_sync(0xffffffffu, min_r, off);
        min_r = o < min_r ? o : min_r;
        nz += __shfl_xor_sync(0xffffffffu, nz, off);
        sub += __shfl_xor_sync(0xffffffffu, sub, off);
        negz += __shfl_xor_sync(0xffffffffu, negz, off);
        unsigned m = __shfl_xor_sync(0xffffffffu, maxmag, off);
        maxmag = m > maxmag ? m : maxmag;
    }
    if (lane != 0)
        return;
    if (a.ext) {
        atomicMax(&a.ext[0], __float_as_uint(max_a));
        atomicMin(&a.ext[1], __float_as_uint(min_a));
        atomicMax(&a.ext[2], __float_as_uint(max_r));
        atomicMin(&a.ext[3], __float_as_uint(min_r));
    }
    if (a.head) {
        atomicAdd(&a.head->n_nonzero, nz);
        atomicAdd(&a.head->n_subnormal, sub);
        atomicAdd(&a.head->n_neg_zero, negz);
        atomicMax(&a.head->max_mag, maxmag);
    }
}

/* The (amax, hi, -lo) of a group's piece into its slot (multi shapes). */
__device__ __forceinline__ void fr_knum_slot(unsigned *acc, int64_t slot, float amax, float hi,
                                             float lo)
{
    if (slot < 0)
        return;
    unsigned *p = acc + 3 * slot;
    atomicMax(&p[0], __float_as_uint(amax));
    atomicMax(&p[1], __float_as_uint(hi));
    atomicMax(&p[2], __float_as_uint(0.0f - lo)); /* +0, never -0 */
}

/*
 * One shape over one chunk. Each warp takes a contiguous range of warp
 * items (one piece of up to 32 / G groups of a row), each lane E = 8
 * consecutive elements at a time (one or two 16-byte loads: VEC, when
 * tile_cols and cols are multiples of 8 and the chunk is aligned) or 1.
 * A lane group's leader keeps the last multi-piece slot it touched and
 * merges the next piece into it locally while the slot stays the same (a
 * row's pieces, a tensor's rows), so the slots see few atomics.
 */
template <int DT, bool VEC>
static __global__ void __launch_bounds__(FR_K_THREADS) fr_knum_chunk_kernel(const fr_knum_args a)
{
    constexpr int E = VEC ? FR_K_PER_LANE : 1;
    const int lane = threadIdx.x & 31;
    const int sub_lane = lane % a.g, grp = lane / a.g;
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    const int64_t warp = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5);
    const int64_t n_items = a.chunk_rows * a.ipr;
    const int64_t per_warp = n_items / warps + (n_items % warps != 0);
    const int64_t item0 = warp * per_warp;
    const int64_t item1 = item0 + per_warp < n_items ? item0 + per_warp : n_items;
    float max_a = 0.0f, min_a = __uint_as_float(FR_KNUM_INF_BITS);
    float max_r = 0.0f, min_r = __uint_as_float(FR_KNUM_INF_BITS);
    unsigned long long nz = 0, sub = 0, negz = 0;
    unsigned maxmag = 0;
    int64_t pend = -1; /* multi: the slot of the pending piece */
    float p_amax = 0.0f, p_hi = 0.0f, p_lo = 0.0f;
    /* every lane of a warp runs the same items (the shuffles need them all) */
    for (int64_t item = item0; item < item1; item++) {
        const int64_t r = fr_kdiv(item, a.ipr);
        const int64_t rem = item - r * a.ipr;
        const int64_t tg = fr_kdiv(rem, a.p);
        const int64_t piece = rem - tg * a.p;
        const int64_t j = tg * a.t + grp;
        float amax = 0.0f, hi = 0.0f, lo = 0.0f; /* numeric_flags.c's accumulators */
        if (j < a.ntc) {
            const int64_t c0 = j * a.tc + piece * a.width;
            int64_t c1 = c0 + a.width;
            if (c1 > (j + 1) * a.tc)
                c1 = (j + 1) * a.tc;
            if (c1 > a.cols)
                c1 = a.cols;
            for (int64_t c = c0 + (int64_t)sub_lane * E; c < c1; c += (int64_t)a.g * E) {
                float x[E];
                if constexpr (VEC) {
                    uint32_t raw[fr_kraw_words<DT>::n];
                    fr_kload<DT>(a.w, a.cols, r, c, true, true, raw);
                    fr_kconvert<DT>(raw, x);
                } else {
                    x[0] = fr_kelem(a.w, DT, r * a.cols + c);
                }
#pragma unroll
                for (int e = 0; e < E; e++) {
                    const float ax = fabsf(x[e]);
                    amax = ax > amax ? ax : amax;
                    hi = x[e] > hi ? x[e] : hi;
                    lo = x[e] < lo ? x[e] : lo;
                    if (a.head) {
                        const unsigned u = __float_as_uint(x[e]), mag = u & 0x7fffffffu;
                        maxmag = mag > maxmag ? mag : maxmag;
                        if (mag == 0) {
                            negz += u != 0;
                        } else {
                            nz++;
                            sub += mag < 0x00800000u;
                        }
                    }
                }
            }
        }
        /* the G lanes of a group (aligned, so xor offsets below G stay inside it) */
        for (int off = 1; off < a.g; off <<= 1) {
            float o = __shfl_xor_sync(0xffffffffu, amax, off);
            amax = o > amax ? o : amax;
            o = __shfl_xor_sync(0xffffffffu, hi, off);
            hi = o > hi ? o : hi;
            o = __shfl_xor_sync(0xffffffffu, lo, off);
            lo = o < lo ? o : lo;
        }
        if (sub_lane == 0 && j < a.ntc && a.ext) {
            if (!a.multi) {
                fr_knum_extremes(amax, hi - lo, max_a, min_a, max_r, min_r);
            } else {
                const int64_t slot = fr_kdiv(a.row0 + r, a.tr) * a.ntc + j;
                if (slot != pend) {
                    fr_knum_slot(a.acc, pend, p_amax, p_hi, p_lo);
                    pend = slot;
                    p_amax = amax;
                    p_hi = hi;
                    p_lo = lo;
                } else {
                    p_amax = amax > p_amax ? amax : p_amax;
                    p_hi = hi > p_hi ? hi : p_hi;
                    p_lo = lo < p_lo ? lo : p_lo;
                }
            }
        }
    }
    if (a.multi && a.ext)
        fr_knum_slot(a.acc, pend, p_amax, p_hi, p_lo);
    fr_knum_flush(a, lane, max_a, min_a, max_r, min_r, nz, sub, negz, maxmag);
}

/* The multi-piece groups' slots into the shape's extremes. */
static __global__ void __launch_bounds__(FR_K_THREADS)
    fr_knum_groups_kernel(const unsigned *__restrict__ acc, int64_t n_groups, unsigned *ext)
{
    float max_a = 0.0f, min_a = __uint_as_float(FR_KNUM_INF_BITS);
    float max_r = 0.0f, min_r = __uint_as_float(FR_KNUM_INF_BITS);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n_groups; k += stride) {
        const float amax = __uint_as_float(acc[3 * k]), hi = __uint_as_float(acc[3 * k + 1]);
        const float lo = 0.0f - __uint_as_float(acc[3 * k + 2]);
        fr_knum_extremes(amax, hi - lo, max_a, min_a, max_r, min_r);
    }
    fr_knum_args a = {};
    a.ext = ext;
    fr_knum_flush(a, threadIdx.x & 31, max_a, min_a, max_r, min_r, 0, 0, 0, 0);
}

/*
 * The fused read: every shape of a tensor in one pass, when the columns
 * are whole 256-element pieces and every shape's tile_cols is a power of
 * two from 8 to 256 or a multiple of 256 (the group shapes of the
 * built-ins; fr_knum_fusable). A warp item is one 256-column piece of a
 * row, a lane its 8 consecutive elements; xor shuffles over 1, 2, ..., 16
 * lanes give each lane its aligned group's (amax, hi, lo) at 16, 32, ...,
 * 256 elements (levels 1..5; level 0 is the lane's own 8). A one-row group
 * within a piece is complete there: the lane that leads it keeps the
 * running extremes of its level (one set per level, whichever shapes use
 * it). A group wider than a piece or of several rows goes to its slot,
 * through a pending slot per such shape, as the per-shape kernel does. The
 * warp reads its next piece before it reduces the current one.
 */
#define FR_KNUM_FUSED_MAX 8
#define FR_KNUM_FUSED_MULTI 3   /* shapes with slots (row, tensor, 128 x 128) */
#define FR_KNUM_LEVELS 6
#define FR_KNUM_FUSED_PIECE 256 /* 32 lanes x FR_K_PER_LANE */

typedef struct fr_knum_fused_args {
    const void *w;
    int64_t cols, row0, chunk_rows;
    int n;                              /* shapes */
    int level[FR_KNUM_FUSED_MAX];       /* groups of 8 << level elements, 0..5 (5: 256 and more) */
    int multi[FR_KNUM_FUSED_MAX];       /* with slots */
    unsigned direct_levels;             /* bit L: a shape without slots at level L */
    int n_multi;                        /* the shapes with slots, in order */
    int m_level[FR_KNUM_FUSED_MULTI];
    int64_t m_tr[FR_KNUM_FUSED_MULTI], m_tc[FR_KNUM_FUSED_MULTI], m_ntc[FR_KNUM_FUSED_MULTI];
    unsigned *m_acc[FR_KNUM_FUSED_MULTI];
    unsigned *ext;                      /* the shapes' words, four each */
    fr_cuda_numeric_head *head;
} fr_knum_fused_args;

/* One lane's running values: the extremes per level, the pending slots. */
typedef struct fr_knum_run {
    float ext[FR_KNUM_LEVELS][4];       /* max amax, min nonzero amax, max range, min nonzero range */
    int32_t pend[FR_KNUM_FUSED_MULTI];  /* -1: none (fr_knum_fusable: slots fit 31 bits) */
    float p[FR_KNUM_FUSED_MULTI][3];    /* amax, hi, lo of the pending slot */
} fr_knum_run;

__device__ __forceinline__ void fr_knum_pend(fr_knum_run &u, int m, unsigned *acc, int32_t slot,
                                             float amax, float hi, float lo)
{
    if (slot != u.pend[m]) {
        fr_knum_slot(acc, u.pend[m], u.p[m][0], u.p[m][1], u.p[m][2]);
        u.pend[m] = slot;
        u.p[m][0] = amax;
        u.p[m][1] = hi;
        u.p[m][2] = lo;
    } else {
        u.p[m][0] = amax > u.p[m][0] ? amax : u.p[m][0];
        u.p[m][1] = hi > u.p[m][1] ? hi : u.p[m][1];
        u.p[m][2] = lo < u.p[m][2] ? lo : u.p[m][2];
    }
}

/* The level-L values of lane `lane` (its group's when it leads it). */
template <int L>
__device__ __forceinline__ void fr_knum_take(const fr_knum_fused_args &a, fr_knum_run &u, int lane,
                                             int64_t r, int64_t c, float amax, float hi, float lo)
{
    if (lane & ((1 << L) - 1))
        return; /* not its group's first lane */
    if ((a.direct_levels >> L) & 1u)
        fr_knum_extremes(amax, hi - lo, u.ext[L][0], u.ext[L][1], u.ext[L][2], u.ext[L][3]);
#pragma unroll
    for (int m = 0; m < FR_KNUM_FUSED_MULTI; m++)
        if (m < a.n_multi && a.m_level[m] == L)
            fr_knum_pend(u, m, a.m_acc[m],
                         (int32_t)(fr_kdiv(a.row0 + r, a.m_tr[m]) * a.m_ntc[m] +
                                   fr_kdiv(c, a.m_tc[m])),
                         amax, hi, lo);
}

/* The lanes' (amax, hi, lo) one level up: groups twice as wide. */
template <int L>
__device__ __forceinline__ void fr_knum_up(float &amax, float &hi, float &lo)
{
    const int off = 1 << (L - 1);
    float o = __shfl_xor_sync(0xffffffffu, amax, off);
    amax = o > amax ? o : amax;
    o = __shfl_xor_sync(0xffffffffu, hi, off);
    hi = o > hi ? o : hi;
    o = __shfl_xor_sync(0xffffffffu, lo, off);
    lo = o < lo ? o : lo;
}

/*
 * The block's running values into the result words: each warp reduces its
 * lanes with shuffles, the warps meet in shared memory, and one warp makes
 * the atomics, once per block (the same words are every block's: a warp
 * each would queue thousands of atomics on them per tensor). The shapes
 * with slots get their words from the slots, in end().
 */
__device__ __forceinline__ void fr_knum_block_flush(const fr_knum_fused_args &a, fr_knum_run &u,
                                                    unsigned long long nz, unsigned long long sub,
                                                    unsigned long long negz, unsigned maxmag)
{
    __shared__ float sh_ext[FR_K_WARPS][FR_KNUM_LEVELS][4];
    __shared__ unsigned long long sh_cnt[FR_K_WARPS][3];
    __shared__ unsigned sh_mag[FR_K_WARPS];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        nz += __shfl_xor_sync(0xffffffffu, nz, off);
        sub += __shfl_xor_sync(0xffffffffu, sub, off);
        negz += __shfl_xor_sync(0xffffffffu, negz, off);
        const unsigned m = __shfl_xor_sync(0xffffffffu, maxmag, off);
        maxmag = m > maxmag ? m : maxmag;
    }
    if (lane == 0) {
        sh_cnt[wid][0] = nz;
        sh_cnt[wid][1] = sub;
        sh_cnt[wid][2] = negz;
        sh_mag[wid] = maxmag;
    }
#pragma unroll
    for (int L = 0; L < FR_KNUM_LEVELS; L++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const float o = __shfl_xor_sync(0xffffffffu, u.ext[L][q], off);
                u.ext[L][q] = q & 1 ? (o < u.ext[L][q] ? o : u.ext[L][q])
                                    : (o > u.ext[L][q] ? o : u.ext[L][q]);
            }
        if (lane == 0)
#pragma unroll
            for (int q = 0; q < 4; q++)
                sh_ext[wid][L][q] = u.ext[L][q];
    }
    __syncthreads();
    if (wid != 0)
        return;
    /* lane k < n: shape k's four words; lane 31: the tensor facts */
    if (lane < a.n && !a.multi[lane]) {
        const int L = a.level[lane];
        float v[4] = {sh_ext[0][L][0], sh_ext[0][L][1], sh_ext[0][L][2], sh_ext[0][L][3]};
        for (int w = 1; w < FR_K_WARPS; w++)
            for (int q = 0; q < 4; q++) {
                const float o = sh_ext[w][L][q];
                v[q] = q & 1 ? (o < v[q] ? o : v[q]) : (o > v[q] ? o : v[q]);
            }
        unsigned *ext = a.ext + 4 * lane;
        atomicMax(&ext[0], __float_as_uint(v[0]));
        atomicMin(&ext[1], __float_as_uint(v[1]));
        atomicMax(&ext[2], __float_as_uint(v[2]));
        atomicMin(&ext[3], __float_as_uint(v[3]));
    } else if (lane == 31) {
        unsigned long long c[3] = {0, 0, 0};
        unsigned m = 0;
        for (int w = 0; w < FR_K_WARPS; w++) {
            for (int q = 0; q < 3; q++)
                c[q] += sh_cnt[w][q];
            m = sh_mag[w] > m ? sh_mag[w] : m;
        }
        atomicAdd(&a.head->n_nonzero, c[0]);
        atomicAdd(&a.head->n_subnormal, c[1]);
        atomicAdd(&a.head->n_neg_zero, c[2]);
        atomicMax(&a.head->max_mag, m);
    }
}

/* One piece of one lane: the tensor facts, and its 8 elements' extremes. */
__device__ __forceinline__ void fr_knum_piece(const float (&x)[FR_K_PER_LANE], float &amax,
                                              float &hi, float &lo, unsigned &nz, unsigned &sub,
                                              unsigned &negz, unsigned &maxmag)
{
    amax = 0.0f;
    hi = 0.0f;
    lo = 0.0f;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++) {
        const float ax = fabsf(x[e]);
        amax = ax > amax ? ax : amax;
        hi = x[e] > hi ? x[e] : hi;
        lo = x[e] < lo ? x[e] : lo;
        const unsigned bits = __float_as_uint(x[e]), mag = bits & 0x7fffffffu;
        maxmag = mag > maxmag ? mag : maxmag;
        negz += mag == 0 && bits != 0;
        nz += mag != 0;
        sub += mag != 0 && mag < 0x00800000u;
    }
}

template <int DT>
static __global__ void __launch_bounds__(FR_K_THREADS, 3)
    fr_knum_fused_kernel(const fr_knum_fused_args a)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    const int64_t warp = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5);
    const int64_t ipr = a.cols / FR_KNUM_FUSED_PIECE;
    const int64_t n_items = a.chunk_rows * ipr;
    const int64_t per_warp = n_items / warps + (n_items % warps != 0);
    const int64_t item0 = warp * per_warp;
    const int64_t item1 = item0 + per_warp < n_items ? item0 + per_warp : n_items;
    fr_knum_run u;
#pragma unroll
    for (int L = 0; L < FR_KNUM_LEVELS; L++) {
        u.ext[L][0] = 0.0f;
        u.ext[L][1] = __uint_as_float(FR_KNUM_INF_BITS);
        u.ext[L][2] = 0.0f;
        u.ext[L][3] = __uint_as_float(FR_KNUM_INF_BITS);
    }
#pragma unroll
    for (int m = 0; m < FR_KNUM_FUSED_MULTI; m++)
        u.pend[m] = -1;
    /* per lane at most per_warp x 8 elements: 32-bit counts, 64-bit sums */
    unsigned nz = 0, sub = 0, negz = 0, maxmag = 0;
    int64_t r = item0 < item1 ? fr_kdiv(item0, ipr) : 0;
    int64_t piece = item0 - r * ipr;
    uint32_t next[fr_kraw_words<DT>::n];
    if (item0 < item1)
        fr_kload<DT>(a.w, a.cols, r, piece * FR_KNUM_FUSED_PIECE + (int64_t)lane * FR_K_PER_LANE,
                     true, true, next);
    for (int64_t item = item0; item < item1; item++) {
        uint32_t raw[fr_kraw_words<DT>::n];
#pragma unroll
        for (int k = 0; k < fr_kraw_words<DT>::n; k++)
            raw[k] = next[k];
        const int64_t c = piece * FR_KNUM_FUSED_PIECE + (int64_t)lane * FR_K_PER_LANE;
        const int64_t r1 = piece + 1 == ipr ? r + 1 : r, piece1 = piece + 1 == ipr ? 0 : piece + 1;
        if (item + 1 < item1)
            fr_kload<DT>(a.w, a.cols, r1,
                         piece1 * FR_KNUM_FUSED_PIECE + (int64_t)lane * FR_K_PER_LANE, true, true,
                         next);
        float x[FR_K_PER_LANE], amax, hi, lo;
        fr_kconvert<DT>(raw, x);
        fr_knum_piece(x, amax, hi, lo, nz, sub, negz, maxmag);
        fr_knum_take<0>(a, u, lane, r, c, amax, hi, lo);
        fr_knum_up<1>(amax, hi, lo);
        fr_knum_take<1>(a, u, lane, r, c, amax, hi, lo);
        fr_knum_up<2>(amax, hi, lo);
        fr_knum_take<2>(a, u, lane, r, c, amax, hi, lo);
        fr_knum_up<3>(amax, hi, lo);
        fr_knum_take<3>(a, u, lane, r, c, amax, hi, lo);
        fr_knum_up<4>(amax, hi, lo);
        fr_knum_take<4>(a, u, lane, r, c, amax, hi, lo);
        fr_knum_up<5>(amax, hi, lo);
        fr_knum_take<5>(a, u, lane, r, c, amax, hi, lo);
        r = r1;
        piece = piece1;
    }
#pragma unroll
    for (int m = 0; m < FR_KNUM_FUSED_MULTI; m++)
        if (m < a.n_multi)
            fr_knum_slot(a.m_acc[m], u.pend[m], u.p[m][0], u.p[m][1], u.p[m][2]);
    fr_knum_block_flush(a, u, nz, sub, negz, maxmag);
}

/* The fused read's level of a tile width (-1: none): 8 << level == tc, or
 * 5 for a multiple of 256. */
static int fr_knum_level(int64_t tc)
{
    if (tc % FR_KNUM_FUSED_PIECE == 0)
        return 5;
    for (int L = 0; L < 5; L++)
        if (tc == (int64_t)FR_K_PER_LANE << L)
            return L;
    return -1;
}

/* Whether a shape keeps slots: its groups span rows or several pieces of
 * the reading kernel (the fused read's pieces are 256 columns). */
static int fr_knum_multi(const fr_knum_shape *s, int64_t rows, int fused)
{
    return (s->tr > 1 && rows > 1) || s->p > 1 || (fused && s->tc > FR_KNUM_FUSED_PIECE);
}

/* True when one fused read can serve every shape (the facts ride on it). */
static int fr_knum_fusable(const fr_knum_shape *shapes, size_t n, int64_t rows, int64_t cols)
{
    if (n == 0 || n > FR_KNUM_FUSED_MAX || cols % FR_KNUM_FUSED_PIECE)
        return 0;
    int n_multi = 0;
    for (size_t k = 0; k < n; k++) {
        if (fr_knum_level(shapes[k].tc) < 0)
            return 0;
        if (fr_knum_multi(&shapes[k], rows, 1)) {
            n_multi++;
            /* the fused kernel's pending slots are 31-bit */
            const fr_knum_shape *s = &shapes[k];
            if ((rows / s->tr + 1) * s->ntc >= ((int64_t)1 << 31))
                return 0;
        }
    }
    return n_multi <= FR_KNUM_FUSED_MULTI;
}

static fr_status fr_knum_fused_chunk(fr_cuda_numeric *nm, const void *w, int dtype, int64_t row0,
                                     int64_t chunk_rows, fr_error *err)
{
    fr_status st = FR_OK;
    fr_knum_fused_args a;
    memset(&a, 0, sizeof a);
    a.w = w;
    a.cols = nm->cols;
    a.row0 = row0;
    a.chunk_rows = chunk_rows;
    a.n = (int)nm->n_shapes;
    a.head = (fr_cuda_numeric_head *)nm->res;
    a.ext = nm->res + sizeof(fr_cuda_numeric_head) / sizeof(unsigned);
    for (size_t k = 0; k < nm->n_shapes; k++) {
        const fr_knum_shape *s = &nm->shapes[k];
        a.level[k] = fr_knum_level(s->tc);
        a.multi[k] = s->multi;
        if (!s->multi) {
            a.direct_levels |= 1u << a.level[k];
            continue;
        }
        const int m = a.n_multi++; /* fr_knum_fusable: at most FR_KNUM_FUSED_MULTI */
        a.m_level[m] = a.level[k];
        a.m_tr[m] = s->tr;
        a.m_tc[m] = s->tc;
        a.m_ntc[m] = s->ntc;
        a.m_acc[m] = nm->acc + s->acc_off;
    }
    /* 3 blocks per SM of the 132 (the launch bounds): every block ends in
     * the same few words, so no more blocks than run at once */
    const unsigned grid =
        fr_kgrid(chunk_rows * (nm->cols / FR_KNUM_FUSED_PIECE), FR_K_WARPS, 3 * FR_K_GRID / 8);
    if (dtype == FRONTIER_DTYPE_F32)
        FR_LAUNCH(fr_knum_fused_kernel<FRONTIER_DTYPE_F32><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
    else if (dtype == FRONTIER_DTYPE_F16)
        FR_LAUNCH(fr_knum_fused_kernel<FRONTIER_DTYPE_F16><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
    else
        FR_LAUNCH(fr_knum_fused_kernel<FRONTIER_DTYPE_BF16><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
cleanup:
    return st;
}

/* The result words' identities: counts 0, maxima 0, minima +inf. */
static __global__ void fr_knum_init_kernel(unsigned *res, int64_t n_shapes)
{
    const int64_t head_words = (int64_t)(sizeof(fr_cuda_numeric_head) / sizeof(unsigned));
    for (int64_t k = threadIdx.x; k < head_words + 4 * n_shapes; k += blockDim.x) {
        const int64_t w = k - head_words;
        res[k] = w >= 0 && (w & 1) ? FR_KNUM_INF_BITS : 0u;
    }
}

fr_status fr_cuda_numeric_create(void *stream, fr_cuda_numeric **out, fr_error *err)
{
    fr_cuda_numeric *nm = (fr_cuda_numeric *)calloc(1, sizeof *nm);
    if (!nm)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate the numeric-flag reduction");
    nm->stream = (cudaStream_t)stream;
    *out = nm;
    return FR_OK;
}

void fr_cuda_numeric_destroy(fr_cuda_numeric *nm)
{
    if (!nm)
        return;
    if (nm->res)
        cudaFreeAsync(nm->res, nm->stream);
    if (nm->acc)
        cudaFreeAsync(nm->acc, nm->stream);
    free(nm->shapes);
    free(nm);
}

/* Grows a device buffer in stream order. */
static fr_status fr_knum_grow(unsigned **p, size_t *cap, size_t bytes, cudaStream_t s,
                              fr_error *err)
{
    fr_status st = FR_OK;
    if (bytes <= *cap)
        return FR_OK;
    if (*p)
        cudaFreeAsync(*p, s);
    *p = NULL;
    *cap = 0;
    bytes += bytes / 4;
    FR_CU(cudaMallocAsync((void **)p, bytes, s));
    *cap = bytes;
cleanup:
    return st;
}

/* Lanes per group, groups per warp item, pieces: for 8 elements per lane
 * when tile_cols and cols allow (vec), else 1. */
static void fr_knum_geometry(fr_knum_shape *s, int64_t cols)
{
    const int e = s->tc % 8 == 0 && cols % 8 == 0 ? FR_K_PER_LANE : 1;
    s->ntc = cols / s->tc + (cols % s->tc != 0);
    s->g = 32;
    while (s->g > 1 && (int64_t)s->g * e > s->tc)
        s->g >>= 1;
    s->t = 32 / s->g;
    s->p = s->tc > FR_KNUM_PIECE ? s->tc / FR_KNUM_PIECE + (s->tc % FR_KNUM_PIECE != 0) : 1;
    s->width = s->p > 1 ? FR_KNUM_PIECE : s->tc;
    s->ipr = (s->ntc / s->t + (s->ntc % s->t != 0)) * s->p;
}

fr_status fr_cuda_numeric_begin(fr_cuda_numeric *nm, const int64_t *tile_rows,
                                const int64_t *tile_cols, size_t n_shapes, int64_t rows,
                                int64_t cols, fr_error *err)
{
    fr_status st = FR_OK;
    size_t acc_words = 0;
    nm->rows = rows;
    nm->cols = cols;
    nm->n_shapes = 0;
    if (n_shapes > nm->shapes_cap) {
        fr_knum_shape *s = (fr_knum_shape *)realloc(nm->shapes, n_shapes * sizeof *s);
        if (!s)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate %zu group shapes", n_shapes);
        nm->shapes = s;
        nm->shapes_cap = n_shapes;
    }
    for (size_t k = 0; k < n_shapes; k++) {
        fr_knum_shape *s = &nm->shapes[k];
        memset(s, 0, sizeof *s);
        s->tr = tile_rows[k] < 1 ? 1 : tile_rows[k];
        s->tc = tile_cols[k] < 1 ? 1 : tile_cols[k];
        fr_knum_geometry(s, cols);
    }
    /* a group the fused read sees in pieces keeps a slot too (a tile wider
     * than its 256-column pieces); either kernel serves a shape with slots */
    nm->fused = fr_knum_fusable(nm->shapes, n_shapes, rows, cols);
    for (size_t k = 0; k < n_shapes; k++) {
        fr_knum_shape *s = &nm->shapes[k];
        s->multi = fr_knum_multi(s, rows, nm->fused);
        if (s->multi) {
            s->n_groups = (rows / s->tr + (rows % s->tr != 0)) * s->ntc;
            s->acc_off = acc_words;
            acc_words += 3 * (size_t)s->n_groups;
        }
    }
    nm->n_shapes = n_shapes;
    FR_TRY(fr_knum_grow(&nm->res, &nm->res_bytes, FR_CUDA_NUMERIC_BYTES(n_shapes), nm->stream,
                        err));
    FR_LAUNCH(fr_knum_init_kernel<<<1, 256, 0, nm->stream>>>(nm->res, (int64_t)n_shapes));
    if (acc_words) {
        FR_TRY(fr_knum_grow(&nm->acc, &nm->acc_bytes, acc_words * sizeof(unsigned), nm->stream,
                            err));
        FR_CU(cudaMemsetAsync(nm->acc, 0, acc_words * sizeof(unsigned), nm->stream));
    }
cleanup:
    if (st != FR_OK)
        nm->n_shapes = 0;
    return st;
}

fr_status fr_cuda_numeric_chunk(fr_cuda_numeric *nm, const void *w, int dtype, int64_t row0,
                                int64_t chunk_rows, fr_error *err)
{
    fr_status st = FR_OK;
    fr_cuda_numeric_head *head = (fr_cuda_numeric_head *)nm->res;
    unsigned *ext = nm->res + sizeof(fr_cuda_numeric_head) / sizeof(unsigned);
    if (nm->fused && ((uintptr_t)w & 15u) == 0)
        return fr_knum_fused_chunk(nm, w, dtype, row0, chunk_rows, err);
    /* the tensor facts ride on the first shape's read (or on a read of
     * their own, in one-row pieces, when there is none) */
    const size_t n_reads = nm->n_shapes ? nm->n_shapes : 1;
    for (size_t k = 0; k < n_reads; k++) {
        fr_knum_shape facts_only;
        const fr_knum_shape *s = nm->n_shapes ? &nm->shapes[k] : NULL;
        if (!s) {
            memset(&facts_only, 0, sizeof facts_only);
            facts_only.tr = 1;
            facts_only.tc = nm->cols > FR_KNUM_PIECE ? FR_KNUM_PIECE : nm->cols;
            fr_knum_geometry(&facts_only, nm->cols);
            s = &facts_only;
        }
        fr_knum_args a;
        memset(&a, 0, sizeof a);
        a.w = w;
        a.dtype = dtype;
        a.cols = nm->cols;
        a.row0 = row0;
        a.chunk_rows = chunk_rows;
        a.tr = s->tr;
        a.tc = s->tc;
        a.ntc = s->ntc;
        a.p = s->p;
        a.width = s->width;
        a.ipr = s->ipr;
        a.g = s->g;
        a.t = s->t;
        a.multi = s->multi;
        a.acc = s->multi ? nm->acc + s->acc_off : NULL;
        a.ext = nm->n_shapes ? ext + 4 * k : NULL;
        a.head = k == 0 ? head : NULL;
        const unsigned grid = fr_kgrid(chunk_rows * s->ipr, FR_K_WARPS, FR_K_GRID);
        const bool vec = s->tc % 8 == 0 && nm->cols % 8 == 0 && ((uintptr_t)w & 15u) == 0;
        if (dtype == FRONTIER_DTYPE_F32 && vec)
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_F32, true><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
        else if (dtype == FRONTIER_DTYPE_F32)
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_F32, false><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
        else if (dtype == FRONTIER_DTYPE_F16 && vec)
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_F16, true><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
        else if (dtype == FRONTIER_DTYPE_F16)
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_F16, false><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
        else if (vec)
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_BF16, true><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
        else
            FR_LAUNCH(fr_knum_chunk_kernel<FRONTIER_DTYPE_BF16, false><<<grid, FR_K_THREADS, 0, nm->stream>>>(a));
    }
cleanup:
    return st;
}

fr_status fr_cuda_numeric_end(fr_cuda_numeric *nm, void *host, fr_error *err)
{
    fr_status st = FR_OK;
    unsigned *ext = nm->res + sizeof(fr_cuda_numeric_head) / sizeof(unsigned);
    for (size_t k = 0; k < nm->n_shapes; k++) {
        const fr_knum_shape *s = &nm->shapes[k];
        if (!s->multi)
            continue;
        const unsigned grid = fr_kgrid(s->n_groups, FR_K_THREADS, FR_K_GRID);
        FR_LAUNCH(fr_knum_groups_kernel<<<grid, FR_K_THREADS, 0, nm->stream>>>(
            nm->acc + s->acc_off, s->n_groups, ext + 4 * k));
    }
    FR_CU(cudaMemcpyAsync(host, nm->res, FR_CUDA_NUMERIC_BYTES(nm->n_shapes),
                          cudaMemcpyDeviceToHost, nm->stream));
cleanup:
    return st;
}
