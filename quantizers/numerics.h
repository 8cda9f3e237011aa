/*
 * The rounding rules of ../docs/formats.md, written once for the CPU
 * reference (quantizers/) and the CUDA kernels (kernels/). Every function is
 * FR_HD: plain C here, __host__ __device__ under nvcc. Arithmetic is float32,
 * left to right as written; builds disable FMA contraction
 * (-ffp-contract=off, nvcc -fmad=false) so both sides round identically.
 * Inputs are finite: NaN and Inf are rejected before quantization.
 */
#ifndef FR_NUMERICS_H
#define FR_NUMERICS_H

#include <math.h>
#include <stdint.h>

#include "../core/dtype.h"
#include "../core/hd.h"

/* 2^k as float32 for k in [-149, 127] (subnormal powers included). */
FR_HD float fr_pow2f(int k)
{
    if (k >= -126)
        return fr_bits_to_f32((uint32_t)(k + 127) << 23);
    return fr_bits_to_f32(1u << (k + 149));
}

/* floor(log2(a)) for finite a > 0, exact (reads the exponent field). */
FR_HD int fr_floor_log2f(float a)
{
    uint32_t u = fr_f32_to_bits(a) & 0x7fffffffu;
    int e = (int)(u >> 23);
    if (e != 0)
        return e - 127;
    /* subnormal: value = man * 2^-149 */
#if defined(__CUDA_ARCH__)
    return 31 - __clz((int)u) - 149; /* the index of the top set bit, without a loop */
#else
    int msb = 31;
    while (msb > 0 && !(u & (1u << msb)))
        msb--;
    return msb - 149;
#endif
}

/*
 * An element format: `mbits` mantissa bits, smallest normal exponent `emin`
 * (= 1 - bias), largest finite magnitude `max`. Subnormals are kept; values
 * past max saturate to +-max (no infinities, no NaN produced).
 */
typedef struct fr_minifloat {
    int mbits;
    int emin;
    float max;
} fr_minifloat;

/* OCP OFP8 / MX v1.0 element formats, IEEE binary16 for fp16 scales. The
 * *_INIT forms are brace initialisers for static tables (a compound literal
 * is not a constant expression in ISO C). */
#define FR_FMT_E4M3_INIT {3, -6, 448.0f}
#define FR_FMT_E5M2_INIT {2, -14, 57344.0f}
#define FR_FMT_E3M2_INIT {2, -2, 28.0f}
#define FR_FMT_E2M3_INIT {3, 0, 7.5f}
#define FR_FMT_E2M1_INIT {1, 0, 6.0f}
#define FR_FMT_FP16_INIT {10, -14, 65504.0f}
#define FR_FMT_E4M3 ((fr_minifloat)FR_FMT_E4M3_INIT)
#define FR_FMT_E5M2 ((fr_minifloat)FR_FMT_E5M2_INIT)
#define FR_FMT_E3M2 ((fr_minifloat)FR_FMT_E3M2_INIT)
#define FR_FMT_E2M3 ((fr_minifloat)FR_FMT_E2M3_INIT)
#define FR_FMT_E2M1 ((fr_minifloat)FR_FMT_E2M1_INIT)
#define FR_FMT_FP16 ((fr_minifloat)FR_FMT_FP16_INIT)

/*
 * Round x to the nearest value of the format, ties to even mantissa,
 * saturating. Exact: scaling by powers of two is exact in float32 for every
 * format above, so rintf on the scaled value is the only rounding.
 */
FR_HD float fr_round_minifloat(float x, int mbits, int emin, float max)
{
    float a = fabsf(x);
    float r;
    if (a == 0.0f)
        return x;
    if (!(a < max)) {
        r = max;
    } else {
        int e = fr_floor_log2f(a);
        if (e < emin)
            e = emin;
        r = rintf(a * fr_pow2f(mbits - e)) * fr_pow2f(e - mbits);
        if (r > max)
            r = max;
    }
    return copysignf(r, x);
}

FR_HD float fr_round_fmt(float x, fr_minifloat f)
{
    return fr_round_minifloat(x, f.mbits, f.emin, f.max);
}

/*
 * ---- Fast forms for the GPU (docs/formats.md, "GPU notes") ----
 *
 * The functions above are the definitions. The *_fast and *_quot forms
 * below return the same bits for every input the quantizers give them
 * (finite x; tests/gpu/test_fast_exact.c checks them exhaustively or on
 * 1e7+ random and adversarial inputs) with fewer device instructions: no
 * loops, no per-element IEEE division.
 */

