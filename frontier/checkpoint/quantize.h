/*
 * frontier quantize: writes a recipe (one configuration per tensor) or one
 * configuration as a checkpoint a runtime loads (docs/quantize.md):
 * dequantized safetensors (Q(W) in the input's dtype) or compressed-tensors
 * (nvfp4-pack-quantized, pack-quantized, float-quantized, mxfp4-pack-quantized,
 * mixed-precision).
 *
 * Every refusal (existing output, unknown tensors or configurations, a
 * configuration without a layout in the format, a calibrated configuration
 * without --calib or for a tensor without the statistics it needs) happens
 * before anything is written; the output is built under a temporary name
 * beside OUT and renamed into place only when every tensor was written and
 * checked, so a failure half-way leaves no OUT.
 */
#ifndef FR_QUANTIZE_H
#define FR_QUANTIZE_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/checkpoint/storable.h"

/* fr_qformat and its names: frontier/checkpoint/storable.h */

/* The default shard limit: what transformers' save_pretrained uses. */
#define FR_QUANTIZE_DEFAULT_SHARD_BYTES 5000000000ull

typedef struct fr_quantize_options {
    const char *model;       /* a .safetensors file or a Hugging Face folder */
    const char *out;
    const char *recipe;      /* recipe JSON path, or NULL */
    const char *config;      /* one configuration for every selected tensor, or NULL */
    const char *include;     /* with config: tensors matched (POSIX ERE), NULL: the default */
    const char *exclude;
    const char *calib;       /* calibration statistics (--calib), or NULL: what the
                              * configurations that need them (gptq-, awq-, imat-,
                              * rht+gptq-) are computed with, looked up as the sweep
                              * does (frontier/model/calib_attach.h) */
    fr_qformat format;
    int force;               /* replace an existing OUT */
    uint64_t max_shard_bytes; /* 0: FR_QUANTIZE_DEFAULT_SHARD_BYTES */
    int fused_global_scale;  /* NVFP4 members of q/k/v and gate/up share one global
                              * scale: 1 on, 0 off, -1 the format's default (on for
                              * compressed-tensors, off for dequantized) */
    FILE *table;             /* per-tensor table (stdout), NULL: none */
} fr_quantize_options;

typedef struct fr_quantize_summary {
    size_t n_quantized, n_copied, n_files_copied, n_shards;
    uint64_t tensor_bytes;   /* data bytes of the written tensors */
    double rel_err;          /* over the quantized tensors: sqrt(sum dW^2 / sum W^2) */
    char report[4096];       /* path of the report JSON */
} fr_quantize_summary;

fr_status fr_quantize(const fr_registry *reg, const fr_quantize_options *opt,
                      fr_quantize_summary *summary, fr_error *err);

#endif
