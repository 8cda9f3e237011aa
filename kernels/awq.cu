/*
 * AWQ on the device (kernels/awq.h): the search of quantizers/awq.c step
 * by step.
 *
 *   host:   m_j from the statistics and the 20 scale vectors s_k
 *           (fr_awq_act_means / fr_awq_scales: the CPU's own functions, so
 *           the same bits), uploaded with H once per call;
 *   device: the weights' non-finite check (a warp per row, the first bad
 *           element as the CPU reports it);
 *           for each exponent k: fr_kaw_groups without the search (a warp
 *           per group: W' = W s, the group's range with the CPU's
 *           comparisons, x^ = Q(x') / s with fr_wrap_int_qparams /
 *           fr_wrap_int_dequant), then tr(dW H dW^T) (fr_cuda_output_term,
 *           cuBLAS FP32; the emulation: the CPU's 64-row OpenBLAS chunks);
 *   host:   the least error (the first of equal ones);
 *   device: fr_kaw_groups with the clipping search under the chosen s: per
 *           group and shrink, dw_g in double, dw_g^T H_gg dw_g with each
 *           lane summing rows of H_gg sequentially and lane 0 adding the
 *           products in row order: the CPU's double sums, so the CPU's
 *           choice of shrink and its bits given the same exponent.
 */
#include <float.h>
#include <math.h>
#include <new>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kcommon.cuh"
#include "awq.h"
#include "outerr.h"

extern "C" {
#include "core/call.h"
#include "quantizers/wrap.h"
}

#include <cuda_fp16.h>
#ifdef FRONTIER_EMULATED_CUDA
#include <cblas.h>
#endif

#define FR_KAW_WARPS 8                   /* warps per thread block */
#ifndef FRONTIER_EMULATED_CUDA
#define FR_KAW_MAX_BLOCKS 4096
#define FR_KAW_CLIP_BYTES ((size_t)1 << 30) /* dw and t of one batch of rows */
#else
/* the emulation runs blocks one after the other: fewer, longer-lived warps
 * (the grid-stride loop makes the result independent of the grid); a small
 * clipping batch, so the tests cross batches of rows */
#define FR_KAW_MAX_BLOCKS 4
#define FR_KAW_CLIP_BYTES ((size_t)256 << 10)
#endif
/* the clipping search's products: 64 x 64 outputs per block of 16 x 16
 * threads, 4 x 4 per thread, 16 terms of each sum per step */
#define FR_KAW_TILE 64
#define FR_KAW_SIDE 16
#define FR_KAW_STEP 16

/* first[r] = the first column of row r whose weight is not finite
 * (fr_q_nonfinite's test), INT64_MAX when none: a warp per row. */
static __global__ void fr_kaw_finite(const void *w, int dtype, int64_t rows, int64_t cols,
                                     int64_t *first)
{
    const int lane = threadIdx.x & 31;
    const int64_t nw = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += nw) {
        long long f = INT64_MAX;
        for (int64_t c = lane; c < cols; c += 32) {
            float x = fr_kload1(w, dtype, r * cols + c);
            if (!(x - x == 0.0f)) {
                f = c;
                break;
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            long long of = __shfl_xor_sync(0xffffffffu, f, o);
            f = of < f ? of : f;
        }
        if (lane == 0)
            first[r] = f;
    }
}

typedef struct fr_kaw_args {
    const void *w;        /* rows x cols, stored dtype */
    int dtype;
    const float *s;       /* [cols] the exponent's scales */
    float *w_hat;         /* rows x cols float32 */
    float *lohi;          /* NULL, or [2 x groups]: each group's range of W s is written */
    const uint8_t *best;  /* NULL (no clipping), or [groups]: each group's chosen shrink */
    fr_int_params p;
    int64_t rows, cols, group, groups_per_row;
} fr_kaw_args;

/*
 * Every group of the int base (awq_groups of quantizers/awq.c), a warp
 * per group (grid-stride): x' = x s, the range of x' (lanes stride, then a
 * butterfly with the CPU's comparisons from +0, so the bounds are the
 * CPU's exactly), shrunk by the group's chosen factor when `best` is
 * given, and x^ = Q(x') / s.
 */
