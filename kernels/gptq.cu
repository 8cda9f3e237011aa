/*
 * GPTQ on the device (kernels/gptq.h): the algorithm of quantizers/gptq.c
 * step by step, with the same float32 arithmetic per element where the
 * CPU has it (the in-block column loop: q, err = (x - q) / U_ii, w_j -=
 * err U_ij, no contraction under -fmad=false), and a different float order
 * where BLAS sums (the lazy block update: cuBLAS against OpenBLAS) and
 * LAPACK factors (cuSOLVER against LAPACKE, both double).
 *
 *   host:   diag H (dead columns H_jj = 0 -> 1), mean(diag), act-order
 *           permutation (decreasing H_jj, ties by index: the CPU's order);
 *   device: A~ = J A J, A = H[perm][perm] + damp I, J the reversal
 *           (double); potrf(L), L~^-1 (fr_kg_trinv: leaf blocks, then
 *           batched DGEMM levels): U = J L~^-1 J, upper with
 *           A^-1 = U^T U (fr_kg_factor says why), retried with damp x10
 *           up to three times; U -> float32 row-major;
 *           W = w[:, perm] (dead columns 0) in float32;
 *           static scales (-act, gC) from the dead-zeroed weights;
 *           for each block [i1, i2): fr_kgptq_block (the column loop in
 *           shared memory, writes w^ at the original columns and Err),
 *           then W[:, i2:] -= Err U[i1:i2, i2:] (cublasSgemm, FP32).
 */
#include <algorithm>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kcommon.cuh"
#include "quantizers/int_group.h"
#include "gptq.h"

extern "C" {
#include "core/call.h"
#include "quantizers/wrap.h"
}

#include <cuda_fp16.h>
#ifndef FRONTIER_EMULATED_CUDA
#include <cublas_v2.h>
#include <cusolverDn.h>
#else
/* The CPU emulation (tests/gpu/emu) has no cuSOLVER or cuBLAS: there the
 * factorisation is LAPACKE's (the CPU reference's own code) and the lazy
 * update OpenBLAS's sgemm on the emulated device memory (host memory), so
 * the kernels below run in CI against the CPU reference. */
#include <cblas.h>
#include <lapacke.h>
#endif

#define FR_KG_ROWS 8          /* rows per thread block of the column loop */
#define FR_KG_MAX_BLOCK 256   /* B = max(128, g) <= 256 */
#define FR_KG_DAMP 0.01
#define FR_KG_RETRIES 3
#define FR_KG_LEAF 64         /* diagonal blocks the inverse starts from */
#define FR_KG_AHEAD 4         /* U rows in flight in the warp column loop (divides 32) */

/* One cuBLAS and one cuSOLVER handle for the process (created on first
 * use; the stream is set per call under the lock). */
static pthread_mutex_t fr_kg_lock = PTHREAD_MUTEX_INITIALIZER;
#ifndef FRONTIER_EMULATED_CUDA
static cublasHandle_t fr_kg_blas;
static cublasHandle_t fr_kg_blas_side; /* the lookahead's stream: its own workspace */
static cusolverDnHandle_t fr_kg_solver;

#define FR_KG_BLAS(call)                                                                     \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            st = fr_fail(err, s_ == CUBLAS_STATUS_ALLOC_FAILED ? FR_E_NOMEM : FR_E_DEVICE,   \
                         "cublas call '%s' failed: %s", #call, cublasGetStatusString(s_));   \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)
#define FR_KG_SOLVER(call)                                                                   \
    do {                                                                                     \
        cusolverStatus_t s_ = (call);                                                        \
        if (s_ != CUSOLVER_STATUS_SUCCESS) {                                                 \
            st = fr_fail(err, s_ == CUSOLVER_STATUS_ALLOC_FAILED ? FR_E_NOMEM : FR_E_DEVICE, \
                         "cusolver call '%s' failed (status %d)", #call, (int)s_);           \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)
#endif

/* The int rule of the wrapped configuration (quantizers/wrap.h, FR_HD):
 * the scale and zero point of a range, and x^ under them. */
__device__ static inline void fr_kg_qparams(int bits, int sym, float lo, float hi, float *s,
                                            float *z)
{
    const fr_int_params p = {bits, FR_INT_GROUP, 0, sym};
    const fr_int_qparams qp = fr_wrap_int_qparams(&p, lo, hi);
    *s = qp.s;
    *z = qp.z;
}

__device__ static inline float fr_kg_dequant(int bits, int sym, float s, float z, float x)
{
    const fr_int_params p = {bits, FR_INT_GROUP, 0, sym};
    const fr_int_qparams qp = {s, z};
    return fr_wrap_int_dequant(&p, qp, x);
}

/* W[r][i] = w[r][perm[i]], dead columns 0. */
static __global__ void fr_kg_prep_w(const void *w, int dtype, const int64_t *perm,
                                    const uint8_t *dead, int64_t rows, int64_t n, float *W)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / n, j = perm[e % n];
        W[e] = dead[j] ? 0.0f : fr_kload1(w, dtype, r * n + j);
    }
}

/* Static scales (-act, gC): from the dead-zeroed weights, groups by
 * original column, one thread per (row, group), in column order. */
static __global__ void fr_kg_static(const void *w, int dtype, const uint8_t *dead, int64_t rows,
                                    int64_t n, int64_t g, int64_t G, int bits, int sym, float *S,
                                    float *Z)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * G;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / G, k = e % G, start = k * g, len = n - start < g ? n - start : g;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t j = start; j < start + len; j++) {
            float v = dead[j] ? 0.0f : fr_kload1(w, dtype, r * n + j);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        fr_kg_qparams(bits, sym, lo, hi, &S[e], &Z[e]);
    }
}

/* lo/hi of len values of a shared row (lanes stride, then a butterfly with
 * the CPU's comparisons; -0.0 never enters since every start is +0). */
__device__ static inline void fr_kg_range(const float *x, int len, float *lo, float *hi)
{
    const int lane = threadIdx.x & 31;
    float l = 0.0f, h = 0.0f;
    for (int c = lane; c < len; c += 32) {
        float v = x[c];
        l = v < l ? v : l;
        h = v > h ? v : h;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ol = __shfl_xor_sync(0xffffffffu, l, o), oh = __shfl_xor_sync(0xffffffffu, h, o);
        l = ol < l ? ol : l;
        h = oh > h ? oh : h;
    }
    *lo = l;
    *hi = h;
}

/*
 * The column loop of block [i1, i1 + nb) for ROWS rows: blockDim.x = B
 * threads, thread t owns column i1 + t of every row of the tile.
 */
typedef struct fr_kg_args {
    float *W;             /* rows x n, permuted order */
    const float *u;       /* n x n row-major upper factor */
    const int64_t *perm;
    float *w_hat;         /* rows x n, original order */
    float *E;             /* rows x B */
    const float *S, *Z;   /* static scales [rows x G] or NULL */
    int64_t rows, n, g, G, B, i1, nb;
    int bits, sym, variant;
} fr_kg_args;