/*
 * fr_round_minifloat by the add-magic-number trick: for a = |x| in the
 * binade [2^e, 2^(e+1)) (e clamped to [emin, exponent of max]) the grid
 * step is Q = 2^(e - mbits); magic = 2^(e - mbits + 23) has ulp Q on
 * [magic, 2 magic), and a < 2^(e+1) <= magic, so a + magic rounds a to a
 * multiple of Q, ties to even (magic / Q = 2^23 is even), and subtracting
 * magic is exact. a past the top binade: a + magic - magic >= max (the
 * clamp only lowers magic), so it saturates as the definition does. Valid
 * for 1 <= mbits <= 22 and formats whose emin - mbits + 150 > 0 (all of
 * numerics.h's).
 */
FR_HD float fr_minifloat_magic(float x, int mbits, int emin, float max)
{
    const uint32_t lo = (uint32_t)(emin + 127) << 23;
    const uint32_t hi = fr_f32_to_bits(max) & 0x7f800000u;
    uint32_t e = fr_f32_to_bits(x) & 0x7f800000u;
    e = e < lo ? lo : (e > hi ? hi : e);
    return fr_bits_to_f32(e + ((uint32_t)(23 - mbits) << 23));
}

FR_HD float fr_round_minifloat_fast(float x, int mbits, int emin, float max)
{
    const float magic = fr_minifloat_magic(x, mbits, emin, max);
    const float r = (fabsf(x) + magic) - magic;
    return copysignf(fminf(r, max), x);
}

FR_HD float fr_round_fmt_fast(float x, fr_minifloat f)
{
    return fr_round_minifloat_fast(x, f.mbits, f.emin, f.max);
}

/* 2^-21: the margin factor of the quotient forms below. */
#define FR_QUOT_MARGIN 4.76837158203125e-07f

/*
 * The reciprocal that stands in for a division by s in the *_quot forms:
 * r within one ulp (2^-23 relative) of 1/s when s is a normal float of
 * magnitude <= 2^126 (so r is a normal float): fl(1/s) on the CPU, the
 * hardware's approximate reciprocal on the GPU; 0 when s == 0 (every
 * definition maps a zero scale to 0, and x * 0 = 0 rounds to 0 in every
 * format); NaN otherwise, which makes every quotient "near" and sends it
 * to the exact definition.
 */
FR_HD float fr_recip_approx(float s)
{
#if defined(__CUDA_ARCH__)
    /* PTX ISA, rcp.approx.f32: "the maximum ulp error is 1 across the full
     * range of inputs"; normal in, normal out here, so ftz changes nothing */
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
    return r;
#else
    return 1.0f / s;
#endif
}

FR_HD float fr_quot_recip(float s)
{
    const float a = fabsf(s);
    if (s == 0.0f)
        return 0.0f;
    if (a >= 1.17549435e-38f && a <= 8.50705917e+37f) /* 2^-126, 2^126 */
        return fr_recip_approx(s);
    return fr_bits_to_f32(0x7fc00000u);
}

/* The same for an fp16 scale (0 or within [2^-24, 65504]: always in range). */
FR_HD float fr_quot_recip_fp16(float s)
{
    return s == 0.0f ? 0.0f : fr_recip_approx(s);
}

/*
 * round_fmt(fl(x / s)) computed as round_fmt(y), y = fl(x * r), r =
 * fr_quot_recip(s). Sets *near when y lies within a * 2^-21 (a = |y|) of a
 * rounding boundary of the format, and then the result may differ from the
 * definition: the caller must use the exact form for that element.
 *
 * Proof sketch (also in docs/formats.md): r = (1/s)(1 + d1), y = (x/s)(1 +
 * d1)(1 + d2), |d1| <= 2^-23, |d2| <= 2^-24, so |y - x/s| <= 1.5 a 2^-23
 * (1 + 2^-21) (plus 2^-149 when y is subnormal, far below every
 * boundary). round_fmt
 * is a non-decreasing step function of its argument whose only jumps are
 * at midpoints between neighbouring grid values: around y those are
 * rr +- Q/2 (rr = y rounded to the grid of y's binade, Q its step) or,
 * below a binade's first value, 2^e - Q/4, which is further. Every
 * midpoint m is a float, so fl(x/s) can only reach m (a tie) or cross it
 * when |x/s - m| <= ulp(m)/2 <= a * 2^-24 (1 + 2^-20): together at most
 * a * 2^-22 (1 + 2^-20), half of the margin. With Q/2 - |a - rr| >
 * a * 2^-21 (what !near says), x/s and fl(x/s) stay on y's side of every
 * midpoint, strictly: round_fmt(fl(x/s)) = round_fmt(y).
 * The test is computed with one fma, rounded once: fl(v) < Q/2 implies
 * v < Q/2 (Q/2 is a float, rounding is monotonic). Non-finite y (r NaN,
 * or x * r overflowing) always counts as near.
 */