static __global__ void __launch_bounds__(FR_KAW_WARPS * 32) fr_kaw_groups(fr_kaw_args a)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t gw = (int64_t)blockIdx.x * FR_KAW_WARPS + warp;
    const int64_t nw = (int64_t)gridDim.x * FR_KAW_WARPS;
    const int64_t n_groups = a.rows * a.groups_per_row;
    for (int64_t u = gw; u < n_groups; u += nw) {
        const int64_t row = u / a.groups_per_row, start = (u % a.groups_per_row) * a.group;
        const int64_t n = a.cols - start < a.group ? a.cols - start : a.group;
        const int64_t base = row * a.cols + start;
        const float *s = a.s + start;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t i = lane; i < n; i += 32) {
            float xs = fr_kload1(a.w, a.dtype, base + i) * s[i];
            lo = xs < lo ? xs : lo;
            hi = xs > hi ? xs : hi;
        }
        for (int o = 16; o > 0; o >>= 1) {
            float ol = __shfl_xor_sync(0xffffffffu, lo, o), oh = __shfl_xor_sync(0xffffffffu, hi, o);
            lo = ol < lo ? ol : lo;
            hi = oh > hi ? oh : hi;
        }
        if (a.lohi && lane == 0) {
            a.lohi[2 * u] = lo;
            a.lohi[2 * u + 1] = hi;
        }
        float slo, shi;
        fr_wrap_shrunk(lo, hi, fr_wrap_shrink(a.best ? a.best[u] : 0), &slo, &shi);
        fr_int_qparams qp = fr_wrap_int_qparams(&a.p, slo, shi);
        for (int64_t i = lane; i < n; i += 32) {
            float xs = fr_kload1(a.w, a.dtype, base + i) * s[i];
            a.w_hat[base + i] = fr_wrap_int_dequant(&a.p, qp, xs) / s[i];
        }
    }
}

/*
 * The clipping search under the chosen s (awq_groups' search): for each
 * group (columns start..start+n of a row) and shrink k, dw_i = x_i -
 * Q_k(x'_i) / s_i in double, t_i = sum_j H[start+i][start+j] dw_j
 * sequentially in j, e = sum_i dw_i t_i sequentially in i (each product
 * rounded, then the sum: -fmad=false), the least e (the first of equal
 * ones). Groups in the same columns share their block of H, so for a batch
 * of rows r0..r0+nr the pairs p = (row, k) of one column block are the
 * columns of a product T = H_cc DW_c, evaluated as a tiled matrix product
 * whose every output is one thread's sequential sum (fr_kaw_seq); then each
 * group's 11 sums e and its choice (fr_kaw_pick). The CPU's operations, so
 * its choices.
 */
typedef struct fr_kaw_clip {
    fr_kaw_args g;        /* the weights, the chosen exponent's s, the groups' ranges (lohi) */
    const float *h;       /* [cols x cols] H on the device */
    double *dw, *t;       /* [cols x P]: column j of block c at row start_c + j */
    uint8_t *best;        /* [groups] */
    int64_t r0, nr, P;    /* the batch's rows; P = nr x FR_WRAP_SHRINKS pairs */
} fr_kaw_clip;

/* dw[col][p] for p = (row - r0) x FR_WRAP_SHRINKS + k */
static __global__ void fr_kaw_dw(fr_kaw_clip a)
{
    const int64_t total = a.g.cols * a.P;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t col = idx / a.P, pp = idx % a.P;
        const int64_t row = a.r0 + pp / FR_WRAP_SHRINKS;
        const int k = (int)(pp % FR_WRAP_SHRINKS);
        const int64_t u = row * a.g.groups_per_row + col / a.g.group;
        float slo, shi;
        fr_wrap_shrunk(a.g.lohi[2 * u], a.g.lohi[2 * u + 1], fr_wrap_shrink(k), &slo, &shi);
        fr_int_qparams qp = fr_wrap_int_qparams(&a.g.p, slo, shi);
        const float x = fr_kload1(a.g.w, a.g.dtype, row * a.g.cols + col);
        const float xs = x * a.g.s[col];
        a.dw[idx] = (double)x - (double)(fr_wrap_int_dequant(&a.g.p, qp, xs) / a.g.s[col]);
    }
}

