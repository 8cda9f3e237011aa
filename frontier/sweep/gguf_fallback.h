/*
 * Rows a configuration's GGUF type cannot hold (docs/quantize.md, "GGUF"):
 * a configuration whose traits name a GGUF type (gguf_type) is measured on
 * a tensor whose rows that type's block does not divide as the type
 * llama-quantize falls back to (quantizers/ggml_blocks.h,
 * fr_ggml_stored_type), which is what `frontier quantize --format gguf`
 * writes. The sweep flags those rows (FR_ROW_GGUF_FALLBACK) and says so
 * once per row length (frontier/sweep/gguf_fallback.c).
 */
#ifndef FR_GGUF_FALLBACK_H
#define FR_GGUF_FALLBACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "frontier/exec/executor.h"

/* The type ("q5_0", llama-quantize's spelling) rows of cols elements are
 * stored as under ref when that is not its own GGUF type; NULL when they
 * are stored as its own, or ref declares none. */
const char *fr_gguf_fallback_type(const fr_config_ref *ref, int64_t cols);

/* One info line per row length on which some of the items' configurations
 * fall back: how many tensors, one of them, and which configurations are
 * stored as which type. */
void fr_gguf_fallback_report(const fr_sweep_item *items, size_t n_items);

#endif
