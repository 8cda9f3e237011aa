/*
 * NormalFloat-4 (docs/formats.md, "NormalFloat"; QLoRA, Dettmers et al.
 * 2023): blocks of 64 with an fp32 absmax, optionally double-quantized to
 * int8 in groups of 256 blocks around the mean absmax. Shared by the CPU
 * reference (nf4.c) and the CUDA kernels.
 */
#ifndef FR_NF4_BLOCK_H
#define FR_NF4_BLOCK_H

#include "numerics.h"

#define FR_NF4_BLOCK 64
#define FR_NF4_DQ_GROUP 256 /* blocks per second-level int8 group */

/* frontier_config.impl of the nf4 configurations. */
typedef struct fr_nf4_params {
    int double_quant; /* nf4-g64-dq */
} fr_nf4_params;

/* x^ = code(nearest(x / a)) * a; a zero absmax gives 0. */
FR_HD float fr_nf4_dequant(float x, float a)
{
    if (a == 0.0f)
        return 0.0f;
    return fr_nf4_code(fr_nf4_nearest(x / a)) * a;
}

/* Second-level step of one group of 256 blocks: c = fp32(max|a - m| / 127). */
FR_HD float fr_nf4_dq_step(float max_dev)
{
    return max_dev / 127.0f;
}

/*
 * The block scale after double quantization, a' = k * c + m with
 * k = clamp(rint((a - m) / c), -127, 127). When c == 0 every a - m of the
 * group is 0 (or too small to matter), and k = 0 gives a' = m.
 */
FR_HD float fr_nf4_dq_absmax(float a, float m, float c)
{
    float k = 0.0f;
    if (c != 0.0f) {
        k = rintf((a - m) / c);
        k = k < -127.0f ? -127.0f : (k > 127.0f ? 127.0f : k);
    }
    return k * c + m;
}

#endif