FR_HD float fr_round_minifloat_quot(float x, float r, int mbits, int emin, float max, int *near)
{
    const float y = x * r;
    const float magic = fr_minifloat_magic(y, mbits, emin, max);
    const float a = fabsf(y);
    const float rr = (a + magic) - magic;
    /* Q/2 = magic * 2^-24: an exponent 24 lower (never subnormal here) */
    const float half_q = fr_bits_to_f32(fr_f32_to_bits(magic) - (24u << 23));
    const float v = fmaf(a, FR_QUOT_MARGIN, fabsf(a - rr));
    *near |= !(v < half_q);
    return copysignf(fminf(rr, max), y);
}

FR_HD float fr_round_fmt_quot(float x, float r, fr_minifloat f, int *near)
{
    return fr_round_minifloat_quot(x, r, f.mbits, f.emin, f.max, near);
}

/* fp16 rounding of a scale (saturates at 65504 instead of overflowing to
 * Inf: a decision recorded in docs/formats.md). */
FR_HD float fr_round_fp16(float x)
{
    return fr_round_minifloat(x, 10, -14, 65504.0f);
}

FR_HD float fr_round_e4m3(float x)
{
    return fr_round_minifloat(x, 3, -6, 448.0f);
}

FR_HD float fr_round_e2m1(float x)
{
    return fr_round_minifloat(x, 1, 0, 6.0f);
}

/*
 * MX shared scale exponent (OCP MX v1.0 section 6.3): e = floor(log2(amax))
 * - emax_elem, clamped to [-127, 127]; an all-zero block uses -127. The
 * scale X = 2^e is an E8M0 value; fr_pow2f(e) is exact for that range.
 */
FR_HD int fr_mx_scale_exp(float amax, int emax_elem)
{
    if (!(amax > 0.0f))
        return -127;
    int e = fr_floor_log2f(amax) - emax_elem;
    if (e < -127)
        e = -127;
    if (e > 127)
        e = 127;
    return e;
}

/* MXINT8 element: k/64 with k in -127..127, ties to even. */
FR_HD float fr_round_mxint8(float y)
{
    float k = rintf(y * 64.0f);
    if (k > 127.0f)
        k = 127.0f;
    if (k < -127.0f)
        k = -127.0f;
    return k * 0.015625f;
}

/* NF4 codebook (QLoRA, Dettmers et al. 2023), ascending; the decimals of
 * docs/formats.md parsed to float32. */
#define FR_NF4_CODES                                                             \
    {-1.0f, -0.6961928f, -0.5250731f, -0.3949175f, -0.2844414f, -0.1847734f,     \
     -0.0910500f, 0.0f, 0.0795803f, 0.1609302f, 0.2461123f, 0.3379152f,          \
     0.4407098f, 0.5626170f, 0.7229568f, 1.0f}

/*
 * Index of the nearest NF4 code to y, ties to the smaller code. Only the two
 * codes around y can be nearest: float subtraction is monotonic, and codes
 * further away are further by at least 0.08, far beyond rounding. The table
 * is read at constant indices only (the loops unroll): read at a computed
 * index, nvcc puts it in local memory and rebuilds it on every call.
 */
FR_HD int fr_nf4_nearest(float y)
{
    const float codes[16] = FR_NF4_CODES;
    if (!(y > codes[0]))
        return 0;
    if (!(y < codes[15]))
        return 15;
    int i = 0;                    /* the last code <= y (codes[0] < y here) */
    float code_below = codes[0];  /* codes[i] */
    float code_above = codes[15]; /* codes[i + 1], the first code > y */
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 1; j < 16; j++) {
        if (codes[j] <= y) {
            i = j;
            code_below = codes[j];
        }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 14; j >= 1; j--)
        if (codes[j] > y)
            code_above = codes[j];
    float below = y - code_below;
    float above = code_above - y;
    return above < below ? i + 1 : i;
}

/* codes[index] by a select tree on the index bits: constant reads only (a
 * test `index == j` would let the compiler turn codes[j] back into
 * codes[index]). */
FR_HD float fr_nf4_code(int index)
{
    const float codes[16] = FR_NF4_CODES;
    float pick[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 8; j++)
        pick[j] = (index & 1) ? codes[2 * j + 1] : codes[2 * j];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 4; j++)
        pick[j] = (index & 2) ? pick[2 * j + 1] : pick[2 * j];
    pick[0] = (index & 4) ? pick[1] : pick[0];
    pick[1] = (index & 4) ? pick[3] : pick[2];
    return (index & 8) ? pick[1] : pick[0];
}

#endif
