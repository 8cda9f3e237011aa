/*
 * The column weights of `imat-` (quantizers/imat.c; docs/calibration.md)
 * when the statistics have no `act_sq_mean`: the Hessian's diagonal, else
 * the square of `act_abs_mean`. Shared by the CPU path and the GPU path
 * (kernels/clipsearch.cu), so both weigh the columns alike.
 */
#ifndef FR_QUANTIZERS_IMAT_H
#define FR_QUANTIZERS_IMAT_H

#include <stdint.h>

#include "frontier/plugin.h"

/* Fills out[cols] from calib (calib->cols == cols); 0 when it has neither
 * a Hessian nor act_abs_mean. */
int fr_imat_weights(const frontier_calib *calib, int64_t cols, float *out);

#endif
