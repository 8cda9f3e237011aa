/* Half precision for the CPU emulation (cuda_runtime.h here says why). */
#ifndef FR_EMU_CUDA_FP16_H
#define FR_EMU_CUDA_FP16_H

#include "cuda_runtime.h"
extern "C" {
#include "core/dtype.h"
}

struct __half {
    unsigned short bits;
};
static inline __half __ushort_as_half(unsigned short b)
{
    return __half{b};
}
static inline float __half2float(__half h)
{
    return fr_f16_to_f32(h.bits);
}

/* float -> binary16, round to nearest even (finite inputs in range) */
static inline __half __float2half_rn(float v)
{
    uint32_t u = fr_f32_to_bits(v);
    unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
    float a = fabsf(v);
    if (a == 0.0f)
        return __half{sign};
    int e = (int)((u >> 23) & 0xffu) - 127;
    if (e < -14) /* subnormal: a multiple of 2^-24 */
        return __half{(unsigned short)(sign | (unsigned short)rintf(a * 16777216.0f))};
    uint32_t m = (uint32_t)rintf(a * fr_bits_to_f32((uint32_t)(127 + 10 - e) << 23));
    if (m == 2048u) { /* rounded up into the next binade */
        m = 1024u;
        e++;
    }
    return __half{(unsigned short)(sign | (unsigned short)((e + 15) << 10) | (unsigned short)(m - 1024u))};
}

#endif
