/*
 * The GPU engine (docs/gpu.md): the statistics pre-pass, the fused
 * multi-configuration kernel, and the deterministic reductions.
 *
 * Pass 1 (only when a configuration needs more than its own group): one
 * read of the tensor gives min/max of every 64-column segment; rows, 128 x
 * 128 tiles, the tensor and the nf4 double quantization are reduced from
 * those segments by small kernels. Min and max are order-free, so these are
 * exact whatever the order.
 *
 * Pass 2, the fused kernel: a block loads a tile of 16 units (256 elements
 * of one row each) into shared memory once, computes the min/max of every
 * group of 16, 32, 64, 128 and 256 in it with warp shuffles, then its 8
 * warps divide the configurations between them, each evaluating its
 * configurations over the whole tile. Error sums are accumulated per lane
 * (float for a lane's 8 elements, fused multiply-add, then double), reduced
 * across the warp with a fixed butterfly, added per block in a fixed order,
 * and the per-block partials reduced by a fixed tree: no atomics, so the
 * sums are identical run to run.
 */
#include <math.h>
#include <string.h>

#include "kcommon.cuh"
#include "kquant.cuh"

extern "C" {
#include "core/call.h"
}
#include "core/error_sums.h"

/* ---- errors ---- */

fr_status fr_cuda_failed(fr_error *err, cudaError_t e, const char *stmt, const char *file,
                         int line)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    fr_status code = (e == cudaErrorMemoryAllocation) ? FR_E_NOMEM : FR_E_DEVICE;
    fr_fail(err, code, "cuda call '%.160s' failed at %s:%d: %s", stmt, base, line,
            cudaGetErrorString(e));
    return code;
}

int fr_kreport(frontier_call *call, fr_status st, const fr_error *err)
{
    if (st == FR_OK)
        return FRONTIER_OK;
    if (call)
        fr_host_api()->set_error(call, "%s", err->msg);
    switch (st) {
    case FR_E_NOMEM:
        return FRONTIER_ERR_NOMEM;
    case FR_E_USAGE:
        return FRONTIER_ERR_INVALID;
    case FR_E_PLUGIN:
        return FRONTIER_ERR_UNSUPPORTED;
    default:
        return FRONTIER_ERR_INTERNAL;
    }
}

/* ---- configurations ---- */

/* Each family's spec builder (kernels/<family>.cu), by enum fr_family. */
typedef int (*fr_kspec_builder)(const frontier_config *cfg, fr_kspec *out);
static const fr_kspec_builder fr_kspec_builders[FR_KERNEL_FAMILY_COUNT] = {
#define FR_KSPEC_BUILDER(ID, stem, ggml) fr_kspec_##stem,
    FR_BUILTIN_FAMILIES(FR_KSPEC_BUILDER)
#undef FR_KSPEC_BUILDER
};

int fr_kspec_of(int family, const frontier_config *cfg, fr_kspec *out)
{
    memset(out, 0, sizeof *out);
    if (family < 0 || family >= FR_KERNEL_FAMILY_COUNT || !cfg)
        return 0;
    if (!fr_kspec_builders[family](cfg, out))
        return 0;
    /* a builder's variant must be one of the kernels' */
    return out->variant >= 0 && out->variant < FR_KV_COUNT;
}

void fr_kspec_norm_probe(fr_kspec *out)
{
    /* mxfp8-e4m3: a group variant, no pre-pass */
    memset(out, 0, sizeof *out);
    out->variant = FR_KV_MX;
    out->level = 1;
    out->mbits = 3;
    out->emin = -6;
    out->q = 448.0f;
    out->emax_elem = 8;
}

/* The group sizes the shuffles provide must be the formats' own. */
static_assert(FR_NVFP4_GROUP == 16 && FR_MX_BLOCK == 32 && FR_NF4_BLOCK == 64 &&
                  FR_NF4_BLOCK == FR_K_SEG && FR_FP8_TILE == 128 && FR_NF4_DQ_GROUP == 256,
              "the kernels' geometry assumes these group sizes");

fr_kneeds fr_kneeds_of(const fr_kspec *specs, size_t n)
{
    fr_kneeds k;
    memset(&k, 0, sizeof k);
    for (size_t i = 0; i < n; i++) {
        const int needs = fr_kv_needs_table[specs[i].variant];
        if (needs & (FR_KNEED_ROWS | FR_KNEED_TENSOR))
            k.rows = 1;
        if (needs & FR_KNEED_TENSOR)
            k.tensor = 1;
        if (needs & FR_KNEED_TILES)
            k.tiles = 1;
        if (needs & FR_KNEED_NF4DQ)
            k.nf4dq = 1;
    }
    k.segs = k.rows || k.tensor || k.tiles || k.nf4dq;
    return k;
}

/* ---- scratch ---- */

void fr_kwork_init(fr_kwork *work, cudaStream_t stream)
{
    memset(work, 0, sizeof *work);
    work->stream = stream;
}

static void fr_kbuf_free(fr_kbuf *b, cudaStream_t stream)
{
    if (b->p)
        cudaFreeAsync(b->p, stream);
    b->p = NULL;
    b->bytes = 0;
}

void fr_kwork_free(fr_kwork *work)
{
    fr_kbuf *all[] = {&work->seg_lo, &work->seg_hi, &work->row_lohi, &work->tile_amax,
                      &work->nf4_scale, &work->nf4_part, &work->tstats, &work->partials,
                      &work->results};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fr_kbuf_free(all[i], work->stream);
}

/* Grows b to at least `bytes` (in stream order: earlier work on the stream
 * finishes with the old buffer before it is released). */
static fr_status fr_kbuf_reserve(fr_kbuf *b, size_t bytes, cudaStream_t stream, fr_error *err)
{
    fr_status st = FR_OK;
    if (bytes == 0)
        bytes = 16;
    if (b->bytes >= bytes)
        return FR_OK;
    fr_kbuf_free(b, stream);
    /* a quarter more, so a run of slowly growing tensors reallocates rarely */
    bytes += bytes / 4;
    FR_CU(cudaMallocAsync(&b->p, bytes, stream));
    b->bytes = bytes;
cleanup:
    return st;
}

