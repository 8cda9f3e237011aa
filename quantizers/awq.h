/*
 * What the CPU reference of `awq-*` (quantizers/awq.c) shares with its GPU
 * path (kernels/awq.cu): the grid of exponents, the per-channel scales of
 * one exponent (computed on the host by both, so they are the same bits),
 * and a form of the CPU search that reports its choice (tests compare the
 * two paths' choices; docs/gpu.md, "AWQ on the GPU").
 */
#ifndef FR_AWQ_H
#define FR_AWQ_H

#include <stdint.h>

#include "frontier/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exponents a = k / FR_AWQ_GRID, k = 0..FR_AWQ_GRID-1. */
#define FR_AWQ_GRID 20

/* Rows per chunk of the output error tr(dW H dW^T) on the CPU (one sgemm
 * per chunk, then a sequential double sum); the CPU emulation of the GPU
 * path uses the same chunks, so there the errors are the CPU's bits. */
#define FR_AWQ_CHUNK_ROWS 64

/* Both paths' message when no exponent gives a finite output error. */
#define FR_AWQ_NO_FINITE_ERROR                                                               \
    "the output error tr(dW H dW^T) is not finite for any scaling exponent"

/* What a search chose: the exponent index (-1 when no error was finite)
 * and the output error tr(dW H dW^T) of every exponent. */
typedef struct fr_awq_choice {
    int alpha;
    double err[FR_AWQ_GRID];
} fr_awq_choice;

/* 1 when the statistics have what awq needs for `cols` inputs (H and mean
 * |x| or mean x^2). */
int fr_awq_calib_ok(const frontier_calib *calib, int64_t cols);

/* m[j] = mean |x_j|, or sqrt(mean x_j^2) when only that is present. */
void fr_awq_act_means(const frontier_calib *calib, int64_t cols, float *m);

/* s[j] = max(m_j^a, 1e-4) / sqrt(max s * min s), a = k / FR_AWQ_GRID
 * (float32, powf). */
void fr_awq_scales(const float *m, int64_t cols, int k, float *s);

/* quantize_cpu of an awq configuration, with its choice written to
 * *choice when that is not NULL. */
int fr_awq_quantize_choice(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                           int64_t cols, const frontier_calib *calib, frontier_call *call,
                           fr_awq_choice *choice);

#ifdef __cplusplus
}
#endif

#endif