template <int ROWS>
static __global__ void __launch_bounds__(FR_KG_MAX_BLOCK) fr_kgptq_block(fr_kg_args a)
{
    __shared__ float ws[ROWS][FR_KG_MAX_BLOCK];
    __shared__ float errv[ROWS];
    __shared__ float s_cur[ROWS], z_cur[ROWS];
    __shared__ float s_blk[ROWS][FR_KG_MAX_BLOCK / 32], z_blk[ROWS][FR_KG_MAX_BLOCK / 32];
    __shared__ int64_t pcol[FR_KG_MAX_BLOCK]; /* perm[i1 + c] */
    const int t = threadIdx.x, nwarps = blockDim.x / 32, warp = t / 32;
    const int64_t r0 = (int64_t)blockIdx.x * ROWS;
    const int nb = (int)a.nb;
    const int stat = a.S != NULL;
    for (int r = 0; r < ROWS; r++)
        ws[r][t] = t < nb && r0 + r < a.rows ? a.W[(r0 + r) * a.n + a.i1 + t] : 0.0f;
    pcol[t] = t < nb ? a.perm[a.i1 + t] : 0;
    __syncthreads();
    if (!stat && a.variant == FR_GPTQ_REFSCALE) {
        /* every group of the block from the block as it stood at its start */
        for (int r = warp; r < ROWS; r += nwarps)
            for (int c = 0; c < nb; c += (int)a.g) {
                int len = nb - c < a.g ? nb - c : (int)a.g;
                float lo, hi;
                fr_kg_range(&ws[r][c], len, &lo, &hi);
                if ((t & 31) == 0)
                    fr_kg_qparams(a.bits, a.sym, lo, hi, &s_blk[r][c / a.g], &z_blk[r][c / a.g]);
            }
        __syncthreads();
    }
    /* column c's U_ii (rows' threads) and U_ij (column threads), loaded one
     * column ahead so the global latency overlaps the previous column */
    float d_nxt = t < ROWS ? a.u[a.i1 * a.n + a.i1] : 0.0f;
    float u_nxt = t < nb ? a.u[a.i1 * a.n + a.i1 + t] : 0.0f;
    for (int c = 0; c < nb; c++) {
        const int64_t i = a.i1 + c;
        const float d = d_nxt, uij = u_nxt;
        if (c + 1 < nb) {
            if (t < ROWS)
                d_nxt = a.u[(i + 1) * a.n + i + 1];
            if (t < nb)
                u_nxt = a.u[(i + 1) * a.n + a.i1 + t];
        }
        if (!stat && a.variant != FR_GPTQ_REFSCALE && i % a.g == 0) {
            int len = (int)(a.n - i < a.g ? a.n - i : a.g);
            for (int r = warp; r < ROWS; r += nwarps) {
                float lo, hi;
                fr_kg_range(&ws[r][c], len, &lo, &hi);
                if ((t & 31) == 0)
                    fr_kg_qparams(a.bits, a.sym, lo, hi, &s_cur[r], &z_cur[r]);
            }
            __syncthreads();
        }
        if (t < ROWS) {
            const int r = t;
            float s, z;
            if (stat) {
                int64_t k = pcol[c] / a.g;
                s = r0 + r < a.rows ? a.S[(r0 + r) * a.G + k] : 0.0f;
                z = r0 + r < a.rows ? a.Z[(r0 + r) * a.G + k] : 0.0f;
            } else if (a.variant == FR_GPTQ_REFSCALE) {
                s = s_blk[r][c / a.g];
                z = z_blk[r][c / a.g];
            } else {
                s = s_cur[r];
                z = z_cur[r];
            }
            float x = ws[r][c];
            float q = fr_kg_dequant(a.bits, a.sym, s, z, x);
            float e = (x - q) / d;
            errv[r] = e;
            if (r0 + r < a.rows) {
                a.w_hat[(r0 + r) * a.n + pcol[c]] = q;
                a.E[(r0 + r) * a.B + c] = e;
            }
        }
        __syncthreads();
        if (t > c && t < nb) {
            for (int r = 0; r < ROWS; r++)
                ws[r][t] -= errv[r] * uij;
        }
        __syncthreads();
    }
}

/* Bounds of the caller's row (lane r < R takes row r) over slots [k0, k1)
 * of the warp's registers: each lane over its slots, then a butterfly with
 * the CPU's comparisons (every start is +0, so -0.0 never enters). */
template <int R, int S>
__device__ static inline void fr_kg_warp_bounds(const float (&v)[R][S], int k0, int k1,
                                                float *mylo, float *myhi)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float l = 0.0f, h = 0.0f;
#pragma unroll
        for (int k = 0; k < S; k++)
            if (k >= k0 && k < k1) {
                float x = v[r][k];
                l = x < l ? x : l;
                h = x > h ? x : h;
            }
        for (int o = 16; o > 0; o >>= 1) {
            float ol = __shfl_xor_sync(0xffffffffu, l, o), oh = __shfl_xor_sync(0xffffffffu, h, o);
            l = ol < l ? ol : l;
            h = oh > h ? oh : h;
        }
        if (lane == r) {
            *mylo = l;
            *myhi = h;
        }
    }
}

/*
 * The column loop of block [i1, i1 + nb) with one warp per R rows and no
 * block barrier in the loop: lane l holds columns l, l + 32, ... (S = B / 32
 * slots) of the warp's R rows in registers. Column c = 32 k + o: the R
 * values of slot k of lane o reach lanes 0..R-1 by shuffles (lane r takes
 * row r's), lane r computes q and err = (x - q) / U_ii of row r, the R
 * errors go back to every lane by shuffles, and every lane updates its
 * columns j > c, w_j -= err U_ij: the CPU's float32 operations, in its
 * order, so the results equal fr_kgptq_block's bit for bit. U's rows of
 * the next FR_KG_AHEAD columns are in flight while column c runs (a ring of
 * registers); q and err collect in shared
 * memory and leave coalesced at the end of the block.
 */
template <int R, int S, int WARPS>
static __global__ void __launch_bounds__(WARPS * 32) fr_kgptq_warp(fr_kg_args a)
{
    constexpr int B = S * 32;
    __shared__ float qbuf[WARPS][R][B + 1];
    __shared__ float ebuf[WARPS][R][B + 1];
    __shared__ float sblk[WARPS][R][S], zblk[WARPS][R][S];
    __shared__ int64_t pcol[B];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t r0 = ((int64_t)blockIdx.x * WARPS + warp) * R;
    const int nb = (int)a.nb, g = (int)a.g;
    const int stat = a.S != NULL;
    const int refscale = !stat && a.variant == FR_GPTQ_REFSCALE;
    const int64_t row = r0 + lane; /* the row lane r < R computes */
    float v[R][S];
    for (int t = threadIdx.x; t < B; t += WARPS * 32)
        pcol[t] = t < nb ? a.perm[a.i1 + t] : 0;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int k = 0; k < S; k++) {
            const int j = 32 * k + lane;
            v[r][k] = j < nb && r0 + r < a.rows ? a.W[(r0 + r) * a.n + a.i1 + j] : 0.0f;
        }
    __syncthreads();
    if (refscale) {
        /* every group of the block from the block as it stood at its start */
        for (int c0 = 0; c0 < nb; c0 += g) {
            float lo = 0.0f, hi = 0.0f;
            fr_kg_warp_bounds<R, S>(v, c0 / 32, c0 / 32 + g / 32, &lo, &hi);
            if (lane < R)
                fr_kg_qparams(a.bits, a.sym, lo, hi, &sblk[warp][lane][c0 / g],
                              &zblk[warp][lane][c0 / g]);
        }
        __syncwarp();
    }
    /* U's rows of columns c .. c + FR_KG_AHEAD - 1 in a ring (slot c %
     * FR_KG_AHEAD, a constant in the unrolled loop): row c + FR_KG_AHEAD is
     * loaded when column c is done, so a load has FR_KG_AHEAD columns of
     * work to arrive */
    float ur[FR_KG_AHEAD][S], dr[FR_KG_AHEAD];
