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
 *   device: A = H[perm][perm] + damp I (double); potrf(L), potri(L),
 *           symmetrise, potrf(U): U upper with A^-1 = U^T U, retried with
 *           damp x10 up to three times; U -> float32 row-major;
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

/* One cuBLAS and one cuSOLVER handle for the process (created on first
 * use; the stream is set per call under the lock). */
static pthread_mutex_t fr_kg_lock = PTHREAD_MUTEX_INITIALIZER;
#ifndef FRONTIER_EMULATED_CUDA
static cublasHandle_t fr_kg_blas;
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

__device__ static inline float fr_kg_load(const void *w, int dtype, int64_t i)
{
    if (dtype == FRONTIER_DTYPE_F32)
        return ((const float *)w)[i];
    uint16_t v = ((const uint16_t *)w)[i];
    if (dtype == FRONTIER_DTYPE_BF16)
        return __uint_as_float((uint32_t)v << 16);
    return __half2float(__ushort_as_half(v));
}

/* fr_wrap_int_qparams (quantizers/wrap.c) on the device. */
__device__ static inline void fr_kg_qparams(int bits, int sym, float lo, float hi, float *s,
                                            float *z)
{
    if (sym) {
        float amax = -lo > hi ? -lo : hi;
        *s = fr_int_sym_scale(amax, fr_int_sym_qmax(bits));
        *z = 0.0f;
    } else {
        float levels = fr_int_asym_levels(bits);
        *s = fr_int_asym_scale(lo, hi, levels);
        *z = fr_int_asym_zero(lo, *s, levels);
    }
}

__device__ static inline float fr_kg_dequant(int bits, int sym, float s, float z, float x)
{
    if (sym)
        return fr_int_sym_dequant(x, s, fr_int_sym_qmax(bits));
    return fr_int_asym_dequant(x, s, z, fr_int_asym_levels(bits));
}

/* A = H[perm][perm] with the diagonal diag[perm] + damp, in double,
 * column-major: element (i, j) at a[i + j n], so the lower triangle that
 * potrf(L) reads holds the values the CPU's row-major LAPACKE 'L' reads
 * (H[perm i][perm j], i >= j) even when H is not exactly symmetric. */
static __global__ void fr_kg_build_a(double *a, const float *h, const int64_t *perm,
                                     const double *diag, double damp, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % n, j = e / n;
        a[e] = i == j ? diag[perm[i]] + damp : (double)h[perm[i] * n + perm[j]];
    }
}

/* Column-major lower triangle -> upper (the inverse from potri). */
static __global__ void fr_kg_symmetrise(double *a, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % n, j = e / n; /* a[i + j n] = (i, j) */
        if (i < j)
            a[i + j * n] = a[j + i * n];
    }
}

/* Row-major float32 U from the column-major upper factor, zeros below. */
static __global__ void fr_kg_u_float(const double *a, float *u, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / n, j = e % n;
        u[e] = j >= i ? (float)a[i + j * n] : 0.0f;
    }
}

/* W[r][i] = w[r][perm[i]], dead columns 0. */
static __global__ void fr_kg_prep_w(const void *w, int dtype, const int64_t *perm,
                                    const uint8_t *dead, int64_t rows, int64_t n, float *W)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / n, j = perm[e % n];
        W[e] = dead[j] ? 0.0f : fr_kg_load(w, dtype, r * n + j);
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
            float v = dead[j] ? 0.0f : fr_kg_load(w, dtype, r * n + j);
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
 * The column loop of block [i1, i1 + nb) for FR_KG_ROWS rows: blockDim.x =
 * B threads, thread t owns column i1 + t of every row of the tile.
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