static int64_t fr_kceil(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

fr_status fr_kwork_reserve(fr_kwork *work, const fr_kneeds *needs, int64_t rows, int64_t cols,
                           fr_error *err)
{
    fr_status st = FR_OK;
    const int64_t spr = fr_kceil(cols, FR_K_SEG);
    const size_t segs = (size_t)(rows * spr);
    cudaStream_t s = work->stream;
    if (!work->tstats.p) {
        /* [3] counts nf4-dq mean fallbacks over the work's lifetime */
        FR_TRY(fr_kbuf_reserve(&work->tstats, 4 * sizeof(float), s, err));
        FR_CU(cudaMemsetAsync(work->tstats.p, 0, 4 * sizeof(float), s));
    }
    FR_TRY(fr_kbuf_reserve(&work->partials,
                           (size_t)FR_K_GRID * (FR_K_MAX_SPECS + 1) * sizeof(fr_kpart), s, err));
    FR_TRY(fr_kbuf_reserve(&work->results, (FR_K_MAX_SPECS + 1) * sizeof(fr_kpart), s, err));
    if (needs->segs) {
        FR_TRY(fr_kbuf_reserve(&work->seg_lo, segs * sizeof(float), s, err));
        FR_TRY(fr_kbuf_reserve(&work->seg_hi, segs * sizeof(float), s, err));
    }
    if (needs->rows || needs->tensor)
        FR_TRY(fr_kbuf_reserve(&work->row_lohi, (size_t)rows * 2 * sizeof(float), s, err));
    if (needs->tiles)
        FR_TRY(fr_kbuf_reserve(&work->tile_amax,
                               (size_t)(fr_kceil(rows, 128) * fr_kceil(cols, 128)) * sizeof(float),
                               s, err));
    if (needs->nf4dq) {
        FR_TRY(fr_kbuf_reserve(&work->nf4_scale, segs * sizeof(float), s, err));
        FR_TRY(fr_kbuf_reserve(&work->nf4_part, 1024 * sizeof(double), s, err));
    }
cleanup:
    return st;
}

/* ---- pass 1: statistics ---- */

/* min/max of every 64-column segment: a warp per unit, 8 lanes per segment. */
template <int DT>
static __global__ void __launch_bounds__(FR_K_THREADS)
    fr_kseg_stats(const void *__restrict__ w, int64_t cols, int64_t upr, int64_t n_units,
                  int64_t spr, bool vec, float *__restrict__ seg_lo, float *__restrict__ seg_hi)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    for (int64_t unit = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5); unit < n_units;
         unit += warps) {
        const int64_t row = fr_kdiv(unit, upr);
        const int64_t ut = unit - row * upr;
        const int64_t col = ut * FR_K_UNIT + lane * FR_K_PER_LANE;
        uint32_t raw[fr_kraw_words<DT>::n];
        float x[FR_K_PER_LANE];
        fr_kload<DT>(w, cols, row, col, true, vec, raw);
        fr_kconvert<DT>(raw, x);
        float lo = 0.0f, hi = 0.0f;
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            fr_klohi(x[e], lo, hi);
#pragma unroll
        for (int off = 1; off < 8; off <<= 1) {
            float olo = __shfl_xor_sync(0xffffffffu, lo, off);
            float ohi = __shfl_xor_sync(0xffffffffu, hi, off);
            fr_klohi(olo, lo, hi);
            fr_klohi(ohi, lo, hi);
        }
        const int64_t seg = ut * (FR_K_UNIT / FR_K_SEG) + (lane >> 3);
        if ((lane & 7) == 0 && seg < spr) {
            seg_lo[row * spr + seg] = lo;
            seg_hi[row * spr + seg] = hi;
        }
    }
}

/* Row lo/hi from the segments: a warp per row. */
static __global__ void __launch_bounds__(FR_K_THREADS)
    fr_krow_stats(const float *__restrict__ seg_lo, const float *__restrict__ seg_hi,
                  int64_t rows, int64_t spr, float *__restrict__ row_lohi)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5); row < rows;
         row += warps) {
        float lo = 0.0f, hi = 0.0f;
        for (int64_t s = lane; s < spr; s += 32) {
            fr_klohi(seg_lo[row * spr + s], lo, hi);
            fr_klohi(seg_hi[row * spr + s], lo, hi);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            fr_klohi(__shfl_xor_sync(0xffffffffu, lo, off), lo, hi);
            fr_klohi(__shfl_xor_sync(0xffffffffu, hi, off), lo, hi);
        }
        if (lane == 0) {
            row_lohi[2 * row] = lo;
            row_lohi[2 * row + 1] = hi;
        }
    }
}

/* amax of every 128 x 128 tile from the segments: a warp per tile. */
static __global__ void __launch_bounds__(FR_K_THREADS)
    fr_ktile_stats(const float *__restrict__ seg_lo, const float *__restrict__ seg_hi,
                   int64_t rows, int64_t spr, int64_t tpr, int64_t n_tiles,
                   float *__restrict__ tile_amax)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    for (int64_t t = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5); t < n_tiles;
         t += warps) {
        const int64_t r0 = (t / tpr) * 128, s0 = (t % tpr) * 2;
        float amax = 0.0f;
        for (int k = lane; k < 256; k += 32) {
            int64_t r = r0 + (k >> 1), s = s0 + (k & 1);
            if (r < rows && s < spr) {
                float a = fr_kamax(seg_lo[r * spr + s], seg_hi[r * spr + s]);
                amax = a > amax ? a : amax;
            }
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_xor_sync(0xffffffffu, amax, off);
            amax = o > amax ? o : amax;
        }
        if (lane == 0)
            tile_amax[t] = amax;
    }
}

/* Tensor lo/hi from the rows: one block. */
static __global__ void __launch_bounds__(1024)
    fr_ktensor_stats(const float *__restrict__ row_lohi, int64_t rows, float *__restrict__ tstats)
{
    __shared__ float slo[32], shi[32];
    float lo = 0.0f, hi = 0.0f;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
        fr_klohi(row_lohi[2 * r], lo, hi);
        fr_klohi(row_lohi[2 * r + 1], lo, hi);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        fr_klohi(__shfl_xor_sync(0xffffffffu, lo, off), lo, hi);
        fr_klohi(__shfl_xor_sync(0xffffffffu, hi, off), lo, hi);
    }
    if ((threadIdx.x & 31) == 0) {
        slo[threadIdx.x >> 5] = lo;
        shi[threadIdx.x >> 5] = hi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 1; k < (int)(blockDim.x >> 5); k++) {
            fr_klohi(slo[k], lo, hi);
            fr_klohi(shi[k], lo, hi);
        }
        tstats[0] = lo;
        tstats[1] = hi;
    }
}

