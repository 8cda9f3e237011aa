/*
 * ggml's block types (ggml-common.h block structs, the reference quantizers
 * of ggml-quants.c): encode and decode of one block and of one row, shared
 * by the `ggml` family (quantizers/ggml.c: quantize-dequantize =
 * decode(encode(x))) and the GGUF writer (frontier/checkpoint/quantize_gguf.c: the
 * same bytes go into the file), so what is written is what was measured.
 * The legacy types and MXFP4 (blocks of 32) are here; the super-block types
 * (K-quants, IQ4_NL, IQ4_XS) in ggml_kquants.h. docs/quantize.md ("GGUF")
 * and docs/formats.md state the rules.
 *
 * The arithmetic is float32 as in the reference (no contraction: the build
 * disables it): the scale is computed and used unrounded for the codes and
 * stored as fp16 (round to nearest even, overflowing to Inf as ggml's
 * GGML_FP32_TO_FP16 does); codes are truncations of x * id + 8.5 (16.5, 0.5)
 * clamped above, or roundf (Q8_0, ties away from zero). The low nibble of
 * qs[j] is element j, the high nibble element j + 16; Q5's fifth bits are
 * bit j of the little-endian uint32 qh.
 *
 * A short block (n < 32 elements, the end of a row whose length is not a
 * multiple of 32) takes its statistics over its n elements; GGUF cannot
 * store one (the writer refuses such rows), the sweep can measure it.
 */
#ifndef FR_GGML_BLOCKS_H
#define FR_GGML_BLOCKS_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "ggml_fp16.h"
#include "ggml_kquants.h"

#define FR_GGML_BLOCK 32             /* elements of a legacy block */
#define FR_GGML_MAX_BLOCK FR_GGML_QK_K /* elements of the largest block */
#define FR_GGML_MAX_BLOCK_BYTES 210  /* Q6_K's */

/* ggml_type ids (ggml.h) of the types the family writes; F16 only as
 * llama-quantize's last fallback (fr_ggml_stored_type). */
typedef enum fr_ggml_qtype {
    FR_GGML_F16 = 1,
    FR_GGML_Q4_0 = 2,
    FR_GGML_Q4_1 = 3,
    FR_GGML_Q5_0 = 6,
    FR_GGML_Q5_1 = 7,
    FR_GGML_Q8_0 = 8,
    FR_GGML_Q2_K = 10,
    FR_GGML_Q3_K = 11,
    FR_GGML_Q4_K = 12,
    FR_GGML_Q5_K = 13,
    FR_GGML_Q6_K = 14,
    FR_GGML_IQ4_NL = 20,
    FR_GGML_IQ4_XS = 23,
    FR_GGML_MXFP4 = 39
} fr_ggml_qtype;

/* MXFP4's elements: E2M1 values doubled (ggml's kvalues_mxfp4 {0, 1, 2,
 * 3, 4, 6, 8, 12, 0, -1, ..., -12}), index = the stored nibble; packed
 * as fr_ggml_iq4nl_value's, so no table lives in memory on the device. */
FR_HD float fr_ggml_mxfp4_value(int i)
{
    return (float)fr_ggml_packed_level(0x0c08060403020100ull, 0xf4f8fafcfdfeff00ull, i);
}

