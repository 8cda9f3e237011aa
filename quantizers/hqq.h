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
 * float32 value, for every float b in [1e-8f, FLT_MAX]. Not powf: glibc's
 * powf is not correctly rounded (813240 of the 1297363849 inputs differ by
 * one ulp) and CUDA's is a different approximation (within 4 ulp), so the
 * two would disagree (docs/gpu.md, "hqq- and the power"). The double power
 * rounded once to float32 is the correctly rounded value unless the exact
 * power lies within the double pow's error (glibc 0.52 ulp, CUDA 2 ulp, as
 * their documentation states) of a midpoint between two floats; the 25
 * inputs whose exact power lies within 4 double ulps of a midpoint (an
 * exhaustive search over every float in [1e-8f, FLT_MAX] against an
 * extended-precision power, docs/gpu.md) are listed below with their
 * correctly rounded values (2 of them are where glibc's double pow rounds to
 * the other float).
 */
FR_HD float fr_hqq_pow(float b)
{
    switch (fr_f32_to_bits(b)) {
    case 0x34f3cb74u: return fr_bits_to_f32(0x429fe9bau); /* 0x1.e796e8p-22 -> 0x1.3fd374p+6 */
    case 0x365929b6u: return fr_bits_to_f32(0x42317159u); /* 0x1.b2536cp-19 -> 0x1.62e2b2p+5 */
    case 0x3c4012bfu: return fr_bits_to_f32(0x4072ebe7u); /* 0x1.80257ep-7 -> 0x1.e5d7cep+1 */
    case 0x40ae5e6du: return fr_bits_to_f32(0x3f19effcu); /* 0x1.5cbcdap+2 -> 0x1.33dff8p-1 */
    case 0x489acb63u: return fr_bits_to_f32(0x3cb74231u); /* 0x1.3596c6p+18 -> 0x1.6e8462p-6 */
    case 0x489d8ce5u: return fr_bits_to_f32(0x3cb64a7bu); /* 0x1.3b19cap+18 -> 0x1.6c94f6p-6 */
    case 0x4c2fda85u: return fr_bits_to_f32(0x3ba49121u); /* 0x1.5fb50ap+25 -> 0x1.492242p-8 */
    case 0x4c97c429u: return fr_bits_to_f32(0x3b8bb5aau); /* 0x1.2f8852p+26 -> 0x1.176b54p-8 */
    case 0x50e876a6u: return fr_bits_to_f32(0x3a3a5551u); /* 0x1.d0ed4cp+34 -> 0x1.74aaa2p-11 */
    case 0x572128ddu: return fr_bits_to_f32(0x385ee817u); /* 0x1.4251bap+47 -> 0x1.bdd02ep-15 */
    case 0x5744cd4eu: return fr_bits_to_f32(0x3851f01du); /* 0x1.899a9cp+47 -> 0x1.a3e03ap-15 */
    case 0x57a629a1u: return fr_bits_to_f32(0x38336749u); /* 0x1.4c5342p+48 -> 0x1.66ce92p-15 */
    case 0x5a1f5906u: return fr_bits_to_f32(0x37807612u); /* 0x1.3eb20cp+53 -> 0x1.00ec24p-16 */
    case 0x5a7d1711u: return fr_bits_to_f32(0x375fa060u); /* 0x1.fa2e22p+53 -> 0x1.bf40cp-17 */
    case 0x5dd7270du: return fr_bits_to_f32(0x365b1164u); /* 0x1.ae4e1ap+60 -> 0x1.b622c8p-19 */
    case 0x5eec0af5u: return fr_bits_to_f32(0x360c917eu); /* 0x1.d815eap+62 -> 0x1.1922fcp-19 */
    case 0x633df602u: return fr_bits_to_f32(0x34b8b631u); /* 0x1.7bec04p+71 -> 0x1.716c62p-22 */
    case 0x6971e926u: return fr_bits_to_f32(0x32e2ad88u); /* 0x1.e3d24cp+83 -> 0x1.c55b1p-26 */
    case 0x699f25dbu: return fr_bits_to_f32(0x32d0c3afu); /* 0x1.3e4bb6p+84 -> 0x1.a1875ep-26 */
    case 0x6f051c21u: return fr_bits_to_f32(0x3132e7e5u); /* 0x1.0a3842p+95 -> 0x1.65cfcap-29 */
    case 0x72e6b8b4u: return fr_bits_to_f32(0x300d887du); /* 0x1.cd7168p+102 -> 0x1.1b10fap-31 */
    case 0x78c869ddu: return fr_bits_to_f32(0x2e42d02fu); /* 0x1.90d3bap+114 -> 0x1.85a05ep-35 */
    case 0x7a63031eu: return fr_bits_to_f32(0x2dc92238u); /* 0x1.c6063cp+117 -> 0x1.92447p-36 */
    case 0x7a92ea3du: return fr_bits_to_f32(0x2dba273du); /* 0x1.25d47ap+118 -> 0x1.744e7ap-36 */
    case 0x7b719c14u: return fr_bits_to_f32(0x2d823da8u); /* 0x1.e33828p+119 -> 0x1.047b5p-36 */
    default:
        break;
    }
    return (float)pow((double)b, (double)(FR_HQQ_P - 1.0f));
}

#endif
