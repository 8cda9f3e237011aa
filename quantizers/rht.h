/*
 * Random Hadamard rotation (docs/formats.md, `rht+<config>`): the rotation
 * shared by rht (around the data-free configurations) and rht_gptq (around
 * GPTQ, whose Hessian rotates with the weights).
 *
 * R = B D: D = diag(d), d_j = +-1 from the recorded seed (bit 0 of word
 * j % 4 of Philox4x32-10 at counter j / 4, key = seed); B is block-diagonal
 * over the row split greedily into powers of two (cols = 4096: one block;
 * 172 = 128 + 32 + 8 + 4), each block the Walsh-Hadamard transform (the
 * butterfly in float32, pairs (i, i + h) for h = 1, 2, 4, ...) times
 * 1/sqrtf(n) in float32. A row x becomes R x; the inverse is D B (B is
 * symmetric and orthonormal). The rotation costs no bits.
 */
#ifndef FR_RHT_H
#define FR_RHT_H

#include <stdint.h>

#include "frontier/plugin.h"
#include "wrap.h"

#define FR_RHT_SEED 1u

/* x <- R x (inverse = 0) or x <- R^T x (inverse = 1) for one row. */
void fr_rht_row(float *x, int64_t cols, const float *signs, int inverse);

/* The sign vector d of `cols` entries. */
void fr_rht_signs(float *signs, int64_t cols, uint64_t seed);

/* quantize_cpu of an rht+ configuration: rotate, the base's quantize_cpu
 * (with H' = R H R^T and diag(H') when calib has H), rotate back. */
int fr_rht_quantize(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                    float *w_hat, int64_t rows, int64_t cols, const frontier_calib *calib,
                    frontier_call *call);

#endif
