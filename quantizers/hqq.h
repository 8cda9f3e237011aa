/*
 * hqq-'s constants and its one library function (quantizers/hqq.c;
 * docs/calibrated.md), shared by the CPU reference and the GPU path
 * (kernels/hqq.cu) so that both compute the same bits.
 */
#ifndef FR_QUANTIZERS_HQQ_H
#define FR_QUANTIZERS_HQQ_H

#include <math.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/hd.h"

#define FR_HQQ_ITERS 20
#define FR_HQQ_P 0.7f
#define FR_HQQ_BETA 10.0f
#define FR_HQQ_KAPPA 1.01f

/*
 * b^(p - 1) of the shrink, b = |e| + 1e-8 (so b >= 1e-8f), p - 1 = 0.7f - 1
 * = -0.300000011920928955078125 exactly (Sterbenz): the correctly rounded
 * float32 value, for every float b >= 1e-8f. Not powf: glibc's powf is
 * within 0.82 ulp, not correctly rounded, and CUDA's powf within 4 ulp, so
 * they disagree on some inputs (measured: docs/gpu.md, "hqq- and the
 * power"). The double power rounded once to float32 is the correctly rounded
 * value unless the exact power lies within the double pow's error (glibc
 * 0.52 ulp, CUDA 2 ulp, both as documented) of a midpoint between two
 * floats; every input whose exact power lies within 4 double ulps of a
 * midpoint (found by an exhaustive search over all floats in
 * [1e-8f, FLT_MAX] against an extended-precision power) is listed below
 * with its correctly rounded value.
 */
FR_HD float fr_hqq_pow(float b)
{
    switch (fr_f32_to_bits(b)) {
    default:
        break;
    }
    return (float)pow((double)b, (double)(FR_HQQ_P - 1.0f));
}

#endif