#pragma unroll
    for (int d = 0; d < FR_KG_AHEAD; d++) {
        const int64_t i = a.i1 + d;
        dr[d] = d < nb ? a.u[i * a.n + i] : 0.0f;
#pragma unroll
        for (int k = 0; k < S; k++) {
            const int j = 32 * k + lane;
            ur[d][k] = d < nb && j < nb ? a.u[i * a.n + a.i1 + j] : 0.0f;
        }
    }
    float s_cur = 0.0f, z_cur = 0.0f;
#pragma unroll
    for (int k = 0; k < S; k++) {
        for (int o0 = 0; o0 < 32; o0 += FR_KG_AHEAD) {
#pragma unroll
            for (int d = 0; d < FR_KG_AHEAD; d++) {
                const int o = o0 + d, c = 32 * k + o;
                if (c >= nb)
                    goto done;
                if (!stat && !refscale && c % g == 0) {
                    /* a group starts (i1 and c are multiples of g >= 32): its
                     * slots k.. */
                    float lo = 0.0f, hi = 0.0f;
                    fr_kg_warp_bounds<R, S>(v, k, k + g / 32, &lo, &hi);
                    if (lane < R)
                        fr_kg_qparams(a.bits, a.sym, lo, hi, &s_cur, &z_cur);
                }
                float x = 0.0f;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float t = __shfl_sync(0xffffffffu, v[r][k], o);
                    if (lane == r)
                        x = t;
                }
                float sc = s_cur, zc = z_cur;
                if (stat) {
                    const int64_t gi = (int)pcol[c] / g;
                    sc = lane < R && row < a.rows ? a.S[row * a.G + gi] : 0.0f;
                    zc = lane < R && row < a.rows ? a.Z[row * a.G + gi] : 0.0f;
                } else if (refscale) {
                    sc = lane < R ? sblk[warp][lane][c / g] : 0.0f;
                    zc = lane < R ? zblk[warp][lane][c / g] : 0.0f;
                }
                const float q = fr_kg_dequant(a.bits, a.sym, sc, zc, x);
                const float e = (x - q) / dr[d];
                if (lane < R) {
                    qbuf[warp][lane][c] = q;
                    ebuf[warp][lane][c] = e;
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float er = __shfl_sync(0xffffffffu, e, r);
#pragma unroll
                    for (int kk = 0; kk < S; kk++)
                        if (32 * kk + lane > c)
                            v[r][kk] -= er * ur[d][kk];
                }
                /* the ring slot takes column c + FR_KG_AHEAD's row */
                const int cn = c + FR_KG_AHEAD;
                if (cn < nb) {
                    const int64_t in = a.i1 + cn;
                    dr[d] = a.u[in * a.n + in];
#pragma unroll
                    for (int kk = 0; kk < S; kk++) {
                        const int j = 32 * kk + lane;
                        ur[d][kk] = j < nb ? a.u[in * a.n + a.i1 + j] : 0.0f;
                    }
                }
            }
        }
    }
done:
    __syncwarp();
    for (int r = 0; r < R; r++) {
        if (r0 + r >= a.rows)
            break;
        for (int c = lane; c < nb; c += 32) {
            a.w_hat[(r0 + r) * a.n + pcol[c]] = qbuf[warp][r][c];
            a.E[(r0 + r) * a.B + c] = ebuf[warp][r][c];
        }
    }
}

/* The column loop of one block with the kernel p->loop names. */
static fr_status fr_kg_loop(cudaStream_t s, const fr_kg_args &ka, int loop, fr_error *err)
{
    fr_status st = FR_OK;
    const int64_t rows = ka.rows;
    if (loop == FR_GPTQ_LOOP_BLOCK) {
        FR_LAUNCH(fr_kgptq_block<FR_KG_ROWS><<<(int)((rows + FR_KG_ROWS - 1) / FR_KG_ROWS),
                                               (int)ka.B, 0, s>>>(ka));
    } else if (ka.B > 128) {
        if (loop == FR_GPTQ_LOOP_WARP4)
            FR_LAUNCH(fr_kgptq_warp<4, 8, 2><<<(unsigned)((rows + 7) / 8), 64, 0, s>>>(ka));
        else
            FR_LAUNCH(fr_kgptq_warp<8, 8, 2><<<(unsigned)((rows + 15) / 16), 64, 0, s>>>(ka));
    } else {
        if (loop == FR_GPTQ_LOOP_WARP4)
            FR_LAUNCH(fr_kgptq_warp<4, 4, 4><<<(unsigned)((rows + 15) / 16), 128, 0, s>>>(ka));
        else
            FR_LAUNCH(fr_kgptq_warp<8, 4, 4><<<(unsigned)((rows + 31) / 32), 128, 0, s>>>(ka));
    }
cleanup:
    return st;
}

/* A~ = J A J (J the reversal, A = H[perm][perm] + damp I) in double,
 * column-major, lower triangle only: element (i, j), i >= j, is A's lower
 * element (n-1-j, n-1-i) = H[perm[n-1-j]][perm[n-1-i]], the value LAPACKE's
 * row-major 'L' reads on the CPU (so an H that is not exactly symmetric
 * contributes the same triangle). */
static __global__ void fr_kg_build_rev(double *a, const float *h, const int64_t *perm,
                                       const double *diag, double damp, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % n, j = e / n;
        if (i < j)
            continue;
        a[e] = i == j ? diag[perm[n - 1 - i]] + damp
                      : (double)h[perm[n - 1 - j] * n + perm[n - 1 - i]];
    }
}

/* The strict upper triangle of a (column-major n x n) := 0, so that the
 * triangular blocks of the inverse below can go through plain GEMMs. */
static __global__ void fr_kg_zero_upper(double *a, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x)
        if (e % n < e / n)
            a[e] = 0.0;
}

/* Every FR_KG_LEAF x FR_KG_LEAF diagonal block of the lower-triangular
 * column-major a (the last one may be smaller) := its inverse, in place:
 * one thread block per leaf, the leaf in shared memory, thread j
 * forward-substitutes column j (x_j = 1 / l_jj, x_i = -(sum_{k=j}^{i-1}
 * l_ik x_k) / l_ii in double, k ascending). */
static __global__ void fr_kg_leaf_inv(double *a, int64_t n)
{
    __shared__ double l[FR_KG_LEAF][FR_KG_LEAF + 1];
    const int64_t o = (int64_t)blockIdx.x * FR_KG_LEAF;
    const int m = (int)(n - o < FR_KG_LEAF ? n - o : FR_KG_LEAF);
    const int j = threadIdx.x;
    for (int c = 0; c < m; c++)
        if (j < m)
            l[j][c] = a[(o + j) + (o + c) * n];
    __syncthreads();
    if (j < m) {
        double x[FR_KG_LEAF];
        x[j] = 1.0 / l[j][j];
        for (int i = j + 1; i < m; i++) {
            double t = 0.0;
            for (int k = j; k < i; k++)
                t += l[i][k] * x[k];
            x[i] = -t / l[i][i];
        }
        for (int i = j; i < m; i++)
            a[(o + i) + (o + j) * n] = x[i];
    }
}