/* ggml's GGML_E8M0_TO_FP32_HALF: 2^(e - 127) / 2, subnormal for e < 2. */
FR_HD float fr_ggml_e8m0_half(uint8_t e)
{
    return fr_bits_to_f32(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* floorf(log2f(a)) for a finite a > 0 as the CPU's libm (ggml's call)
 * gives it. CUDA's log2f may be 1 ulp off, which moves the floor where
 * a is just below a power of two and log2f rounds up to the integer; the
 * double log2 rounded to float rounds as glibc's log2f does there
 * (tests/quantize/test_gguf.c compares the two on the top 2^16 mantissas
 * of every binade, the only inputs whose floor can depend on it). */
FR_HD float fr_ggml_floor_log2f(float a)
{
#if defined(__CUDA_ARCH__)
    return floorf((float)log2((double)a));
#else
    return floorf(log2f(a));
#endif
}

/* MXFP4 of one block: the shared exponent e = floor(log2 amax) - 2 + 127
 * (0 for an all-zero block; clamped at 0, where the reference's uint8_t
 * conversion of a negative value is undefined), d = fr_ggml_e8m0_half(e),
 * each element the index of the nearest kvalue * d, the first on a tie
 * (ggml's best_index_mxfp4: so 1.75 d goes to 1.5 d, not 2 d). */
FR_HD void fr_ggml_mxfp4_encode(const float *x, int n, uint8_t *out)
{
    float amax = 0.0f;
    for (int j = 0; j < n; j++)
        amax = amax < fabsf(x[j]) ? fabsf(x[j]) : amax;
    float ef = amax > 0.0f ? fr_ggml_floor_log2f(amax) - 2.0f + 127.0f : 0.0f;
    uint8_t e = (uint8_t)(ef > 0.0f ? ef : 0.0f);
    const float d = fr_ggml_e8m0_half(e);
    int q[FR_GGML_BLOCK] = {0};
    for (int j = 0; j < n; j++) {
        int best = 0;
        float best_err = fabsf(fr_ggml_mxfp4_value(0) * d - x[j]);
        for (int i = 1; i < 16; i++) {
            float err = fabsf(fr_ggml_mxfp4_value(i) * d - x[j]);
            if (err < best_err) {
                best = i;
                best_err = err;
            }
        }
        q[j] = best;
    }
    out[0] = e;
    for (int j = 0; j < FR_GGML_BLOCK / 2; j++)
        out[1 + j] = (uint8_t)(q[j] | q[j + 16] << 4);
}

/* A configuration's impl (quantizers/ggml.c). */
typedef struct fr_ggml_params {
    fr_ggml_qtype type;
    const char *name;       /* "q4_0": llama-quantize's spelling */
    const char *gguf_name;  /* "Q4_0": GGUF / gguf-py's */
    unsigned block_bytes;   /* bytes per block */
    unsigned file_type;     /* llama_ftype LLAMA_FTYPE_MOSTLY_<type> (general.file_type) */
    unsigned block;         /* elements per block: 32, or 256 for a super-block */
} fr_ggml_params;

/* Every type above (quantizers/ggml.c): the ggml family's configurations
 * and the GGUF writer (frontier/checkpoint/quantize_gguf.c) read the same rows. */
#define FR_GGML_N_TYPES 13
extern const fr_ggml_params fr_ggml_block_types[FR_GGML_N_TYPES];

/* F16 (quantizers/ggml.c): one element per "block" of 2 bytes, what
 * llama-quantize stores a tensor as when no block type fits its rows. Not a
 * configuration of the family. */
extern const fr_ggml_params fr_ggml_f16;

/* The row of the type llama-quantize spells `name` ("q4_0", "f16"), or NULL. */
static inline const fr_ggml_params *fr_ggml_params_by_name(const char *name)
{
    for (int i = 0; name && i < FR_GGML_N_TYPES; i++)
        if (!strcmp(fr_ggml_block_types[i].name, name))
            return &fr_ggml_block_types[i];
    return name && !strcmp(name, fr_ggml_f16.name) ? &fr_ggml_f16 : NULL;
}

static inline const fr_ggml_params *fr_ggml_params_by_type(fr_ggml_qtype type)
{
    for (int i = 0; i < FR_GGML_N_TYPES; i++)
        if (fr_ggml_block_types[i].type == type)
            return &fr_ggml_block_types[i];
    return type == FR_GGML_F16 ? &fr_ggml_f16 : NULL;
}

/* The type llama-quantize demotes `type` to on a tensor whose rows its block
 * does not divide (llama-quant.cpp, tensor_type_fallback): IQ4_XS to IQ4_NL,
 * Q2_K and Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0; a type of
 * blocks of 32 has no smaller block and stays. */
static inline fr_ggml_qtype fr_ggml_fallback(fr_ggml_qtype type)
{
    switch (type) {
    case FR_GGML_IQ4_XS: return FR_GGML_IQ4_NL;
    case FR_GGML_Q2_K:
    case FR_GGML_Q3_K: return FR_GGML_Q4_0;
    case FR_GGML_Q4_K: return FR_GGML_Q5_0;
    case FR_GGML_Q5_K: return FR_GGML_Q5_1;
    case FR_GGML_Q6_K: return FR_GGML_Q8_0;
    default: return type;
    }
}

/* What llama-quantize stores a tensor of ncols columns (ne[0], the row)
 * as when asked for p: p when its block divides ncols, else the fallback
 * type when its block does, else F16. The ggml family measures this type
 * (quantizers/ggml.c) and the GGUF writer writes it
 * (frontier/checkpoint/quantize_gguf.c), so the two cannot disagree. */
static inline const fr_ggml_params *fr_ggml_stored_type(const fr_ggml_params *p, int64_t ncols)
{
    if (ncols % (int64_t)p->block == 0)
        return p;
    const fr_ggml_params *f = fr_ggml_params_by_type(fr_ggml_fallback(p->type));
    return f && ncols % (int64_t)f->block == 0 ? f : &fr_ggml_f16;
}

/* (int)f clamped to [0, top]: the reference's truncating cast where f is
 * in range (always for finite blocks whose scale is a normal float), and no
 * undefined conversion where it is not (Inf from a subnormal scale). */
FR_HD int fr_ggml_trunc(float f, int top)
{
    return f >= (float)top ? top : f > 0.0f ? (int)f : 0;
}

/* Codes of a block as the reference computes them (j >= n: 0). */
FR_HD void fr_ggml_codes(fr_ggml_qtype type, const float *x, int n, int *q, float *d_out,
                                 float *m_out)
{
    float d = 0.0f, m = 0.0f, id;
    switch (type) {
    case FR_GGML_Q8_0: {
        float amax = 0.0f;
        for (int j = 0; j < n; j++)
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        d = amax / 127.0f;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < n; j++) {
            float r = roundf(x[j] * id); /* |r| <= 127 for a normal scale */
            q[j] = r != r ? 0 : r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r;
        }
        break;
    }
    case FR_GGML_Q4_0:
    case FR_GGML_Q5_0: {
        /* the element of largest magnitude, with its sign, maps to -8 (-16) */
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < n; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const int q4 = type == FR_GGML_Q4_0;
        d = max / (q4 ? -8.0f : -16.0f);
        id = d != 0.0f ? 1.0f / d : 0.0f;
        const float off = q4 ? 8.5f : 16.5f;
        const int top = q4 ? 15 : 31;
        for (int j = 0; j < n; j++)
            q[j] = fr_ggml_trunc(x[j] * id + off, top); /* MIN(top, (int8_t)(...)) */
        break;
    }
    default: { /* Q4_1, Q5_1: min and range */
        float lo = FLT_MAX, hi = -FLT_MAX;
        for (int j = 0; j < n; j++) {
            lo = x[j] < lo ? x[j] : lo;
            hi = x[j] > hi ? x[j] : hi;
        }
        const int top = type == FR_GGML_Q4_1 ? 15 : 31;
        d = (hi - lo) / (float)top;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        m = lo;
        for (int j = 0; j < n; j++)
            q[j] = fr_ggml_trunc((x[j] - lo) * id + 0.5f, top);
        break;
    }
    }
    for (int j = n; j < FR_GGML_BLOCK; j++)
        q[j] = 0;
    *d_out = d;
    *m_out = m;
}

