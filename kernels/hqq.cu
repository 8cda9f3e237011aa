/*
 * hqq- on the device (kernels/clipsearch.h; docs/gpu.md, "mse-, imat- and
 * hqq- on the GPU"): quantizers/hqq.c's hqq_group, one thread per group,
 * step by step with the same float32 operations per element in the same
 * order (no contraction under -fmad=false; IEEE division) and the same
 * double sums in element order, so the zero point of every iteration, the
 * stopping iteration and w^ are the CPU's. The one library function, the
 * shrink's power |e|^(p - 1), is quantizers/hqq.h's fr_hqq_pow on both
 * sides (docs/gpu.md says why it is bit for bit on the device too).
 */
#include <math.h>

#include "kcommon.cuh"
#include "clipsearch.h"

extern "C" {
#include "core/call.h"
#include "quantizers/hqq.h"
#include "quantizers/wrap.h"
}

#include <cuda_fp16.h>

#define FR_KH_THREADS 128
#define FR_KH_MAX_GRID 2048

/* hqq_error: mean |x - (clamp(rint(x / s + z), 0, L) - z) s| in double. */
__device__ static double fr_kh_error(const void *w, int dtype, int64_t at, int64_t n, float s,
                                     float z, float levels)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float x = fr_kload1(w, dtype, at + i);
        float q = rintf(x / s + z);
        q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
        e += fabs((double)x - (double)((q - z) * s));
    }
    return e / (double)n;
}

typedef struct fr_kh_args {
    const void *w;
    int dtype;
    float *w_hat;
    int64_t cols, g, per_row, n_groups;
    fr_int_params p;
} fr_kh_args;

static __global__ void __launch_bounds__(FR_KH_THREADS) fr_khqq(fr_kh_args a)
{
    const fr_int_params *p = &a.p;
    const float levels = fr_int_asym_levels(p->bits);
    for (int64_t gi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gi < a.n_groups;
         gi += (int64_t)gridDim.x * blockDim.x) {
        const int64_t start = gi % a.per_row * a.g;
        const int64_t n = a.cols - start < a.g ? a.cols - start : a.g;
        const int64_t at = gi / a.per_row * a.cols + start;
        float lo = 0.0f, hi = 0.0f; /* fr_wrap_range */
        for (int64_t i = 0; i < n; i++) {
            float v = fr_kload1(a.w, a.dtype, at + i);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        fr_int_qparams qp = fr_wrap_int_qparams(p, lo, hi);
        if (qp.s == 0.0f) {
            for (int64_t i = 0; i < n; i++)
                a.w_hat[at + i] = fr_wrap_int_dequant(p, qp, fr_kload1(a.w, a.dtype, at + i));
            continue;
        }
        const float s = qp.s;
        float z = qp.z, beta = FR_HQQ_BETA, best_z = qp.z;
        double best = INFINITY;
        for (int it = 0; it < FR_HQQ_ITERS; it++) {
            double err = fr_kh_error(a.w, a.dtype, at, n, s, z, levels);
            if (!(err < best))
                break;
            best = err;
            best_z = z;
            double zsum = 0.0;
            for (int64_t i = 0; i < n; i++) {
                float x = fr_kload1(a.w, a.dtype, at + i);
                float q = rintf(x / s + z);
                q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
                float e = x - (q - z) * s;
                float ae = fabsf(e);
                float shrunk = ae - fr_hqq_pow(ae + 1e-8f) / beta;
                float we = shrunk > 0.0f ? copysignf(shrunk, e) : 0.0f;
                zsum += (double)(q - (x - we) / s);
            }
            z = (float)(zsum / (double)n);
            beta *= FR_HQQ_KAPPA;
        }
        float zh = fr_round_fp16(best_z);
        if (!(fr_kh_error(a.w, a.dtype, at, n, s, zh, levels) <=
              fr_kh_error(a.w, a.dtype, at, n, s, qp.z, levels)))
            zh = qp.z;
        for (int64_t i = 0; i < n; i++) {
            float x = fr_kload1(a.w, a.dtype, at + i);
            float q = rintf(x / s + zh);
            q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
            a.w_hat[at + i] = (q - zh) * s;
        }
    }
}

extern "C" fr_status fr_cuda_hqq(const void *w, int dtype, float *w_hat, int64_t rows,
                                 int64_t cols, const fr_int_params *p, void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    fr_kh_args a;
    int64_t blocks = 0;
    FR_TRY(fr_cuda_check_finite(w, dtype, rows, cols, stream, err));
    a.w = w;
    a.dtype = dtype;
    a.w_hat = w_hat;
    a.cols = cols;
    a.g = fr_wrap_group_cols(p, cols);
    a.per_row = (cols + a.g - 1) / a.g;
    a.n_groups = rows * a.per_row;
    a.p = *p;
    blocks = (a.n_groups + FR_KH_THREADS - 1) / FR_KH_THREADS;
    if (blocks > 0)
        FR_LAUNCH(fr_khqq<<<(int)(blocks < FR_KH_MAX_GRID ? blocks : FR_KH_MAX_GRID),
                            FR_KH_THREADS, 0, s>>>(a));
cleanup:
    return st;
}

static __global__ void fr_khqq_pow_digest(uint32_t first, uint64_t count, uint64_t n_digest,
                                          uint64_t *digest)
{
    for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n_digest;
         k += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t sum = 0;
        for (uint64_t i = k * FR_HQQ_DIGEST_SPAN; i < (k + 1) * FR_HQQ_DIGEST_SPAN && i < count; i++) {
            uint32_t u = (uint32_t)(first + i);
            sum += fr_hqq_pow_mix(u, fr_f32_to_bits(fr_hqq_pow(fr_bits_to_f32(u))));
        }
        digest[k] = sum;
    }
}

extern "C" fr_status fr_cuda_hqq_pow_digest(uint32_t first, uint64_t count, uint64_t *digest,
                                            fr_error *err)
{
    fr_status st = FR_OK;
    const uint64_t n = (count + FR_HQQ_DIGEST_SPAN - 1) / FR_HQQ_DIGEST_SPAN;
    uint64_t *d = NULL;
    FR_CU(cudaMalloc((void **)&d, (size_t)(n ? n : 1) * sizeof *d));
    FR_LAUNCH(fr_khqq_pow_digest<<<(int)(n / 256 + 1 < 4096 ? n / 256 + 1 : 4096), 256, 0,
                                       (cudaStream_t)0>>>(
        first, count, n, d));
    FR_CU(cudaMemcpy(digest, d, (size_t)n * sizeof *d, cudaMemcpyDeviceToHost));
cleanup:
    if (d)
        cudaFree(d);
    return st;
}

/* hqq's quantize_cuda (a row of gpu_entries.h's table). */
extern "C" int fr_hqq_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                    float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, void *stream,
                                    frontier_call *call)
{
    (void)calib; /* data-free */
    fr_error err;
    fr_error_clear(&err);
    const fr_wrap_params *wp = cfg ? (const fr_wrap_params *)cfg->impl : NULL;
    const fr_int_params *ip = wp ? fr_wrap_int_base(wp) : NULL;
    if (!ip || ip->symmetric) {
        fr_fail(&err, FR_E_USAGE, "configuration '%s' has no int asym group base",
                cfg && cfg->name ? cfg->name : "(null)");
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    return fr_kreport(call, fr_cuda_hqq(w, dtype, w_hat, rows, cols, ip, stream, &err), &err);
}
