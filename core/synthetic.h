/*
 * Synthetic weight tensors for studies and benchmarks
 * (`frontier sweep --synthetic gaussian:4096x4096,student-t3:4096x14336`).
 *
 * Element i of tensor k (its 0-based position in the spec) is a function of
 * the four Philox4x32-10 words of (seed, k, i) only (core/philox.h), computed
 * here by FR_HD code with +, -, *, / and sqrtf alone: the logarithm and the
 * sine/cosine below are portable polynomials, not libm calls, so the CPU and
 * a CUDA kernel built with -fmad=false produce bitwise-identical tensors.
 * docs/synthetic.md states every step.
 */
#ifndef FR_SYNTHETIC_H
#define FR_SYNTHETIC_H

#include <math.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "hd.h"
#include "parallel.h"
#include "philox.h"
#include "source.h"

typedef enum fr_synthetic_dist {
    FR_SYN_GAUSSIAN = 0, /* N(0, 0.02^2) */
    FR_SYN_LAPLACE,      /* Laplace with std 0.02 */
    FR_SYN_STUDENT_T3,   /* Student's t, 3 degrees of freedom, scaled to std 0.02 */
    FR_SYN_OUTLIERS,     /* gaussian with one element in 1024 multiplied by 16 */
    FR_SYN_COUNT
} fr_synthetic_dist;

/* Standard deviation of every distribution (the outliers' bulk): 0.02 is
 * the initializer_range of Llama/Mistral configs, a typical weight scale. */
#define FR_SYN_STD 0.02f

/* Uniform in (0, 1], exact: ((w >> 8) + 1) * 2^-24. Never 0, so log is finite. */
FR_HD float fr_syn_uniform(uint32_t w)
{
    return (float)((w >> 8) + 1u) * 5.9604644775390625e-8f; /* 2^-24 */
}

/*
 * Natural logarithm of a positive normal float. x = m * 2^e with m in
 * [sqrt(1/2), sqrt(2)) (exact bit manipulation); log m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^11 (next term
 * < 2e-9 relative); e * ln 2 in two parts (Cody-Waite) so it adds no error.
 */
FR_HD float fr_syn_log(float x)
{
    uint32_t u = fr_f32_to_bits(x);
    int e = (int)(u >> 23) - 127;
    float m = fr_bits_to_f32((u & 0x007fffffu) | 0x3f800000u);
    if (m > 1.41421356f) {
        m = m * 0.5f;
        e = e + 1;
    }
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 0.0909090909f;          /* 1/11 */
    p = p * s2 + 0.111111111f;        /* 1/9 */
    p = p * s2 + 0.142857143f;        /* 1/7 */
    p = p * s2 + 0.2f;                /* 1/5 */
    p = p * s2 + 0.333333333f;        /* 1/3 */
    p = p * s2 + 1.0f;
    float log_m = (s + s) * p;
    float fe = (float)e;
    /* ln 2 = 0.693145751953125 (15 significant bits: e * hi is exact)
     *      + 1.4286068203094172e-6 */
    return fe * 0.693145751953125f + (log_m + fe * 1.42860682e-6f);
}

/*
 * sin and cos of the angle 2 pi n / 2^24, n in [1, 2^24] (the integer of a
 * uniform). The quadrant q comes from n exactly; the remainder r = n - q 2^22
 * lies in [-2^21, 2^21], so the reduced angle x = r * (2 pi / 2^24) has
 * |x| <= pi/4 with one rounding; Taylor polynomials to x^9 (sin) and x^10
 * (cos) are then accurate to a few 1e-10.
 */
FR_HD void fr_syn_sincos_turn(uint32_t n, float *sin_out, float *cos_out)
{
    uint32_t quarter = (n + (1u << 21)) >> 22; /* nearest multiple of 2^22, 0..4 */
    uint32_t q = quarter & 3u;
    int32_t r = (int32_t)n - (int32_t)(quarter << 22);
    float x = (float)r * 3.74507028e-7f; /* 2 pi / 2^24 */
    float x2 = x * x;
    float sp = 2.75573192e-6f;           /* 1/9! */
    sp = sp * x2 - 1.98412698e-4f;       /* 1/7! */
    sp = sp * x2 + 8.33333333e-3f;       /* 1/5! */
    sp = sp * x2 - 0.166666667f;         /* 1/3! */
    float sin_x = x + x * x2 * sp;
    float cp = -2.75573192e-7f;          /* 1/10! */
    cp = cp * x2 + 2.48015873e-5f;       /* 1/8! */
    cp = cp * x2 - 1.38888889e-3f;       /* 1/6! */
    cp = cp * x2 + 4.16666667e-2f;       /* 1/4! */
    cp = cp * x2 - 0.5f;
    float cos_x = 1.0f + x2 * cp;
    switch (q) {
    case 0: *sin_out = sin_x; *cos_out = cos_x; break;
    case 1: *sin_out = cos_x; *cos_out = -sin_x; break;
    case 2: *sin_out = -sin_x; *cos_out = -cos_x; break;
    default: *sin_out = -cos_x; *cos_out = sin_x; break;
    }
}

/* Box-Muller: two independent N(0, 1) from two words. The radius uses
 * u = uniform(wr) in (0, 1]; the angle 2 pi uniform(wa). */
FR_HD void fr_syn_box_muller(uint32_t wr, uint32_t wa, float *z0, float *z1)
{
    float radius = sqrtf(-2.0f * fr_syn_log(fr_syn_uniform(wr)));
    float s, c;
    fr_syn_sincos_turn((wa >> 8) + 1u, &s, &c);
    *z0 = radius * c;
    *z1 = radius * s;
}

