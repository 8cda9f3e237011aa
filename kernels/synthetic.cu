/*
 * Synthetic tensors generated on the device (core/synthetic.h defines
 * them): element i of tensor k takes the four words of cuRAND's device API
 * after curand_init(seed, k, 4 * i, &state); curand4(&state) (Philox4x32-10;
 * core/philox.h is the same function on the CPU), then core/synthetic.h's
 * FR_HD transform and rounding to the tensor's dtype. Built with
 * -fmad=false, so the values are bitwise the CPU generator's
 * (tests/gpu/test_gpu_synthetic.cu checks it).
 */
#include <cuda_fp16.h>
#include <curand_kernel.h>

#include "kcommon.cuh"

extern "C" {
#include "core/synthetic.h"
}

template <int FRDT>
static __global__ void __launch_bounds__(256)
    fr_ksynthetic(void *__restrict__ dst, int dist, unsigned long long seed,
                  unsigned long long tensor, unsigned long long first, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        curandStatePhilox4_32_10_t state;
        curand_init(seed, tensor, 4ull * (first + (unsigned long long)i), &state);
        const uint4 r = curand4(&state);
        fr_philox_words words;
        words.w[0] = r.x;
        words.w[1] = r.y;
        words.w[2] = r.z;
        words.w[3] = r.w;
        const float v = fr_synthetic_round(fr_synthetic_value(dist, words), FRDT);
        if constexpr (FRDT == FR_DTYPE_BF16) {
            /* v is a bf16 value already: its upper half is the stored bits */
            reinterpret_cast<unsigned short *>(dst)[i] = (unsigned short)(__float_as_uint(v) >> 16);
        } else if constexpr (FRDT == FR_DTYPE_F16) {
            /* exact: v is a binary16 value already */
            reinterpret_cast<__half *>(dst)[i] = __float2half_rn(v);
        } else {
            reinterpret_cast<float *>(dst)[i] = v;
        }
    }
}

extern "C" fr_status fr_cuda_synthetic(int dist, int dtype, uint64_t seed, uint64_t tensor,
                                       uint64_t first, int64_t n, void *dst, void *stream,
                                       fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    int64_t blocks = (n + 255) / 256;
    /* grid-stride beyond 132 SMs x 16 blocks: enough to fill an H200 */
    unsigned grid = (unsigned)(blocks < 2112 ? (blocks > 0 ? blocks : 1) : 2112);
    if (n <= 0)
        return FR_OK;
    if (dist < 0 || dist >= FR_SYN_COUNT)
        return fr_fail(err, FR_E_USAGE, "unknown synthetic distribution %d", dist);
    switch (dtype) {
    case FR_DTYPE_F32:
        FR_LAUNCH(fr_ksynthetic<FR_DTYPE_F32><<<grid, 256, 0, s>>>(dst, dist, seed, tensor, first, n));
        break;
    case FR_DTYPE_F16:
        FR_LAUNCH(fr_ksynthetic<FR_DTYPE_F16><<<grid, 256, 0, s>>>(dst, dist, seed, tensor, first, n));
        break;
    case FR_DTYPE_BF16:
        FR_LAUNCH(fr_ksynthetic<FR_DTYPE_BF16><<<grid, 256, 0, s>>>(dst, dist, seed, tensor, first, n));
        break;
    default:
        return fr_fail(err, FR_E_USAGE, "synthetic tensors are f32, f16 or bf16, not %s",
                       fr_dtype_name((fr_dtype)dtype));
    }
cleanup:
    return st;
}