/* Stores a legacy block of codes q[0..32), its fp16 d and (Q4_1, Q5_1) m. */
FR_HD void fr_ggml_pack_legacy(fr_ggml_qtype type, const int *q, float d, float m,
                                       uint8_t *out)
{
    fr_ggml_put16(out, fr_ggml_f32_to_f16(d));
    if (type == FR_GGML_Q8_0) {
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            out[2 + j] = (uint8_t)(int8_t)q[j];
        return;
    }
    uint8_t *p = out + 2;
    if (type == FR_GGML_Q4_1 || type == FR_GGML_Q5_1) {
        fr_ggml_put16(p, fr_ggml_f32_to_f16(m));
        p += 2;
    }
    if (type == FR_GGML_Q5_0 || type == FR_GGML_Q5_1) {
        uint32_t qh = 0;
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        for (int k = 0; k < 4; k++)
            p[k] = (uint8_t)(qh >> (8 * k));
        p += 4;
    }
    for (int j = 0; j < FR_GGML_BLOCK / 2; j++)
        p[j] = (uint8_t)((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
}

/* A legacy block or MXFP4: x[0..n), 1 <= n <= 32. */
FR_HD void fr_ggml_encode_legacy(fr_ggml_qtype type, const float *x, int n, uint8_t *out)
{
    if (type == FR_GGML_MXFP4) {
        fr_ggml_mxfp4_encode(x, n, out);
        return;
    }
    int q[FR_GGML_BLOCK];
    float d, m;
    fr_ggml_codes(type, x, n, q, &d, &m);
    fr_ggml_pack_legacy(type, q, d, m, out);
}

/* Whether ggml weighs `type`'s search by an importance matrix
 * (quantize_row_q4_0_impl ...): Q4_0, Q4_1, Q5_0, Q5_1. Q8_0 and MXFP4
 * ignore one. */
FR_HD int fr_ggml_legacy_weighted(fr_ggml_qtype type)
{
    return type == FR_GGML_Q4_0 || type == FR_GGML_Q4_1 || type == FR_GGML_Q5_0 ||
           type == FR_GGML_Q5_1;
}

/* The row statistic of those weighted searches: sigma2 = sum x^2 / n over
 * the whole row of n elements, summed in order in float. */
FR_HD float fr_ggml_row_sigma2(const float *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t j = 0; j < n; j++)
        sum += x[j] * x[j];
    return sum / (float)n;
}

/* A block of Q4_0, Q4_1, Q5_0 or Q5_1 as llama-quantize --imatrix writes
 * it (ggml-quants.c quantize_row_q*_impl, which it reaches for these types
 * only as the fallback of a super-block type): element j weighed by
 * qw[j] sqrt(sigma2 + x[j]^2), sigma2 the row's (fr_ggml_row_sigma2);
 * Q4_0 / Q5_0 take make_qx_quants' symmetric search (nmax 8 / 16), Q4_1 /
 * Q5_1 make_qkx3_quants' min-and-scale search (nmax 15 / 31, rmin -0.9,
 * rdelta 0.05, 36 steps, squared error). A short block (n < 32) is its
 * elements followed by zeros of weight 0. */
FR_HD void fr_ggml_encode_legacy_weighted(fr_ggml_qtype type, const float *x_in, int n,
                                                  const float *qw, float sigma2, uint8_t *out)
{
    float x[FR_GGML_BLOCK], w[FR_GGML_BLOCK], d, m = 0.0f;
    int q[FR_GGML_BLOCK];
    for (int j = 0; j < FR_GGML_BLOCK; j++) {
        x[j] = j < n ? x_in[j] : 0.0f;
        w[j] = j < n ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : 0.0f;
    }
    if (type == FR_GGML_Q4_0 || type == FR_GGML_Q5_0) {
        int8_t L[FR_GGML_BLOCK];
        d = fr_ggml_sym_search(FR_GGML_BLOCK, type == FR_GGML_Q4_0 ? 8 : 16, x, w, L);
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            q[j] = L[j];
    } else {
        uint8_t L[FR_GGML_BLOCK];
        float neg_min;
        d = fr_ggml_min_search(FR_GGML_BLOCK, type == FR_GGML_Q4_1 ? 15 : 31, x, w, L, &neg_min,
                               -0.9f, 0.05f, 36, 0);
        m = -neg_min;
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            q[j] = L[j];
    }
    fr_ggml_pack_legacy(type, q, d, m, out);
}

FR_HD void fr_ggml_decode_legacy(fr_ggml_qtype type, const uint8_t *in, float *y)
{
    if (type == FR_GGML_MXFP4) {
        const float e = fr_ggml_e8m0_half(in[0]);
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            y[j] = fr_ggml_mxfp4_value((j < 16 ? in[1 + j] : in[1 + j - 16] >> 4) & 0x0f) * e;
        return;
    }
    const float d = fr_f16_to_f32(fr_ggml_get16(in));
    if (type == FR_GGML_Q8_0) {
        for (int j = 0; j < FR_GGML_BLOCK; j++)
            y[j] = (float)(int8_t)in[2 + j] * d;
        return;
    }
    const uint8_t *p = in + 2;
    float m = 0.0f;
    const int has_min = type == FR_GGML_Q4_1 || type == FR_GGML_Q5_1;
    if (has_min) {
        m = fr_f16_to_f32(fr_ggml_get16(p));
        p += 2;
    }
    uint32_t qh = 0;
    const int five = type == FR_GGML_Q5_0 || type == FR_GGML_Q5_1;
    if (five) {
        qh = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
    }
    for (int j = 0; j < FR_GGML_BLOCK; j++) {
        int v = j < 16 ? p[j] & 0x0f : p[j - 16] >> 4;
        if (five)
            v |= (int)((qh >> j) & 1u) << 4;
        if (has_min)
            y[j] = (float)v * d + m;
        else
            y[j] = (float)(v - (five ? 16 : 8)) * d;
    }
}

/* Elements per block of a type: 256 for the super-block types, 1 for F16. */
FR_HD int fr_ggml_block_elems(fr_ggml_qtype type)
{
    switch (type) {
    case FR_GGML_F16: return 1;
    case FR_GGML_Q2_K:
    case FR_GGML_Q3_K:
    case FR_GGML_Q4_K:
    case FR_GGML_Q5_K:
    case FR_GGML_Q6_K:
    case FR_GGML_IQ4_XS: return FR_GGML_QK_K;
    default: return FR_GGML_BLOCK;
    }
}

/* Encodes x[0..n) (1 <= n <= the type's block) as one block of `type` into
 * out (the type's block_bytes). qw: the importance of each element (an
 * importance matrix's values for the block's columns), which the
 * super-block types weigh their searches by as llama-quantize --imatrix
 * does; NULL for none (the legacy types take none here: their weighted
 * searches need the row, fr_ggml_encode_row_weighted). F16: one element. */
FR_HD void fr_ggml_encode_block_weighted(fr_ggml_qtype type, const float *x, int n,
                                                 const float *qw, uint8_t *out)
{
    switch (type) {
    case FR_GGML_F16: fr_ggml_put16(out, fr_ggml_f32_to_f16(x[0])); return;
    case FR_GGML_Q2_K: fr_ggml_q2_k_encode(x, n, qw, (fr_ggml_block_q2_k *)out); return;
    case FR_GGML_Q3_K: fr_ggml_q3_k_encode(x, n, qw, (fr_ggml_block_q3_k *)out); return;
    case FR_GGML_Q4_K: fr_ggml_q4_k_encode(x, n, qw, (fr_ggml_block_q4_k *)out); return;
    case FR_GGML_Q5_K: fr_ggml_q5_k_encode(x, n, qw, (fr_ggml_block_q5_k *)out); return;
    case FR_GGML_Q6_K: fr_ggml_q6_k_encode(x, n, qw, (fr_ggml_block_q6_k *)out); return;
    case FR_GGML_IQ4_NL: fr_ggml_iq4_nl_encode(x, n, qw, (fr_ggml_block_iq4_nl *)out); return;
    case FR_GGML_IQ4_XS: fr_ggml_iq4_xs_encode(x, n, qw, (fr_ggml_block_iq4_xs *)out); return;
    default: fr_ggml_encode_legacy(type, x, n, out); return;
    }
}

FR_HD void fr_ggml_encode_block(fr_ggml_qtype type, const float *x, int n, uint8_t *out)
{
    fr_ggml_encode_block_weighted(type, x, n, NULL, out);
}

/* Decodes one block into y[0..block) as ggml's dequantize_row_* does. */
FR_HD void fr_ggml_decode_block(fr_ggml_qtype type, const uint8_t *in, float *y)
{
    switch (type) {
    case FR_GGML_F16: y[0] = fr_f16_to_f32(fr_ggml_get16(in)); return;
    case FR_GGML_Q2_K: fr_ggml_q2_k_decode((const fr_ggml_block_q2_k *)in, y); return;
    case FR_GGML_Q3_K: fr_ggml_q3_k_decode((const fr_ggml_block_q3_k *)in, y); return;
    case FR_GGML_Q4_K: fr_ggml_q4_k_decode((const fr_ggml_block_q4_k *)in, y); return;
    case FR_GGML_Q5_K: fr_ggml_q5_k_decode((const fr_ggml_block_q5_k *)in, y); return;
    case FR_GGML_Q6_K: fr_ggml_q6_k_decode((const fr_ggml_block_q6_k *)in, y); return;
    case FR_GGML_IQ4_NL: fr_ggml_iq4_nl_decode((const fr_ggml_block_iq4_nl *)in, y); return;
    case FR_GGML_IQ4_XS: fr_ggml_iq4_xs_decode((const fr_ggml_block_iq4_xs *)in, y); return;
    default: fr_ggml_decode_legacy(type, in, y); return;
    }
}

/* llama_ftype LLAMA_FTYPE_MOSTLY_<type> (general.file_type) of a type; 0
 * for a ggml type id outside the family. Q3_K, Q4_K and Q5_K are the _M
 * mixes' ids, as llama-quantize's "Q4_K" (its alias of Q4_K_M) writes them. */
static inline unsigned fr_ggml_file_type(fr_ggml_qtype type)
{
    switch (type) {
    case FR_GGML_Q4_0: return 2;
    case FR_GGML_Q4_1: return 3;
    case FR_GGML_Q8_0: return 7;
    case FR_GGML_Q5_0: return 8;
    case FR_GGML_Q5_1: return 9;
    case FR_GGML_Q2_K: return 10;
    case FR_GGML_Q3_K: return 12; /* Q3_K_M */
    case FR_GGML_Q4_K: return 15; /* Q4_K_M */
    case FR_GGML_Q5_K: return 17; /* Q5_K_M */
    case FR_GGML_Q6_K: return 18;
    case FR_GGML_IQ4_NL: return 25;
    case FR_GGML_IQ4_XS: return 30;
    case FR_GGML_MXFP4: return 38; /* LLAMA_FTYPE_MOSTLY_MXFP4_MOE */
    default: return 0;
    }
}

FR_HD unsigned fr_ggml_block_bytes(fr_ggml_qtype type)
{
    switch (type) {
    case FR_GGML_F16: return 2;
    case FR_GGML_Q4_0: return 18;
    case FR_GGML_Q4_1: return 20;
    case FR_GGML_Q5_0: return 22;
    case FR_GGML_Q5_1: return 24;
    case FR_GGML_MXFP4: return 17;
    case FR_GGML_Q2_K: return (unsigned)sizeof(fr_ggml_block_q2_k);
    case FR_GGML_Q3_K: return (unsigned)sizeof(fr_ggml_block_q3_k);
    case FR_GGML_Q4_K: return (unsigned)sizeof(fr_ggml_block_q4_k);
    case FR_GGML_Q5_K: return (unsigned)sizeof(fr_ggml_block_q5_k);
    case FR_GGML_Q6_K: return (unsigned)sizeof(fr_ggml_block_q6_k);
    case FR_GGML_IQ4_NL: return (unsigned)sizeof(fr_ggml_block_iq4_nl);
    case FR_GGML_IQ4_XS: return (unsigned)sizeof(fr_ggml_block_iq4_xs);
    default: return 34;
    }
}

/* One block of a row: x[0..n) the block's elements, qw its importance or
 * NULL, sigma2 the row's fr_ggml_row_sigma2 (read only by the weighted
 * legacy types). */
FR_HD void fr_ggml_encode_block_in_row(fr_ggml_qtype type, const float *x, int n,
                                               const float *qw, float sigma2, uint8_t *out)
{
    if (qw && fr_ggml_legacy_weighted(type))
        fr_ggml_encode_legacy_weighted(type, x, n, qw, sigma2, out);
    else
        fr_ggml_encode_block_weighted(type, x, n, qw, out);
}

/* One row of n elements: ceil(n / block) blocks (a short last one); qw the
 * row's importance (one per element) or NULL. */
static inline void fr_ggml_encode_row_weighted(fr_ggml_qtype type, const float *x, int64_t n,
                                               const float *qw, uint8_t *out)
{
    const unsigned bb = fr_ggml_block_bytes(type);
    const int64_t block = fr_ggml_block_elems(type);
    const float sigma2 = qw && fr_ggml_legacy_weighted(type) ? fr_ggml_row_sigma2(x, n) : 0.0f;
    for (int64_t b = 0; b * block < n; b++) {
        int64_t left = n - b * block;
        fr_ggml_encode_block_in_row(type, x + b * block, (int)(left < block ? left : block),
                                    qw ? qw + b * block : NULL, sigma2, out + b * bb);
    }
}

static inline void fr_ggml_encode_row(fr_ggml_qtype type, const float *x, int64_t n, uint8_t *out)
{
    fr_ggml_encode_row_weighted(type, x, n, NULL, out);
}

static inline void fr_ggml_decode_row(fr_ggml_qtype type, const uint8_t *in, int64_t n, float *y)
{
    const unsigned bb = fr_ggml_block_bytes(type);
    const int64_t block = fr_ggml_block_elems(type);
    float tmp[FR_GGML_MAX_BLOCK];
    for (int64_t b = 0; b * block < n; b++) {
        int64_t left = n - b * block;
        fr_ggml_decode_block(type, in + b * bb, tmp);
        memcpy(y + b * block, tmp, (size_t)(left < block ? left : block) * sizeof *y);
    }
}

#endif
