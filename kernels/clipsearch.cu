/*
 * The clipping searches of mse- and imat- on the device (kernels/clipsearch.h;
 * docs/gpu.md, "mse-, imat- and hqq- on the GPU"): per group of the int base,
 * the CPU's fr_wrap_search_group (quantizers/wrap.c) with the same FR_HD
 * rules (quantizers/wrap.h, int_group.h) and the same double sums in the
 * same order, so the chosen shrink factor and every w^ are the CPU's bit
 * for bit:
 *
 *   16 threads per group (a block of 256 threads takes 16 groups a round,
 *   grid-stride, two block barriers a round): the group's lo/hi from 16 strided partials (min and max
 *   with the CPU's comparisons from 0 are exact in any order, -0.0 never
 *   becomes a bound); thread k < 11 then sums candidate k's weighted squared
 *   error over the group sequentially in element order, as the CPU's loop
 *   over k does; every thread picks the first least error in k order (the
 *   CPU's strict <) and writes its strided share of w^.
 *
 * Before the search, fr_cuda_check_finite refuses a tensor with NaN or Inf
 * in the CPU's words (fr_wrap_check_finite): one read, one synchronisation.
 * mse's and imat's quantize_cuda (rows of gpu_entries.h's table) are
 * here; imat's column weights are the CPU's (fr_imat_weights), uploaded.
 */
#include <math.h>
#include <stdlib.h>

#include "kcommon.cuh"
#include "clipsearch.h"

extern "C" {
#include "core/call.h"
#include "quantizers/imat.h"
#include "quantizers/wrap.h"
}

#include <cuda_fp16.h>

#define FR_KC_THREADS 256
#define FR_KC_LANES 16                          /* threads per group */
#define FR_KC_SLOTS (FR_KC_THREADS / FR_KC_LANES) /* groups per block at a time */
#define FR_KC_MAX_GRID 1024
#define FR_KF_GRID 1024

/* ---- the non-finite check ---- */

/* part[block] = the least index of a NaN or Inf among the block's elements
 * (INT64_MAX: none); a thread's first hit is its least, thread 0 takes the
 * least of the block's (a minimum: exact in any order). */
static __global__ void __launch_bounds__(256) fr_kfinite(const void *w, int dtype, int64_t n,
                                                         int64_t *part)
{
    __shared__ int64_t least[256];
    int64_t first = INT64_MAX;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float x = fr_kload1(w, dtype, i);
        if (!(x - x == 0.0f)) { /* fr_q_nonfinite */
            first = i;
            break;
        }
    }
    least[threadIdx.x] = first;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int t = 1; t < 256; t++)
            first = least[t] < first ? least[t] : first;
        part[blockIdx.x] = first;
    }
}