static int fr_kvec_ok(const fr_kview *v)
{
    return v->cols % 8 == 0 && ((uintptr_t)v->w & 15u) == 0;
}

fr_status fr_kstats_chunk(fr_kwork *work, const fr_kneeds *needs, const fr_kview *v,
                          fr_error *err)
{
    fr_status st = FR_OK;
    if (!needs->segs || v->chunk_rows <= 0)
        return FR_OK;
    const int64_t spr = fr_kceil(v->cols, FR_K_SEG);
    const int64_t upr = fr_kceil(v->cols, FR_K_UNIT);
    const int64_t n_units = v->chunk_rows * upr;
    const bool vec = fr_kvec_ok(v);
    cudaStream_t s = work->stream;
    float *seg_lo = (float *)work->seg_lo.p + v->row0 * spr;
    float *seg_hi = (float *)work->seg_hi.p + v->row0 * spr;
    const unsigned grid = fr_kgrid(n_units, FR_K_WARPS, 8192);
    if (needs->tiles && v->row0 % 128 != 0)
        return fr_fail(err, FR_E_FAIL, "internal: row chunk at row %lld is not 128-aligned",
                       (long long)v->row0);
    switch (v->dtype) {
    case FRONTIER_DTYPE_F32:
        FR_LAUNCH(fr_kseg_stats<FRONTIER_DTYPE_F32><<<grid, FR_K_THREADS, 0, s>>>(
            v->w, v->cols, upr, n_units, spr, vec, seg_lo, seg_hi));
        break;
    case FRONTIER_DTYPE_F16:
        FR_LAUNCH(fr_kseg_stats<FRONTIER_DTYPE_F16><<<grid, FR_K_THREADS, 0, s>>>(
            v->w, v->cols, upr, n_units, spr, vec, seg_lo, seg_hi));
        break;
    case FRONTIER_DTYPE_BF16:
        FR_LAUNCH(fr_kseg_stats<FRONTIER_DTYPE_BF16><<<grid, FR_K_THREADS, 0, s>>>(
            v->w, v->cols, upr, n_units, spr, vec, seg_lo, seg_hi));
        break;
    default:
        return fr_fail(err, FR_E_FAIL, "internal: device dtype %d", v->dtype);
    }
    if (needs->rows || needs->tensor)
        FR_LAUNCH(fr_krow_stats<<<fr_kgrid(v->chunk_rows, FR_K_WARPS, 8192), FR_K_THREADS, 0, s>>>(
            seg_lo, seg_hi, v->chunk_rows, spr, (float *)work->row_lohi.p + 2 * v->row0));
    if (needs->tiles) {
        const int64_t tpr = fr_kceil(v->cols, 128);
        const int64_t n_tiles = fr_kceil(v->chunk_rows, 128) * tpr;
        FR_LAUNCH(fr_ktile_stats<<<fr_kgrid(n_tiles, FR_K_WARPS, 8192), FR_K_THREADS, 0, s>>>(
            seg_lo, seg_hi, v->chunk_rows, spr, tpr, n_tiles,
            (float *)work->tile_amax.p + (v->row0 / 128) * tpr));
    }
cleanup:
    return st;
}

fr_status fr_kstats_finish(fr_kwork *work, const fr_kneeds *needs, int64_t rows, int64_t cols,
                           fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = work->stream;
    float *tstats = (float *)work->tstats.p;
    FR_CU(cudaMemsetAsync(tstats, 0, 3 * sizeof(float), s));
    if (needs->tensor)
        FR_LAUNCH(fr_ktensor_stats<<<1, 1024, 0, s>>>((const float *)work->row_lohi.p, rows, tstats));
    if (needs->nf4dq) /* the block scales of nf4-g64-dq: kernels/nf4.cu */
        FR_TRY(fr_knf4_dq_scales((const float *)work->seg_lo.p, (const float *)work->seg_hi.p,
                                 rows * fr_kceil(cols, FR_K_SEG), (double *)work->nf4_part.p,
                                 tstats, (float *)work->nf4_scale.p, s, err));
cleanup:
    return st;
}

/* ---- pass 2: the fused kernel ---- */

typedef struct fr_kfused_args {
    const void *w;
    int64_t cols, upr, n_units;
    int64_t index_base;       /* flat index of the chunk's first element in the tensor */
    bool vec;                 /* aligned 16-byte loads (cols % 8 == 0) */
    bool vec_out;             /* ... and aligned 16-byte stores of w_hat */
    const float *tensor_lohi; /* [2], or NULL */
    fr_kstatbufs stats;       /* chunk-local row/tile/nf4-dq statistics */
    fr_kpart *partials;       /* [gridDim.x][n_specs + 1] */
    float *w_hat;             /* quantize mode (n_specs == 1), or NULL */
    int n_specs;
    bool seen;                /* this launch fills the extra column (the first of a tensor) */
    fr_kspec specs[FR_K_MAX_SPECS];
} fr_kfused_args;

static_assert(sizeof(fr_kspec) == 12, "fr_kspec travels in kernel parameters");
static_assert(sizeof(fr_kfused_args) <= 4096, "kernel parameters are limited to 4 KiB");

/* Warp butterfly: every lane ends with the same, order-fixed sum. */
__device__ __forceinline__ void fr_kwarp_sum(double &a, double &b, double &c, float &m)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, off);
        b += __shfl_xor_sync(0xffffffffu, b, off);
        c += __shfl_xor_sync(0xffffffffu, c, off);
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    }
}

/* A lane's running sums of one configuration. */
typedef struct fr_kacc {
    double se, sh, sd;
    float me;
} fr_kacc;

__device__ __forceinline__ void fr_kacc_add(fr_kacc &a, const fr_kterms &t)
{
    a.se += (double)t.se;
    a.sh += (double)t.sh;
    a.sd += (double)t.sd;
    a.me = fmaxf(a.me, t.me);
}

/* What a thread learns about the elements it loaded: sum w^2 (float per
 * unit, then double), non-finite counts, -(flat index of the first). */