/* C_k = alpha A_k B_k (column-major m x n times n x k', k = 0..count-1 at
 * fixed strides), FP64: cuBLAS on the device, OpenBLAS in the emulation. */
static fr_status fr_kg_dgemm(cudaStream_t s, int64_t m, int64_t nn, int64_t k, double alpha,
                             const double *A, int64_t lda, int64_t sa, const double *B,
                             int64_t ldb, int64_t sb, double *C, int64_t ldc, int64_t sc,
                             int64_t count, fr_error *err);

/*
 * a (column-major n x n, lower triangular, strict upper zero) := its
 * inverse, in place: the FR_KG_LEAF diagonal blocks by fr_kg_leaf_inv, then
 * level by level pairs of inverted blocks of size m (the last pair may be
 * partial) become one: for L = [L11 0; L21 L22] with X11 = L11^-1 and
 * X22 = L22^-1 already in place, L^-1 = [X11 0; -X22 L21 X11 X22], so
 * T = L21 X11, L21 := -X22 T (t: workspace of n * n / 4 doubles). The full
 * pairs of a level are one strided-batched GEMM each (2 n^3 / 3 flops in
 * all, DGEMM), about 2 log2(n / 64) calls.
 */
static fr_status fr_kg_trinv(cudaStream_t s, double *a, int64_t n, double *t, fr_error *err)
{
    fr_status st = FR_OK;
    FR_LAUNCH(fr_kg_leaf_inv<<<(unsigned)((n + FR_KG_LEAF - 1) / FR_KG_LEAF), FR_KG_LEAF, 0, s>>>(
        a, n));
    for (int64_t m = FR_KG_LEAF; m < n; m *= 2) {
        const int64_t pairs = n / (2 * m), stride = 2 * m * (n + 1);
        if (pairs > 0) {
            FR_TRY(fr_kg_dgemm(s, m, m, m, 1.0, a + m, n, stride, a, n, stride, t, m, m * m,
                               pairs, err));
            FR_TRY(fr_kg_dgemm(s, m, m, m, -1.0, a + m * (n + 1), n, stride, t, m, m * m, a + m,
                               n, stride, pairs, err));
        }
        const int64_t o = pairs * 2 * m, p = n - o - m;
        if (p > 0) {
            double *x11 = a + o * (n + 1);
            FR_TRY(fr_kg_dgemm(s, p, m, m, 1.0, x11 + m, n, 0, x11, n, 0, t, p, 0, 1, err));
            FR_TRY(fr_kg_dgemm(s, p, m, p, -1.0, x11 + m * (n + 1), n, 0, t, p, 0, x11 + m, n, 0,
                               1, err));
        }
    }
cleanup:
    return st;
}

/* Row-major float32 U from M = L~^-1 (column-major lower): U = J M J,
 * u[i][j] = M(n-1-i, n-1-j) for j >= i, zeros below; a 32 x 32 tile
 * through shared memory, so reads and writes are both coalesced. Grid
 * (ceil(n/32), ceil(n/32)), block (32, 8). */
static __global__ void fr_kg_u_rev(const double *m, float *u, int64_t n)
{
    __shared__ float tile[32][33];
    const int64_t r0 = (int64_t)blockIdx.x * 32, c0 = (int64_t)blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += 8) {
        int64_t r = r0 + threadIdx.x, c = c0 + k;
        if (r < n && c < n)
            tile[k][threadIdx.x] = r >= c ? (float)m[r + c * n] : 0.0f;
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += 8) {
        int64_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < n && c < n)
            u[(n - 1 - r) * n + (n - 1 - c)] = tile[threadIdx.x][k];
    }
}

/* Workspace of the factorisation. */
typedef struct fr_kg_ws {
    void *work;      /* device workspace, bytes */
    size_t bytes;
    void *host;      /* host workspace (the emulation's) */
    size_t host_bytes;
    int *info_d;     /* [2]: potrf, (unused) */
    cudaEvent_t mark; /* when timed: recorded between potrf and the inverse */
} fr_kg_ws;

static fr_status fr_kg_ws_reserve(cudaStream_t s, fr_kg_ws *ws, size_t bytes, size_t host_bytes,
                                  fr_error *err)
{
    fr_status st = FR_OK;
    if (bytes > ws->bytes) {
        if (ws->work)
            FR_CU(cudaFreeAsync(ws->work, s));
        ws->work = NULL;
        ws->bytes = 0;
        FR_CU(cudaMallocAsync(&ws->work, bytes, s));
        ws->bytes = bytes;
    }
    if (host_bytes > ws->host_bytes) {
        free(ws->host);
        ws->host = malloc(host_bytes);
        if (!ws->host)
            return fr_fail(err, FR_E_NOMEM, "gptq: %zu bytes of host workspace", host_bytes);
        ws->host_bytes = host_bytes;
    }
cleanup:
    return st;
}

#ifndef FRONTIER_EMULATED_CUDA
/*
 * u (float32 row-major, n x n) = the upper Cholesky factor U of
 * (H[perm][perm] + damp I)^-1, *ok = 0 when the factorisation fails.
 *
 * With J the reversal (J = J^T = J^-1) and A~ = J A J = L~ L~^T (potrf,
 * lower): A = (J L~ J)(J L~ J)^T, and R = J L~ J is upper triangular with a
 * positive diagonal, so A^-1 = R^-T R^-1 = U^T U with U = R^-1 = J L~^-1 J
 * upper triangular with a positive diagonal: by uniqueness, the Cholesky
 * factor of A^-1 that the CPU computes as potrf(U) of potri(potrf(L) of A).
 * One potrf and L~^-1 in place by fr_kg_trinv (leaf kernel, batched DGEMM
 * levels: 3.3 ms for the whole factorisation at n = 4096 on the H200,
 * against 12.7 with cuSOLVER's Xtrtri; docs/gpu.md), instead of potrf,
 * potri and a second
 * potrf, with one host synchronisation instead of three. The potrf
 * workspace serves the levels' products. The double values differ from
 * LAPACK's in the last bits (another float order), and so, rarely, do
 * their float32 roundings.
 */