/* t[start + i][p] = sum_j H[start + i][start + j] dw[start + j][p] of column
 * block blockIdx.z, j = 0, 1, ... in order (each output one thread's chain) */
static __global__ void __launch_bounds__(FR_KAW_SIDE * FR_KAW_SIDE) fr_kaw_seq(fr_kaw_clip a)
{
    __shared__ double hs[FR_KAW_STEP][FR_KAW_TILE + 1];
    __shared__ double ds[FR_KAW_STEP][FR_KAW_TILE];
    const int64_t start = (int64_t)blockIdx.z * a.g.group;
    const int64_t n = a.g.cols - start < a.g.group ? a.g.cols - start : a.g.group;
    const int64_t i0 = (int64_t)blockIdx.y * FR_KAW_TILE, p0 = (int64_t)blockIdx.x * FR_KAW_TILE;
    if (i0 >= n) /* the whole block, before any barrier */
        return;
    const int tx = threadIdx.x % FR_KAW_SIDE, ty = threadIdx.x / FR_KAW_SIDE;
    const int per = FR_KAW_TILE / FR_KAW_SIDE;
    double acc[FR_KAW_TILE / FR_KAW_SIDE][FR_KAW_TILE / FR_KAW_SIDE];
    for (int x = 0; x < per; x++)
        for (int y = 0; y < per; y++)
            acc[x][y] = 0.0;
    for (int64_t j0 = 0; j0 < n; j0 += FR_KAW_STEP) {
        const int jn = n - j0 < FR_KAW_STEP ? (int)(n - j0) : FR_KAW_STEP;
        for (int e = threadIdx.x; e < FR_KAW_STEP * FR_KAW_TILE; e += FR_KAW_SIDE * FR_KAW_SIDE) {
            const int ii = e / FR_KAW_STEP, jj = e % FR_KAW_STEP; /* along H's rows */
            hs[jj][ii] = jj < jn && i0 + ii < n
                             ? (double)a.h[(start + i0 + ii) * a.g.cols + start + j0 + jj]
                             : 0.0;
            const int dj = e / FR_KAW_TILE, dp = e % FR_KAW_TILE;
            ds[dj][dp] = dj < jn && p0 + dp < a.P ? a.dw[(start + j0 + dj) * a.P + p0 + dp] : 0.0;
        }
        __syncthreads();
        for (int jj = 0; jj < jn; jj++) {
            double hv[FR_KAW_TILE / FR_KAW_SIDE], dv[FR_KAW_TILE / FR_KAW_SIDE];
            for (int x = 0; x < per; x++)
                hv[x] = hs[jj][ty + FR_KAW_SIDE * x];
            for (int y = 0; y < per; y++)
                dv[y] = ds[jj][tx + FR_KAW_SIDE * y];
            for (int x = 0; x < per; x++)
                for (int y = 0; y < per; y++)
                    acc[x][y] += hv[x] * dv[y];
        }
        __syncthreads();
    }
    for (int x = 0; x < per; x++)
        for (int y = 0; y < per; y++) {
            const int64_t i = i0 + ty + FR_KAW_SIDE * x, p = p0 + tx + FR_KAW_SIDE * y;
            if (i < n && p < a.P)
                a.t[(start + i) * a.P + p] = acc[x][y];
        }
}

/* each group of the batch: e_k = sum_i dw_i t_i in order of i, the first least */
static __global__ void fr_kaw_pick(fr_kaw_clip a)
{
    const int64_t total = a.nr * a.g.groups_per_row;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t rl = idx / a.g.groups_per_row, c = idx % a.g.groups_per_row;
        const int64_t start = c * a.g.group;
        const int64_t n = a.g.cols - start < a.g.group ? a.g.cols - start : a.g.group;
        double e[FR_WRAP_SHRINKS];
        for (int k = 0; k < FR_WRAP_SHRINKS; k++)
            e[k] = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const int64_t o = (start + i) * a.P + rl * FR_WRAP_SHRINKS;
            for (int k = 0; k < FR_WRAP_SHRINKS; k++)
                e[k] += a.dw[o + k] * a.t[o + k];
        }
        int best = 0;
        double best_e = INFINITY;
        for (int k = 0; k < FR_WRAP_SHRINKS; k++)
            if (e[k] < best_e) {
                best_e = e[k];
                best = k;
            }
        a.best[(a.r0 + rl) * a.g.groups_per_row + c] = (uint8_t)best;
    }
}

