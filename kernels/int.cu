/*
 * int2..int8, sym/asym, groups of 32..256, gC (row) and tensor scales: the
 * kernel spec of each configuration (from the CPU reference's own
 * parameters) and the family's descriptor functions quantize_cuda /
 * sweep_cuda. The device rule is int.cuh.
 */
#include "kquant.cuh"
#include "quantizers/int_group.h"

int fr_kspec_int(const frontier_config *cfg, fr_kspec *out)
{
    const fr_int_params *p = (const fr_int_params *)cfg->impl;
    if (!p || p->bits < 2 || p->bits > 8)
        return 0;
    out->bits = (int8_t)p->bits;
    out->q = p->symmetric ? fr_int_sym_qmax(p->bits) : fr_int_asym_levels(p->bits);
    if (p->granularity == FR_INT_ROW) {
        out->variant = p->symmetric ? FR_KV_INT_SYM_ROW : FR_KV_INT_ASYM_ROW;
    } else if (p->granularity == FR_INT_TENSOR) {
        out->variant = p->symmetric ? FR_KV_INT_SYM_TENSOR : FR_KV_INT_ASYM_TENSOR;
    } else {
        out->variant = p->symmetric ? FR_KV_INT_SYM_GROUP : FR_KV_INT_ASYM_GROUP;
        switch (p->group_size) {
        case 32: out->level = 1; break;
        case 64: out->level = 2; break;
        case 128: out->level = 3; break;
        case 256: out->level = 4; break;
        default: return 0;
        }
    }
    return 1;
}

FR_KFAMILY(INT, int)
