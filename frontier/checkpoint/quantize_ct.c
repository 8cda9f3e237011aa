/*
 * compressed-tensors layouts (docs/quantize.md; the facts are those of
 * compressed-tensors' compressors/nvfp4, compressors/pack_quantized and
 * quantization/lifecycle/initialize.py):
 *  - nvfp4-pack-quantized: weight_packed uint8 [out, in/2], element 2j in
 *    the low nibble, nibble = sign << 3 | index into {0, .5, 1, 1.5, 2, 3,
 *    4, 6}; weight_scale E4M3 [out, ceil(in/16)]; weight_global_scale F32
 *    [1], a divisor: W = E2M1 * weight_scale / weight_global_scale.
 *  - pack-quantized: weight_packed int32 [out, ceil(in*b/32)], element i of
 *    a row at bit i*b of the row's words (dense, little-endian, across word
 *    boundaries), stored as code + 2^(b-1); weight_scale [out, groups];
 *    weight_zero_point int32 [ceil(out*b/32), groups] packed the same way
 *    along dim 0 (asym); weight_shape int64 [2].
 *  - float-quantized: weight E4M3 [out, in], weight_scale F32 [1], [out, 1]
 *    or [ceil(out/128), ceil(in/128)]; W = weight * weight_scale.
 *  - mxfp4-pack-quantized (compressors/mxfp4, compressors/mx_utils.py):
 *    weight_packed as for nvfp4; weight_scale uint8 [out, in/32], the
 *    biased E8M0 exponent e + 127 of the block scale 2^e; no global scale:
 *    W = E2M1 * 2^(weight_scale - 127).
 */
#include "frontier/checkpoint/quantize_ct.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantizers/fp8_group.h"
#include "quantizers/int_group.h"
#include "quantizers/mx_block.h"
#include "quantizers/nvfp4_group.h"

/* ---- element encodings of values already on their grid ---- */

/* E4M3FN bits of a value that is exactly an E4M3 number (|v| <= 448). */
static uint8_t e4m3_bits(float v)
{
    uint8_t sign = signbit(v) ? 0x80 : 0;
    float a = fabsf(v);
    if (a == 0.0f)
        return sign;
    int e;
    float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
    if (e - 1 < -6)
        return sign | (uint8_t)(a * 512.0f); /* subnormal: a = man 2^-9 */
    return sign | (uint8_t)((e - 1 + 7) << 3) | (uint8_t)((m * 2.0f - 1.0f) * 8.0f);
}

static const float e2m1_values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

/* Nibble of a value that is exactly an E2M1 number. */
static uint8_t e2m1_nibble(float v)
{
    float a = fabsf(v);
    uint8_t idx = 0;
    for (uint8_t i = 0; i < 8; i++)
        if (e2m1_values[i] == a)
            idx = i;
    return (uint8_t)((signbit(v) ? 8 : 0) | idx);
}

static uint16_t f16_bits(float v) /* v already rounded to fp16 (finite) */
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    float a = fabsf(v);
    if (a == 0.0f)
        return sign;
    int e;
    float m = frexpf(a, &e);
    if (e - 1 < -14)
        return sign | (uint16_t)(a * 16777216.0f); /* subnormal: man 2^-24 */
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2.0f - 1.0f) * 1024.0f);
}

