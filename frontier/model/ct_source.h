/*
 * compressed-tensors checkpoints as sources (docs/quantized-sources.md,
 * "compressed-tensors"): a weight stored as weight_packed, weight_scale,
 * weight_global_scale, weight_zero_point, weight_g_idx, weight_shape (or a
 * float-quantized FP8 weight and its weight_scale) is one logical tensor
 * "<module>.weight" whose values are the members decoded. Its members are
 * no longer listed. The same decoder serves the compressed-tensors writer
 * (frontier/checkpoint/quantize_ct.c), which checks its bytes with it.
 */
#ifndef FR_CT_SOURCE_H
#define FR_CT_SOURCE_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/source.h"

typedef enum fr_ct_kind {
    FR_CT_NONE = 0,
    FR_CT_NVFP4,  /* nvfp4-pack-quantized */
    FR_CT_PACK,   /* pack-quantized: int2..int8, groups or one per row, sym or asym */
    FR_CT_FP8,    /* float-quantized: fp8, tensor / channel / block scales */
    FR_CT_MXFP4   /* mxfp4-pack-quantized: E2M1, one E8M0 scale (uint8) per 32 of a row */
} fr_ct_kind;

/* "nvfp4-pack-quantized", "pack-quantized", "float-quantized",
 * "mxfp4-pack-quantized"; "dense" for FR_CT_NONE. */
const char *fr_ct_format_name(fr_ct_kind kind);

/* One matrix's members, as bytes in memory, and how to read them. */
typedef struct fr_ct_view {
    fr_ct_kind kind;
    int bits;             /* PACK: 2..8 */
    int64_t rows, cols;   /* the matrix */
    int64_t group;        /* columns per scale (NVFP4 16, MXFP4 32, PACK its group size
                             or cols; FP8: a tile's columns, cols for tensor / channel) */
    int64_t tile_rows;    /* FP8: rows per scale (rows, 1 or the block's rows); else 1 */
    int64_t scale_cols;   /* weight_scale's elements per scale row */
    fr_dtype scale_dtype; /* F8_E4M3, F16, BF16, F32; MXFP4: U8 (E8M0 exponents) */
    fr_dtype elem_dtype;  /* FP8: F8_E4M3 or F8_E5M2 */
    fr_dtype global_dtype;/* NVFP4: weight_global_scale's dtype */
    int per_word;         /* PACK: 0 dense packing (value i at bit i*b, across words), or
                             32/b values a word (compressed-tensors' pack_to_int32 of 2025:
                             value i at word i/(32/b), bit (i%(32/b))*b); the same for
                             2, 4 and 8 bits */
    int zp_packed;        /* PACK asym: 1 zero points packed along dim 0 in int32 words
                             (as weights), 0 one signed element of zp_dtype per (row, group) */
    fr_dtype zp_dtype;
    fr_dtype gidx_dtype;  /* I32 or I64 */
    const uint8_t *packed, *scale, *global, *zero, *gidx; /* NULL when absent */
} fr_ct_view;

/* Decodes rows [r0, r1) of the matrix into out[(r1 - r0) x cols], the
 * writer's arithmetic: NVFP4 E2M1 * s / gs, MXFP4 E2M1 * 2^(e - 127),
 * PACK (q - z) * s, FP8 e * s. FR_E_FORMAT naming the row for a NaN scale,
 * an FP8 NaN code, an E8M0 255, a g_idx outside the groups. */
fr_status fr_ct_decode_rows(const fr_ct_view *v, int64_t r0, int64_t r1, float *out,
                            fr_error *err);

/* Exact float32 of one stored element of dtype (F32, F16, BF16, F8_E4M3,
 * F8_E5M2). */
float fr_load_as_f32(fr_dtype dtype, const uint8_t *p);

/* When src is a compressed-tensors checkpoint (config.json's
 * quantization_config, quant_method "compressed-tensors"), folds every
 * quantized weight's members into one FR_ENC_MEMBERS tensor (source_format,
 * dtype_name, nbytes = all members' bytes) and attaches the decoder; other
 * sources are left as they are. A member missing, a shape or dtype that
 * is not the format's, a config that names no format the members fit:
 * FR_E_FORMAT naming the file and the tensor. */
fr_status fr_ct_source_attach(fr_source *src, fr_error *err);

/* The most members one weight has (weight_packed, weight_scale,
 * weight_global_scale, weight_zero_point, weight_g_idx, weight_shape). */
#define FR_CT_MAX_MEMBERS 6

/* The members of a folded tensor t of src (names and views into the
 * files, in the order above), n_out of them; NULL for any other tensor. */
const fr_tensor *fr_ct_source_members(const fr_source *src, const fr_tensor *t, size_t *n_out);

/* Where a folded tensor t of src comes from: its format and the key of
 * the config group of quantization_config that targets it (NULL when none
 * does). 0 for any other tensor. */
int fr_ct_source_origin(const fr_source *src, const fr_tensor *t, fr_ct_kind *kind,
                        const char **group);

#endif