static __global__ void __launch_bounds__(FR_KG_MAX_BLOCK) fr_kgptq_block(fr_kg_args a)
{
    __shared__ float ws[FR_KG_ROWS][FR_KG_MAX_BLOCK];
    __shared__ float errv[FR_KG_ROWS];
    __shared__ float s_cur[FR_KG_ROWS], z_cur[FR_KG_ROWS];
    __shared__ float s_blk[FR_KG_ROWS][FR_KG_MAX_BLOCK / 32], z_blk[FR_KG_ROWS][FR_KG_MAX_BLOCK / 32];
    const int t = threadIdx.x, nwarps = blockDim.x / 32, warp = t / 32;
    const int64_t r0 = (int64_t)blockIdx.x * FR_KG_ROWS;
    const int nb = (int)a.nb;
    const int stat = a.S != NULL;
    for (int r = 0; r < FR_KG_ROWS; r++)
        ws[r][t] = t < nb && r0 + r < a.rows ? a.W[(r0 + r) * a.n + a.i1 + t] : 0.0f;
    __syncthreads();
    if (!stat && a.variant == FR_GPTQ_REFSCALE) {
        /* every group of the block from the block as it stood at its start */
        for (int r = warp; r < FR_KG_ROWS; r += nwarps)
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
    float d_nxt = t < FR_KG_ROWS ? a.u[a.i1 * a.n + a.i1] : 0.0f;
    float u_nxt = t < nb ? a.u[a.i1 * a.n + a.i1 + t] : 0.0f;
    for (int c = 0; c < nb; c++) {
        const int64_t i = a.i1 + c;
        const float d = d_nxt, uij = u_nxt;
        if (c + 1 < nb) {
            if (t < FR_KG_ROWS)
                d_nxt = a.u[(i + 1) * a.n + i + 1];
            if (t < nb)
                u_nxt = a.u[(i + 1) * a.n + a.i1 + t];
        }
        if (!stat && a.variant != FR_GPTQ_REFSCALE && i % a.g == 0) {
            int len = (int)(a.n - i < a.g ? a.n - i : a.g);
            for (int r = warp; r < FR_KG_ROWS; r += nwarps) {
                float lo, hi;
                fr_kg_range(&ws[r][c], len, &lo, &hi);
                if ((t & 31) == 0)
                    fr_kg_qparams(a.bits, a.sym, lo, hi, &s_cur[r], &z_cur[r]);
            }
            __syncthreads();
        }
        if (t < FR_KG_ROWS) {
            const int r = t;
            float s, z;
            if (stat) {
                int64_t k = a.perm[i] / a.g;
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
                a.w_hat[(r0 + r) * a.n + a.perm[i]] = q;
                a.E[(r0 + r) * a.B + c] = e;
            }
        }
        __syncthreads();
        if (t > c && t < nb) {
            for (int r = 0; r < FR_KG_ROWS; r++)
                ws[r][t] -= errv[r] * uij;
        }
        __syncthreads();
    }
}

#ifndef FRONTIER_EMULATED_CUDA
/* U = upper Cholesky factor of (A + damp I)^-1 in a (column-major);
 * *ok = 0 when a factorisation fails. */
static fr_status fr_kg_inverse_factor(cudaStream_t s, double *a, const float *h,
                                      const int64_t *perm_d, const double *diag_d, double damp,
                                      int64_t n, double **work, int *lwork, int *info_d, int *ok,
                                      fr_error *err)
{
    fr_status st = FR_OK;
    int info = 0, need = 0, need2 = 0;
    const int grid = (int)std::min<int64_t>((n * n + 255) / 256, 8192);
    *ok = 0;
    FR_LAUNCH(fr_kg_build_a<<<grid, 256, 0, s>>>(a, h, perm_d, diag_d, damp, n));
    FR_KG_SOLVER(cusolverDnDpotrf_bufferSize(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a,
                                            (int)n, &need));
    FR_KG_SOLVER(cusolverDnDpotri_bufferSize(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a,
                                            (int)n, &need2));
    need = std::max(need, need2);
    FR_KG_SOLVER(cusolverDnDpotrf_bufferSize(fr_kg_solver, CUBLAS_FILL_MODE_UPPER, (int)n, a,
                                            (int)n, &need2));
    need = std::max(need, need2);
    if (need > *lwork) {
        if (*work)
            FR_CU(cudaFreeAsync(*work, s));
        *work = NULL;
        *lwork = 0;
        FR_CU(cudaMallocAsync((void **)work, (size_t)need * sizeof(double), s));
        *lwork = need;
    }
    FR_KG_SOLVER(cusolverDnDpotrf(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a, (int)n, *work,
                                  *lwork, info_d));
    FR_CU(cudaMemcpyAsync(&info, info_d, sizeof info, cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    if (info != 0)
        return FR_OK;
    FR_KG_SOLVER(cusolverDnDpotri(fr_kg_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a, (int)n, *work,
                                  *lwork, info_d));
    FR_CU(cudaMemcpyAsync(&info, info_d, sizeof info, cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    if (info != 0)
        return FR_OK;
    FR_LAUNCH(fr_kg_symmetrise<<<grid, 256, 0, s>>>(a, n));
    FR_KG_SOLVER(cusolverDnDpotrf(fr_kg_solver, CUBLAS_FILL_MODE_UPPER, (int)n, a, (int)n, *work,
                                  *lwork, info_d));
    FR_CU(cudaMemcpyAsync(&info, info_d, sizeof info, cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    *ok = info == 0;
cleanup:
    return st;
}

/* Workspace of the factorisation. */
typedef struct fr_kg_ws {
    double *work;
    int lwork;
    int *info_d;
} fr_kg_ws;

/* u (float32 row-major, n x n) = the upper Cholesky factor of
 * (H[perm][perm] + damp I)^-1; *ok = 0 when a factorisation fails. */
static fr_status fr_kg_factor(cudaStream_t s, const float *h, const int64_t *perm_d,
                              const double *diag_d, const int64_t *perm, const double *diag,
                              double damp, int64_t n, double *a, float *u, fr_kg_ws *ws, int *ok,
                              fr_error *err)
{
    fr_status st = FR_OK;
    (void)perm;
    (void)diag;
    FR_TRY(fr_kg_inverse_factor(s, a, h, perm_d, diag_d, damp, n, &ws->work, &ws->lwork,
                                ws->info_d, ok, err));
    if (*ok)
        FR_LAUNCH(fr_kg_u_float<<<(int)std::min<int64_t>((n * n + 255) / 256, 8192), 256, 0, s>>>(
            a, u, n));
cleanup:
    return st;
}

/* W[:, i2:] -= E U[i1:i2, i2:] (row-major), FP32. */
static fr_status fr_kg_update(float *W, const float *E, const float *u, int64_t rows, int64_t n,
                              int64_t B, int64_t i1, int64_t i2, fr_error *err)
{
    fr_status st = FR_OK;
    /* column-major: W^T = W^T - U^T E^T */
    const float minus_one = -1.0f, one = 1.0f;
    FR_KG_BLAS(cublasSgemm(fr_kg_blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)(n - i2), (int)rows,
                           (int)(i2 - i1), &minus_one, u + i1 * n + i2, (int)n, E, (int)B, &one,
                           W + i2, (int)n));
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
    if (!fr_kg_solver)
        FR_KG_SOLVER(cusolverDnCreate(&fr_kg_solver));
    FR_KG_BLAS(cublasSetStream(fr_kg_blas, s));
    FR_KG_SOLVER(cusolverDnSetStream(fr_kg_solver, s));
cleanup:
    return st;
}

#else /* the emulation: the CPU reference's LAPACKE calls and OpenBLAS */

typedef struct fr_kg_ws {
    double *work;
    int lwork;
    int *info_d;
} fr_kg_ws;

static fr_status fr_kg_factor(cudaStream_t s, const float *h, const int64_t *perm_d,
                              const double *diag_d, const int64_t *perm, const double *diag,
                              double damp, int64_t n, double *a, float *u, fr_kg_ws *ws, int *ok,
                              fr_error *err)
{
    fr_status st = FR_OK;
    (void)perm_d;
    (void)diag_d;
    (void)ws;
    FR_CU(cudaStreamSynchronize(s)); /* device memory is host memory here */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            a[i * n + j] = i == j ? diag[perm[i]] + damp : (double)h[perm[i] * n + perm[j]];
    *ok = 0;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0 ||
        LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0)
        return FR_OK;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++)
            a[i * n + j] = a[j * n + i];
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, a, (lapack_int)n) != 0)
        return FR_OK;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            u[i * n + j] = j >= i ? (float)a[i * n + j] : 0.0f;
    *ok = 1;
cleanup:
    return st;
}

static fr_status fr_kg_update(float *W, const float *E, const float *u, int64_t rows, int64_t n,
                              int64_t B, int64_t i1, int64_t i2, fr_error *err)
{
    (void)err;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)(n - i2),
                (int)(i2 - i1), -1.0f, E, (int)B, u + i1 * n + i2, (int)n, 1.0f, W + i2, (int)n);
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



extern "C" fr_status fr_cuda_gptq(const void *w, int dtype, float *w_hat, int64_t rows,
                                  int64_t cols, const float *h, int h_on_device,
                                  const fr_gptq_params *p, void *stream, int *damp_retries,
                                  double *damp_used, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = cols;
    const int64_t g = p->row_scales ? n : p->group;
    const int64_t B = !p->row_scales && g > 128 ? g : 128;
    const int64_t G = (n + g - 1) / g;
    const int stat = p->variant == FR_GPTQ_ACT || p->row_scales;
    std::vector<float> hdiag((size_t)n);
    std::vector<double> diag((size_t)n);
    std::vector<int64_t> perm((size_t)n);
    std::vector<uint8_t> dead((size_t)n);
    float *h_d = NULL, *u = NULL, *W = NULL, *E = NULL, *S = NULL, *Z = NULL;
    float *hdiag_d = NULL;
    double *a = NULL, *diag_d = NULL;
    int64_t *perm_d = NULL;
    uint8_t *dead_d = NULL;
    fr_kg_ws ws = {NULL, 0, NULL};
    int ok = 0, tries = 0, locked = 0;
    double mean_diag = 0.0, damp;
    const int grid = (int)std::min<int64_t>((rows * n + 255) / 256, 8192);
    *damp_retries = 0;
    *damp_used = FR_KG_DAMP;
    if (rows <= 0 || n <= 0)
        return FR_OK;
    if (g <= 0 || B > FR_KG_MAX_BLOCK || (g < B && B % g) || n > 65536)
        return fr_fail(err, FR_E_USAGE, "gptq on the gpu: unsupported group %lld for %lld columns",
                       (long long)g, (long long)n);
    /* the diagonal, dead columns, the order: on the host, as the CPU does */
    if (h_on_device) {
        FR_CU(cudaMallocAsync((void **)&hdiag_d, (size_t)n * sizeof(float), s));
        FR_LAUNCH(fr_kg_diag<<<(int)std::min<int64_t>((n + 255) / 256, 1024), 256, 0, s>>>(
            h, n, hdiag_d));
        FR_CU(cudaMemcpyAsync(hdiag.data(), hdiag_d, (size_t)n * sizeof(float),
                              cudaMemcpyDeviceToHost, s));
        FR_CU(cudaStreamSynchronize(s));
    } else {
        for (int64_t j = 0; j < n; j++)
            hdiag[(size_t)j] = h[j * n + j];
    }
    for (int64_t j = 0; j < n; j++) {
        diag[(size_t)j] = hdiag[(size_t)j];
        dead[(size_t)j] = diag[(size_t)j] == 0.0;
        if (dead[(size_t)j])
            diag[(size_t)j] = 1.0;
        mean_diag += diag[(size_t)j];
        perm[(size_t)j] = j;
    }
    mean_diag /= (double)n;
    if (p->variant == FR_GPTQ_ACT)
        std::sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
            return diag[(size_t)i] != diag[(size_t)j] ? diag[(size_t)i] > diag[(size_t)j] : i < j;
        });

    FR_CU(cudaMallocAsync((void **)&a, (size_t)(n * n) * sizeof(double), s));
    FR_CU(cudaMallocAsync((void **)&u, (size_t)(n * n) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&W, (size_t)(rows * n) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&E, (size_t)(rows * B) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&diag_d, (size_t)n * sizeof(double), s));
    FR_CU(cudaMallocAsync((void **)&perm_d, (size_t)n * sizeof(int64_t), s));
    FR_CU(cudaMallocAsync((void **)&dead_d, (size_t)n, s));
    FR_CU(cudaMallocAsync((void **)&ws.info_d, sizeof(int), s));
    if (stat) {
        FR_CU(cudaMallocAsync((void **)&S, (size_t)(rows * G) * sizeof(float), s));
        FR_CU(cudaMallocAsync((void **)&Z, (size_t)(rows * G) * sizeof(float), s));
    }
    if (!h_on_device) {
        FR_CU(cudaMallocAsync((void **)&h_d, (size_t)(n * n) * sizeof(float), s));
        FR_CU(cudaMemcpyAsync(h_d, h, (size_t)(n * n) * sizeof(float), cudaMemcpyHostToDevice, s));
        h = h_d;
    }
    FR_CU(cudaMemcpyAsync(diag_d, diag.data(), (size_t)n * sizeof(double), cudaMemcpyHostToDevice, s));
    FR_CU(cudaMemcpyAsync(perm_d, perm.data(), (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    FR_CU(cudaMemcpyAsync(dead_d, dead.data(), (size_t)n, cudaMemcpyHostToDevice, s));

    pthread_mutex_lock(&fr_kg_lock);
    locked = 1;
    FR_TRY(fr_kg_handles(s, err));

    damp = FR_KG_DAMP * mean_diag;
    for (;;) {
        FR_TRY(fr_kg_factor(s, h, perm_d, diag_d, perm.data(), diag.data(), damp, n, a, u, &ws,
                            &ok, err));
        if (ok)
            break;
        if (++tries > FR_KG_RETRIES) {
            st = fr_fail(err, FR_E_USAGE,
                         "H + %g I is not positive definite after %d dampening retries", damp,
                         FR_KG_RETRIES);
            goto cleanup;
        }
        damp *= 10.0;
    }
    *damp_retries = tries;
    *damp_used = damp / mean_diag;
    FR_LAUNCH(fr_kg_prep_w<<<grid, 256, 0, s>>>(w, dtype, perm_d, dead_d, rows, n, W));
    if (stat)
        FR_LAUNCH(fr_kg_static<<<(int)std::min<int64_t>((rows * G + 255) / 256, 8192), 256, 0, s>>>(
            w, dtype, dead_d, rows, n, g, G, p->bits, p->symmetric, S, Z));
    for (int64_t i1 = 0; i1 < n; i1 += B) {
        const int64_t i2 = i1 + B < n ? i1 + B : n, nb = i2 - i1;
        fr_kg_args ka = {W, u, perm_d, w_hat, E, S, Z, rows, n, g, G, B, i1, nb,
                         p->bits, p->symmetric, p->variant};
        FR_LAUNCH(fr_kgptq_block<<<(int)((rows + FR_KG_ROWS - 1) / FR_KG_ROWS), (int)B, 0, s>>>(ka));
        if (i2 < n)
            FR_TRY(fr_kg_update(W, E, u, rows, n, B, i1, i2, err));
    }
    FR_CU(cudaStreamSynchronize(s));
cleanup:
    if (locked)
        pthread_mutex_unlock(&fr_kg_lock);
    {
        void *bufs[] = {a, u, W, E, diag_d, perm_d, dead_d, ws.info_d, S, Z, h_d, hdiag_d};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
            if (bufs[k])
                cudaFreeAsync(bufs[k], s);
        if (ws.work)
            cudaFreeAsync(ws.work, s);
        cudaStreamSynchronize(s);
    }
    return st;
}


/* The descriptor's quantize_cuda (quantizers/gptq.c sets it): the wrapped
 * int configuration's parameters, H from the statistics (host memory),
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
    int retries = 0;
    double damp = 0.0;
    fr_status st = fr_cuda_gptq(w, dtype, w_hat, rows, cols, calib->hessian, 0, &p, stream,
                                &retries, &damp, &err);
    const frontier_host_api *host = fr_host_api();
    if (st == FR_OK && retries && host && host->log)
        host->log(call, FRONTIER_LOG_WARN,
                  "H is not positive definite: dampening raised to %g x mean(diag H)", damp);
    return fr_kreport(call, st, &err);
}
