/*
 * The random Hadamard rotation on the device (kernels/rht.h) and the GPU
 * paths of `rht+<config>` and `rht+gptq-*` (quantizers/rht.c, rht_gptq.c;
 * docs/gpu.md "RHT on the GPU"). Every step is the CPU reference's float32
 * arithmetic per element (fr_rht_row, fr_rht_quantize), so the rotated
 * weights and Hessian are the CPU's bit for bit:
 *
 *   rows:   one thread block per row (grid-stride over rows), the row in
 *           shared memory up to FR_KRHT_SHARED_COLS columns, else in place
 *           in device memory; x_j * d_j (forward), then the butterfly
 *           stages h = 1, 2, 4, ... of every greedy power-of-two block
 *           together (a block barrier between stages: only the stage
 *           order matters, the pairs of one stage are independent), then
 *           x_j * (1/sqrtf(n)) of x_j's block and x_j * d_j (inverse);
 *   rht+:   R w into scratch (float32), the base's own quantize_cuda on it,
 *           R^T w^ in place;
 *   +gptq:  R w; H' = R H R^T as the CPU builds it (rotate the rows of H,
 *           transpose, rotate the rows, transpose back); fr_cuda_gptq with
 *           H' on the device; R^T w^ in place.
 */
#include <algorithm>
#include <vector>

#include "kcommon.cuh"
#include "gptq.h"
#include "rht.h"

extern "C" {
#include "core/call.h"
#include "quantizers/rht.h"
#include "quantizers/wrap.h"
}

#include <cuda_fp16.h>

#define FR_KRHT_THREADS 256

/* The largest power of two <= v (v > 0). */
__device__ static inline int64_t fr_krht_top(uint64_t v)
{
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    v |= v >> 32;
    return (int64_t)(v - (v >> 1));
}

/* log2 of a power of two. */
__device__ static inline int fr_krht_log2(uint64_t v)
{
    int b = 0;
    if (v >> 32) { v >>= 32; b += 32; }
    if (v >> 16) { v >>= 16; b += 16; }
    if (v >> 8) { v >>= 8; b += 8; }
    if (v >> 4) { v >>= 4; b += 4; }
    if (v >> 2) { v >>= 2; b += 2; }
    if (v >> 1) b += 1;
    return b;
}

/*
 * The greedy blocks of a row of `cols` are the set bits of cols from the
 * top: element j < cols lies in the block of size n = top(cols ^ j) (the
 * highest bit where j and cols differ, which cols has), starting at
 * j & ~(2n - 1). Blocks of n >= 2 cover [0, cols & ~1) and start at
 * multiples of 2n, so pair p (element 2p) lies in one too: its block holds
 * pairs [at/2, at/2 + n/2), and pair q of it at stage h (h < n) is
 * (at + (q / h) 2h + q % h, + h), the CPU's pair (j, j + h).
 */
static __global__ void __launch_bounds__(FR_KRHT_THREADS)
    fr_krht_rows(const void *in, int dtype, float *out, int64_t rows, int64_t cols,
                 const float *signs, int inverse)
{
    __shared__ float buf[FR_KRHT_SHARED_COLS];
    __shared__ float scale[64];
    const int t = threadIdx.x;
    for (int k = t; k < 63; k += blockDim.x)
        scale[k] = 1.0f / sqrtf((float)((int64_t)1 << k)); /* fwht's 1/sqrtf(n) */
    const int in_shared = cols <= FR_KRHT_SHARED_COLS;
    const int64_t top = fr_krht_top((uint64_t)cols), pairs = cols / 2;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float *x = in_shared ? buf : out + r * cols;
        for (int64_t j = t; j < cols; j += blockDim.x) {
            float v = fr_kload1(in, dtype, r * cols + j);
            x[j] = inverse ? v : v * signs[j];
        }
        __syncthreads();
        for (int lh = 0; ((int64_t)1 << lh) < top; lh++) {
            const int64_t h = (int64_t)1 << lh;
            for (int64_t p = t; p < pairs; p += blockDim.x) {
                const int64_t n = fr_krht_top((uint64_t)(cols ^ (2 * p)));
                if (h >= n)
                    continue;
                const int64_t at = (2 * p) & ~(2 * n - 1), q = p - at / 2;
                const int64_t i = at + ((q >> lh) << (lh + 1)) + (q & (h - 1));
                const float a = x[i], b = x[i + h];
                x[i] = a + b;
                x[i + h] = a - b;
            }
            __syncthreads();
        }
        for (int64_t j = t; j < cols; j += blockDim.x) {
            float v = x[j] * scale[fr_krht_log2((uint64_t)fr_krht_top((uint64_t)(cols ^ j)))];
            out[r * cols + j] = inverse ? v * signs[j] : v;
        }
        __syncthreads();
    }
}