typedef struct fr_kseen {
    double sq, nan, inf, first;
} fr_kseen;

/*
 * Converts a lane's 8 loaded elements and, when `seen_on` (the launch that
 * fills the extra column), notes their norm and non-finite values; returns
 * the lane's lo/hi (min(min x, 0), max(max x, 0)).
 *
 * The bounds are fminf/fmaxf from 0, then a -0.0 bound becomes +0.0: the
 * same values as the CPU's `x < lo ? x : lo` from 0 (NaN is never taken by
 * either; the two differ only in the sign of a zero bound, which the last
 * step fixes) in 1 instruction per element instead of 2. A non-finite
 * element makes the float sum of squares NaN or Inf; so can a finite one
 * whose square overflows, so that case only leads to the exact test.
 */
template <int DT>
__device__ __forceinline__ float2 fr_kintake(const uint32_t (&raw)[fr_kraw_words<DT>::n],
                                             float (&x)[FR_K_PER_LANE], int64_t flat,
                                             bool seen_on, fr_kseen &seen)
{
    fr_kconvert<DT>(raw, x);
    float lo = 0.0f, hi = 0.0f;
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++) {
        lo = fminf(lo, x[e]);
        hi = fmaxf(hi, x[e]);
    }
    lo = lo < 0.0f ? lo : 0.0f;
    hi = hi > 0.0f ? hi : 0.0f;
    if (seen_on) {
        float sq = 0.0f;
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            sq = fmaf(x[e], x[e], sq);
        seen.sq += (double)sq;
        if (!(sq - sq == 0.0f)) {
            /* rare: the tensor will be skipped; say what and where */
            for (int e = 0; e < FR_K_PER_LANE; e++) {
                if (x[e] - x[e] == 0.0f) /* finite (common.h's test) */
                    continue;
                if (x[e] != x[e])
                    seen.nan += 1.0;
                else
                    seen.inf += 1.0;
                seen.first = fmax(seen.first, -(double)(flat + e));
            }
        }
    }
    return make_float2(lo, hi);
}

/* Bounds of two parts of a group (both from fr_kintake or this: never
 * -0.0 nor NaN, so fminf/fmaxf are the CPU's comparisons exactly). */
__device__ __forceinline__ void fr_kmerge(float olo, float ohi, float &lo, float &hi)
{
    lo = fminf(lo, olo);
    hi = fmaxf(hi, ohi);
}

/* The block's extra column: warp butterflies, then warps in order. */
__device__ __forceinline__ void fr_kseen_reduce(fr_kseen &seen, int warp, int lane,
                                                fr_kpart *red, fr_kpart *out)
{
    float unused_max = 0.0f;
    fr_kwarp_sum(seen.sq, seen.nan, seen.inf, unused_max);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        seen.first = fmax(seen.first, __shfl_xor_sync(0xffffffffu, seen.first, off));
    if (lane == 0) {
        red[warp].sq_err = seen.sq;
        red[warp].sq_hat = seen.nan;
        red[warp].dot = seen.inf;
        red[warp].max_abs = seen.first;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        fr_kpart t = red[0];
        for (int k = 1; k < FR_K_WARPS; k++) {
            t.sq_err += red[k].sq_err;
            t.sq_hat += red[k].sq_hat;
            t.dot += red[k].dot;
            t.max_abs = fmax(t.max_abs, red[k].max_abs);
        }
        *out = t;
    }
}

template <int DT>
__device__ __forceinline__ void fr_kprefetch(const fr_kfused_args &a, int64_t tile, int warp,
                                             int lane, uint32_t (&r0)[fr_kraw_words<DT>::n],
                                             uint32_t (&r1)[fr_kraw_words<DT>::n])
{
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int64_t unit = tile * FR_K_TILE_UNITS + 2 * warp + k;
        const bool ok = unit < a.n_units;
        int64_t row = 0, ut = 0;
        if (ok) {
            row = fr_kdiv(unit, a.upr);
            ut = unit - row * a.upr;
        }
        const int64_t col = ut * FR_K_UNIT + lane * FR_K_PER_LANE;
        fr_kload<DT>(a.w, a.cols, row, col, ok, a.vec, k == 0 ? r0 : r1);
    }
}

/* Where the statistic of entry g of unit u of a tile comes from (the
 * fused kernel's scale tables): the group at the configuration's level,
 * the unit's row, its g-th 128-column tile, its g-th 64-column nf4 block.
 * Entries past the row end read as (0, 0); their lanes hold zeros, which
 * reconstruct to 0 under any scale. */
template <int SRC>
__device__ __forceinline__ float2 fr_kentry_stat(const fr_kstatbufs &b,
                                                 const float2 (&group)[32], int level,
                                                 int64_t row, int64_t col0, int g)
{
    if constexpr (SRC == FR_KSRC_GROUP) {
        return group[(32 - (32 >> level)) + g];
    } else if constexpr (SRC == FR_KSRC_ROW) {
        return b.row_lohi[row];
    } else {
        constexpr int width = SRC == FR_KSRC_TILE ? 128 : FR_NF4_BLOCK;
        return fr_kstat<SRC>(b, row, col0 + (int64_t)g * width, make_float2(0.0f, 0.0f));
    }
}

/* Scale-table entries per warp (float4 each, 2 KiB): 16 units of 8 groups
 * of 32 in one round; smaller groups (nvfp4's 16) take two rounds. */
#define FR_K_SCALES 128

/*
 * The fused kernel of variant V (many configurations of one variant, one
 * read). A block loads a tile of 16 units into shared memory and the lo/hi
 * of all their groups; each warp then takes configurations and, for each,
 * first computes the scale of every group of its units once (lane i takes
 * entries i, i + 32, ...; fr_kscale) into its table in shared memory, then
 * evaluates its units, each lane reading its group's entry (fr_kapply).
 * Before, every lane of a group computed the same scale: 4 lanes per group
 * for g32, 32 for g256 and rows.
 *
 * Over 120 lines on purpose: the phases (tile load with its group bounds,
 * scale table, apply, the block's reduction) share the shared-memory arrays
 * declared at the top and the prefetch registers carried across tiles;
 * as separate functions they would take a dozen reference parameters each
 * and hide the register budget docs/gpu.md measures for this one body.
 */