static fr_status fr_kg_factor(cudaStream_t s, const float *h, const int64_t *perm_d,
                              const double *diag_d, const int64_t *perm, const double *diag,
                              double damp, int64_t n, double *a, float *u, fr_kg_ws *ws, int *ok,
                              fr_error *err)
{
    fr_status st = FR_OK;
    int info[2] = {0, 0}, need = 0;
    const int grid = (int)std::min<int64_t>((n * n + 255) / 256, 8192);
    (void)perm;
    (void)diag;
    *ok = 0;
    FR_LAUNCH(fr_kg_build_rev<<<grid, 256, 0, s>>>(a, h, perm_d, diag_d, damp, n));
    FR_KG_SOLVER(cusolverDnDpotrf_bufferSize(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a,
                                            (int)n, &need));
    FR_TRY(fr_kg_ws_reserve(s, ws,
                            std::max((size_t)need, (size_t)n * (size_t)n) * sizeof(double), 0,
                            err));
    FR_KG_SOLVER(cusolverDnDpotrf(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a, (int)n,
                                  (double *)ws->work, (int)(ws->bytes / sizeof(double)),
                                  ws->info_d));
    if (ws->mark)
        FR_CU(cudaEventRecord(ws->mark, s));
    /* a failed potrf leaves a partial factor: its inverse is discarded below */
    FR_LAUNCH(fr_kg_zero_upper<<<grid, 256, 0, s>>>(a, n));
    FR_TRY(fr_kg_trinv(s, a, n, (double *)ws->work, err));
    FR_CU(cudaMemcpyAsync(info, ws->info_d, sizeof info[0], cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    if (info[0] != 0)
        return FR_OK;
    FR_LAUNCH(fr_kg_u_rev<<<dim3((unsigned)((n + 31) / 32), (unsigned)((n + 31) / 32)), dim3(32, 8),
                           0, s>>>((const double *)a, u, n));
    *ok = 1;
cleanup:
    return st;
}

/* W[:, j1:j2] -= E U[i1:i2, j1:j2] (row-major), FP32, on stream s (with
 * the side handle when side: the lookahead's concurrent updates). */
static fr_status fr_kg_update(cudaStream_t s, int side, float *W, const float *E, const float *u,
                              int64_t rows, int64_t n, int64_t B, int64_t i1, int64_t i2,
                              int64_t j1, int64_t j2, fr_error *err)
{
    fr_status st = FR_OK;
    /* column-major: W^T = W^T - U^T E^T */
    const float minus_one = -1.0f, one = 1.0f;
    cublasHandle_t hb = side ? fr_kg_blas_side : fr_kg_blas;
    FR_KG_BLAS(cublasSetStream(hb, s));
    FR_KG_BLAS(cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, (int)(j2 - j1), (int)rows,
                           (int)(i2 - i1), &minus_one, u + i1 * n + j1, (int)n, E, (int)B, &one,
                           W + j1, (int)n));
cleanup:
    return st;
}

static fr_status fr_kg_dgemm(cudaStream_t s, int64_t m, int64_t nn, int64_t k, double alpha,
                             const double *A, int64_t lda, int64_t sa, const double *B,
                             int64_t ldb, int64_t sb, double *C, int64_t ldc, int64_t sc,
                             int64_t count, fr_error *err)
{
    fr_status st = FR_OK;
    const double zero = 0.0;
    FR_KG_BLAS(cublasSetStream(fr_kg_blas, s));
    if (count == 1)
        FR_KG_BLAS(cublasDgemm(fr_kg_blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)nn, (int)k,
                               &alpha, A, (int)lda, B, (int)ldb, &zero, C, (int)ldc));
    else
        FR_KG_BLAS(cublasDgemmStridedBatched(fr_kg_blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)nn,
                                             (int)k, &alpha, A, (int)lda, (long long)sa, B,
                                             (int)ldb, (long long)sb, &zero, C, (int)ldc,
                                             (long long)sc, (int)count));
cleanup:
    return st;
}

/* The handles, on stream s (under fr_kg_lock). */
static fr_status fr_kg_handles(cudaStream_t s, fr_error *err)
{
    fr_status st = FR_OK;
    if (!fr_kg_blas) {
        FR_KG_BLAS(cublasCreate(&fr_kg_blas));
        FR_KG_BLAS(cublasSetMathMode(fr_kg_blas, CUBLAS_PEDANTIC_MATH));
        FR_KG_BLAS(cublasSetAtomicsMode(fr_kg_blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    }
    if (!fr_kg_blas_side) {
        FR_KG_BLAS(cublasCreate(&fr_kg_blas_side));
        FR_KG_BLAS(cublasSetMathMode(fr_kg_blas_side, CUBLAS_PEDANTIC_MATH));
        FR_KG_BLAS(cublasSetAtomicsMode(fr_kg_blas_side, CUBLAS_ATOMICS_NOT_ALLOWED));
    }
    if (!fr_kg_solver)
        FR_KG_SOLVER(cusolverDnCreate(&fr_kg_solver));
    FR_KG_BLAS(cublasSetStream(fr_kg_blas, s));
    FR_KG_SOLVER(cusolverDnSetStream(fr_kg_solver, s));
cleanup:
    return st;
}

#else /* the emulation: LAPACKE and OpenBLAS, the same factorisation */

static fr_status fr_kg_factor(cudaStream_t s, const float *h, const int64_t *perm_d,
                              const double *diag_d, const int64_t *perm, const double *diag,
                              double damp, int64_t n, double *a, float *u, fr_kg_ws *ws, int *ok,
                              fr_error *err)
{
    fr_status st = FR_OK;
    std::vector<double> x;
    (void)perm_d;
    (void)diag_d;
    (void)ws;
    FR_CU(cudaStreamSynchronize(s)); /* device memory is host memory here */
    /* the device's A~ = J A J, column-major lower triangle (fr_kg_build_rev) */
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = j; i < n; i++)
            a[i + j * n] = i == j ? diag[perm[n - 1 - i]] + damp
                                  : (double)h[perm[n - 1 - j] * n + perm[n - 1 - i]];
    *ok = 0;
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0)
        return FR_OK;
    /* L~^-1 in place as on the device: the leaf kernel and the GEMM levels */
    for (int64_t j = 1; j < n; j++)
        for (int64_t i = 0; i < j; i++)
            a[i + j * n] = 0.0;
    x.assign((size_t)n * (size_t)n / 4 + 1, 0.0);
    FR_TRY(fr_kg_trinv(s, a, n, x.data(), err));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            u[i * n + j] = j >= i ? (float)a[(n - 1 - i) + (n - 1 - j) * n] : 0.0f;
    *ok = 1;
cleanup:
    return st;
}

static fr_status fr_kg_dgemm(cudaStream_t s, int64_t m, int64_t nn, int64_t k, double alpha,
                             const double *A, int64_t lda, int64_t sa, const double *B,
                             int64_t ldb, int64_t sb, double *C, int64_t ldc, int64_t sc,
                             int64_t count, fr_error *err)
{
    (void)err;
    (void)s;
    for (int64_t b = 0; b < count; b++)
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)nn, (int)k, alpha,
                    A + b * sa, (int)lda, B + b * sb, (int)ldb, 0.0, C + b * sc, (int)ldc);
    return FR_OK;
}

static fr_status fr_kg_update(cudaStream_t s, int side, float *W, const float *E, const float *u,
                              int64_t rows, int64_t n, int64_t B, int64_t i1, int64_t i2,
                              int64_t j1, int64_t j2, fr_error *err)
{
    (void)err;
    (void)s;
    (void)side;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)(j2 - j1),
                (int)(i2 - i1), -1.0f, E, (int)B, u + i1 * n + j1, (int)n, 1.0f, W + j1, (int)n);
    return FR_OK;
}

static fr_status fr_kg_handles(cudaStream_t s, fr_error *err)
{
    (void)s;
    (void)err;
    return FR_OK;
}

#endif

/* diag[j] = h[j][j] (float32), for the host's dead columns and order. */
static __global__ void fr_kg_diag(const float *h, int64_t n, float *diag)
{
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (int64_t)gridDim.x * blockDim.x)
        diag[j] = h[j * n + j];
}

