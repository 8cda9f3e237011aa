/*
 * The fast forms the kernels use (quantizers/numerics.h, "Fast forms", and
 * the *_quot / *_fast helpers of int_group.h, fp8_group.h, nvfp4_group.h,
 * mx_block.h, nf4_block.h) against the definitions, on the CPU:
 *
 * - fr_round_minifloat_fast == fr_round_minifloat bit for bit, for every
 *   float32 whose exponent lies within [emin - mbits - 3, emax + 2] of each
 *   format (E4M3, E5M2, E3M2, E2M3, E2M1, fp16), both signs, and every
 *   4099th float32 elsewhere (tiny, huge);
 * - each quotient form, with the kernels' fallback to the definition for
 *   elements flagged near, == the definition, on random groups (scales from
 *   the definitions' own scale rules) and adversarial inputs: x = (k + 1/2) s
 *   and its neighbours +-1..8 ulps, every midpoint of the element grid times
 *   s and its neighbours, scales in the fp16 subnormal range, saturation,
 *   zero scales, tiny and huge fp32 scales (non-finite reciprocals). Every
 *   element that the fast form did not flag must equal the definition: a
 *   flagged one proves nothing, so the test also checks that flags are rare.
 *   The reciprocal r is moved by -1, 0, +1 ulp in turn: the GPU's is only
 *   within one ulp of 1/s.
 *
 * - ggml's MXFP4 exponent: the device's floor of log2 against log2f's on
 *   every float where they could differ (check_ggml_log2).
 *
 * FRONTIER_FAST_EXACT_N (default 10000000) sets the random elements per
 * family; the whole test takes about a minute on one core.
 * FRONTIER_FAST_EXACT_STRIDE (default 1) samples every k-th mantissa of the
 * exhaustive minifloat check instead (the sanitizer build sets 97).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a broken fast form fails on millions of elements: the first few say enough */
#define FR_TEST_MAX_PRINTED 30
#include "check.h"
#include "quantizers/fp8_group.h"
#include "quantizers/ggml_blocks.h"
#include "quantizers/int_group.h"
#include "quantizers/mx_block.h"
#include "quantizers/nf4_block.h"
#include "quantizers/nvfp4_group.h"

static uint32_t bits(float f)
{
    return fr_f32_to_bits(f);
}

