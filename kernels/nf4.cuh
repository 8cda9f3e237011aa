/*
 * NormalFloat-4 on the device (quantizers/nf4.c is the reference): the
 * block absmax from the group bounds, or for -dq the double-quantized a'
 * computed by the pre-pass (engine.cu, fr_knf4_dq), elements through
 * nf4_block.h.
 */
#ifndef FR_KNF4_CUH
#define FR_KNF4_CUH

#include "kstats.cuh"
#include "quantizers/nf4_block.h"

__device__ __forceinline__ void fr_knf4_8(const fr_kspec &s, const fr_klane &L,
                                          const float (&x)[FR_K_PER_LANE],
                                          float (&h)[FR_K_PER_LANE])
{
    float absmax;
    if (s.kind == FR_K_NF4_DQ) {
        absmax = L.col < L.cols ? L.nf4_scale[L.row * L.segs_per_row + (L.col >> 6)] : 0.0f;
    } else {
        float lo, hi;
        fr_kbounds(s, L, lo, hi);
        absmax = fr_kamax(lo, hi);
    }
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_nf4_dequant(x[e], absmax);
}

#endif