/* Phase timing: events recorded between the phases when asked for. */
typedef struct fr_kg_timer {
    fr_gptq_phases *ph;
    std::vector<cudaEvent_t> ev;
} fr_kg_timer;

static void fr_kg_mark(fr_kg_timer *t, cudaStream_t s)
{
    if (!t->ph)
        return;
    cudaEvent_t e = NULL;
    if (cudaEventCreate(&e) != cudaSuccess)
        return;
    cudaEventRecord(e, s);
    t->ev.push_back(e);
}

static double fr_kg_span(const fr_kg_timer *t, size_t a, size_t b)
{
    float ms = 0.0f;
    if (b >= t->ev.size() || cudaEventElapsedTime(&ms, t->ev[a], t->ev[b]) != cudaSuccess)
        return 0.0;
    return ms;
}

/* The factor U of the last H seen per device and order (plain and
 * -refscale share the identity order, -act its own), kept for the other
 * configurations of the same tensor: fr_gptq_params.h_serial names the H
 * (the executor numbers each upload), and a U depends only on H, the order
 * and the dampening, which the CPU derives from H alone. Guarded by
 * fr_kg_lock. */
#define FR_KG_CACHE_DEVICES 64
typedef struct fr_kg_cached {
    uint64_t serial;  /* 0: empty */
    int64_t n;
    float *u;         /* device, n x n */
    int tries;        /* dampening retries of its factorisation */
    double damp;      /* the dampening used (absolute) */
} fr_kg_cached;
static fr_kg_cached fr_kg_cache[FR_KG_CACHE_DEVICES][2];

extern "C" void fr_cuda_gptq_release_cache(void)
{
    pthread_mutex_lock(&fr_kg_lock);
    int dev = -1;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < FR_KG_CACHE_DEVICES)
        for (int k = 0; k < 2; k++) {
            if (fr_kg_cache[dev][k].u)
                cudaFree(fr_kg_cache[dev][k].u);
            fr_kg_cache[dev][k] = fr_kg_cached{0, 0, NULL, 0, 0.0};
        }
    pthread_mutex_unlock(&fr_kg_lock);
}

/* One call of fr_cuda_gptq_timed: the geometry, the host's order and the
 * device buffers its steps share; fr_kg_release frees what it holds. */
typedef struct fr_kg_run {
    cudaStream_t s;
    const fr_gptq_params *p;
    const void *w;
    int dtype;
    float *w_hat;
    const float *h;          /* H: the caller's, or h_d once uploaded */
    int64_t rows, n, g, B, G;
    int stat;                /* static scales (-act, gC) */
    std::vector<float> hdiag;
    std::vector<double> diag;
    std::vector<int64_t> perm;
    std::vector<uint8_t> dead;
    float *h_d = NULL, *u = NULL, *W = NULL, *E = NULL, *E2 = NULL, *S = NULL, *Z = NULL;
    float *hdiag_d = NULL;
    double *a = NULL, *diag_d = NULL;
    int64_t *perm_d = NULL;
    uint8_t *dead_d = NULL;
    fr_kg_ws ws = {NULL, 0, NULL, 0, NULL, NULL};
    int ok = 0, tries = 0, locked = 0, ahead = 0, rest_pending = 0, u_owned = 1;
    double mean_diag = 0.0, damp = 0.0;
    fr_kg_timer tm;
    std::vector<size_t> blk_marks, upd_marks, side_marks;
    cudaStream_t side = NULL;
    cudaEvent_t ev_err = NULL, ev_rest = NULL;
    fr_kg_cached *ce = NULL;
    size_t m_fac0 = 0, m_fac1 = 0, m_loop0 = 0, m_end = 0;
} fr_kg_run;

/* Host: diag H (dead columns -> 1), its mean, the act-order permutation: the CPU's. */
static fr_status fr_kg_order(fr_kg_run *r, int h_on_device, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = r->s;
    const int64_t n = r->n;
    if (h_on_device) {
        FR_CU(cudaMallocAsync((void **)&r->hdiag_d, (size_t)n * sizeof(float), s));
        FR_LAUNCH(fr_kg_diag<<<(int)std::min<int64_t>((n + 255) / 256, 1024), 256, 0, s>>>(
            r->h, n, r->hdiag_d));
        FR_CU(cudaMemcpyAsync(r->hdiag.data(), r->hdiag_d, (size_t)n * sizeof(float),
                              cudaMemcpyDeviceToHost, s));
        FR_CU(cudaStreamSynchronize(s));
    } else {
        for (int64_t j = 0; j < n; j++)
            r->hdiag[(size_t)j] = r->h[j * n + j];
    }
    for (int64_t j = 0; j < n; j++) {
        r->diag[(size_t)j] = r->hdiag[(size_t)j];
        r->dead[(size_t)j] = r->diag[(size_t)j] == 0.0;
        if (r->dead[(size_t)j])
            r->diag[(size_t)j] = 1.0;
        r->mean_diag += r->diag[(size_t)j];
        r->perm[(size_t)j] = j;
    }
    r->mean_diag /= (double)n;
    if (r->p->variant == FR_GPTQ_ACT) {
        const std::vector<double> &diag = r->diag;
        std::sort(r->perm.begin(), r->perm.end(), [&](int64_t i, int64_t j) {
            return diag[(size_t)i] != diag[(size_t)j] ? diag[(size_t)i] > diag[(size_t)j] : i < j;
        });
    }
cleanup:
    return st;
}

/* Device: the call's buffers; H (from the host), diagonal, order, dead columns copied. */
static fr_status fr_kg_upload(fr_kg_run *r, int h_on_device, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = r->s;
    const int64_t rows = r->rows, n = r->n, B = r->B, G = r->G;
    FR_CU(cudaMallocAsync((void **)&r->W, (size_t)(rows * n) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&r->E, (size_t)(rows * B) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&r->diag_d, (size_t)n * sizeof(double), s));
    FR_CU(cudaMallocAsync((void **)&r->perm_d, (size_t)n * sizeof(int64_t), s));
    FR_CU(cudaMallocAsync((void **)&r->dead_d, (size_t)n, s));
    FR_CU(cudaMallocAsync((void **)&r->ws.info_d, 2 * sizeof(int), s));
    if (r->stat) {
        FR_CU(cudaMallocAsync((void **)&r->S, (size_t)(rows * G) * sizeof(float), s));
        FR_CU(cudaMallocAsync((void **)&r->Z, (size_t)(rows * G) * sizeof(float), s));
    }
    if (!h_on_device) {
        FR_CU(cudaMallocAsync((void **)&r->h_d, (size_t)(n * n) * sizeof(float), s));
        FR_CU(cudaMemcpyAsync(r->h_d, r->h, (size_t)(n * n) * sizeof(float),
                              cudaMemcpyHostToDevice, s));
        r->h = r->h_d;
    }
    FR_CU(cudaMemcpyAsync(r->diag_d, r->diag.data(), (size_t)n * sizeof(double),
                          cudaMemcpyHostToDevice, s));
    FR_CU(cudaMemcpyAsync(r->perm_d, r->perm.data(), (size_t)n * sizeof(int64_t),
                          cudaMemcpyHostToDevice, s));
    FR_CU(cudaMemcpyAsync(r->dead_d, r->dead.data(), (size_t)n, cudaMemcpyHostToDevice, s));
cleanup:
    return st;
}

