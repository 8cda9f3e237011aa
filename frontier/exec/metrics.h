/*
 * Error metrics of one (tensor, configuration) (docs/formats.md, "Error
 * metrics"): sums accumulated in double in a fixed order, then rel_err,
 * sqnr_db, max_abs_err and cosine derived from them.
 */
#ifndef FR_METRICS_H
#define FR_METRICS_H

#include <stdint.h>

#include "core/error.h"
#include "core/error_sums.h"
#include "core/parallel.h"
#include "frontier/plugin.h"

/* Elements per partial sum. Chunk k covers [k * 65536, (k + 1) * 65536);
 * the partials are added in chunk order, so the sums do not depend on the
 * thread count. The CUDA reduction uses the same chunking. */
#define FR_METRICS_CHUNK FR_ERROR_SUMS_CHUNK

typedef struct fr_metrics {
    double rel_err;     /* ||W - Q(W)||_F / ||W||_F */
    double sqnr_db;     /* -20 log10(rel_err); +inf when rel_err is 0 */
    double max_abs_err; /* max |W - Q(W)| */
    double cosine;      /* <W, Q(W)> / (||W|| ||Q(W)||) */
} fr_metrics;

/* All sums zero: the neutral element of fr_error_sums_add. */
void fr_error_sums_init(frontier_error_sums *sums);

/* out += more (max for max_abs_err). */
void fr_error_sums_add(frontier_error_sums *out, const frontier_error_sums *more);

/*
 * Adds the sums of n elements (w - w_hat, w^2, w_hat^2, w * w_hat in double;
 * max |w - w_hat|) to *out, in parallel on pool (NULL: serial). Deterministic:
 * every chunk of FR_METRICS_CHUNK elements is summed in element order and
 * the chunk sums are added in chunk order. Fails only when the partial sums
 * cannot be allocated (FR_E_NOMEM).
 */
fr_status fr_error_sums_accumulate(const float *w, const float *w_hat, int64_t n, fr_pool *pool,
                                   frontier_error_sums *out, fr_error *err);

/*
 * The output error terms of docs/formats.md ("Error metrics"): tr(D H D^T)
 * for D = w - w_hat (or D = w when w_hat is NULL: the reference term
 * tr(W H W^T)), w and w_hat rows x cols float32, H the cols x cols input
 * second moment of the calibration statistics. Rows are taken in fixed
 * chunks of FR_OUTPUT_ROWS: each chunk's D H is one float32 GEMM (OpenBLAS;
 * the caller keeps BLAS single-threaded, frontier's pool runs the chunks in
 * parallel), its trace against D is summed in double, and the chunks are
 * added in order, so the result does not depend on the thread count.
 * out_rel_err = sqrt(out_sq_err / out_sq_ref). FR_E_NOMEM when scratch
 * cannot be had.
 */
#define FR_OUTPUT_ROWS 64
fr_status fr_output_error_term(const float *w, const float *w_hat, int64_t rows, int64_t cols,
                               const float *hessian, fr_pool *pool, double *out, fr_error *err);
/* The same, adding each chunk's term to *out in chunk order instead of
 * starting from 0: called on consecutive row blocks whose row counts are
 * multiples of FR_OUTPUT_ROWS (the last one aside), it gives the whole
 * matrix's term bit for bit (--max-memory row blocks). */
fr_status fr_output_error_accumulate(const float *w, const float *w_hat, int64_t rows,
                                     int64_t cols, const float *hessian, fr_pool *pool,
                                     double *out, fr_error *err);

/*
 * The same terms with only the diagonal of H (--diagonal-output-error, for
 * statistics without a Hessian: an importance matrix, capture.py
 * --diag-only): sum_ij diag_j D_ij^2, D_ij = w_ij - w_hat_ij rounded to
 * float32 as above (D = w when w_hat is NULL), diag the cols entries of
 * act_sq_mean. Each chunk of FR_OUTPUT_ROWS rows is summed in double in
 * element order and the chunks are added to *out in order, so the result
 * does not depend on the thread count, and consecutive row blocks (row
 * counts multiples of FR_OUTPUT_ROWS, the last aside) give the whole
 * matrix's term bit for bit. Cannot fail but for memory (FR_E_NOMEM).
 */
fr_status fr_output_error_diag_accumulate(const float *w, const float *w_hat, int64_t rows,
                                          int64_t cols, const float *diag, fr_pool *pool,
                                          double *out, fr_error *err);

/*
 * The metrics of docs/formats.md from the sums:
 *  rel_err = sqrt(sq_err / sq_ref); 0 when both are 0 (all-zero W and Q(W));
 *            +inf when W is all zero but Q(W) is not.
 *  sqnr_db = -20 log10(rel_err): +inf when rel_err is 0, -inf when it is +inf.
 *  cosine  = dot / sqrt(sq_ref * sq_hat) (two square roots where the
 *            product would overflow or underflow), clamped to [-1, 1]; when
 *            Q(W) is all zero: 1 if W is too, else 0; when only W is all
 *            zero: 0.
 */
void fr_metrics_from_sums(const frontier_error_sums *sums, fr_metrics *m);

#endif