static uint16_t bf16_bits(float v) /* round to nearest even; v finite */
{
    uint32_t u = fr_f32_to_bits(v);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void fr_store_f32_as(fr_dtype dtype, const float *x, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        switch (dtype) {
        case FR_DTYPE_F16:
            b = f16_bits(fr_round_fp16(x[i]));
            out[2 * i] = (uint8_t)b;
            out[2 * i + 1] = (uint8_t)(b >> 8);
            break;
        case FR_DTYPE_BF16:
            b = bf16_bits(x[i]);
            out[2 * i] = (uint8_t)b;
            out[2 * i + 1] = (uint8_t)(b >> 8);
            break;
        default: /* F32 */
            b = fr_f32_to_bits(x[i]);
            for (int k = 0; k < 4; k++)
                out[4 * i + (size_t)k] = (uint8_t)(b >> (8 * k));
            break;
        }
    }
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Dense b-bit packing: value i of a run goes to bits [i*b, i*b + b) of the
 * run's little-endian words (compressed-tensors pack_to_int32). */
static void pack_bits(uint8_t *words, int64_t i, int bits, uint32_t value)
{
    uint64_t bit = (uint64_t)i * (uint64_t)bits;
    uint8_t *w = words + (bit / 32) * 4;
    uint32_t off = (uint32_t)(bit % 32);
    put_le32(w, get_le32(w) | value << off);
    if (off + (uint32_t)bits > 32)
        put_le32(w + 4, get_le32(w + 4) | value >> (32 - off));
}

/* ---- which configuration has which layout ---- */

fr_ct_kind fr_ct_scheme_of(const fr_registry *reg, const fr_config_ref *ref, fr_ct_scheme *s)
{
    (void)reg;
    memset(s, 0, sizeof *s);
    /* the configuration's storage (frontier_config_traits, checked at
     * registration); each format's fixed fields are the format's own */
    const frontier_config_traits *t = fr_config_traits_of(ref);
    switch (t->storage) {
    case FRONTIER_STORAGE_NVFP4:
        s->kind = FR_CT_NVFP4;
        s->bits = 4;
        break;
    case FRONTIER_STORAGE_INT_PACK:
        s->kind = FR_CT_PACK;
        s->bits = t->storage_bits;
        s->group_size = t->storage_group_size;
        s->symmetric = t->storage_symmetric;
        break;
    case FRONTIER_STORAGE_FP8:
        s->kind = FR_CT_FP8;
        s->bits = 8;
        s->fp8_granularity = t->storage_fp8_scope;
        break;
    case FRONTIER_STORAGE_MXFP4:
        s->kind = FR_CT_MXFP4;
        s->bits = 4;
        s->group_size = FR_MX_BLOCK;
        break;
    default:
        break;
    }
    return s->kind;
}

int fr_ct_scheme_equal(const fr_ct_scheme *a, const fr_ct_scheme *b)
{
    return a->kind == b->kind && a->bits == b->bits && a->group_size == b->group_size &&
           a->symmetric == b->symmetric && a->fp8_granularity == b->fp8_granularity;
}

fr_dtype fr_ct_pack_scale_dtype(fr_dtype model_dtype)
{
    return model_dtype == FR_DTYPE_F32 ? FR_DTYPE_F32 : FR_DTYPE_F16;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t pack_groups(const fr_ct_scheme *s, int64_t cols)
{
    return s->group_size ? ceil_div(cols, s->group_size) : 1;
}

static void set_part(fr_ct_part *p, const char *suffix, const char *dtype, int ndim, int64_t d0,
                     int64_t d1, unsigned elem)
{
    p->suffix = suffix;
    p->dtype = dtype;
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->shape[2] = 0;
    p->nbytes = (uint64_t)d0 * (uint64_t)(ndim == 2 ? d1 : 1) * elem;
}

size_t fr_ct_parts(const fr_ct_scheme *s, int64_t rows, int64_t cols, fr_dtype model_dtype,
                   fr_ct_part parts[FR_CT_MAX_PARTS], fr_error *err)
{
    switch (s->kind) {
    case FR_CT_NVFP4:
        /* compressed-tensors' group dequantization (forward_helpers.py
         * _process_group) and vLLM's kernels need whole groups */
        if (cols % FR_NVFP4_GROUP) {
            fr_fail(err, FR_E_USAGE,
                    "nvfp4-pack-quantized needs a column count that is a multiple of 16, not %lld",
                    (long long)cols);
            return 0;
        }
        set_part(&parts[0], "weight_packed", "U8", 2, rows, cols / 2, 1);
        set_part(&parts[1], "weight_scale", "F8_E4M3", 2, rows, ceil_div(cols, FR_NVFP4_GROUP), 1);
        set_part(&parts[2], "weight_global_scale", "F32", 1, 1, 0, 4);
        return 3;
    case FR_CT_MXFP4:
        /* group dequantization needs whole groups of 32, as for nvfp4 */
        if (cols % FR_MX_BLOCK) {
            fr_fail(err, FR_E_USAGE,
                    "mxfp4-pack-quantized needs a column count that is a multiple of 32, not %lld",
                    (long long)cols);
            return 0;
        }
        set_part(&parts[0], "weight_packed", "U8", 2, rows, cols / 2, 1);
        set_part(&parts[1], "weight_scale", "U8", 2, rows, cols / FR_MX_BLOCK, 1);
        return 2;
    case FR_CT_PACK: {
        fr_dtype sd = fr_ct_pack_scale_dtype(model_dtype);
        int64_t groups = pack_groups(s, cols);
        size_t n = 0;
        if (s->group_size && cols % s->group_size) {
            fr_fail(err, FR_E_USAGE,
                    "pack-quantized groups need a column count that is a multiple of %d, not %lld",
                    s->group_size, (long long)cols);
            return 0;
        }
        set_part(&parts[n++], "weight_packed", "I32", 2, rows, ceil_div(cols * s->bits, 32), 4);
        set_part(&parts[n++], "weight_scale", fr_dtype_name(sd), 2, rows, groups,
                 fr_dtype_size(sd));
        if (!s->symmetric)
            set_part(&parts[n++], "weight_zero_point", "I32", 2, ceil_div(rows * s->bits, 32),
                     groups, 4);
        set_part(&parts[n++], "weight_shape", "I64", 1, 2, 0, 8);
        return n;
    }
    case FR_CT_FP8:
        set_part(&parts[0], "weight", "F8_E4M3", 2, rows, cols, 1);
        if (s->fp8_granularity == FRONTIER_FP8_TENSOR)
            set_part(&parts[1], "weight_scale", "F32", 1, 1, 0, 4);
        else if (s->fp8_granularity == FRONTIER_FP8_CHANNEL)
            set_part(&parts[1], "weight_scale", "F32", 2, rows, 1, 4);
        else
            set_part(&parts[1], "weight_scale", "F32", 2, ceil_div(rows, FR_FP8_TILE),
                     ceil_div(cols, FR_FP8_TILE), 4);
        return 2;
    default:
        fr_fail(err, FR_E_USAGE, "no compressed-tensors layout");
        return 0;
    }
}

float fr_ct_amax(const float *w, int64_t n)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        if (a > amax && isfinite(a))
            amax = a;
    }
    return amax;
}