/* out = in^T (n x n, float32): 32 x 32 tiles through shared memory. Grid
 * (ceil(n/32), ceil(n/32)), block (32, 8). */
static __global__ void fr_krht_transpose(const float *in, float *out, int64_t n)
{
    __shared__ float tile[32][33];
    const int64_t r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
    for (int k = threadIdx.y; k < 32; k += 8) {
        int64_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < n && c < n)
            tile[k][threadIdx.x] = in[r * n + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += 8) {
        int64_t r = c0 + k, c = r0 + threadIdx.x;
        if (r < n && c < n)
            out[r * n + c] = tile[threadIdx.x][k];
    }
}

extern "C" fr_status fr_cuda_rht_rows(const void *in, int dtype, float *out, int64_t rows,
                                      int64_t cols, const float *signs, int inverse,
                                      void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    if (dtype != FRONTIER_DTYPE_F32 && dtype != FRONTIER_DTYPE_F16 &&
        dtype != FRONTIER_DTYPE_BF16)
        return fr_fail(err, FR_E_USAGE, "rht on the gpu: unsupported input dtype %d", dtype);
    /* a warp at least, else about one thread per pair, at most FR_KRHT_THREADS */
    int threads = 32;
    while (threads < FR_KRHT_THREADS && threads < cols / 2)
        threads *= 2;
    FR_LAUNCH(fr_krht_rows<<<(int)std::min<int64_t>(rows, 16384), threads, 0, s>>>(
        in, dtype, out, rows, cols, signs, inverse));
cleanup:
    return st;
}

/* d (fr_rht_signs, seed FR_RHT_SEED) into new device memory on stream s
 * (from pageable memory: staged before cudaMemcpyAsync returns). */
static fr_status fr_krht_signs(int64_t cols, cudaStream_t s, float **signs_d, fr_error *err)
{
    fr_status st = FR_OK;
    std::vector<float> signs((size_t)cols);
    fr_rht_signs(signs.data(), cols, FR_RHT_SEED);
    FR_CU(cudaMallocAsync((void **)signs_d, (size_t)cols * sizeof(float), s));
    FR_CU(cudaMemcpyAsync(*signs_d, signs.data(), (size_t)cols * sizeof(float),
                          cudaMemcpyHostToDevice, s));
cleanup:
    return st;
}

/* rht's quantize_cuda: R w (float32 scratch), the base's quantize_cuda
 * (its family's row of gpu_entries.h: the base's descriptor, from
 * quantizers/, has no GPU functions), R^T w^. The base is a kernel family,
 * whose quantize_cuda reads no statistics (FR_KFAMILY), so the rotated
 * Hessian the CPU hands its bases is not built here: the base gets none. */
extern "C" int fr_rht_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                    float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, void *stream,
                                    frontier_call *call)
{
    fr_error e;
    fr_error *err = &e;
    fr_status st = FR_OK;
    int rc = FRONTIER_OK;
    cudaStream_t s = (cudaStream_t)stream;
    float *signs = NULL, *wr = NULL;
    const fr_wrap_params *p = cfg ? (const fr_wrap_params *)cfg->impl : NULL;
    const fr_kernel_gpu_entry *base_gpu =
        p && p->base_family >= 0 && p->base_family < FR_FAMILY_COUNT
            ? &fr_kernel_gpu_entries[p->base_family]
            : NULL;
    (void)calib;
    fr_error_clear(&e);
    if (!base_gpu || !base_gpu->quantize_cuda) {
        fr_fail(err, FR_E_PLUGIN, "rht: configuration '%s' has no base with a GPU path",
                cfg && cfg->name ? cfg->name : "(null)");
        return fr_kreport(call, FR_E_PLUGIN, err);
    }
    if (rows <= 0 || cols <= 0)
        return FRONTIER_OK;
    FR_TRY(fr_krht_signs(cols, s, &signs, err));
    FR_CU(cudaMallocAsync((void **)&wr, (size_t)(rows * cols) * sizeof(float), s));
    FR_TRY(fr_cuda_rht_rows(w, dtype, wr, rows, cols, signs, 0, s, err));
    rc = base_gpu->quantize_cuda(p->base, wr, FRONTIER_DTYPE_F32, w_hat, rows, cols, NULL,
                                 stream, call);
    if (rc != FRONTIER_OK)
        goto cleanup; /* the base has set the call's error */
    FR_TRY(fr_cuda_rht_rows(w_hat, FRONTIER_DTYPE_F32, w_hat, rows, cols, signs, 1, s, err));
cleanup:
    if (wr)
        cudaFreeAsync(wr, s);
    if (signs)
        cudaFreeAsync(signs, s);
    if (rc != FRONTIER_OK)
        return rc;
    return fr_kreport(call, st, err);
}

