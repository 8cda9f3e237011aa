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

/* The importance of each of the cols columns that `imat-ggml-` weighs by:
 * act_sq_mean, else the Hessian's diagonal, else act_abs_mean^2 (written
 * into scratch[cols]); NULL when calib has none of them. Shared with the
 * GGUF writer, which encodes with the same importance. */
const float *fr_ggml_importance(const frontier_calib *calib, int64_t cols, float *scratch);

/* Whole blocks per row (a short last one counted fully) times their bytes. */
int fr_ggml_block_size_bits(const frontier_quantizer *q, const frontier_config *cfg,
                            const fr_ggml_params *p, int64_t rows, int64_t cols,
                            uint64_t *total_bits, frontier_call *call);

#endif