/* equal values, +0 and -0 alike (the parity rule of docs/gpu.md) */
static int same(float a, float b)
{
    return a == b || bits(a) == bits(b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    /* xorshift64* (Vigna 2016) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static float uniform(void)
{
    return (float)((next_u64() >> 40) * 0x1p-24); /* [0, 1) */
}

/* heavy-ish tailed values around 0 with a random magnitude */
static float rand_weight(float scale)
{
    float u = uniform() * 2.0f - 1.0f;
    float v = uniform();
    return scale * u * (v < 0.02f ? 8.0f : 1.0f);
}

static float nudge(float x, int ulps)
{
    for (; ulps > 0; ulps--)
        x = nextafterf(x, INFINITY);
    for (; ulps < 0; ulps++)
        x = nextafterf(x, -INFINITY);
    return x;
}

/*
 * The reciprocal the fast forms get: fr_quot_recip's, moved by -1, 0 or +1
 * ulp in turn, because the GPU's is the hardware's approximate reciprocal
 * (within one ulp), not the correctly rounded one the CPU computes.
 */
static unsigned recip_turn;

static float recip_any(float r)
{
    const int d = (int)(recip_turn++ % 3) - 1;
    if (r == 0.0f || !isfinite(r))
        return r;
    return nudge(r, d);
}

/* ---- minifloat rounding ---- */

typedef struct fmt {
    const char *name;
    fr_minifloat f;
} fmt;

static const fmt formats[] = {
    {"E4M3", FR_FMT_E4M3_INIT}, {"E5M2", FR_FMT_E5M2_INIT}, {"E3M2", FR_FMT_E3M2_INIT},
    {"E2M3", FR_FMT_E2M3_INIT}, {"E2M1", FR_FMT_E2M1_INIT}, {"FP16", FR_FMT_FP16_INIT},
};

static void check_minifloat_exhaustive(uint32_t stride)
{
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
        const fr_minifloat f = formats[k].f;
        const int emax = (int)((bits(f.max) >> 23) & 0xff) - 127;
        const uint32_t e_lo = (uint32_t)(f.emin - f.mbits - 3 + 127);
        const uint32_t e_hi = (uint32_t)(emax + 2 + 127);
        long bad = 0, n = 0;
        for (uint32_t e = e_lo; e <= e_hi; e++) {
            for (uint32_t m = 0; m < (1u << 23); m += stride) {
                const float x = fr_bits_to_f32((e << 23) | m);
                const float want = fr_round_minifloat(x, f.mbits, f.emin, f.max);
                const float got = fr_round_minifloat_fast(x, f.mbits, f.emin, f.max);
                const float want_n = fr_round_minifloat(-x, f.mbits, f.emin, f.max);
                const float got_n = fr_round_minifloat_fast(-x, f.mbits, f.emin, f.max);
                n += 2;
                if (bits(want) != bits(got) || bits(want_n) != bits(got_n)) {
                    if (bad++ < 5)
                        CHECK_MSG(0, "%s: %a -> %a, fast %a", formats[k].name, x, want, got);
                }
            }
        }
        /* everything else: every 4099th float32, both signs, and the zeros */
        for (uint64_t u = 0; u < 0x7f800000ull; u += 4099) {
            const float x = fr_bits_to_f32((uint32_t)u);
            for (int sgn = 0; sgn < 2; sgn++) {
                const float xs = sgn ? -x : x;
                const float want = fr_round_minifloat(xs, f.mbits, f.emin, f.max);
                const float got = fr_round_minifloat_fast(xs, f.mbits, f.emin, f.max);
                n++;
                if (bits(want) != bits(got) && bad++ < 5)
                    CHECK_MSG(0, "%s: %a -> %a, fast %a", formats[k].name, xs, want, got);
            }
        }
        const float top = fr_bits_to_f32(0x7f7fffffu);
        CHECK_MSG(bits(fr_round_minifloat_fast(top, f.mbits, f.emin, f.max)) == bits(f.max),
                  "%s: FLT_MAX does not saturate", formats[k].name);
        CHECK_MSG(bits(fr_round_minifloat_fast(-0.0f, f.mbits, f.emin, f.max)) == bits(-0.0f),
                  "%s: -0 loses its sign", formats[k].name);
        if (bad)
            fr_test_failures += bad;
        printf("minifloat %s: %ld values, %ld differ\n", formats[k].name, n, bad);
    }
}

/* ---- quotient forms ---- */

typedef struct tally {
    const char *name;
    long n, near, bad;
} tally;

static void tally_one(tally *t, int near, int equal, float x, float s, float want, float got)
{
    t->n++;
    t->near += near != 0;
    if (!near && !equal) {
        if (t->bad++ < 5)
            CHECK_MSG(0, "%s: x %a s %a: definition %a, fast %a", t->name, x, s, want, got);
    }
}

static void tally_report(const tally *t, double max_near_rate)
{
    double rate = t->n ? (double)t->near / (double)t->n : 0.0;
    printf("%-10s %10ld elements, %8ld near (%.2e), %ld differ\n", t->name, t->n, t->near, rate,
           t->bad);
    fr_test_failures += t->bad;
    CHECK_MSG(rate <= max_near_rate, "%s: %.3e of the elements are near (more than %.1e)", t->name,
              rate, max_near_rate);
}

/* int sym/asym as the kernels do it: the limit from the group's amax */
static void int_case(tally *t, float x, float amax, float s, float qmax)
{
    const float r = recip_any(fr_quot_recip(s));
    int near = 0;
    float q = fr_rint_quot(x, r, fr_int_quot_limit(amax, r), &near);
    q = q < -qmax ? -qmax : (q > qmax ? qmax : q);
    const float want = fr_int_sym_dequant(x, s, qmax);
    const float got = q * s;
    tally_one(t, near, same(want, got), x, s, want, got);
    CHECK_MSG(same(fr_int_sym_code(x, s, qmax) * s, want), "sym code %a %a", x, s);
}

static void int_asym_case(tally *t, float x, float amax, float s, float z, float levels)
{
    const float r = recip_any(fr_quot_recip(s));
    int near = 0;
    float q = fr_rint_quot(x, r, fr_int_quot_limit(amax, r), &near);
    q = q < -z ? -z : (q > levels - z ? levels - z : q); /* clamp(t + z, 0, L) - z */
    const float want = fr_int_asym_dequant(x, s, z, levels);
    const float got = q * s;
    tally_one(t, near, same(want, got), x, s, want, got);
    CHECK_MSG(same(fr_int_asym_code(x, s, z, levels) * s, want), "asym code %a %a", x, s);
}

