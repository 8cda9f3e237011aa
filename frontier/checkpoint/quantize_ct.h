/*
 * The compressed-tensors layouts frontier writes (docs/quantize.md): which
 * configuration maps to which format (its traits' storage,
 * frontier_config_traits in include/frontier/plugin.h), the tensors one quantized
 * weight becomes (names, dtypes, shapes), and the encoder and decoder
 * between float32 weights and those bytes. The encoder computes codes and
 * scales with the families' own rounding rules (quantizers/<family>_group.h), so
 * what it writes decodes to the registry's quantize-dequantize bit for bit;
 * `frontier quantize` checks that for every tensor before it renames the
 * output into place.
 */
#ifndef FR_QUANTIZE_LAYOUT_H
#define FR_QUANTIZE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/registry.h"
#include "frontier/model/ct_source.h" /* fr_ct_kind, the decoder */

typedef struct fr_ct_scheme {
    fr_ct_kind kind;
    int bits;            /* PACK: 2..8; NVFP4, MXFP4 4; FP8 8 */
    int group_size;      /* PACK: 32..256, or 0 for one group per row ("channel") */
    int symmetric;       /* PACK */
    int fp8_granularity; /* FP8: enum frontier_fp8_scope (include/frontier/plugin.h) */
} fr_ct_scheme;

/* The layout of a registered configuration, from its traits' storage:
 * FR_CT_NONE (and *s zeroed) for a configuration that declares none. */
fr_ct_kind fr_ct_scheme_of(const fr_registry *reg, const fr_config_ref *ref, fr_ct_scheme *s);

/* Whether two schemes are the same QuantizationArgs (one config group). */
int fr_ct_scheme_equal(const fr_ct_scheme *a, const fr_ct_scheme *b);

#define FR_CT_MAX_PARTS 4

/* One tensor a quantized weight becomes: "<module>.<suffix>". */
typedef struct fr_ct_part {
    const char *suffix; /* "weight_packed", "weight_scale", ... (static) */
    const char *dtype;  /* safetensors dtype name (static) */
    int ndim;
    int64_t shape[3];   /* 3: an expert stack's part [E, ...] (frontier/checkpoint/quantize.c) */
    uint64_t nbytes;
} fr_ct_part;

/* The dtype of int group scales for a model whose weights are model_dtype:
 * F32 for F32 weights (the model dtype, holding the fp16 scale exactly),
 * F16 otherwise (BF16 cannot hold an fp16 scale). */
fr_dtype fr_ct_pack_scale_dtype(fr_dtype model_dtype);

/* The parts of a rows x cols weight; returns how many (0 and a message in
 * err when the shape has no layout: NVFP4 and MXFP4 need whole groups of
 * 16 and 32 columns, pack-quantized groups whole groups). */
size_t fr_ct_parts(const fr_ct_scheme *s, int64_t rows, int64_t cols, fr_dtype model_dtype,
                   fr_ct_part parts[FR_CT_MAX_PARTS], fr_error *err);

/* The scales and zero points a configuration chose for one weight
 * (frontier_config_traits.storage_scales), row-major [rows x groups];
 * zero NULL when symmetric. */
typedef struct fr_ct_scales {
    const float *scale;
    const float *zero;
} fr_ct_scales;

/* Encodes a rows x cols float32 weight into the parts' buffers
 * (bufs[i] holds parts[i].nbytes). global_scale: NVFP4's divisor gs, or
 * NAN for the tensor's own fr_nvfp4_global_scale(amax). own: PACK's
 * scales as the configuration chose them, or NULL for the storage's own
 * rule; a scale the scale dtype cannot hold exactly is FR_E_USAGE. A
 * non-finite weight is FR_E_FORMAT naming its row and column. */
fr_status fr_ct_encode(const fr_ct_scheme *s, const float *w, int64_t rows, int64_t cols,
                       fr_dtype model_dtype, float global_scale, const fr_ct_scales *own,
                       uint8_t *const *bufs, fr_error *err);

/* Decodes the parts' bytes back to float32 (what a runtime dequantizes
 * to, computed in float32: fr_ct_decode_rows, the decoder a
 * compressed-tensors source is read with); FR_E_FORMAT for bytes no
 * encoder writes. */
fr_status fr_ct_decode(const fr_ct_scheme *s, const uint8_t *const *bufs, int64_t rows,
                       int64_t cols, fr_dtype model_dtype, float *out, fr_error *err);

/* float32 -> F32 / F16 / BF16 little-endian bytes, round to nearest even
 * (F16 saturates at 65504, as frontier's fp16 scales do). */
void fr_store_f32_as(fr_dtype dtype, const float *x, size_t n, uint8_t *out);

/* The largest magnitude of a tensor's float32 elements (non-finite
 * elements are not counted; the encoder rejects them). */
float fr_ct_amax(const float *w, int64_t n);

#endif
