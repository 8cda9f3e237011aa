/*
 * int2..int8, sym/asym, groups of 32..256, gC (row) and tensor scales: the
 * kernel spec of each configuration (from the CPU reference's own
 * parameters) and the family's descriptor functions quantize_cuda /
 * sweep_cuda. The device rule is int.cuh.
 */
#include "kcommon.cuh"
#include "quantizers/int_group.h"

int fr_kspec_int(const frontier_config *cfg, fr_kspec *out)
{
    const fr_int_params *p = (const fr_int_params *)cfg->impl;
    if (!p || p->bits < 2 || p->bits > 8)
        return 0;
    out->kind = p->symmetric ? FR_K_INT_SYM : FR_K_INT_ASYM;
    out->bits = (int8_t)p->bits;
    out->qmax = p->symmetric ? fr_int_sym_qmax(p->bits) : fr_int_asym_levels(p->bits);
    if (p->granularity == FR_INT_ROW) {
        out->scope = FR_KS_ROW;
    } else if (p->granularity == FR_INT_TENSOR) {
        out->scope = FR_KS_TENSOR;
    } else {
        out->scope = FR_KS_GROUP;
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

FR_KFAMILY(int)
