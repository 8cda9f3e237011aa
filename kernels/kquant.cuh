/*
 * Device side of the built-in formats: one configuration applied to a
 * lane's 8 elements. Every rounding rule is the CPU reference's own FR_HD
 * helper (quantizers/<family>_group.h or _block.h, numerics.h), called from one
 * kernels/<family>.cuh per family: the kernels only decide where each
 * statistic comes from, never how a value is rounded. Built with
 * -fmad=false and IEEE division, so the dequantized values are the CPU's,
 * bit for bit.
 */
#ifndef FR_KQUANT_CUH
#define FR_KQUANT_CUH

#include "fp8.cuh"
#include "int.cuh"
#include "kstats.cuh"
#include "mx.cuh"
#include "nf4.cuh"
#include "nvfp4.cuh"

/*
 * Per-configuration constants that depend on the whole tensor, from the
 * tensor's lo/hi (min(min w, 0), max(max w, 0)): int tensor scale and zero
 * (int.c), fp8 tensor scale (fp8.c), nvfp4 global scale (nvfp4.c).
 */
__device__ __forceinline__ float2 fr_kspec_consts(const fr_kspec &s, const float *tensor_lohi)
{
    float2 c = make_float2(0.0f, 0.0f);
    if (!tensor_lohi)
        return c;
    float lo = tensor_lohi[0], hi = tensor_lohi[1];
    float amax = fr_kamax(lo, hi);
    if (s.kind == FR_K_INT_SYM && s.scope == FR_KS_TENSOR) {
        c.x = amax / s.qmax; /* one fp32 scale: no storage rounding (int.c) */
    } else if (s.kind == FR_K_INT_ASYM && s.scope == FR_KS_TENSOR) {
        c.x = (hi - lo) / s.qmax;
        c.y = fr_int_asym_zero(lo, c.x, s.qmax);
    } else if (s.kind == FR_K_FP8 && s.scope == FR_KS_TENSOR) {
        c.x = fr_fp8_scale(amax, s.fmax);
    } else if (s.kind == FR_K_NVFP4) {
        c.x = fr_nvfp4_global_scale(amax);
    }
    return c;
}

/* x_hat of a lane's 8 elements under configuration s. */
__device__ __forceinline__ void fr_kquantize8(const fr_kspec &s, float2 kc, const fr_klane &L,
                                              const float (&x)[FR_K_PER_LANE],
                                              float (&h)[FR_K_PER_LANE])
{
    switch (s.kind) {
    case FR_K_INT_SYM:
    case FR_K_INT_ASYM:
        fr_kint8(s, kc, L, x, h);
        break;
    case FR_K_FP8:
        fr_kfp8_8(s, kc, L, x, h);
        break;
    case FR_K_NVFP4:
        fr_knvfp4_8(s, kc, L, x, h);
        break;
    case FR_K_MX:
        fr_kmx8(s, L, x, h);
        break;
    case FR_K_NF4:
    case FR_K_NF4_DQ:
        fr_knf4_8(s, L, x, h);
        break;
    default:
#pragma unroll
        for (int e = 0; e < FR_K_PER_LANE; e++)
            h[e] = __int_as_float(0x7fc00000); /* unknown kind: NaN, caught by the tests */
        break;
    }
}

#endif