extern "C" fr_status fr_cuda_check_finite(const void *w, int dtype, int64_t rows, int64_t cols,
                                          void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = rows * cols;
    /* at least 16 elements per thread */
    const int grid = (int)(n / 4096 + 1 < FR_KF_GRID ? n / 4096 + 1 : FR_KF_GRID);
    int64_t *part = NULL, host[FR_KF_GRID], first = INT64_MAX;
    if (n <= 0)
        return FR_OK;
    FR_CU(cudaMallocAsync((void **)&part, (size_t)grid * sizeof(int64_t), s));
    FR_LAUNCH(fr_kfinite<<<grid, 256, 0, s>>>(w, dtype, n, part));
    FR_CU(cudaMemcpyAsync(host, part, (size_t)grid * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    FR_CU(cudaStreamSynchronize(s));
    for (int b = 0; b < grid; b++)
        first = host[b] < first ? host[b] : first;
    if (first != INT64_MAX)
        st = fr_fail(err, FR_E_USAGE, "non-finite weight at row %lld, column %lld",
                     (long long)(first / cols), (long long)(first % cols));
cleanup:
    if (part) {
        cudaFreeAsync(part, s);
        if (st != FR_OK)
            cudaStreamSynchronize(s);
    }
    return st;
}

/* ---- the search ---- */

typedef struct fr_kc_args {
    const void *w;
    int dtype;
    float *w_hat;
    const float *wt;          /* device [cols] or NULL */
    int64_t cols, g, per_row, n_groups;
    fr_int_params p;
} fr_kc_args;

static __global__ void __launch_bounds__(FR_KC_THREADS) fr_kclip_search(fr_kc_args a)
{
    /* two banks, alternating by round: a bank is written again only two
     * rounds later, after two barriers every thread has passed, so no
     * barrier is needed at the end of a round */
    __shared__ double err_b[2][FR_KC_SLOTS][FR_KC_LANES];
    __shared__ float plo_b[2][FR_KC_SLOTS][FR_KC_LANES], phi_b[2][FR_KC_SLOTS][FR_KC_LANES];
    const int slot = (int)threadIdx.x / FR_KC_LANES, k = (int)threadIdx.x % FR_KC_LANES;
    const fr_int_params *p = &a.p;
    int bank = 0;
    for (int64_t first = (int64_t)blockIdx.x * FR_KC_SLOTS; first < a.n_groups;
         first += (int64_t)gridDim.x * FR_KC_SLOTS, bank ^= 1) {
        double(*err)[FR_KC_LANES] = err_b[bank];
        float(*plo)[FR_KC_LANES] = plo_b[bank];
        float(*phi)[FR_KC_LANES] = phi_b[bank];
        const int64_t gi = first + slot;
        int64_t n = 0, start = 0, at = 0;
        if (gi < a.n_groups) {
            start = gi % a.per_row * a.g;
            n = a.cols - start < a.g ? a.cols - start : a.g;
            at = gi / a.per_row * a.cols + start;
        }
        /* fr_wrap_range: partials over i = k, k + 16, ..., then in lane order */
        float l = 0.0f, h = 0.0f;
        for (int64_t i = k; i < n; i += FR_KC_LANES) {
            float v = fr_kload1(a.w, a.dtype, at + i);
            l = v < l ? v : l;
            h = v > h ? v : h;
        }
        plo[slot][k] = l;
        phi[slot][k] = h;
        __syncthreads();
        float lo = 0.0f, hi = 0.0f;
        for (int j = 0; j < FR_KC_LANES; j++) {
            lo = plo[slot][j] < lo ? plo[slot][j] : lo;
            hi = phi[slot][j] > hi ? phi[slot][j] : hi;
        }
        /* candidate k: fr_wrap_group_error of the shrunk range, in element order */
        if (k < FR_WRAP_SHRINKS) {
            float slo, shi;
            fr_wrap_shrunk(lo, hi, fr_wrap_shrink(k), &slo, &shi);
            fr_int_qparams qp = fr_wrap_int_qparams(p, slo, shi);
            double e = 0.0;
            for (int64_t i = 0; i < n; i++) {
                float x = fr_kload1(a.w, a.dtype, at + i);
                float r = fr_wrap_int_dequant(p, qp, x);
                double d = (double)x - (double)r;
                e += (a.wt ? (double)a.wt[start + i] : 1.0) * d * d;
            }
            err[slot][k] = e;
        }
        __syncthreads();
        /* the first least error (fr_wrap_search_group's strict <) */
        int best = -1;
        double best_e = INFINITY;
        for (int j = 0; j < FR_WRAP_SHRINKS; j++)
            if (err[slot][j] < best_e) {
                best_e = err[slot][j];
                best = j;
            }
        fr_int_qparams qp = {0.0f, 0.0f};
        if (best >= 0) {
            float slo, shi;
            fr_wrap_shrunk(lo, hi, fr_wrap_shrink(best), &slo, &shi);
            qp = fr_wrap_int_qparams(p, slo, shi);
        }
        for (int64_t i = k; i < n; i += FR_KC_LANES)
            a.w_hat[at + i] = fr_wrap_int_dequant(p, qp, fr_kload1(a.w, a.dtype, at + i));
    }
}

extern "C" fr_status fr_cuda_clip_search(const void *w, int dtype, float *w_hat, int64_t rows,
                                         int64_t cols, const fr_int_params *p,
                                         const float *col_weight, void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    float *wt = NULL;
    fr_kc_args a;
    int64_t blocks = 0;
    FR_TRY(fr_cuda_check_finite(w, dtype, rows, cols, stream, err));
    a.w = w;
    a.dtype = dtype;
    a.w_hat = w_hat;
    a.wt = NULL;
    a.cols = cols;
    a.g = fr_wrap_group_cols(p, cols);
    a.per_row = (cols + a.g - 1) / a.g;
    a.n_groups = rows * a.per_row;
    a.p = *p;
    if (col_weight) {
        /* pageable host memory: the copy has read it when the call returns */
        FR_CU(cudaMallocAsync((void **)&wt, (size_t)cols * sizeof(float), s));
        FR_CU(cudaMemcpyAsync(wt, col_weight, (size_t)cols * sizeof(float),
                              cudaMemcpyHostToDevice, s));
        a.wt = wt;
    }
    blocks = (a.n_groups + FR_KC_SLOTS - 1) / FR_KC_SLOTS;
    if (blocks > 0)
        FR_LAUNCH(fr_kclip_search<<<(int)(blocks < FR_KC_MAX_GRID ? blocks : FR_KC_MAX_GRID),
                                    FR_KC_THREADS, 0, s>>>(a));
cleanup:
    if (wt)
        cudaFreeAsync(wt, s);
    return st;
}

/* ---- mse's and imat's quantize_cuda (gpu_entries.h) ---- */

static const fr_int_params *fr_kc_base(const frontier_config *cfg, fr_error *err)
{
    const fr_wrap_params *wp = cfg ? (const fr_wrap_params *)cfg->impl : NULL;
    const fr_int_params *ip = wp ? fr_wrap_int_base(wp) : NULL;
    if (!ip)
        fr_fail(err, FR_E_USAGE, "configuration '%s' has no int group base",
                cfg && cfg->name ? cfg->name : "(null)");
    return ip;
}

extern "C" int fr_mse_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                    float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, void *stream,
                                    frontier_call *call)
{
    (void)calib; /* data-free */
    fr_error err;
    fr_error_clear(&err);
    const fr_int_params *ip = fr_kc_base(cfg, &err);
    if (!ip)
        return fr_kreport(call, FR_E_USAGE, &err);
    return fr_kreport(call, fr_cuda_clip_search(w, dtype, w_hat, rows, cols, ip, NULL, stream, &err),
                      &err);
}

extern "C" int fr_imat_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                     float *w_hat, int64_t rows, int64_t cols,
                                     const frontier_calib *calib, void *stream,
                                     frontier_call *call)
{
    fr_error err;
    fr_error_clear(&err);
    const fr_int_params *ip = fr_kc_base(cfg, &err);
    if (!ip)
        return fr_kreport(call, FR_E_USAGE, &err);
    if (!calib || calib->cols != cols) {
        fr_fail(&err, FR_E_USAGE, "needs activation statistics for %lld inputs", (long long)cols);
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    const float *weight = calib->act_mean_sq;
    float *derived = NULL;
    if (!weight) {
        derived = (float *)malloc((size_t)cols * sizeof *derived);
        if (!derived) {
            fr_fail(&err, FR_E_NOMEM, "out of memory");
            return fr_kreport(call, FR_E_NOMEM, &err);
        }
        if (!fr_imat_weights(calib, cols, derived)) {
            free(derived);
            fr_fail(&err, FR_E_USAGE, "needs activation statistics");
            return fr_kreport(call, FR_E_USAGE, &err);
        }
        weight = derived;
    }
    fr_status st = fr_cuda_clip_search(w, dtype, w_hat, rows, cols, ip, weight, stream, &err);
    free(derived);
    return fr_kreport(call, st, &err);
}