static fr_status check_finite(const float *w, int64_t rows, int64_t cols, fr_error *err)
{
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isfinite(w[i]))
            return fr_fail(err, FR_E_FORMAT, "non-finite weight at row %lld, column %lld",
                           (long long)(i / cols), (long long)(i % cols));
    return FR_OK;
}

/* ---- encoders ---- */

static void encode_nvfp4(const float *w, int64_t rows, int64_t cols, float gs,
                         uint8_t *const *bufs)
{
    uint8_t *packed = bufs[0], *scales = bufs[1];
    int64_t groups = ceil_div(cols, FR_NVFP4_GROUP);
    memset(packed, 0, (size_t)(rows * cols / 2));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t g = 0; g < groups; g++) {
            int64_t c0 = g * FR_NVFP4_GROUP;
            int64_t n = cols - c0 < FR_NVFP4_GROUP ? cols - c0 : FR_NVFP4_GROUP;
            const float *x = w + r * cols + c0;
            float amax = 0.0f;
            for (int64_t i = 0; i < n; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            float s = fr_nvfp4_group_scale(amax, gs);
            scales[r * groups + g] = e4m3_bits(s);
            for (int64_t i = 0; i < n; i++) {
                /* the code of fr_nvfp4_dequant: E2M1(x * gs / s); a zero scale stores 0 */
                uint8_t nib = s == 0.0f ? 0 : e2m1_nibble(fr_round_e2m1(x[i] * gs / s));
                int64_t e = r * cols + c0 + i;
                packed[e / 2] |= (uint8_t)(e % 2 ? nib << 4 : nib);
            }
        }
    }
    put_le32(bufs[2], fr_f32_to_bits(gs));
}

