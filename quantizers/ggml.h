/*
 * What the `ggml` family (quantizers/ggml.c) shares with `ggml_imat`
 * (quantizers/ggml_imat.c): the row driver over a configuration's blocks
 * and the exact size.
 */
#ifndef FR_GGML_H
#define FR_GGML_H

#include <stdint.h>

#include "frontier/plugin.h"
#include "ggml_blocks.h"

/* Q(W) = decode(encode(W)) block by block for configuration cfg of q with
 * the block type p; qw: one importance per column (the imatrix) or NULL.
 * A block with a non-finite weight is refused, as every family does. */
int fr_ggml_quantize_rows(const frontier_quantizer *q, const frontier_config *cfg,
                          const fr_ggml_params *p, const float *w, float *w_hat, int64_t rows,
                          int64_t cols, const float *qw, frontier_call *call);

/* Whole blocks per row (a short last one counted fully) times their bytes. */
int fr_ggml_block_size_bits(const frontier_quantizer *q, const frontier_config *cfg,
                            const fr_ggml_params *p, int64_t rows, int64_t cols,
                            uint64_t *total_bits, frontier_call *call);

#endif