template <int DT, int V>
static __global__ void __launch_bounds__(FR_K_THREADS) fr_kfused_kernel(const fr_kfused_args a)
{
    __shared__ __align__(16) float xs[FR_K_TILE_UNITS][FR_K_UNIT];
    __shared__ float2 group_lohi[FR_K_TILE_UNITS][32]; /* the unit's 31 groups (lo, hi) */
    __shared__ int64_t unit_row[FR_K_TILE_UNITS];
    __shared__ int64_t unit_col[FR_K_TILE_UNITS];
    __shared__ fr_kpart acc[FR_K_MAX_SPECS];
    __shared__ fr_kconf conf[FR_K_MAX_SPECS];
    __shared__ fr_kpart red[FR_K_WARPS];
    __shared__ fr_nf4_bucket nf4_table[fr_kv<V>::nf4_table ? FR_NF4_BUCKETS : 1];
    constexpr int SRC = fr_kv_source<V>();
    __shared__ float4 scales[FR_K_WARPS][SRC == FR_KSRC_NONE ? 1 : FR_K_SCALES];

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = a.n_specs;
    /* warps per configuration when there are fewer configurations than
     * warps; each takes every P-th unit of the tile */
    const int P = n >= FR_K_WARPS ? 1 : FR_K_WARPS / n;
    const int Q = FR_K_WARPS / P;
    const int slot = warp / P, sub = warp % P;

    for (int i = threadIdx.x; i < n; i += FR_K_THREADS)
        conf[i] = fr_kconf_make<V>(a.specs[i], a.tensor_lohi);
    if constexpr (fr_kv<V>::nf4_table) {
        for (int i = threadIdx.x; i < FR_NF4_BUCKETS; i += FR_K_THREADS)
            nf4_table[i] = fr_nf4_bucket_make(i);
    }
    for (int i = threadIdx.x; i < FR_K_MAX_SPECS; i += FR_K_THREADS) {
        acc[i].sq_err = acc[i].sq_hat = acc[i].dot = acc[i].max_abs = 0.0;
    }

    fr_kseen seen = {0.0, 0.0, 0.0, -INFINITY};
    const int64_t n_tiles = a.n_units / FR_K_TILE_UNITS + (a.n_units % FR_K_TILE_UNITS != 0);
    int64_t tile = blockIdx.x;
    uint32_t raw0[fr_kraw_words<DT>::n], raw1[fr_kraw_words<DT>::n];
    if (tile < n_tiles)
        fr_kprefetch<DT>(a, tile, warp, lane, raw0, raw1);

    for (; tile < n_tiles; tile += gridDim.x) {
        __syncthreads(); /* the previous tile's configurations are done */
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int u = 2 * warp + k;
            const int64_t unit = tile * FR_K_TILE_UNITS + u;
            const int64_t row = unit < a.n_units ? fr_kdiv(unit, a.upr) : 0;
            const int64_t col0 = (unit - row * a.upr) * FR_K_UNIT;
            float x[FR_K_PER_LANE];
            float2 b = fr_kintake<DT>(k == 0 ? raw0 : raw1, x,
                                      a.index_base + row * a.cols + col0 + lane * FR_K_PER_LANE,
                                      a.seen, seen);
            float lo = b.x, hi = b.y;
            float4 *dst = reinterpret_cast<float4 *>(&xs[u][lane * FR_K_PER_LANE]);
            dst[0] = make_float4(x[0], x[1], x[2], x[3]);
            dst[1] = make_float4(x[4], x[5], x[6], x[7]);
            /* the groups of 16, 32, ..., 256 containing this lane */
#pragma unroll
            for (int level = 0; level < 5; level++) {
                fr_kmerge(__shfl_xor_sync(0xffffffffu, lo, 1 << level),
                          __shfl_xor_sync(0xffffffffu, hi, 1 << level), lo, hi);
                if ((lane & ((2 << level) - 1)) == 0)
                    group_lohi[u][fr_klevel_index(level, lane)] = make_float2(lo, hi);
            }
            if (lane == 0) {
                unit_row[u] = row;
                unit_col[u] = col0;
            }
        }
        __syncthreads(); /* the tile is in shared memory */
        if (tile + gridDim.x < n_tiles)
            fr_kprefetch<DT>(a, tile + gridDim.x, warp, lane, raw0, raw1);
        /* this warp's units of the tile that exist (the last tile may be
         * partial): sub + j P for j < j_valid */
        const int64_t left = a.n_units - tile * FR_K_TILE_UNITS;
        const int n_valid = left < FR_K_TILE_UNITS ? (int)left : FR_K_TILE_UNITS;
        const int j_valid = n_valid > sub ? (n_valid - sub + P - 1) / P : 0;

        for (int ci = slot; ci < n; ci += Q) {
            const fr_kconf c = conf[ci];
            fr_kacc s = {0.0, 0.0, 0.0, 0.0f};
            const int shift = fr_kv_lane_shift<V>(c.level);
            const int lg = 5 - shift; /* log2 of the entries per unit */
            const int per_round = FR_K_SCALES >> lg;
            float4 *table = scales[warp];
            /* tensor scopes: the configuration's constants */
            const float4 tensor_scale = fr_kscale<V>(c, make_float2(0.0f, 0.0f));
            for (int j0 = 0; j0 < j_valid; j0 += per_round) {
                const int jn = j_valid - j0 < per_round ? j_valid - j0 : per_round;
                if constexpr (SRC != FR_KSRC_NONE) {
                    __syncwarp(); /* the previous round's entries are read */
                    for (int i = lane; i < (jn << lg); i += 32) {
                        const int u = sub + (j0 + (i >> lg)) * P;
                        table[i] = fr_kscale<V>(
                            c, fr_kentry_stat<SRC>(a.stats, group_lohi[u], c.level, unit_row[u],
                                                   unit_col[u], i & ((1 << lg) - 1)));
                    }
                    __syncwarp(); /* the entries are written */
                }
                const float4 *xp =
                    reinterpret_cast<const float4 *>(&xs[sub + j0 * P][lane * FR_K_PER_LANE]);
                const float4 *tp = table + (lane >> shift);
                for (int jj = 0; jj < jn; jj++) {
                    float x[FR_K_PER_LANE], h[FR_K_PER_LANE];
                    const float4 x0 = xp[0], x1 = xp[1];
                    x[0] = x0.x; x[1] = x0.y; x[2] = x0.z; x[3] = x0.w;
                    x[4] = x1.x; x[5] = x1.y; x[6] = x1.z; x[7] = x1.w;
                    float4 sc = tensor_scale;
                    if constexpr (SRC != FR_KSRC_NONE)
                        sc = *tp;
                    fr_kterms t;
                    /* zero-padded elements past the row end give x = x^ = 0
                     * for every format, so they add nothing */
                    fr_kapply<V, false>(c, x, sc, nf4_table, t, h);
                    fr_kacc_add(s, t);
                    xp += P * (FR_K_UNIT / 4);
                    tp += 1 << lg;
                }
            }
            fr_kwarp_sum(s.se, s.sh, s.sd, s.me);
            if (lane == 0) {
                fr_kpart *p = &acc[ci * P + sub];
                p->sq_err += s.se;
                p->sq_hat += s.sh;
                p->dot += s.sd;
                p->max_abs = fmax(p->max_abs, (double)s.me);
            }
        }
    }

    fr_kpart *out = a.partials + (size_t)blockIdx.x * (n + 1);
    fr_kseen_reduce(seen, warp, lane, red, out + n);
    __syncthreads();
    for (int ci = threadIdx.x; ci < n; ci += FR_K_THREADS) {
        fr_kpart t = acc[ci * P];
        for (int j = 1; j < P; j++) {
            const fr_kpart &o = acc[ci * P + j];
            t.sq_err += o.sq_err;
            t.sq_hat += o.sq_hat;
            t.dot += o.dot;
            t.max_abs = fmax(t.max_abs, o.max_abs);
        }
        out[ci] = t;
    }
}