/* U of this H and order, under fr_kg_lock: the kept one, or factored (damp x10 retries), kept. */
static fr_status fr_kg_factor_kept(fr_kg_run *r, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = r->s;
    const fr_gptq_params *p = r->p;
    const int64_t n = r->n;
    r->m_fac0 = r->tm.ev.size();
    fr_kg_mark(&r->tm, s);
    r->damp = FR_KG_DAMP * r->mean_diag;
    if (p->h_serial) {
        int dev = -1;
        FR_CU(cudaGetDevice(&dev));
        if (dev >= 0 && dev < FR_KG_CACHE_DEVICES)
            r->ce = &fr_kg_cache[dev][p->variant == FR_GPTQ_ACT];
    }
    if (r->ce && r->ce->serial == p->h_serial && r->ce->n == n && r->ce->u) {
        /* this H's factor in this order: the tensor's earlier configuration's */
        r->u = r->ce->u;
        r->u_owned = 0;
        r->tries = r->ce->tries;
        r->damp = r->ce->damp;
        r->ok = 1;
    } else {
        FR_CU(cudaMallocAsync((void **)&r->a, (size_t)(n * n) * sizeof(double), s));
        FR_CU(cudaMallocAsync((void **)&r->u, (size_t)(n * n) * sizeof(float), s));
    }
    while (!r->ok) {
        FR_TRY(fr_kg_factor(s, r->h, r->perm_d, r->diag_d, r->perm.data(), r->diag.data(),
                            r->damp, n, r->a, r->u, &r->ws, &r->ok, err));
        if (r->ok)
            break;
        if (++r->tries > FR_KG_RETRIES) {
            st = fr_fail(err, FR_E_USAGE,
                         "H + %g I is not positive definite after %d dampening retries", r->damp,
                         FR_KG_RETRIES);
            goto cleanup;
        }
        r->damp *= 10.0;
    }
    if (r->ce && r->u_owned) {
        /* kept for the tensor's next configurations in this order */
        if (r->ce->u)
            FR_CU(cudaFreeAsync(r->ce->u, s));
        *r->ce = fr_kg_cached{p->h_serial, n, r->u, r->tries, r->damp};
        r->u_owned = 0;
    }
cleanup:
    return st;
}

/* W = w[:, perm] (dead columns 0), the static scales, the lookahead's stream and buffer. */
static fr_status fr_kg_prep(fr_kg_run *r, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = r->s;
    const fr_gptq_params *p = r->p;
    const int64_t rows = r->rows, n = r->n, B = r->B, G = r->G;
    const int grid = (int)std::min<int64_t>((rows * n + 255) / 256, 8192);
    r->m_fac1 = r->tm.ev.size();
    fr_kg_mark(&r->tm, s);
    FR_LAUNCH(fr_kg_prep_w<<<grid, 256, 0, s>>>(r->w, r->dtype, r->perm_d, r->dead_d, rows, n,
                                                r->W));
    if (r->stat)
        FR_LAUNCH(fr_kg_static<<<(int)std::min<int64_t>((rows * G + 255) / 256, 8192), 256, 0, s>>>(
            r->w, r->dtype, r->dead_d, rows, n, r->g, G, p->bits, p->symmetric, r->S, r->Z));
    /* The lookahead (unless p->serial): after block k's column loop, the
     * next block's columns are updated on s and the rest, W[:, i2 + B:],
     * on the side stream, where it overlaps block k+1's column loop. Block
     * k+1's update of the columns after it waits for block k's rest (both
     * write them), which also frees block k's Err buffer (two, alternating)
     * for block k+2. The same products as one GEMM per block, split in two
     * along W's columns. */
    r->ahead = !p->serial && n > 2 * B;
    if (r->ahead) {
        FR_CU(cudaMallocAsync((void **)&r->E2, (size_t)(rows * B) * sizeof(float), s));
        FR_CU(cudaStreamCreateWithFlags(&r->side, cudaStreamNonBlocking));
        FR_CU(cudaEventCreateWithFlags(&r->ev_err, cudaEventDisableTiming));
        FR_CU(cudaEventCreateWithFlags(&r->ev_rest, cudaEventDisableTiming));
    }
cleanup:
    return st;
}

/* Per block: its column loop, then W[:, i2:] -= Err U[i1:i2, i2:] (the rest on the side). */
static fr_status fr_kg_blocks(fr_kg_run *r, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = r->s;
    const fr_gptq_params *p = r->p;
    const int64_t rows = r->rows, n = r->n, B = r->B;
    fr_kg_timer *tm = &r->tm;
    r->m_loop0 = tm->ev.size();
    fr_kg_mark(tm, s);
    for (int64_t i1 = 0, k = 0; i1 < n; i1 += B, k++) {
        const int64_t i2 = i1 + B < n ? i1 + B : n, nb = i2 - i1;
        float *Ek = r->ahead && (k & 1) ? r->E2 : r->E;
        fr_kg_args ka = {r->W, r->u, r->perm_d, r->w_hat, Ek, r->S, r->Z, rows, n, r->g, r->G, B,
                         i1, nb, p->bits, p->symmetric, p->variant};
        r->blk_marks.push_back(tm->ev.size());
        fr_kg_mark(tm, s);
        FR_TRY(fr_kg_loop(s, ka, p->loop, err));
        fr_kg_mark(tm, s);
        if (i2 >= n)
            break;
        const int64_t i3 = r->ahead && i2 + B < n ? i2 + B : n;
        if (r->rest_pending)
            FR_CU(cudaStreamWaitEvent(s, r->ev_rest, 0));
        r->upd_marks.push_back(tm->ev.size());
        fr_kg_mark(tm, s);
        FR_TRY(fr_kg_update(s, 0, r->W, Ek, r->u, rows, n, B, i1, i2, i2, i3, err));
        fr_kg_mark(tm, s);
        if (i3 < n) {
            FR_CU(cudaEventRecord(r->ev_err, s));
            FR_CU(cudaStreamWaitEvent(r->side, r->ev_err, 0));
            r->side_marks.push_back(tm->ev.size());
            fr_kg_mark(tm, r->side);
            FR_TRY(fr_kg_update(r->side, 1, r->W, Ek, r->u, rows, n, B, i1, i2, i3, n, err));
            fr_kg_mark(tm, r->side);
            FR_CU(cudaEventRecord(r->ev_rest, r->side));
            r->rest_pending = 1;
        }
    }
    if (r->rest_pending)
        FR_CU(cudaStreamWaitEvent(s, r->ev_rest, 0));
    r->m_end = tm->ev.size();
    fr_kg_mark(tm, s);
cleanup:
    return st;
}

