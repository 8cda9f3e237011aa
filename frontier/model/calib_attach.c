/* The statistics of one weight (calib_attach.h): the sweep's rules. */
#include "frontier/model/calib_attach.h"

#include <stdio.h>

#include "core/imatrix.h"
#include "core/log.h"

int fr_calib_has_lm_head(const fr_tensor *tensors, size_t n)
{
    int has = 0;
    for (size_t t = 0; t < n; t++)
        has |= tensors[t].cls == FR_CLASS_LM_HEAD;
    return has;
}

fr_status fr_calib_lookup_weight(fr_calib_file *cf, const fr_tensor *t, int64_t cols,
                                 int has_lm_head, int quiet, fr_calib_stats *out,
                                 const char **matched, fr_error *err)
{
    fr_status st;
    if (matched)
        *matched = t->name;
    if ((st = fr_calib_lookup(cf, t->name, cols, out, err)) != FR_OK)
        return st;
    if (!out->found && !has_lm_head && t->cls == FR_CLASS_EMBED) {
        char reason[FR_CALIB_REASON_MAX];
        snprintf(reason, sizeof reason, "%s", out->skip_reason);
        if ((st = fr_calib_lookup(cf, "lm_head.weight", cols, out, err)) != FR_OK)
            return st;
        if (out->found) {
            if (matched)
                *matched = "lm_head.weight";
            if (!quiet)
                fr_info("'%s' is tied to the output layer: it takes the statistics of 'lm_head'",
                    t->name);
        } else {
            snprintf(out->skip_reason, sizeof out->skip_reason, "%s", reason);
        }
    }
    return FR_OK;
}

fr_status fr_calib_lookup_expert_weight(fr_calib_file *cf, const fr_tensor *t, int64_t expert,
                                        int64_t n_experts, int64_t cols, int quiet,
                                        fr_calib_stats *out, fr_error *err)
{
    fr_status st = fr_calib_lookup_expert(cf, t->name, cols, expert, n_experts, out, err);
    if (st == FR_OK && out->found && out->fallback && !quiet)
        fr_warn("'%s': module '%s', expert %lld received no calibration tokens: it takes the "
                "%s of the other experts' statistics",
                fr_calib_path(cf), out->module, (long long)expert,
                fr_calib_is_imatrix(cf) == FR_IMATRIX_DAT
                    ? "mean (a legacy .dat records no token counts)"
                    : "token-weighted mean");
    return st;
}
