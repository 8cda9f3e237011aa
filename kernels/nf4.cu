/*
 * nf4-g64 and nf4-g64-dq: the kernel spec of each configuration (from the
 * CPU reference's own parameters) and the family's descriptor functions
 * quantize_cuda / sweep_cuda. The device rule is nf4.cuh.
 */
#include "kquant.cuh"
#include "quantizers/nf4_block.h"

int fr_kspec_nf4(const frontier_config *cfg, fr_kspec *out)
{
    const fr_nf4_params *p = (const fr_nf4_params *)cfg->impl;
    if (!p)
        return 0;
    out->variant = p->double_quant ? FR_KV_NF4_DQ : FR_KV_NF4;
    out->level = 2; /* FR_NF4_BLOCK = 64 */
    return 1;
}

FR_KFAMILY(NF4, nf4)