/* mxfp4: frontier's mx rule (quantizers/mx_block.h): X = 2^e, e =
 * fr_mx_scale_exp(block amax, 2) in [-127, 127], code = E2M1(x / X);
 * stored as e + 127 (compress_mx_scale's bias), codes packed as nvfp4's. */
static void encode_mxfp4(const float *w, int64_t rows, int64_t cols, uint8_t *const *bufs)
{
    uint8_t *packed = bufs[0], *scales = bufs[1];
    const int64_t blocks = cols / FR_MX_BLOCK;
    memset(packed, 0, (size_t)(rows * cols / 2));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < blocks; b++) {
            const float *x = w + r * cols + b * FR_MX_BLOCK;
            float amax = 0.0f;
            for (int64_t i = 0; i < FR_MX_BLOCK; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            int e = fr_mx_scale_exp(amax, 2);
            float scale = fr_pow2f(e);
            scales[r * blocks + b] = (uint8_t)(e + 127);
            for (int64_t i = 0; i < FR_MX_BLOCK; i++) {
                /* the element of fr_mx_dequant: E2M1(x / X) */
                uint8_t nib = e2m1_nibble(fr_round_fmt(x[i] / scale, FR_FMT_E2M1));
                int64_t el = r * cols + b * FR_MX_BLOCK + i;
                packed[el / 2] |= (uint8_t)(el % 2 ? nib << 4 : nib);
            }
        }
}

/* pack-quantized: per group the storage's own rule (an fp16 scale from the
 * group's range, frontier's int rule: quantizers/int_group.h), or the
 * scales and zero points the configuration hands over (own); the codes are
 * clamp(rint(x / s)) (+ z) either way. */