/* The chosen shrink of every group (fr_kaw_clip), batch after batch of rows. */
static fr_status fr_kaw_search(fr_kaw_clip *c, cudaStream_t s, fr_error *err)
{
    fr_status st = FR_OK;
    const int64_t per_row = c->g.cols * FR_WRAP_SHRINKS * (int64_t)(2 * sizeof(double));
    int64_t nr = (int64_t)(FR_KAW_CLIP_BYTES / (size_t)per_row);
    nr = nr < 1 ? 1 : nr > c->g.rows ? c->g.rows : nr;
    const size_t bytes = (size_t)(c->g.cols * nr * FR_WRAP_SHRINKS) * sizeof(double);
    c->dw = c->t = NULL;
    FR_CU(cudaMallocAsync((void **)&c->dw, bytes, s));
    FR_CU(cudaMallocAsync((void **)&c->t, bytes, s));
    for (int64_t r0 = 0; r0 < c->g.rows; r0 += nr) {
        c->r0 = r0;
        c->nr = c->g.rows - r0 < nr ? c->g.rows - r0 : nr;
        c->P = c->nr * FR_WRAP_SHRINKS;
        const int64_t cells = c->g.cols * c->P;
        const int blocks = (int)((cells + 255) / 256 < 8192 ? (cells + 255) / 256 : 8192);
        FR_LAUNCH(fr_kaw_dw<<<blocks, 256, 0, s>>>(*c));
        const int64_t span = c->g.group < c->g.cols ? c->g.group : c->g.cols;
        dim3 grid((unsigned)((c->P + FR_KAW_TILE - 1) / FR_KAW_TILE),
                  (unsigned)((span + FR_KAW_TILE - 1) / FR_KAW_TILE), (unsigned)c->g.groups_per_row);
        FR_LAUNCH(fr_kaw_seq<<<grid, FR_KAW_SIDE * FR_KAW_SIDE, 0, s>>>(*c));
        const int64_t groups = c->nr * c->g.groups_per_row;
        FR_LAUNCH(fr_kaw_pick<<<(int)((groups + 127) / 128 < 8192 ? (groups + 127) / 128 : 8192),
                                128, 0, s>>>(*c));
    }
cleanup:
    if (c->dw)
        cudaFreeAsync(c->dw, s);
    if (c->t)
        cudaFreeAsync(c->t, s);
    c->dw = c->t = NULL;
    return st;
}

#ifndef FRONTIER_EMULATED_CUDA
/* The output error of one exponent: kernels/outerr.h (cuBLAS, FP32). */
typedef fr_cuda_blas fr_kaw_blas;

static fr_status fr_kaw_blas_open(cudaStream_t s, int64_t cols, fr_kaw_blas **b, fr_error *err)
{
    (void)cols;
    return fr_cuda_blas_create((void *)s, 0, b, err);
}

static void fr_kaw_blas_close(fr_kaw_blas *b)
{
    fr_cuda_blas_destroy(b);
}

static fr_status fr_kaw_out_error(fr_kaw_blas *b, cudaStream_t s, const void *w, int dtype,
                                  const float *w_hat, int64_t rows, int64_t cols, const float *h,
                                  double *e, fr_error *err)
{
    (void)s;
    return fr_cuda_output_term(b, w, dtype, w_hat, rows, cols, h, e, err);
}
#else
/* The emulation: quantizers/awq.c's out_error on the emulated device
 * memory (host memory), its chunks and its sequential sum. */
typedef struct fr_kaw_blas {
    std::vector<float> d, g;
} fr_kaw_blas;

static fr_status fr_kaw_blas_open(cudaStream_t s, int64_t cols, fr_kaw_blas **b, fr_error *err)
{
    (void)s;
    *b = new (std::nothrow) fr_kaw_blas;
    if (!*b)
        return fr_fail(err, FR_E_NOMEM, "awq: cannot allocate the output error's scratch");
    (*b)->d.resize((size_t)(FR_AWQ_CHUNK_ROWS * cols));
    (*b)->g.resize((size_t)(FR_AWQ_CHUNK_ROWS * cols));
    return FR_OK;
}

