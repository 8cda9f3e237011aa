/*
 * The error sums of one (tensor, configuration) as one definition for the
 * CPU metrics (frontier/exec/metrics.c) and the device reduction of a
 * materialised reconstruction (kernels/engine.cu): the same per-element
 * arithmetic in double, the same chunks of FR_ERROR_SUMS_CHUNK elements
 * summed in element order, the partials added in chunk order. Both sides
 * therefore give the same sums bit for bit (docs/formats.md, "Error
 * metrics"; docs/gpu.md, "Reductions").
 */
#ifndef FR_ERROR_SUMS_H
#define FR_ERROR_SUMS_H

#include <math.h>
#include <stdint.h>

#include "frontier/plugin.h"
#include "hd.h"

/* Elements per partial sum: chunk k covers [k * 65536, (k + 1) * 65536). */
#define FR_ERROR_SUMS_CHUNK 65536

/* Chunks of n elements. */
FR_HD int64_t fr_error_sums_chunks(int64_t n)
{
    return n / FR_ERROR_SUMS_CHUNK + (n % FR_ERROR_SUMS_CHUNK != 0);
}

/* The sums of elements [begin, end) of (w, w_hat), in element order; w(i)
 * is the reference element as a double (float -> double is exact, and so
 * is the difference of two floats in double). The caller's loop reads the
 * elements, so the stored dtype stays its business. */
#define FR_ERROR_SUMS_OF_RANGE(out, begin, end, w_of_i, w_hat_of_i)                          \
    do {                                                                                     \
        double fr_se_ = 0.0, fr_sr_ = 0.0, fr_sh_ = 0.0, fr_sd_ = 0.0, fr_me_ = 0.0;         \
        for (int64_t i = (begin); i < (end); i++) {                                          \
            double fr_w_ = (w_of_i), fr_h_ = (w_hat_of_i);                                   \
            double fr_d_ = fr_w_ - fr_h_;                                                    \
            fr_se_ += fr_d_ * fr_d_;                                                         \
            fr_sr_ += fr_w_ * fr_w_;                                                         \
            fr_sh_ += fr_h_ * fr_h_;                                                         \
            fr_sd_ += fr_w_ * fr_h_;                                                         \
            double fr_a_ = fabs(fr_d_);                                                      \
            fr_me_ = fr_a_ > fr_me_ ? fr_a_ : fr_me_;                                        \
        }                                                                                    \
        (out)->sq_err = fr_se_;                                                              \
        (out)->sq_ref = fr_sr_;                                                              \
        (out)->sq_hat = fr_sh_;                                                              \
        (out)->dot = fr_sd_;                                                                 \
        (out)->max_abs_err = fr_me_;                                                         \
    } while (0)

/* out += more, max for max_abs_err: how partials (chunks, row chunks of a
 * streamed tensor) combine, always in a fixed order. */
FR_HD void fr_error_sums_merge(frontier_error_sums *out, const frontier_error_sums *more)
{
    out->sq_err += more->sq_err;
    out->sq_ref += more->sq_ref;
    out->sq_hat += more->sq_hat;
    out->dot += more->dot;
    if (more->max_abs_err > out->max_abs_err)
        out->max_abs_err = more->max_abs_err;
}

#endif
