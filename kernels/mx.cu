/*
 * OCP MX: mxfp8, mxfp6, mxfp4, mxint8 in blocks of 32: the kernel spec of
 * each configuration (from the CPU reference's own parameters) and the
 * family's descriptor functions quantize_cuda / sweep_cuda. The device rule
 * is mx.cuh.
 */
#include "kquant.cuh"
#include "quantizers/mx_block.h"

int fr_kspec_mx(const frontier_config *cfg, fr_kspec *out)
{
    const fr_mx_params *p = (const fr_mx_params *)cfg->impl;
    if (!p)
        return 0;
    out->variant = p->is_int8 ? FR_KV_MXINT8 : FR_KV_MX;
    out->level = 1; /* FR_MX_BLOCK = 32 */
    out->is_int8 = (int8_t)(p->is_int8 != 0);
    out->mbits = (int8_t)p->elem.mbits;
    out->emin = (int8_t)p->elem.emin;
    out->q = p->elem.max;
    out->emax_elem = (int8_t)p->emax_elem;
    return 1;
}

FR_KFAMILY(MX, mx)
