/*
 * AWQ on the device (kernels/awq.cu; the search of quantizers/awq.c,
 * docs/calibration.md "AWQ", docs/gpu.md "AWQ on the GPU"): the 20
 * per-channel scale vectors from the host (quantizers/awq.h, the CPU's own
 * function), one kernel for the scaled rounding W^ = Q(W diag s) / s of
 * every group and, with the chosen s, the per-group clipping search
 * against the group's own block of H (a tiled product over the pairs
 * (row, shrink) of each column block, every sum the CPU's sequential
 * double sum); the output error of each exponent with cuBLAS
 * (kernels/outerr.h, FP32). C interface, no CUDA types. In the CPU
 * emulation (tests/gpu/emu) the output errors are OpenBLAS's in the CPU's
 * 64-row chunks and sequential sum, so there every result is the CPU's.
 */
#ifndef FR_KERNELS_AWQ_H
#define FR_KERNELS_AWQ_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"
#include "frontier/plugin.h"
#include "quantizers/awq.h"
#include "quantizers/int_group.h"

/*
 * w_hat (device float32, rows x cols) = AWQ of the device tensor w (enum
 * frontier_dtype) over the int group/row base p, with the statistics in
 * host memory (H [cols x cols] is uploaded once per call). *choice (may be
 * NULL) gets the exponent chosen and every exponent's output error.
 * Non-finite weights fail with FR_E_USAGE and the CPU's message.
 * Synchronises the stream.
 */
fr_status fr_cuda_awq(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                      const frontier_calib *calib, const fr_int_params *p, void *stream,
                      fr_awq_choice *choice, fr_error *err);
/* The same with H already on the device (h_device: cols x cols, written on
 * the stream; NULL: uploaded from calib->hessian as fr_cuda_awq does). */
fr_status fr_cuda_awq_h(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                        const frontier_calib *calib, const float *h_device,
                        const fr_int_params *p, void *stream, fr_awq_choice *choice,
                        fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