/* rht_gptq's quantize_cuda: R w; H' = R H R^T (the CPU's steps, so H' is
 * its bits); GPTQ on the device (fr_cuda_gptq, H' already there); R^T w^.
 * Synchronises the stream (fr_cuda_gptq does). */
extern "C" int fr_rht_gptq_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                         float *w_hat, int64_t rows, int64_t cols,
                                         const frontier_calib *calib, void *stream,
                                         frontier_call *call)
{
    fr_error e;
    fr_error *err = &e;
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    float *signs = NULL, *wr = NULL, *h = NULL, *ht = NULL;
    const fr_wrap_params *p = cfg ? (const fr_wrap_params *)cfg->impl : NULL;
    const fr_wrap_params *gp = p && p->base ? (const fr_wrap_params *)p->base->impl : NULL;
    const fr_int_params *ip = gp ? fr_wrap_int_base(gp) : NULL;
    fr_gptq_params gq = {0, 0, 0, 0, 0, FR_GPTQ_LOOP_WARP8, 0, 0};
    int retries = 0;
    double damp = 0.0;
    const size_t hbytes = (size_t)cols * (size_t)cols * sizeof(float);
    const dim3 tgrid((unsigned)((cols + 31) / 32), (unsigned)((cols + 31) / 32)), tblock(32, 8);
    fr_error_clear(&e);
    if (!calib || !calib->hessian || calib->cols != cols) {
        fr_fail(err, FR_E_USAGE, "needs a Hessian of %lld x %lld", (long long)cols,
                (long long)cols);
        return fr_kreport(call, FR_E_USAGE, err);
    }
    if (!ip) {
        fr_fail(err, FR_E_USAGE, "configuration '%s' has no int base",
                cfg && cfg->name ? cfg->name : "(null)");
        return fr_kreport(call, FR_E_USAGE, err);
    }
    if (cols > 65536) {
        fr_fail(err, FR_E_PLUGIN, "%lld input columns: GPTQ holds H in memory up to 65536",
                (long long)cols);
        return fr_kreport(call, FR_E_PLUGIN, err);
    }
    if (rows <= 0 || cols <= 0)
        return FRONTIER_OK;
    gq.bits = ip->bits;
    gq.symmetric = ip->symmetric;
    gq.row_scales = ip->granularity == FR_INT_ROW;
    gq.group = fr_wrap_group_cols(ip, cols);
    gq.variant = gp->variant;
    FR_TRY(fr_krht_signs(cols, s, &signs, err));
    FR_CU(cudaMallocAsync((void **)&wr, (size_t)(rows * cols) * sizeof(float), s));
    FR_CU(cudaMallocAsync((void **)&h, hbytes, s));
    FR_CU(cudaMallocAsync((void **)&ht, hbytes, s));
    /* H: the executor's device copy when it has one (frontier_call.hessian_device) */
    if (call && call->hessian_device)
        FR_CU(cudaMemcpyAsync(h, call->hessian_device, hbytes, cudaMemcpyDeviceToDevice, s));
    else
        FR_CU(cudaMemcpyAsync(h, calib->hessian, hbytes, cudaMemcpyHostToDevice, s));
    FR_TRY(fr_cuda_rht_rows(w, dtype, wr, rows, cols, signs, 0, s, err));
    /* H' = R H R^T: the rows of H, transpose (H R^T is not symmetric), the
     * rows again, transpose back */
    FR_TRY(fr_cuda_rht_rows(h, FRONTIER_DTYPE_F32, h, cols, cols, signs, 0, s, err));
    FR_LAUNCH(fr_krht_transpose<<<tgrid, tblock, 0, s>>>(h, ht, cols));
    FR_TRY(fr_cuda_rht_rows(ht, FRONTIER_DTYPE_F32, ht, cols, cols, signs, 0, s, err));
    FR_LAUNCH(fr_krht_transpose<<<tgrid, tblock, 0, s>>>(ht, h, cols));
    FR_CU(cudaFreeAsync(ht, s));
    ht = NULL;
    FR_TRY(fr_cuda_gptq(wr, FRONTIER_DTYPE_F32, w_hat, rows, cols, h, 1, &gq, stream, &retries,
                        &damp, err));
    if (retries && fr_host_api() && fr_host_api()->log)
        fr_host_api()->log(call, FRONTIER_LOG_WARN,
                           "H is not positive definite: dampening raised to %g x mean(diag H)",
                           damp);
    FR_TRY(fr_cuda_rht_rows(w_hat, FRONTIER_DTYPE_F32, w_hat, rows, cols, signs, 1, s, err));
cleanup:
    {
        void *bufs[] = {signs, wr, h, ht};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
            if (bufs[k])
                cudaFreeAsync(bufs[k], s);
    }
    return fr_kreport(call, st, err);
}