static void check_int(long n_random)
{
    tally sym = {"int-sym", 0, 0, 0}, asym = {"int-asym", 0, 0, 0};
    tally adv = {"int-adv", 0, 0, 0}, scales = {"int-scale", 0, 0, 0};
    float x[256];
    for (long done = 0; done < n_random;) {
        const int bits_ = 2 + (int)(next_u64() % 7);
        const float qmax = fr_int_sym_qmax(bits_), levels = fr_int_asym_levels(bits_);
        /* group magnitudes from 1e-9 (fp16 subnormal and zero scales) to 1e6 */
        const float mag = powf(10.0f, -9.0f + 15.0f * uniform());
        const int g = 32 << (next_u64() % 4);
        float lo = 0.0f, hi = 0.0f;
        for (int i = 0; i < g; i++) {
            x[i] = rand_weight(mag);
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        const float amax = -lo > hi ? -lo : hi;
        const int tensor = next_u64() % 8 == 0; /* fp32 scale, no fp16 rounding */
        const float s = tensor ? amax / qmax : fr_int_sym_scale(amax, qmax);
        CHECK_MSG(tensor || bits(s) == bits(fr_int_sym_scale_fast(amax, qmax)), "sym scale %a", amax);
        const float sa = tensor ? (hi - lo) / levels : fr_int_asym_scale(lo, hi, levels);
        CHECK_MSG(tensor || bits(sa) == bits(fr_int_asym_scale_fast(lo, hi, levels)), "asym scale");
        /* the kernels' scale: fp16(amax / qmax) as a quotient form */
        int near_s = 0;
        const float sq_ = fr_round_minifloat_quot(amax, recip_any(fr_quot_recip(qmax)), 10, -14,
                                                  65504.0f, &near_s);
        tally_one(&scales, near_s, same(sq_, fr_int_sym_scale(amax, qmax)), amax, qmax,
                  fr_int_sym_scale(amax, qmax), sq_);
        near_s = 0;
        const float saq = fr_round_minifloat_quot(hi - lo, recip_any(fr_quot_recip(levels)), 10,
                                                  -14, 65504.0f, &near_s);
        tally_one(&scales, near_s, same(saq, fr_int_asym_scale(lo, hi, levels)), hi - lo, levels,
                  fr_int_asym_scale(lo, hi, levels), saq);
        const float z = fr_int_asym_zero(lo, sa, levels);
        for (int i = 0; i < g; i++) {
            int_case(&sym, x[i], amax, s, qmax);
            int_asym_case(&asym, x[i], amax, sa, z, levels);
        }
        done += g;
    }
    /* adversarial: half-integers of fp16 and fp32 scales and their neighbours */
    for (int trial = 0; trial < 20000; trial++) {
        const int bits_ = 2 + trial % 7;
        const float qmax = fr_int_sym_qmax(bits_);
        float s;
        switch (trial % 5) {
        case 0: /* fp16 normal */
            s = fr_round_fp16(powf(2.0f, -14.0f + 28.0f * uniform()) * (1.0f + uniform()));
            break;
        case 1: /* fp16 subnormal */
            s = fr_round_fp16(powf(2.0f, -25.0f + 11.0f * uniform()));
            break;
        case 2: /* fp32 with a full mantissa (tensor scales) */
            s = powf(2.0f, -60.0f + 120.0f * uniform()) * (1.0f + uniform());
            break;
        case 3: /* fp32 subnormal or tiny: the reciprocal overflows */
            s = fr_bits_to_f32((uint32_t)(next_u64() % 0x01000000u));
            break;
        default: /* huge: the reciprocal is subnormal */
            s = fr_bits_to_f32(0x7e000000u + (uint32_t)(next_u64() % 0x017fffffu));
            break;
        }
        const float amax_k = qmax + 1.0f;
        for (int k = -(int)qmax - 1; k <= (int)qmax; k++) {
            const float h = ((float)k + 0.5f) * s; /* (k + 1/2) s, rounded */
            if (!isfinite(h))
                continue;
            const float amax = fabsf(amax_k * s) < 3e38f ? amax_k * s : 3e38f;
            for (int d = -8; d <= 8; d++) {
                const float xv = nudge(h, d);
                if (!isfinite(xv) || fabsf(xv) > amax)
                    continue;
                int_case(&adv, xv, amax, s, qmax);
                int_asym_case(&adv, xv, amax, s, (float)(trial % 3), fr_int_asym_levels(bits_));
            }
        }
    }
    /* zero scale */
    int_case(&adv, 0.0f, 0.0f, 0.0f, 7.0f);
    int_asym_case(&adv, 0.0f, 0.0f, 0.0f, 0.0f, 15.0f);
    tally_report(&sym, 1e-3);
    tally_report(&asym, 1e-3);
    tally_report(&scales, 1e-2);
    tally_report(&adv, 1.0);
}

static void fp8_case(tally *t, float x, float s, fr_minifloat f)
{
    int near = 0;
    const float got = fr_fp8_dequant_quot(x, s, recip_any(fr_quot_recip(s)), f, &near);
    const float want = fr_fp8_dequant(x, s, f);
    tally_one(t, near, same(want, got), x, s, want, got);
}

static void check_fp8(long n_random)
{
    tally rnd = {"fp8", 0, 0, 0}, adv = {"fp8-adv", 0, 0, 0};
    for (long i = 0; i < n_random; i += 256) {
        const fr_minifloat f = (i / 256) % 2 ? FR_FMT_E5M2 : FR_FMT_E4M3;
        const float mag = powf(10.0f, -30.0f + 60.0f * uniform());
        float x[256], amax = 0.0f;
        for (int k = 0; k < 256; k++) {
            x[k] = rand_weight(mag);
            amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
        }
        const float s = fr_fp8_scale(amax, f.max);
        for (int k = 0; k < 256; k++)
            fp8_case(&rnd, x[k], s, f);
    }
    /* every midpoint of each grid (and grid value) times s, and neighbours */
    for (int trial = 0; trial < 400; trial++) {
        const fr_minifloat f = trial % 2 ? FR_FMT_E5M2 : FR_FMT_E4M3;
        float s;
        if (trial % 4 < 2)
            s = powf(2.0f, -40.0f + 80.0f * uniform()) * (1.0f + uniform());
        else if (trial % 4 == 2)
            s = fr_bits_to_f32((uint32_t)(next_u64() % 0x01000000u)); /* tiny */
        else
            s = fr_bits_to_f32(0x7e800000u + (uint32_t)(next_u64() % 0x00ffffffu)); /* huge */
        /* walk the grid: each value v and the midpoint to the next one */
        float v = 0.0f;
        for (;;) {
            int e = v > 0.0f ? fr_floor_log2f(v) : f.emin;
            e = e < f.emin ? f.emin : e;
            const float next = v + fr_pow2f(e - f.mbits);
            const float pts[2] = {v, v < f.max ? (v + next) * 0.5f : v * 1.25f};
            for (int p = 0; p < 2; p++) {
                const float base = pts[p] * s;
                if (!isfinite(base))
                    continue;
                for (int d = -8; d <= 8; d++) {
                    const float xv = nudge(base, d);
                    if (!isfinite(xv))
                        continue;
                    fp8_case(&adv, xv, s, f);
                    fp8_case(&adv, -xv, s, f);
                }
            }
            if (v >= f.max)
                break;
            v = next;
        }
    }
    fp8_case(&adv, 1.0f, 0.0f, FR_FMT_E4M3);
    tally_report(&rnd, 1e-3);
    tally_report(&adv, 1.0);
}

static void nvfp4_case(tally *t, float x, float s, float gs)
{
    float r, d1, d15;
    int near = 0;
    fr_nvfp4_group_quot(s, gs, &r, &d1, &d15);
    r = recip_any(r);
    const float got = fr_nvfp4_dequant_quot(x, gs, r, d1, d15, &near);
    const float want = fr_nvfp4_dequant(x, s, gs);
    tally_one(t, near, same(want, got), x, s, want, got);
}

static void check_nvfp4(long n_random)
{
    tally rnd = {"nvfp4", 0, 0, 0}, adv = {"nvfp4-adv", 0, 0, 0};
    static const float e2m1[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (long i = 0; i < n_random; i += 4096) {
        /* a "tensor" of 256 groups of 16 with one amax */
        const float mag = powf(10.0f, -30.0f + 60.0f * uniform());
        static float x[4096];
        float amax_t = 0.0f;
        for (int k = 0; k < 4096; k++) {
            x[k] = rand_weight(mag) * (k % 16 == 0 ? 1.0f : uniform());
            amax_t = fabsf(x[k]) > amax_t ? fabsf(x[k]) : amax_t;
        }
        const float gs = fr_nvfp4_global_scale(amax_t);
        for (int g = 0; g < 256; g++) {
            float amax = 0.0f;
            for (int k = 0; k < 16; k++)
                amax = fabsf(x[16 * g + k]) > amax ? fabsf(x[16 * g + k]) : amax;
            const float s = fr_nvfp4_group_scale(amax, gs);
            CHECK_MSG(bits(s) == bits(fr_nvfp4_group_scale_fast(amax, gs)), "nvfp4 scale %a", amax);
            for (int k = 0; k < 16; k++)
                nvfp4_case(&rnd, x[16 * g + k], s, gs);
        }
    }
    /* x with x * gs / s at every E2M1 value and midpoint, and neighbours;
     * e4m3 scales over their whole range, including subnormals */
    for (int trial = 0; trial < 3000; trial++) {
        const float gs = trial % 7 == 0 ? 3.4028235e38f
                                        : powf(2.0f, -60.0f + 120.0f * uniform()) * (1.0f + uniform());
        const float s = fr_round_e4m3(448.0f * uniform() * (trial % 3 ? 1.0f : 0.01f));
        for (int j = 0; j < 8; j++) {
            const float pts[2] = {e2m1[j], j < 7 ? (e2m1[j] + e2m1[j + 1]) * 0.5f : 7.0f};
            for (int p = 0; p < 2; p++) {
                const float base = pts[p] * s / gs;
                if (!isfinite(base) || base == 0.0f)
                    continue;
                for (int d = -8; d <= 8; d++) {
                    nvfp4_case(&adv, nudge(base, d), s, gs);
                    nvfp4_case(&adv, -nudge(base, d), s, gs);
                }
            }
        }
    }
    nvfp4_case(&adv, 1.0f, 0.0f, 2.0f);
    tally_report(&rnd, 1e-3);
    tally_report(&adv, 1.0);
}

static void check_mx(long n_random)
{
    tally rnd = {"mx", 0, 0, 0};
    const fr_minifloat elems[] = {FR_FMT_E4M3, FR_FMT_E5M2, FR_FMT_E3M2, FR_FMT_E2M3, FR_FMT_E2M1};
    const int emax[] = {8, 15, 4, 2, 2};
    for (long i = 0; i < n_random; i += 32) {
        const int k = (int)((i / 32) % 6);
        const int is_int8 = k == 5;
        const fr_minifloat f = is_int8 ? elems[0] : elems[k];
        const int em = is_int8 ? 0 : emax[k];
        const float mag = powf(2.0f, -140.0f + 265.0f * uniform());
        float x[32], amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            x[j] = rand_weight(mag);
            if (!isfinite(x[j]))
                x[j] = 1.0f;
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        }
        const int e = fr_mx_scale_exp(amax, em);
        const float scale = fr_pow2f(e), inv = fr_pow2f(-e);
        for (int j = 0; j < 32; j++) {
            const float want = fr_mx_dequant(x[j], scale, is_int8, f);
            const float got = fr_mx_dequant_fast(x[j], scale, inv, is_int8, f);
            tally_one(&rnd, 0, same(want, got), x[j], scale, want, got);
        }
    }
    tally_report(&rnd, 0.0);
}

static fr_nf4_bucket nf4_table[FR_NF4_BUCKETS];

static void nf4_case(tally *t, float x, float a)
{
    int near = 0;
    const float got = fr_nf4_dequant_quot(x, a, recip_any(fr_quot_recip(a)), nf4_table, &near);
    const float want = fr_nf4_dequant(x, a);
    tally_one(t, near, same(want, got), x, a, want, got);
}

static void check_nf4(long n_random)
{
    tally rnd = {"nf4", 0, 0, 0}, adv = {"nf4-adv", 0, 0, 0};
    const float codes[16] = FR_NF4_CODES;
    for (int k = 0; k < FR_NF4_BUCKETS; k++)
        nf4_table[k] = fr_nf4_bucket_make(k);
    for (long i = 0; i < n_random; i += 64) {
        const float mag = powf(10.0f, -35.0f + 70.0f * uniform());
        float x[64], amax = 0.0f;
        for (int j = 0; j < 64; j++) {
            x[j] = rand_weight(mag);
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        }
        /* -dq: a' a little off the block absmax, either way */
        const float a = (i / 64) % 2 ? amax : amax * (0.97f + 0.06f * uniform());
        for (int j = 0; j < 64; j++)
            nf4_case(&rnd, x[j], a);
    }
    /* x / a at each code midpoint (and code), with neighbours */
    for (int trial = 0; trial < 20000; trial++) {
        float a;
        if (trial % 3 == 0)
            a = fr_bits_to_f32((uint32_t)(next_u64() % 0x00800000u) + 1u); /* subnormal */
        else
            a = powf(2.0f, -120.0f + 240.0f * uniform()) * (1.0f + uniform());
        for (int j = 0; j < 16; j++) {
            const float pts[2] = {codes[j], j < 15 ? (codes[j] + codes[j + 1]) * 0.5f : 1.5f};
            for (int p = 0; p < 2; p++) {
                const float base = pts[p] * a;
                if (!isfinite(base))
                    continue;
                for (int d = -8; d <= 8; d++)
                    nf4_case(&adv, nudge(base, d), a);
            }
        }
    }
    /* bucket edges: x / a at -1 + k/64 and its neighbours */
    for (int k = 0; k <= FR_NF4_BUCKETS; k++)
        for (int d = -8; d <= 8; d++) {
            nf4_case(&adv, nudge(-1.0f + (float)k / 64.0f, d), 1.0f);
            nf4_case(&adv, nudge((-1.0f + (float)k / 64.0f) * 3.0f, d), 3.0f);
        }
    nf4_case(&adv, 0.0f, 0.0f);
    nf4_case(&adv, 1.0f, 0.0f);
    nf4_case(&adv, 5.0f, 1.0f); /* -dq: a' below the block amax */
    nf4_case(&adv, -5.0f, 1.0f);
    tally_report(&rnd, 1e-3);
    tally_report(&adv, 1.0);
}

/*
 * ggml's MXFP4 exponent floorf(log2f(amax)) (quantizers/ggml_blocks.h,
 * fr_ggml_floor_log2f): the device's form, the double log2 rounded to
 * float, against the host's log2f on every float where the two could
 * differ: the top 2^16 mantissas of every binade (m >= 2 - 2^-7; below,
 * 1 - log2 m > 0.0056, hundreds of ulps of the largest result, so no
 * rounding moves the floor) and every subnormal. The device's double log2
 * is within 1 ulp of double: the result nudged by 2 ulps of double either
 * way must keep its floor too, so the device's rounding is the host's.
 */
static void check_ggml_log2(void)
{
    long n = 0, bad = 0;
    for (uint32_t e = 0; e < 255; e++) {
        const uint32_t from = e == 0 ? 1u : (1u << 23) - (1u << 16);
        for (uint32_t m = from; m < (1u << 23); m++) {
            const float a = fr_bits_to_f32(e << 23 | m);
            const double l = log2((double)a);
            const float want = floorf(log2f(a));
            const float lo = floorf((float)nextafter(nextafter(l, -INFINITY), -INFINITY));
            const float hi = floorf((float)nextafter(nextafter(l, INFINITY), INFINITY));
            n++;
            if (floorf((float)l) != want || lo != want || hi != want) {
                if (bad++ < 5)
                    printf("floor(log2(%a)): log2f %g, double %g (%g, %g nudged)\n", (double)a,
                           (double)want, (double)floorf((float)l), (double)lo, (double)hi);
            }
        }
    }
    printf("ggml mxfp4 exponent: %ld floats, %ld where the device's floor of log2 could differ "
           "from log2f's\n", n, bad);
    CHECK_MSG(bad == 0, "fr_ggml_floor_log2f: %ld floats", bad);
}

int main(void)
{
    long n = 10000000;
    const char *env = getenv("FRONTIER_FAST_EXACT_N");
    if (env && atol(env) > 0)
        n = atol(env);
    check_int(n);
    check_fp8(n);
    check_nvfp4(n);
    check_mx(n);
    check_nf4(n);
    check_ggml_log2();
    /* FRONTIER_FAST_EXACT_STRIDE: every k-th mantissa instead of all (the
     * sanitizer build, where the exhaustive sweep takes minutes and proves
     * nothing the normal build's does not) */
    uint32_t stride = 1;
    const char *st = getenv("FRONTIER_FAST_EXACT_STRIDE");
    if (st && atol(st) > 0)
        stride = (uint32_t)atol(st);
    check_minifloat_exhaustive(stride);
    return fr_test_finish("test_fast_exact");
}
