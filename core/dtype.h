/*
 * Storage dtypes of checkpoint tensors and their exact conversion to float32.
 * The converters are FR_HD so the GPU kernels use the same bit-level rules.
 */
#ifndef FR_DTYPE_H
#define FR_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "hd.h"

typedef enum fr_dtype {
    FR_DTYPE_F32 = 0,
    FR_DTYPE_F16,
    FR_DTYPE_BF16,
    FR_DTYPE_F8_E4M3, /* E4M3FN: no infinities, 0x7f/0xff are NaN */
    FR_DTYPE_F8_E5M2,
    FR_DTYPE_F64,
    FR_DTYPE_I8,
    FR_DTYPE_U8,
    FR_DTYPE_I16,
    FR_DTYPE_U16,
    FR_DTYPE_I32,
    FR_DTYPE_U32,
    FR_DTYPE_I64,
    FR_DTYPE_U64,
    FR_DTYPE_BOOL,
    FR_DTYPE_QUANT,   /* a pre-quantized block format (GGUF Q4_K, ...); listed, never read */
    FR_DTYPE_COUNT
} fr_dtype;

/* Canonical upper-case name ("BF16"); FR_DTYPE_QUANT has none of its own. */
const char *fr_dtype_name(fr_dtype dt);
/* Bytes per element, 0 for FR_DTYPE_QUANT. */
unsigned fr_dtype_size(fr_dtype dt);
/* True for the floating dtypes frontier can quantize (F32, F16, BF16, F8_*, F64). */
int fr_dtype_is_float(fr_dtype dt);

FR_HD float fr_bits_to_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

FR_HD uint32_t fr_f32_to_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

FR_HD float fr_bf16_to_f32(uint16_t h)
{
    return fr_bits_to_f32((uint32_t)h << 16);
}

/* IEEE binary16 -> float32, exact (subnormals, infinities and NaN kept). */
FR_HD float fr_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal: man * 2^-24, exact in float32 */
        float v = (float)man * fr_bits_to_f32(0x33800000u); /* 2^-24 */
        return sign ? -v : v;
    }
    return fr_bits_to_f32(bits);
}

/* OCP E4M3FN -> float32: bias 7, 0x7f/0xff NaN, no infinities. */
FR_HD float fr_e4m3_to_f32(uint8_t b)
{
    uint32_t exp = (b >> 3) & 0xfu;
    uint32_t man = b & 0x7u;
    float v;
    if (exp == 0xfu && man == 0x7u)
        return fr_bits_to_f32(0x7fc00000u);
    if (exp == 0)
        v = (float)man * fr_bits_to_f32(0x3b000000u); /* man * 2^-9 */
    else
        v = fr_bits_to_f32(((exp + 120u) << 23) | (man << 20));
    return (b & 0x80u) ? -v : v;
}

/* OCP E5M2 -> float32: the upper byte of an IEEE binary16. */
FR_HD float fr_e5m2_to_f32(uint8_t b)
{
    return fr_f16_to_f32((uint16_t)((uint16_t)b << 8));
}

#endif
