/*
 * fp8 e4m3/e5m2 with tensor, channel (row) or 128 x 128 block scales: the
 * kernel spec of each configuration (from the CPU reference's own
 * parameters) and the family's descriptor functions quantize_cuda /
 * sweep_cuda. The device rule is fp8.cuh.
 */
#include "kquant.cuh"
#include "quantizers/fp8_group.h"

int fr_kspec_fp8(const frontier_config *cfg, fr_kspec *out)
{
    const fr_fp8_params *p = (const fr_fp8_params *)cfg->impl;
    if (!p)
        return 0;
    out->mbits = (int8_t)p->elem.mbits;
    out->emin = (int8_t)p->elem.emin;
    out->q = p->elem.max;
    switch (p->granularity) {
    case FR_FP8_TENSOR: out->variant = FR_KV_FP8_TENSOR; break;
    case FR_FP8_CHANNEL: out->variant = FR_KV_FP8_ROW; break;
    case FR_FP8_BLOCK128: out->variant = FR_KV_FP8_TILE; break;
    default: return 0;
    }
    return 1;
}

FR_KFAMILY(FP8, fp8)