static fr_status encode_pack(const fr_ct_scheme *s, const float *w, int64_t rows, int64_t cols,
                             fr_dtype model_dtype, const fr_ct_scales *own, uint8_t *const *bufs,
                             fr_error *err)
{
    const int bits = s->bits;
    const int64_t group = s->group_size ? s->group_size : cols;
    const int64_t groups = pack_groups(s, cols);
    const int64_t words_per_row = ceil_div(cols * bits, 32);
    const uint32_t offset = 1u << (bits - 1);
    const fr_dtype sd = fr_ct_pack_scale_dtype(model_dtype);
    const unsigned ssize = fr_dtype_size(sd);
    uint8_t *packed = bufs[0], *scale_out = bufs[1];
    uint8_t *zp = s->symmetric ? NULL : bufs[2];
    uint8_t *shape = bufs[s->symmetric ? 2 : 3];
    const int64_t zp_words = ceil_div(rows * bits, 32);
    memset(packed, 0, (size_t)(rows * words_per_row * 4));
    if (zp)
        memset(zp, 0, (size_t)(zp_words * groups * 4));
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row_words = packed + r * words_per_row * 4;
        for (int64_t g = 0; g < groups; g++) {
            int64_t c0 = g * group;
            int64_t n = cols - c0 < group ? cols - c0 : group;
            const float *x = w + r * cols + c0;
            float lo = 0.0f, hi = 0.0f;
            for (int64_t i = 0; i < n; i++) {
                lo = x[i] < lo ? x[i] : lo;
                hi = x[i] > hi ? x[i] : hi;
            }
            float sc;
            if (own) {
                /* the scale must survive the scale dtype exactly */
                uint8_t stored[4];
                sc = own->scale[r * groups + g];
                fr_store_f32_as(sd, &sc, 1, stored);
                if (fr_load_as_f32(sd, stored) != sc)
                    return fr_fail(err, FR_E_USAGE,
                                   "pack-quantized stores %s scales, and the scale %g of row "
                                   "%lld, group %lld is not one",
                                   fr_dtype_name(sd), sc, (long long)r, (long long)g);
            }
            if (s->symmetric) {
                float qmax = fr_int_sym_qmax(bits);
                float amax = -lo > hi ? -lo : hi;
                if (!own)
                    sc = fr_int_sym_scale(amax, qmax);
                for (int64_t i = 0; i < n; i++) {
                    /* signed code q in [-qmax, qmax], stored as q + 2^(b-1) */
                    int q = (int)fr_int_sym_code(x[i], sc, qmax);
                    pack_bits(row_words, c0 + i, bits, (uint32_t)(q + (int)offset));
                }
            } else {
                float levels = fr_int_asym_levels(bits);
                if (!own)
                    sc = fr_int_asym_scale(lo, hi, levels);
                float z = own ? own->zero[r * groups + g] : fr_int_asym_zero(lo, sc, levels);
                for (int64_t i = 0; i < n; i++) {
                    /* unsigned code q in [0, 2^b - 1]: compressed-tensors' signed
                     * q - 2^(b-1) plus the packing offset */
                    int q = (int)(fr_int_asym_code(x[i], sc, z, levels) + z);
                    pack_bits(row_words, c0 + i, bits, (uint32_t)q);
                }
                /* zero points packed along dim 0: column g, row r */
                uint8_t *col = zp + 0; /* word (k, g) is at (k * groups + g) * 4 */
                uint64_t bit = (uint64_t)r * (uint64_t)bits;
                uint64_t k = bit / 32;
                uint32_t off = (uint32_t)(bit % 32), zv = (uint32_t)z;
                uint8_t *wd = col + (k * (uint64_t)groups + (uint64_t)g) * 4;
                put_le32(wd, get_le32(wd) | zv << off);
                if (off + (uint32_t)bits > 32) {
                    uint8_t *wn = col + ((k + 1) * (uint64_t)groups + (uint64_t)g) * 4;
                    put_le32(wn, get_le32(wn) | zv >> (32 - off));
                }
            }
            fr_store_f32_as(sd, &sc, 1, scale_out + (size_t)(r * groups + g) * ssize);
        }
    }
    int64_t dims[2] = {rows, cols};
    for (int d = 0; d < 2; d++) {
        put_le32(shape + 8 * d, (uint32_t)dims[d]);
        put_le32(shape + 8 * d + 4, (uint32_t)((uint64_t)dims[d] >> 32));
    }
    return FR_OK;
}

static void encode_fp8_scope(const float *w, int64_t cols, int64_t r0, int64_t r1, int64_t c0,
                             int64_t c1, uint8_t *codes, float *scale)
{
    float amax = 0.0f;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++)
            amax = fabsf(w[r * cols + c]) > amax ? fabsf(w[r * cols + c]) : amax;
    float s = fr_fp8_scale(amax, 448.0f);
    *scale = s;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++)
            codes[r * cols + c] =
                s == 0.0f ? 0 : e4m3_bits(fr_round_fmt(w[r * cols + c] / s, FR_FMT_E4M3));
}

static void encode_fp8(const fr_ct_scheme *s, const float *w, int64_t rows, int64_t cols,
                       uint8_t *const *bufs)
{
    float sc;
    if (s->fp8_granularity == FRONTIER_FP8_TENSOR) {
        encode_fp8_scope(w, cols, 0, rows, 0, cols, bufs[0], &sc);
        put_le32(bufs[1], fr_f32_to_bits(sc));
    } else if (s->fp8_granularity == FRONTIER_FP8_CHANNEL) {
        for (int64_t r = 0; r < rows; r++) {
            encode_fp8_scope(w, cols, r, r + 1, 0, cols, bufs[0], &sc);
            put_le32(bufs[1] + 4 * r, fr_f32_to_bits(sc));
        }
    } else {
        int64_t tc = ceil_div(cols, FR_FP8_TILE);
        for (int64_t br = 0; br * FR_FP8_TILE < rows; br++)
            for (int64_t bc = 0; bc < tc; bc++) {
                int64_t r0 = br * FR_FP8_TILE, c0 = bc * FR_FP8_TILE;
                int64_t r1 = r0 + FR_FP8_TILE < rows ? r0 + FR_FP8_TILE : rows;
                int64_t c1 = c0 + FR_FP8_TILE < cols ? c0 + FR_FP8_TILE : cols;
                encode_fp8_scope(w, cols, r0, r1, c0, c1, bufs[0], &sc);
                put_le32(bufs[1] + 4 * (br * tc + bc), fr_f32_to_bits(sc));
            }
    }
}

