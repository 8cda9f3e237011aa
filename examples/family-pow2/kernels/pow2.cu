/*
 * int<b>-g32 with power-of-two scales: the kernel spec of each configuration
 * (from the CPU reference's own parameters) and the family's descriptor
 * functions quantize_cuda / sweep_cuda. The device rule is pow2.cuh.
 */
#include "kquant.cuh"
#include "quantizers/pow2_group.h"

int fr_kspec_pow2(const frontier_config *cfg, fr_kspec *out)
{
    const fr_pow2_params *p = (const fr_pow2_params *)cfg->impl;
    if (!p || p->bits < 2 || p->bits > 8)
        return 0;
    out->variant = FR_KV_POW2;
    out->level = 1; /* FR_POW2_GROUP = 32 = 16 << 1 */
    out->bits = (int8_t)p->bits;
    out->q = fr_pow2_qmax(p->bits);
    return 1;
}

FR_KFAMILY(POW2, pow2)