static void fr_kaw_blas_close(fr_kaw_blas *b)
{
    delete b;
}

static fr_status fr_kaw_out_error(fr_kaw_blas *b, cudaStream_t s, const void *w, int dtype,
                                  const float *w_hat, int64_t rows, int64_t cols, const float *h,
                                  double *e, fr_error *err)
{
    fr_status st = FR_OK;
    float *d = b->d.data(), *g = b->g.data();
    double total = 0.0;
    FR_CU(cudaStreamSynchronize(s));
    for (int64_t r0 = 0; r0 < rows; r0 += FR_AWQ_CHUNK_ROWS) {
        int64_t nr = rows - r0 < FR_AWQ_CHUNK_ROWS ? rows - r0 : FR_AWQ_CHUNK_ROWS;
        for (int64_t i = 0; i < nr * cols; i++)
            d[i] = fr_kload1(w, dtype, r0 * cols + i) - w_hat[r0 * cols + i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)cols, (int)cols, 1.0f,
                    d, (int)cols, h, (int)cols, 0.0f, g, (int)cols);
        for (int64_t i = 0; i < nr * cols; i++)
            total += (double)d[i] * (double)g[i];
    }
    *e = total;
cleanup:
    return st;
}
#endif

extern "C" fr_status fr_cuda_awq_h(const void *w, int dtype, float *w_hat, int64_t rows,
                                   int64_t cols, const frontier_calib *calib,
                                   const float *h_device, const fr_int_params *p, void *stream,
                                   fr_awq_choice *choice, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    float *h_own = NULL, *s_d = NULL, *lohi = NULL;
    const float *h_d = h_device;
    uint8_t *best = NULL;
    int64_t *first_d = NULL;
    fr_kaw_blas *blas = NULL;
    std::vector<float> m, sc;
    std::vector<int64_t> first;
    double best_e = INFINITY;
    int best_k = -1;
    if (choice) {
        choice->alpha = -1;
        for (int k = 0; k < FR_AWQ_GRID; k++)
            choice->err[k] = NAN;
    }
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    if (!fr_awq_calib_ok(calib, cols))
        return fr_fail(err, FR_E_USAGE,
                       "needs a Hessian and per-channel activation statistics for %lld inputs",
                       (long long)cols);
    if (cols > INT32_MAX / FR_KOUT_ROWS)
        return fr_fail(err, FR_E_USAGE, "awq on the gpu: %lld input columns are more than "
                       "cublas takes", (long long)cols);
    const int64_t group = fr_wrap_group_cols(p, cols);
    const int64_t gpr = (cols + group - 1) / group;
    const int64_t n_groups = rows * gpr;
    int64_t blocks = (n_groups + FR_KAW_WARPS - 1) / FR_KAW_WARPS;
    if (blocks > FR_KAW_MAX_BLOCKS)
        blocks = FR_KAW_MAX_BLOCKS;
    fr_kaw_args a;
    fr_kaw_clip cl;
    memset(&a, 0, sizeof a);
    a.w = w;
    a.dtype = dtype;
    a.w_hat = w_hat;
    a.p = *p;
    a.rows = rows;
    a.cols = cols;
    a.group = group;
    a.groups_per_row = gpr;

    /* the weights first, as the CPU checks them */
    const int fin_blocks = (int)((rows + 7) / 8 < 4096 ? (rows + 7) / 8 : 4096);
    first.assign((size_t)rows, INT64_MAX);
    FR_CU(cudaMallocAsync((void **)&first_d, (size_t)rows * sizeof(int64_t), s));
    FR_LAUNCH(fr_kaw_finite<<<fin_blocks, 256, 0, s>>>(w, dtype, rows, cols, first_d));
    FR_CU(cudaMemcpyAsync(first.data(), first_d, (size_t)rows * sizeof(int64_t),
                          cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    for (int64_t r = 0; r < rows; r++)
        if (first[(size_t)r] != INT64_MAX) {
            st = fr_fail(err, FR_E_USAGE, "non-finite weight at row %lld, column %lld",
                         (long long)r, (long long)first[(size_t)r]);
            goto cleanup;
        }

    /* the scales on the host, the CPU's function; H and the scales up */
    m.resize((size_t)cols);
    sc.resize((size_t)(FR_AWQ_GRID * cols));
    fr_awq_act_means(calib, cols, m.data());
    for (int k = 0; k < FR_AWQ_GRID; k++)
        fr_awq_scales(m.data(), cols, k, sc.data() + (size_t)k * (size_t)cols);
    if (!h_d) {
        FR_CU(cudaMallocAsync((void **)&h_own, (size_t)(cols * cols) * sizeof(float), s));
        FR_CU(cudaMemcpyAsync(h_own, calib->hessian, (size_t)(cols * cols) * sizeof(float),
                              cudaMemcpyHostToDevice, s));
        h_d = h_own;
    }
    FR_CU(cudaMallocAsync((void **)&s_d, sc.size() * sizeof(float), s));
    FR_CU(cudaMemcpyAsync(s_d, sc.data(), sc.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    FR_TRY(fr_kaw_blas_open(s, cols, &blas, err));

    for (int k = 0; k < FR_AWQ_GRID; k++) {
        double e = 0.0;
        a.s = s_d + (size_t)k * (size_t)cols;
        FR_LAUNCH(fr_kaw_groups<<<(int)blocks, FR_KAW_WARPS * 32, 0, s>>>(a));
        FR_TRY(fr_kaw_out_error(blas, s, w, dtype, w_hat, rows, cols, h_d, &e, err));
        if (choice)
            choice->err[k] = e;
        if (e < best_e) {
            best_e = e;
            best_k = k;
        }
    }
    if (choice)
        choice->alpha = best_k;
    if (best_k < 0) {
        st = fr_fail(err, FR_E_USAGE, FR_AWQ_NO_FINITE_ERROR);
        goto cleanup;
    }
    /* the ranges under the chosen s, the search, then w^ with each group's shrink */
    FR_CU(cudaMallocAsync((void **)&lohi, (size_t)(2 * n_groups) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&best, (size_t)n_groups, s));
    a.s = s_d + (size_t)best_k * (size_t)cols;
    a.lohi = lohi;
    FR_LAUNCH(fr_kaw_groups<<<(int)blocks, FR_KAW_WARPS * 32, 0, s>>>(a));
    memset(&cl, 0, sizeof cl);
    cl.g = a;
    cl.h = h_d;
    cl.best = best;
    FR_TRY(fr_kaw_search(&cl, s, err));
    a.lohi = NULL;
    a.best = best;
    FR_LAUNCH(fr_kaw_groups<<<(int)blocks, FR_KAW_WARPS * 32, 0, s>>>(a));
    FR_CU(cudaStreamSynchronize(s));
cleanup:
    fr_kaw_blas_close(blas);
    {
        void *bufs[] = {h_own, s_d, lohi, best, first_d};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
            if (bufs[k])
                cudaFreeAsync(bufs[k], s);
        cudaStreamSynchronize(s);
    }
    return st;
}

extern "C" fr_status fr_cuda_awq(const void *w, int dtype, float *w_hat, int64_t rows,
                                 int64_t cols, const frontier_calib *calib,
                                 const fr_int_params *p, void *stream, fr_awq_choice *choice,
                                 fr_error *err)
{
    return fr_cuda_awq_h(w, dtype, w_hat, rows, cols, calib, NULL, p, stream, choice, err);
}

/* awq's quantize_cuda (a row of gpu_entries.h's table): the wrapped
 * int configuration's parameters, the statistics in host memory, H on the
 * device when the executor has it there (frontier_call.hessian_device). */
extern "C" int fr_awq_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                    float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, void *stream,
                                    frontier_call *call)
{
    fr_error err;
    fr_error_clear(&err);
    const fr_wrap_params *wp = (const fr_wrap_params *)cfg->impl;
    const fr_int_params *ip = wp ? fr_wrap_int_base(wp) : NULL;
    if (!ip || ip->granularity == FR_INT_TENSOR) {
        fr_fail(&err, FR_E_USAGE, "configuration '%s' has no int group or row base", cfg->name);
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    fr_status st = fr_cuda_awq_h(w, dtype, w_hat, rows, cols, calib, call->hessian_device, ip,
                                 stream, NULL, &err);
    return fr_kreport(call, st, &err);
}