/*
 * One configuration alone (a one-configuration sweep, and quantize with
 * WRITE), of variant V: a streaming kernel without the shared tile. Each
 * warp walks its units (warp w of the grid takes units w, w + W, ...), two
 * at a time, loading the next two while it evaluates these; group bounds
 * come from warp shuffles up to the configuration's level and every lane
 * computes its group's scale; the sums stay in registers until the end.
 * Same partials layout ([grid][2]) and reduction as the fused kernel, so
 * the results are reduced in a fixed order too. One body for the same
 * reason as the fused kernel: the two-unit software pipeline keeps its
 * loads in flight across the loop, which a split would obscure.
 */
/* 3 blocks per SM for 16-bit inputs (at most 80 registers): ptxas then
 * keeps one or two loop-invariant values in local memory (L1), reloaded once
 * per two units, for 24 instead of 16 warps per SM; f32 inputs would spill
 * 40-140 bytes, so they keep 2 blocks (docs/gpu.md, "Register budget"). */
template <int DT, int V, bool WRITE>
static __global__ void __launch_bounds__(FR_K_THREADS, DT == FRONTIER_DTYPE_F32 ? 2 : 3)
    fr_kstream_kernel(const fr_kfused_args a)
{
    __shared__ fr_kpart red[FR_K_WARPS];
    __shared__ fr_kpart red2[FR_K_WARPS];
    __shared__ fr_nf4_bucket nf4_table[fr_kv<V>::nf4_table ? FR_NF4_BUCKETS : 1];
    constexpr int SRC = fr_kv_source<V>();
    constexpr int NW = fr_kraw_words<DT>::n;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const fr_kconf c = fr_kconf_make<V>(a.specs[0], a.tensor_lohi);
    if constexpr (fr_kv<V>::nf4_table) {
        for (int i = threadIdx.x; i < FR_NF4_BUCKETS; i += FR_K_THREADS)
            nf4_table[i] = fr_nf4_bucket_make(i);
        __syncthreads();
    }
    const int64_t nw = (int64_t)gridDim.x * FR_K_WARPS;
    const int64_t step_row = nw / a.upr, step_ut = nw % a.upr;
    fr_kseen seen = {0.0, 0.0, 0.0, -INFINITY};
    fr_kacc s = {0.0, 0.0, 0.0, 0.0f};
    const bool seen_on = a.seen;

    /* units u and u + W in registers while u + 2W and u + 3W load:
     * four loads in flight per warp */
    int64_t unit = (int64_t)blockIdx.x * FR_K_WARPS + warp;
    int64_t row[2], ut[2];
    uint32_t raw[2][NW];
    row[0] = fr_kdiv(unit, a.upr);
    ut[0] = unit - row[0] * a.upr;
    row[1] = row[0] + step_row;
    ut[1] = ut[0] + step_ut;
    if (ut[1] >= a.upr) {
        ut[1] -= a.upr;
        row[1]++;
    }
#pragma unroll
    for (int k = 0; k < 2; k++)
        fr_kload<DT>(a.w, a.cols, row[k], ut[k] * FR_K_UNIT + lane * FR_K_PER_LANE,
                     unit + k * nw < a.n_units, a.vec, raw[k]);
    for (; unit < a.n_units; unit += 2 * nw) {
        int64_t nrow[2], nut[2];
        uint32_t next[2][NW];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            nrow[k] = row[k] + 2 * step_row;
            nut[k] = ut[k] + 2 * step_ut;
            /* 2 * step_ut < 2 * upr: at most two wraps */
            if (nut[k] >= a.upr) {
                nut[k] -= a.upr;
                nrow[k]++;
            }
            if (nut[k] >= a.upr) {
                nut[k] -= a.upr;
                nrow[k]++;
            }
            fr_kload<DT>(a.w, a.cols, nrow[k], nut[k] * FR_K_UNIT + lane * FR_K_PER_LANE,
                         unit + (2 + k) * nw < a.n_units, a.vec, next[k]);
        }
#pragma unroll
        for (int k = 0; k < 2; k++) {
            if (unit + k * nw >= a.n_units)
                break;
            const int64_t col = ut[k] * FR_K_UNIT + lane * FR_K_PER_LANE;
            float x[FR_K_PER_LANE], h[FR_K_PER_LANE];
            float2 st = fr_kintake<DT>(raw[k], x, a.index_base + row[k] * a.cols + col, seen_on,
                                       seen);
            if constexpr (SRC == FR_KSRC_GROUP) {
                /* lo/hi of the lane's group of 16 << level */
#pragma unroll
                for (int level = 0; level < 5; level++) {
                    if (level > c.level)
                        break;
                    fr_kmerge(__shfl_xor_sync(0xffffffffu, st.x, 1 << level),
                              __shfl_xor_sync(0xffffffffu, st.y, 1 << level), st.x, st.y);
                }
            } else {
                st = fr_kstat<SRC>(a.stats, row[k], col, st);
            }
            fr_kterms t;
            fr_keval<V, WRITE>(c, x, st, nf4_table, t, h);
            fr_kacc_add(s, t);
            if (WRITE && col < a.cols) {
                float *out = a.w_hat + row[k] * a.cols + col;
                if (a.vec_out) {
                    reinterpret_cast<float4 *>(out)[0] = make_float4(h[0], h[1], h[2], h[3]);
                    reinterpret_cast<float4 *>(out)[1] = make_float4(h[4], h[5], h[6], h[7]);
                } else {
#pragma unroll
                    for (int e = 0; e < FR_K_PER_LANE; e++)
                        if (col + e < a.cols)
                            out[e] = h[e];
                }
            }
        }
#pragma unroll
        for (int k = 0; k < 2; k++) {
#pragma unroll
            for (int j = 0; j < NW; j++)
                raw[k][j] = next[k][j];
            row[k] = nrow[k];
            ut[k] = nut[k];
        }
    }

    fr_kpart *out = a.partials + (size_t)blockIdx.x * 2;
    fr_kwarp_sum(s.se, s.sh, s.sd, s.me);
    if (lane == 0) {
        red2[warp].sq_err = s.se;
        red2[warp].sq_hat = s.sh;
        red2[warp].dot = s.sd;
        red2[warp].max_abs = (double)s.me;
    }
    fr_kseen_reduce(seen, warp, lane, red, out + 1); /* synchronises the block */
    if (threadIdx.x == 0) {
        fr_kpart t = red2[0];
        for (int k = 1; k < FR_K_WARPS; k++) {
            t.sq_err += red2[k].sq_err;
            t.sq_hat += red2[k].sq_hat;
            t.dot += red2[k].dot;
            t.max_abs = fmax(t.max_abs, red2[k].max_abs);
        }
        out[0] = t;
    }
}