/* The phase times from the events between the steps, once the stream is synchronised. */
static void fr_kg_phase_times(const fr_kg_run *r, fr_gptq_phases *phases)
{
    const fr_kg_timer *tm = &r->tm;
    if (!phases || r->m_end >= tm->ev.size())
        return;
    phases->setup_ms = fr_kg_span(tm, 0, r->m_fac0);
    phases->factor_ms = fr_kg_span(tm, r->m_fac0, r->m_fac1);
    phases->prep_ms = fr_kg_span(tm, r->m_fac1, r->m_loop0);
    phases->loop_ms = fr_kg_span(tm, r->m_loop0, r->m_end);
    for (size_t k : r->blk_marks)
        phases->block_ms += fr_kg_span(tm, k, k + 1);
    for (size_t k : r->upd_marks)
        phases->update_ms += fr_kg_span(tm, k, k + 1);
    for (size_t k : r->side_marks)
        phases->update_ms += fr_kg_span(tm, k, k + 1);
    phases->factor_tries = r->tries + 1;
    /* the last factorisation's potrf: from the factor's start when it
     * ran once */
    float pm = 0.0f;
    if (r->tries == 0 && r->ws.mark &&
        cudaEventElapsedTime(&pm, tm->ev[r->m_fac0], r->ws.mark) == cudaSuccess)
        phases->potrf_ms = pm;
}

/* Everything the call holds released: the side stream drained first, then lock, buffers, events. */
static void fr_kg_release(fr_kg_run *r)
{
    cudaStream_t s = r->s;
    if (r->side) {
        /* before the buffers it reads and writes are freed (an error path
         * may leave its last update running) */
        cudaStreamSynchronize(r->side);
        cudaStreamDestroy(r->side);
    }
    if (r->ev_err)
        cudaEventDestroy(r->ev_err);
    if (r->ev_rest)
        cudaEventDestroy(r->ev_rest);
    if (r->locked)
        pthread_mutex_unlock(&fr_kg_lock);
    {
        /* u when this call owns it (not when it is the kept factor) */
        void *bufs[] = {r->a, r->u_owned ? r->u : NULL, r->W, r->E, r->E2, r->diag_d, r->perm_d,
                        r->dead_d, r->ws.info_d, r->S, r->Z, r->h_d, r->hdiag_d};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
            if (bufs[k])
                cudaFreeAsync(bufs[k], s);
        if (r->ws.work)
            cudaFreeAsync(r->ws.work, s);
        free(r->ws.host);
        cudaStreamSynchronize(s);
    }
    for (cudaEvent_t e : r->tm.ev)
        cudaEventDestroy(e);
    if (r->ws.mark)
        cudaEventDestroy(r->ws.mark);
}

extern "C" fr_status fr_cuda_gptq_timed(const void *w, int dtype, float *w_hat, int64_t rows,
                                        int64_t cols, const float *h, int h_on_device,
                                        const fr_gptq_params *p, void *stream, int *damp_retries,
                                        double *damp_used, fr_gptq_phases *phases, fr_error *err)
{
    fr_status st = FR_OK;
    fr_kg_run r;
    r.s = (cudaStream_t)stream;
    r.p = p;
    r.w = w;
    r.dtype = dtype;
    r.w_hat = w_hat;
    r.h = h;
    r.rows = rows;
    r.n = cols;
    r.g = p->row_scales ? r.n : p->group;
    r.B = !p->row_scales && r.g > 128 ? r.g : 128;
    r.G = (r.n + r.g - 1) / r.g;
    r.stat = p->variant == FR_GPTQ_ACT || p->row_scales;
    r.hdiag.resize((size_t)r.n);
    r.diag.resize((size_t)r.n);
    r.perm.resize((size_t)r.n);
    r.dead.resize((size_t)r.n);
    r.tm.ph = phases;
    *damp_retries = 0;
    *damp_used = FR_KG_DAMP;
    if (phases)
        memset(phases, 0, sizeof *phases);
    if (rows <= 0 || r.n <= 0)
        return FR_OK;
    if (r.g <= 0 || r.B > FR_KG_MAX_BLOCK || (r.g < r.B && r.B % r.g) || r.n > 65536)
        return fr_fail(err, FR_E_USAGE, "gptq on the gpu: unsupported group %lld for %lld columns",
                       (long long)r.g, (long long)r.n);
    fr_kg_mark(&r.tm, r.s);
    /* the diagonal, dead columns, the order: on the host, as the CPU does */
    FR_TRY(fr_kg_order(&r, h_on_device, err));
    FR_TRY(fr_kg_upload(&r, h_on_device, err));
    pthread_mutex_lock(&fr_kg_lock);
    r.locked = 1;
    FR_TRY(fr_kg_handles(r.s, err));
    if (phases)
        FR_CU(cudaEventCreate(&r.ws.mark));
    FR_TRY(fr_kg_factor_kept(&r, err));
    *damp_retries = r.tries;
    *damp_used = r.damp / r.mean_diag;
    FR_TRY(fr_kg_prep(&r, err));
    FR_TRY(fr_kg_blocks(&r, err));
    FR_CU(cudaStreamSynchronize(r.s));
    fr_kg_phase_times(&r, phases);
cleanup:
    fr_kg_release(&r);
    return st;
}

extern "C" fr_status fr_cuda_gptq(const void *w, int dtype, float *w_hat, int64_t rows,
                                  int64_t cols, const float *h, int h_on_device,
                                  const fr_gptq_params *p, void *stream, int *damp_retries,
                                  double *damp_used, fr_error *err)
{
    return fr_cuda_gptq_timed(w, dtype, w_hat, rows, cols, h, h_on_device, p, stream,
                              damp_retries, damp_used, NULL, err);
}


/* gptq's quantize_cuda (a row of gpu_entries.h's table): the wrapped
 * int configuration's parameters, H from the statistics (host memory, or
 * the executor's device copy: frontier_call.hessian_device),
 * retries reported like the CPU reports them. */
extern "C" int fr_gptq_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                     float *w_hat, int64_t rows, int64_t cols,
                                     const frontier_calib *calib, void *stream,
                                     frontier_call *call)
{
    fr_error err;
    fr_error_clear(&err);
    if (!calib || !calib->hessian || calib->cols != cols) {
        fr_fail(&err, FR_E_USAGE, "needs a Hessian of %lld x %lld", (long long)cols,
                (long long)cols);
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    const fr_wrap_params *wp = (const fr_wrap_params *)cfg->impl;
    const fr_int_params *ip = wp ? fr_wrap_int_base(wp) : NULL;
    if (!ip) {
        fr_fail(&err, FR_E_USAGE, "configuration '%s' has no int base", cfg->name);
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    fr_gptq_params p;
    p.bits = ip->bits;
    p.symmetric = ip->symmetric;
    p.row_scales = ip->granularity == FR_INT_ROW;
    p.group = fr_wrap_group_cols(ip, cols);
    p.variant = wp->variant;
    p.loop = FR_GPTQ_LOOP_WARP8;
    p.serial = 0;
    p.h_serial = 0;
    int retries = 0;
    double damp = 0.0;
    /* H on the device when the executor has it there, else from host memory */
    const float *hd = call ? call->hessian_device : NULL;
    if (hd)
        p.h_serial = call->hessian_serial;
    fr_status st = fr_cuda_gptq(w, dtype, w_hat, rows, cols, hd ? hd : calib->hessian, hd != NULL,
                                &p, stream, &retries, &damp, &err);
    const frontier_host_api *host = fr_host_api();
    if (st == FR_OK && retries && host && host->log)
        host->log(call, FRONTIER_LOG_WARN,
                  "H is not positive definite: dampening raised to %g x mean(diag H)", damp);
    return fr_kreport(call, st, &err);
}
