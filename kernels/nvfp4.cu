/*
 * nvfp4: E2M1 in groups of 16, E4M3 group scales, fp32 global scale: the
 * kernel spec of each configuration (from the CPU reference's own
 * parameters) and the family's descriptor functions quantize_cuda /
 * sweep_cuda. The device rule is nvfp4.cuh.
 */
#include "kquant.cuh"
#include "quantizers/nvfp4_group.h"

int fr_kspec_nvfp4(const frontier_config *cfg, fr_kspec *out)
{
    (void)cfg; /* one configuration, no parameters (impl is NULL) */
    out->variant = FR_KV_NVFP4;
    out->level = 0; /* FR_NVFP4_GROUP = 16 */
    return 1;
}

FR_KFAMILY(NVFP4, nvfp4)