/* The value of one element from its four Philox words, in float32. */
FR_HD float fr_synthetic_value(int dist, fr_philox_words w)
{
    float z0, z1, z2, z3;
    switch (dist) {
    case FR_SYN_LAPLACE: {
        /* Laplace(b) has variance 2 b^2: b = 0.02 / sqrt(2). An exponential
         * magnitude -log(u) with the sign from the top bit of w1. */
        float magnitude = -fr_syn_log(fr_syn_uniform(w.w[0])) * 0.0141421356f;
        return (w.w[1] & 0x80000000u) ? -magnitude : magnitude;
    }
    case FR_SYN_STUDENT_T3: {
        /* t3 = z0 / sqrt(chi2_3 / 3) with chi2_3 = z1^2 + z2^2 + z3^2; its
         * variance is 3, so scale by 0.02 / sqrt(3). A zero denominator
         * (probability < 2^-40) gives 0 instead of 0/0. */
        fr_syn_box_muller(w.w[0], w.w[1], &z0, &z1);
        fr_syn_box_muller(w.w[2], w.w[3], &z2, &z3);
        float chi2 = z1 * z1 + z2 * z2 + z3 * z3;
        if (!(chi2 > 0.0f))
            return 0.0f;
        return z0 / sqrtf(chi2 / 3.0f) * 0.0115470054f;
    }
    case FR_SYN_OUTLIERS:
        fr_syn_box_muller(w.w[0], w.w[1], &z0, &z1);
        /* one element in 1024 (w3's low 10 bits zero) is 16x larger: the
         * outlier features of LLM weights that break per-tensor scales */
        return (w.w[3] & 1023u) == 0 ? FR_SYN_STD * z0 * 16.0f : FR_SYN_STD * z0;
    default:
        fr_syn_box_muller(w.w[0], w.w[1], &z0, &z1);
        return FR_SYN_STD * z0;
    }
}

/* Rounds a generated value to the tensor's storage dtype (nearest even),
 * as a checkpoint stored in that dtype would hold it. */
FR_HD float fr_synthetic_round(float v, int dtype)
{
    if (dtype == FR_DTYPE_BF16) {
        uint32_t u = fr_f32_to_bits(v);
        u += 0x7fffu + ((u >> 16) & 1u);
        return fr_bits_to_f32(u & 0xffff0000u);
    }
    if (dtype == FR_DTYPE_F16) {
        /* values here are far below the fp16 range limit (65504) */
        float a = fabsf(v);
        if (a == 0.0f)
            return v;
        uint32_t u = fr_f32_to_bits(a);
        int e = (int)(u >> 23) - 127;
        if (e < -14)
            e = -14; /* fp16 subnormals: a fixed quantum of 2^-24 */
        /* a * 2^(10 - e) is exact; rintf is the IEEE round to nearest even */
        float r = rintf(a * fr_bits_to_f32((uint32_t)(127 + 10 - e) << 23)) *
                  fr_bits_to_f32((uint32_t)(127 + e - 10) << 23);
        return v < 0.0f ? -r : r;
    }
    return v;
}

/* Element `index` of tensor `tensor` (its position in the spec). */
FR_HD float fr_synthetic_element(int dist, int dtype, uint64_t seed, uint64_t tensor,
                                  uint64_t index)
{
    return fr_synthetic_round(fr_synthetic_value(dist, fr_philox_element(seed, tensor, index)),
                              dtype);
}

/* ---- host side: synthetic sources ---- */

const char *fr_synthetic_dist_name(int dist);

/*
 * Parses `DIST:D0xD1[x...][:DTYPE][*COUNT],...` (DIST gaussian, laplace,
 * student-t3, outliers; DTYPE f32 (default), bf16, f16; COUNT repeats the
 * entry) into a source of FR_SOURCE_SYNTHETIC tensors named
 * synthetic.<k>.<dist>; fr_tensor_load_f32 generates them (through the
 * source's generate_f32 hook). A bad spec is FR_E_USAGE naming the entry.
 */
fr_status fr_synthetic_open(const char *spec, uint64_t seed, fr_source **out, fr_error *err);
/* The same as fr_source_close (the source carries its own hooks). */
void fr_synthetic_close(fr_source *src);

/* What an executor needs to generate tensor t of a synthetic source. */
typedef struct fr_synthetic_params {
    int dist;          /* fr_synthetic_dist */
    int dtype;         /* fr_dtype: FR_DTYPE_F32, BF16 or F16 */
    uint64_t seed;
    uint64_t tensor;   /* k: the tensor's position in the spec */
} fr_synthetic_params;

fr_status fr_synthetic_params_of(const fr_source *src, const fr_tensor *t,
                                 fr_synthetic_params *out, fr_error *err);

/* Generates the whole tensor into dst[numel] (float32), on the pool's threads. */
fr_status fr_synthetic_load(const fr_source *src, const fr_tensor *t, float *dst, fr_pool *pool,
                            fr_error *err);

/* Generates elements [begin, begin + n) into dst[n]: the same values as
 * fr_synthetic_load's at those positions (a row block, --max-memory). */
fr_status fr_synthetic_load_range(const fr_source *src, const fr_tensor *t, int64_t begin,
                                  int64_t n, float *dst, fr_pool *pool, fr_error *err);

#endif
