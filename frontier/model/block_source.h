/*
 * Models whose weights were released quantized (docs/quantized-sources.md):
 * a GGUF tensor stored in one of llama.cpp's block types is one logical
 * weight, W = its blocks decoded exactly as ggml's dequantize_row_* does
 * (quantizers/ggml_blocks.h, the decoders the ggml family and the GGUF
 * writer use). core/ knows the blocks' geometry only; this unit attaches
 * the decoder (fr_source.decode_blocks) and says which types it reads.
 */
#ifndef FR_BLOCK_SOURCE_H
#define FR_BLOCK_SOURCE_H

#include "core/error.h"
#include "core/source.h"

/* fr_source_open, then fr_block_source_attach and fr_ct_source_attach
 * (frontier/model/ct_source.h, a compressed-tensors checkpoint's weights
 * folded): what every command that measures, writes or lists a MODEL
 * opens it with. */
fr_status fr_block_source_open(const char *path, fr_source **out, fr_error *err);

/* Makes src's tensors in a decoded block type readable (skip_reason
 * cleared, src->decode_blocks set) and words the reason of the block
 * types it does not decode. Other tensors are left as they are. */
void fr_block_source_attach(fr_source *src);

/* The block types read: "Q4_0, Q4_1, ..." (a static string). */
const char *fr_block_source_types(void);

#endif
