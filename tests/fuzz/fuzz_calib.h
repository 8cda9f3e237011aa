/*
 * The body of the calibration-file fuzz targets (fuzz_calib.c,
 * fuzz_imatrix.c): fr_calib_open_memory on the input, then everything a
 * sweep does with the file: the whole-file value check, a lookup of every
 * module (with its own input dimension and a wrong one; each expert of a
 * per-expert module, and another expert count), the unmatched listing,
 * release, close.
 */
#ifndef FR_FUZZ_CALIB_H
#define FR_FUZZ_CALIB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    if (fr_calib_open_memory(data, size, FUZZ_CALIB_NAME, &cf, &err) != FR_OK)
        return 0;
    (void)fr_calib_check_values(cf, &err);
    const char **names = NULL;
    size_t n_names = 0;
    if (fr_calib_unmatched(cf, NULL, 0, &names, &n_names, &err) == FR_OK) {
        volatile float sink = 0;
        for (size_t i = 0; i < n_names && i < 256; i++) {
            char weight[1024];
            snprintf(weight, sizeof weight, "%.1000s.weight", names[i]);
            for (int k = 0; k < 2; k++) {
                fr_calib_stats s;
                int64_t cols = k == 0 ? fr_calib_module_in(cf, names[i]) : 3;
                if (fr_calib_lookup(cf, weight, cols, &s, &err) != FR_OK)
                    continue;
                if (s.found && cols > 0) {
                    if (s.calib.act_mean_sq)
                        sink += s.calib.act_mean_sq[0] + s.calib.act_mean_sq[cols - 1];
                    if (s.calib.act_mean_abs)
                        sink += s.calib.act_mean_abs[cols - 1];
                    if (s.calib.hessian)
                        sink += s.calib.hessian[cols * cols - 1];
                }
                fr_calib_release(cf, &s);
            }
            /* a per-expert module: each expert's view (the zero-token
             * fallback included), and another expert count */
            int64_t n_experts = fr_calib_module_experts(cf, names[i]);
            int64_t in = fr_calib_module_in(cf, names[i]);
            for (int64_t e = 0; n_experts > 0 && e <= n_experts && e < 16; e++) {
                fr_calib_stats s;
                int64_t of = e == n_experts ? n_experts + 1 : n_experts;
                if (fr_calib_lookup_expert(cf, names[i], in, e, of, &s, &err) != FR_OK)
                    continue;
                if (s.found && in > 0) {
                    if (s.calib.act_mean_sq)
                        sink += s.calib.act_mean_sq[in - 1];
                    if (s.calib.hessian)
                        sink += s.calib.hessian[in * in - 1];
                }
            }
        }
        (void)sink;
        const char *weights[] = {"blk.0.attn_q.weight", "model.layers.0.self_attn.k_proj.weight"};
        const char **un = NULL;
        size_t n_un = 0;
        if (fr_calib_unmatched(cf, weights, 2, &un, &n_un, &err) == FR_OK)
            free(un);
    }
    free(names);
    fr_calib_close(cf);
    return 0;
}

#endif