/* Column c of partials[n_blocks][n_cols]: a block per column, threads
 * strided in order, then a fixed tree. */
/* Where each reduced column goes: out[dst[c]], nothing when dst[c] < 0. */
typedef struct fr_kcolumn_map {
    int dst[FR_K_MAX_SPECS + 1];
} fr_kcolumn_map;

static __global__ void __launch_bounds__(256)
    fr_kreduce_partials(const fr_kpart *__restrict__ partials, int n_blocks, int n_cols,
                        fr_kpart *__restrict__ out, const fr_kcolumn_map map)
{
    __shared__ fr_kpart s[256];
    const int c = blockIdx.x;
    fr_kpart t;
    t.sq_err = t.sq_hat = t.dot = 0.0;
    t.max_abs = -INFINITY; /* the extra column keeps -(first bad index) there */
    for (int b = threadIdx.x; b < n_blocks; b += 256) {
        const fr_kpart &p = partials[(size_t)b * n_cols + c];
        t.sq_err += p.sq_err;
        t.sq_hat += p.sq_hat;
        t.dot += p.dot;
        t.max_abs = fmax(t.max_abs, p.max_abs);
    }
    s[threadIdx.x] = t;
    __syncthreads();
    for (int off = 128; off > 0; off >>= 1) {
        if ((int)threadIdx.x < off) {
            fr_kpart &d = s[threadIdx.x];
            const fr_kpart &o = s[threadIdx.x + off];
            d.sq_err += o.sq_err;
            d.sq_hat += o.sq_hat;
            d.dot += o.dot;
            d.max_abs = fmax(d.max_abs, o.max_abs);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && map.dst[c] >= 0)
        out[map.dst[c]] = s[0];
}

/* The kernel instance of (dtype DT, variant v): a compile-time walk over
 * the variants (V = 0 .. FR_KV_COUNT - 1) to the one asked for. */
template <int DT, int V = 0>
static fr_status fr_kfused_launch(const fr_kfused_args &args, int variant, unsigned grid,
                                  bool write, cudaStream_t s, fr_error *err)
{
    if constexpr (V == FR_KV_COUNT) {
        (void)args, (void)grid, (void)write, (void)s;
        return fr_fail(err, FR_E_FAIL, "internal: kernel variant %d", variant);
    } else {
        if (variant != V)
            return fr_kfused_launch<DT, V + 1>(args, variant, grid, write, s, err);
        fr_status st = FR_OK;
        if (args.n_specs > 1)
            FR_LAUNCH(fr_kfused_kernel<DT, V><<<grid, FR_K_THREADS, 0, s>>>(args));
        else if (write)
            FR_LAUNCH(fr_kstream_kernel<DT, V, true><<<grid, FR_K_THREADS, 0, s>>>(args));
        else
            FR_LAUNCH(fr_kstream_kernel<DT, V, false><<<grid, FR_K_THREADS, 0, s>>>(args));
    cleanup:
        return st;
    }
}

fr_status fr_kfused(fr_kwork *work, const fr_kspec *specs, int n, const fr_kview *v,
                    float *w_hat, fr_error *err)
{
    fr_status st = FR_OK;
    fr_kfused_args *args = NULL;
    if (n < 1 || n > FR_K_MAX_SPECS || (w_hat && n != 1))
        return fr_fail(err, FR_E_FAIL, "internal: %d configurations in one fused launch", n);
    if (v->chunk_rows <= 0)
        return fr_fail(err, FR_E_FAIL, "internal: empty chunk");
    {
        const fr_kneeds needs = fr_kneeds_of(specs, (size_t)n);
        const int64_t upr = fr_kceil(v->cols, FR_K_UNIT);
        const int64_t n_units = v->chunk_rows * upr;
        const int64_t n_tiles = fr_kceil(n_units, FR_K_TILE_UNITS);
        args = (fr_kfused_args *)calloc(1, sizeof *args);
        if (!args)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate kernel arguments");
        args->w = v->w;
        args->cols = v->cols;
        args->index_base = v->row0 * v->cols;
        args->upr = upr;
        args->n_units = n_units;
        args->vec = fr_kvec_ok(v) != 0;
        args->vec_out = args->vec && ((uintptr_t)w_hat & 15u) == 0;
        args->tensor_lohi = needs.tensor ? (const float *)work->tstats.p : NULL;
        args->stats.cols = v->cols;
        args->stats.row_lohi = needs.rows ? (const float2 *)work->row_lohi.p + v->row0 : NULL;
        args->stats.tpr = fr_kceil(v->cols, 128);
        args->stats.tile_amax = needs.tiles ? (const float *)work->tile_amax.p + (v->row0 / 128) * args->stats.tpr : NULL;
        args->stats.spr = fr_kceil(v->cols, FR_K_SEG);
        args->stats.nf4_scale = needs.nf4dq ? (const float *)work->nf4_scale.p + v->row0 * args->stats.spr : NULL;
        args->partials = (fr_kpart *)work->partials.p;
        args->w_hat = w_hat;
        if (needs.tiles && v->row0 % 128 != 0) {
            st = fr_fail(err, FR_E_FAIL, "internal: row chunk at row %lld is not 128-aligned",
                         (long long)v->row0);
            goto cleanup;
        }
        /*
         * One launch per variant (family x scope), its configurations
         * together: each launch reads the tensor once more (31 us for a
         * 4096 x 14336 bf16 tensor), but all warps of the GPU then run the
         * same variant's code. With every variant in one launch, Nsight
         * Compute showed 57% of the stall cycles waiting for instruction
         * fetch (warps on different variants thrash the instruction cache)
         * and an issue rate of 0.98 per cycle. Results land at the callers'
         * indices; the extra column (sum w^2, non-finite counts) comes from
         * the first launch.
         */
        bool done[FR_K_MAX_SPECS] = {false};
        bool first_launch = true;
        for (int lead = 0; lead < n; lead++) {
            if (done[lead])
                continue;
            const int variant = specs[lead].variant;
            fr_kcolumn_map map;
            int m = 0;
            for (int i = lead; i < n; i++) {
                if (done[i] || specs[i].variant != variant)
                    continue;
                done[i] = true;
                args->specs[m] = specs[i];
                map.dst[m++] = i;
            }
            map.dst[m] = first_launch ? n : -1;
            args->seen = first_launch;
            first_launch = false;
            args->n_specs = m;
            /* the fused kernel takes a tile per block, the streaming kernel
             * (one configuration) a unit per warp: a function of the shape
             * and the configurations only, so the sums' order is fixed */
            const int64_t blocks = m == 1 ? fr_kceil(n_units, FR_K_WARPS) : n_tiles;
            const unsigned grid = blocks < FR_K_GRID ? (unsigned)blocks : FR_K_GRID;
            switch (v->dtype) {
            case FRONTIER_DTYPE_F32:
                FR_TRY(fr_kfused_launch<FRONTIER_DTYPE_F32>(*args, variant, grid, w_hat != NULL,
                                                              work->stream, err));
                break;
            case FRONTIER_DTYPE_F16:
                FR_TRY(fr_kfused_launch<FRONTIER_DTYPE_F16>(*args, variant, grid, w_hat != NULL,
                                                              work->stream, err));
                break;
            case FRONTIER_DTYPE_BF16:
                FR_TRY(fr_kfused_launch<FRONTIER_DTYPE_BF16>(*args, variant, grid, w_hat != NULL,
                                                              work->stream, err));
                break;
            default:
                st = fr_fail(err, FR_E_FAIL, "internal: device dtype %d", v->dtype);
                goto cleanup;
            }
            FR_LAUNCH(fr_kreduce_partials<<<(unsigned)(m + 1), 256, 0, work->stream>>>(
                (const fr_kpart *)work->partials.p, (int)grid, m + 1, (fr_kpart *)work->results.p,
                map));
        }
    }
cleanup:
    free(args);
    return st;
}

/* ---- error sums of a materialised reconstruction (the CPU's chunking) ---- */

/* One thread per chunk of core/error_sums.h, in element order: the CPU
 * metrics' own definition, so the result is bitwise the CPU's. */
static __global__ void __launch_bounds__(128)
    fr_kerror_sums(const void *__restrict__ w, int dt, const float *__restrict__ w_hat, int64_t n,
                   frontier_error_sums *__restrict__ partial)
{
    const int64_t chunk = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (chunk >= fr_error_sums_chunks(n))
        return;
    const int64_t begin = chunk * FR_ERROR_SUMS_CHUNK;
    const int64_t end = begin + FR_ERROR_SUMS_CHUNK < n ? begin + FR_ERROR_SUMS_CHUNK : n;
    frontier_error_sums p;
    FR_ERROR_SUMS_OF_RANGE(&p, begin, end, fr_kelem(w, dt, i), w_hat[i]);
    partial[chunk] = p;
}

extern "C" fr_status fr_cuda_error_sums(const void *w, int dtype, const float *w_hat, int64_t n,
                                        frontier_error_sums *sums, void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    frontier_error_sums *d_part = NULL, *h_part = NULL;
    const int64_t n_chunks = fr_error_sums_chunks(n);
    sums->sq_err = sums->sq_ref = sums->sq_hat = sums->dot = sums->max_abs_err = 0.0;
    if (n <= 0)
        return FR_OK;
    if (!fr_kdtype_size(dtype))
        return fr_fail(err, FR_E_USAGE, "error sums: unknown device dtype %d", dtype);
    h_part = (frontier_error_sums *)malloc((size_t)n_chunks * sizeof *h_part);
    if (!h_part)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate %lld partial error sums",
                       (long long)n_chunks);
    FR_CU(cudaMallocAsync((void **)&d_part, (size_t)n_chunks * sizeof *d_part, s));
    FR_LAUNCH(fr_kerror_sums<<<(unsigned)((n_chunks + 127) / 128), 128, 0, s>>>(w, dtype, w_hat, n,
                                                                             d_part));
    FR_CU(cudaMemcpyAsync(h_part, d_part, (size_t)n_chunks * sizeof *h_part,
                          cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    /* in chunk order, as the CPU metrics add them */
    for (int64_t c = 0; c < n_chunks; c++)
        fr_error_sums_merge(sums, &h_part[c]);
cleanup:
    if (d_part) {
        cudaFreeAsync(d_part, s);
        if (st != FR_OK)
            cudaStreamSynchronize(s);
    }
    free(h_part);
    return st;
}