fr_status fr_ct_encode(const fr_ct_scheme *s, const float *w, int64_t rows, int64_t cols,
                       fr_dtype model_dtype, float global_scale, const fr_ct_scales *own,
                       uint8_t *const *bufs, fr_error *err)
{
    fr_status st = check_finite(w, rows, cols, err);
    if (st != FR_OK)
        return st;
    switch (s->kind) {
    case FR_CT_NVFP4:
        if (isnan(global_scale))
            global_scale = fr_nvfp4_global_scale(fr_ct_amax(w, rows * cols));
        encode_nvfp4(w, rows, cols, global_scale, bufs);
        return FR_OK;
    case FR_CT_PACK:
        return encode_pack(s, w, rows, cols, model_dtype, own, bufs, err);
    case FR_CT_FP8:
        encode_fp8(s, w, rows, cols, bufs);
        return FR_OK;
    case FR_CT_MXFP4:
        encode_mxfp4(w, rows, cols, bufs);
        return FR_OK;
    default:
        return fr_fail(err, FR_E_USAGE, "no compressed-tensors layout");
    }
}

/* ---- decoding: the source's decoder over the parts' buffers ---- */

fr_status fr_ct_decode(const fr_ct_scheme *s, const uint8_t *const *bufs, int64_t rows,
                       int64_t cols, fr_dtype model_dtype, float *out, fr_error *err)
{
    fr_ct_view v = {.kind = s->kind, .rows = rows, .cols = cols, .tile_rows = 1,
                    .packed = bufs[0], .scale = bufs[1]};
    switch (s->kind) {
    case FR_CT_NVFP4:
        v.group = FR_NVFP4_GROUP;
        v.scale_dtype = FR_DTYPE_F8_E4M3;
        v.global_dtype = FR_DTYPE_F32;
        v.global = bufs[2];
        break;
    case FR_CT_MXFP4:
        v.group = FR_MX_BLOCK;
        v.scale_dtype = FR_DTYPE_U8;
        break;
    case FR_CT_PACK: {
        const uint8_t *shape = bufs[s->symmetric ? 2 : 3];
        if ((int64_t)(get_le32(shape) | (uint64_t)get_le32(shape + 4) << 32) != rows ||
            (int64_t)(get_le32(shape + 8) | (uint64_t)get_le32(shape + 12) << 32) != cols)
            return fr_fail(err, FR_E_FORMAT, "weight_shape does not say [%lld, %lld]",
                           (long long)rows, (long long)cols);
        v.bits = s->bits;
        v.group = s->group_size ? s->group_size : cols;
        v.scale_dtype = fr_ct_pack_scale_dtype(model_dtype);
        v.zero = s->symmetric ? NULL : bufs[2];
        v.zp_packed = 1;
        break;
    }
    case FR_CT_FP8:
        v.elem_dtype = FR_DTYPE_F8_E4M3;
        v.scale_dtype = FR_DTYPE_F32;
        v.group = s->fp8_granularity == FRONTIER_FP8_BLOCK128 ? FR_FP8_TILE : cols;
        v.tile_rows = s->fp8_granularity == FRONTIER_FP8_TENSOR    ? rows
                      : s->fp8_granularity == FRONTIER_FP8_CHANNEL ? 1
                                                                   : FR_FP8_TILE;
        break;
    default:
        return fr_fail(err, FR_E_USAGE, "no compressed-tensors layout");
    }
    v.scale_cols = ceil_div(cols, v.group);
    return fr_ct_decode_rows(&v, 0, rows, out, err);
}
