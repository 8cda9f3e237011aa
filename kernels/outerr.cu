/*
 * tr(D H D^T) on the device with cuBLAS (kernels/outerr.h).
 */
#include <cuda_fp16.h>

#include "kcommon.cuh"
#include "outerr.h"

#ifndef FRONTIER_EMULATED_CUDA
#include <cublas_v2.h>

/* Fixed reduction geometry: a constant grid, so the partial sums (and the
 * result) do not depend on the device. */
#define FR_KOUT_GRID 264
#define FR_KOUT_THREADS 256

struct fr_cuda_blas {
    cudaStream_t stream;
    cublasHandle_t handle;
    float *d, *g;         /* FR_KOUT_ROWS x cols each */
    size_t cap;           /* floats in each */
    double *part;         /* FR_KOUT_GRID partials + 1 accumulator */
};

static fr_status fr_kout_blas_failed(fr_error *err, cublasStatus_t s, const char *what)
{
    return fr_fail(err, s == CUBLAS_STATUS_ALLOC_FAILED ? FR_E_NOMEM : FR_E_DEVICE,
                   "cublas call '%s' failed: %s (%d)", what, cublasGetStatusString(s), (int)s);
}

#define FR_BLAS(call)                                                                        \
    do {                                                                                     \
        cublasStatus_t fr_bl_s_ = (call);                                                    \
        if (fr_bl_s_ != CUBLAS_STATUS_SUCCESS) {                                             \
            st = fr_kout_blas_failed(err, fr_bl_s_, #call);                                  \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)

extern "C" int fr_cuda_blas_available(void)
{
    return 1;
}

extern "C" fr_status fr_cuda_blas_create(void *stream, int tf32, fr_cuda_blas **out,
                                         fr_error *err)
{
    fr_status st = FR_OK;
    fr_cuda_blas *b = (fr_cuda_blas *)calloc(1, sizeof *b);
    *out = NULL;
    if (!b)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate a cublas context");
    b->stream = (cudaStream_t)stream;
    FR_BLAS(cublasCreate(&b->handle));
    FR_BLAS(cublasSetStream(b->handle, b->stream));
    FR_BLAS(cublasSetMathMode(b->handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
    FR_BLAS(cublasSetAtomicsMode(b->handle, CUBLAS_ATOMICS_NOT_ALLOWED));
    FR_CU(cudaMalloc((void **)&b->part, (FR_KOUT_GRID + 1) * sizeof(double)));
    *out = b;
    return FR_OK;
cleanup:
    fr_cuda_blas_destroy(b);
    return st;
}

extern "C" void fr_cuda_blas_destroy(fr_cuda_blas *b)
{
    if (!b)
        return;
    if (b->stream)
        cudaStreamSynchronize(b->stream);
    if (b->handle)
        cublasDestroy(b->handle);
    cudaFree(b->d);
    cudaFree(b->g);
    cudaFree(b->part);
    free(b);
}

/* D = w - w_hat (float32, one rounding) of n elements from offset `first`. */
static __global__ void fr_kout_diff(const void *w, int dtype, const float *w_hat, int64_t first,
                                    int64_t n, float *d)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float x = fr_kload1(w, dtype, first + i);
        d[i] = w_hat ? x - w_hat[first + i] : x;
    }
}

/* part[block] = the block's acc values added by a fixed tree. */
static __device__ void fr_kout_block_sum(double acc, double *part)
{
    __shared__ double s[FR_KOUT_THREADS];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = FR_KOUT_THREADS / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[blockIdx.x] = s[0];
}

/* part[block] = sum over the block's strided elements of (double)d * g,
 * a fixed order per thread and a fixed tree per block. */
static __global__ void __launch_bounds__(FR_KOUT_THREADS)
fr_kout_partial(const float *d, const float *g, int64_t n, double *part)
{
    double acc = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * FR_KOUT_THREADS + threadIdx.x; i < n;
         i += (int64_t)FR_KOUT_GRID * FR_KOUT_THREADS)
        acc += (double)d[i] * (double)g[i];
    fr_kout_block_sum(acc, part);
}

/* part[GRID] (the running total, chunk after chunk) += fixed tree of the partials. */
static __global__ void __launch_bounds__(FR_KOUT_THREADS) fr_kout_total(double *part, int first)
{
    __shared__ double s[FR_KOUT_THREADS * 2];
    for (int i = threadIdx.x; i < FR_KOUT_THREADS * 2; i += FR_KOUT_THREADS)
        s[i] = i < FR_KOUT_GRID ? part[i] : 0.0;
    __syncthreads();
    for (int k = FR_KOUT_THREADS; k > 0; k >>= 1) {
        for (int i = threadIdx.x; i < k; i += FR_KOUT_THREADS)
            s[i] += s[i + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[FR_KOUT_GRID] = first ? s[0] : part[FR_KOUT_GRID] + s[0];
}

/* *out = part[GRID], the total the kernels left there; synchronises. */
static fr_status fr_kout_read_total(fr_cuda_blas *b, double *out, fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaMemcpyAsync(out, b->part + FR_KOUT_GRID, sizeof(double), cudaMemcpyDeviceToHost,
                          b->stream));
    FR_CU(cudaStreamSynchronize(b->stream));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_output_term(fr_cuda_blas *b, const void *w, int dtype,
                                         const float *w_hat, int64_t rows, int64_t cols,
                                         const float *h, double *out, fr_error *err)
{
    fr_status st = FR_OK;
    *out = 0.0;
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    if (cols > INT32_MAX / FR_KOUT_ROWS)
        return fr_fail(err, FR_E_USAGE, "output error: %lld input columns are more than "
                       "cublas takes", (long long)cols);
    const size_t need = (size_t)FR_KOUT_ROWS * (size_t)cols;
    if (need > b->cap) {
        cudaFree(b->d);
        cudaFree(b->g);
        b->d = b->g = NULL;
        b->cap = 0;
        FR_CU(cudaMalloc((void **)&b->d, need * sizeof(float)));
        FR_CU(cudaMalloc((void **)&b->g, need * sizeof(float)));
        b->cap = need;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += FR_KOUT_ROWS) {
        const int64_t nr = rows - r0 < FR_KOUT_ROWS ? rows - r0 : FR_KOUT_ROWS;
        const int64_t n = nr * cols;
        const float one = 1.0f, zero = 0.0f;
        int grid = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
        FR_LAUNCH(fr_kout_diff<<<grid, 256, 0, b->stream>>>(w, dtype, w_hat, r0 * cols, n, b->d));
        /* row-major G = D H is column-major G^T = H^T D^T */
        FR_BLAS(cublasSgemm(b->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)cols, (int)nr, (int)cols,
                            &one, h, (int)cols, b->d, (int)cols, &zero, b->g, (int)cols));
        FR_LAUNCH(fr_kout_partial<<<FR_KOUT_GRID, FR_KOUT_THREADS, 0, b->stream>>>(b->d, b->g, n,
                                                                                   b->part));
        FR_LAUNCH(fr_kout_total<<<1, FR_KOUT_THREADS, 0, b->stream>>>(b->part, r0 == 0));
    }
    return fr_kout_read_total(b, out, err);
cleanup:
    return st;
}

/* part[block] = sum over the block's strided elements of diag_j (w - w_hat)^2
 * (the difference in float32, as fr_kout_diff; the terms in double), a fixed
 * order per thread and a fixed tree per block. */
static __global__ void __launch_bounds__(FR_KOUT_THREADS)
fr_kout_diag_partial(const void *w, int dtype, const float *w_hat, const float *diag,
                     int64_t cols, int64_t n, double *part)
{
    double acc = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * FR_KOUT_THREADS + threadIdx.x; i < n;
         i += (int64_t)FR_KOUT_GRID * FR_KOUT_THREADS) {
        const float x = fr_kload1(w, dtype, i);
        const float d = w_hat ? x - w_hat[i] : x;
        acc += (double)diag[i % cols] * ((double)d * (double)d);
    }
    fr_kout_block_sum(acc, part);
}

extern "C" fr_status fr_cuda_output_term_diag(fr_cuda_blas *b, const void *w, int dtype,
                                              const float *w_hat, int64_t rows, int64_t cols,
                                              const float *diag, double *out, fr_error *err)
{
    fr_status st = FR_OK;
    *out = 0.0;
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    FR_LAUNCH(fr_kout_diag_partial<<<FR_KOUT_GRID, FR_KOUT_THREADS, 0, b->stream>>>(
        w, dtype, w_hat, diag, cols, rows * cols, b->part));
    FR_LAUNCH(fr_kout_total<<<1, FR_KOUT_THREADS, 0, b->stream>>>(b->part, 1));
    return fr_kout_read_total(b, out, err);
cleanup:
    return st;
}

#else /* the CPU emulation: OpenBLAS on the emulated device memory (host memory) */

#include <cblas.h>

struct fr_cuda_blas {
    cudaStream_t stream;
    float *d, *g;
    size_t cap;
};

extern "C" int fr_cuda_blas_available(void)
{
    return 1;
}

extern "C" fr_status fr_cuda_blas_create(void *stream, int tf32, fr_cuda_blas **out,
                                         fr_error *err)
{
    (void)tf32; /* FP32 only */
    fr_cuda_blas *b = (fr_cuda_blas *)calloc(1, sizeof *b);
    *out = b;
    if (!b)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate a blas context");
    b->stream = (cudaStream_t)stream;
    return FR_OK;
}

extern "C" void fr_cuda_blas_destroy(fr_cuda_blas *b)
{
    if (!b)
        return;
    free(b->d);
    free(b->g);
    free(b);
}

extern "C" fr_status fr_cuda_output_term(fr_cuda_blas *b, const void *w, int dtype,
                                         const float *w_hat, int64_t rows, int64_t cols,
                                         const float *h, double *out, fr_error *err)
{
    fr_status st = FR_OK;
    *out = 0.0;
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    const size_t need = (size_t)FR_KOUT_ROWS * (size_t)cols;
    if (need > b->cap) {
        free(b->d);
        free(b->g);
        b->d = (float *)malloc(need * sizeof(float));
        b->g = (float *)malloc(need * sizeof(float));
        b->cap = b->d && b->g ? need : 0;
        if (!b->cap)
            return fr_fail(err, FR_E_NOMEM, "cannot allocate the output error's scratch");
    }
    FR_CU(cudaStreamSynchronize(b->stream));
    for (int64_t r0 = 0; r0 < rows; r0 += FR_KOUT_ROWS) {
        const int64_t nr = rows - r0 < FR_KOUT_ROWS ? rows - r0 : FR_KOUT_ROWS;
        for (int64_t i = 0; i < nr * cols; i++) {
            float x = fr_kload1(w, dtype, r0 * cols + i);
            b->d[i] = w_hat ? x - w_hat[r0 * cols + i] : x;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)cols, (int)cols,
                    1.0f, b->d, (int)cols, h, (int)cols, 0.0f, b->g, (int)cols);
        double sum = 0.0;
        for (int64_t i = 0; i < nr * cols; i++)
            sum += (double)b->d[i] * (double)b->g[i];
        *out += sum;
    }
cleanup:
    return st;
}

/* The CPU's order (frontier/exec/metrics.c): each chunk of 64 rows
 * (FR_OUTPUT_ROWS there) summed in element order, the chunks added in
 * order, so the emulation's rows are the CPU's bit for bit. */
#define FR_KOUT_CPU_ROWS 64
extern "C" fr_status fr_cuda_output_term_diag(fr_cuda_blas *b, const void *w, int dtype,
                                              const float *w_hat, int64_t rows, int64_t cols,
                                              const float *diag, double *out, fr_error *err)
{
    fr_status st = FR_OK;
    *out = 0.0;
    FR_CU(cudaStreamSynchronize(b->stream));
    for (int64_t r0 = 0; r0 < rows; r0 += FR_KOUT_CPU_ROWS) {
        const int64_t end = (rows - r0 < FR_KOUT_CPU_ROWS ? rows : r0 + FR_KOUT_CPU_ROWS) * cols;
        double sum = 0.0;
        for (int64_t i = r0 * cols; i < end; i++) {
            const float x = fr_kload1(w, dtype, i);
            const float d = w_hat ? x - w_hat[i] : x;
            sum += (double)diag[i % cols] * ((double)d * (double)d);
        }
        *out += sum;
    }
cleanup:
    return st;
}

#endif
