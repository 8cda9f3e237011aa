/*
 * FP8 E4M3 / E5M2 with fp32 scales on the device (quantizers/fp8.c is the
 * reference): the scale from the tensor, row or 128 x 128 tile amax, the
 * elements through fp8_group.h.
 */
#ifndef FR_KFP8_CUH
#define FR_KFP8_CUH

#include "kstats.cuh"
#include "quantizers/fp8_group.h"

__device__ __forceinline__ void fr_kfp8_8(const fr_kspec &s, float2 kc, const fr_klane &L,
                                          const float (&x)[FR_K_PER_LANE],
                                          float (&h)[FR_K_PER_LANE])
{
    float scale = kc.x; /* FR_KS_TENSOR */
    if (s.scope == FR_KS_ROW) {
        scale = fr_fp8_scale(fr_kamax(L.row_lohi[2 * L.row], L.row_lohi[2 * L.row + 1]), s.fmax);
    } else if (s.scope == FR_KS_TILE) {
        /* lanes past the row end hold zeros and have no tile of their own */
        float amax = L.col < L.cols
                         ? L.tile_amax[(L.row >> 7) * L.tiles_per_row + (L.col >> 7)]
                         : 0.0f;
        scale = fr_fp8_scale(amax, s.fmax);
    }
    const fr_minifloat f = fr_kelem_format(s);
#pragma unroll
    for (int e = 0; e < FR_K_PER_LANE; e++)
        h[e] = fr_fp8_dequant(x[e], scale, f);
}

#endif
