/*
 * The fp16 fields of ggml's blocks (ggml_half): float32 -> binary16 as
 * ggml's GGML_FP32_TO_FP16 rounds it, and the little-endian byte order GGUF
 * stores. Shared by the legacy block types (ggml_blocks.h) and the
 * super-block types (ggml_kquants.h).
 */
#ifndef FR_GGML_FP16_H
#define FR_GGML_FP16_H

#include <math.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/hd.h"

/* float32 -> IEEE binary16 bits, round to nearest even, Inf past 65504
 * (what numpy's astype(float16) and ggml's conversion give). */
FR_HD uint16_t fr_ggml_f32_to_f16(float x)
{
    uint32_t b = fr_f32_to_bits(x);
    uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, top payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds to Inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* normal: rebias the exponent, round 13 bits away */
        uint32_t r = a - 0x38000000u;
        return (uint16_t)(sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
    }
    /* subnormal or zero: a multiple of 2^-24, exact scaling then ties to even */
    return (uint16_t)(sign | (uint32_t)rintf(fr_bits_to_f32(a) * 16777216.0f));
}

FR_HD void fr_ggml_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

FR_HD uint16_t fr_ggml_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

/* A scale as the block stores it (fp16, little-endian) and as the decoder
 * reads it back: the codes of the K-quants are chosen against the latter. */
FR_HD float fr_ggml_put_half(uint8_t *p, float v)
{
    uint16_t h = fr_ggml_f32_to_f16(v);
    fr_ggml_put16(p, h);
    return fr_f16_to_f32(h);
}

FR_HD float fr_ggml_get_half(const uint8_t *p)
{
    return fr_f16_to_f32(fr_ggml_get16(p));
}

#endif
