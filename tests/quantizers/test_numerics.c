/*
 * Exhaustive checks of the rounding rules of quantizers/numerics.h against
 * an independent enumeration of each format: every representable value,
 * every midpoint between neighbours (ties to the even code) and the floats
 * just above and below each midpoint, subnormals, saturation past the
 * largest finite value, and the sign of zero. Formats: E4M3, E5M2, E3M2,
 * E2M3, E2M1, fp16 scales, the E8M0 / MX scale exponent, MXINT8, and the
 * NF4 nearest-code search.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "qtest.h"
#include "quantizers/numerics.h"

/*
 * Non-negative finite values of a sign-magnitude format with exp_bits
 * exponent bits and mbits mantissa bits, in code order (so index parity is
 * mantissa parity), decoded from the bit fields, not from fr_minifloat.
 */
static int enumerate(int exp_bits, int mbits, int ieee_specials, int fn_specials, float *out)
{
    int n = 0;
    int bias = (1 << (exp_bits - 1)) - 1;
    int n_codes = 1 << (exp_bits + mbits);
    for (int code = 0; code < n_codes; code++) {
        int e = code >> mbits, m = code & ((1 << mbits) - 1);
        if (ieee_specials && e == (1 << exp_bits) - 1)
            break; /* IEEE-style: the top exponent is Inf/NaN */
        if (fn_specials && code == n_codes - 1)
            break; /* E4M3FN: S.1111.111 is NaN */
        double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                          : ldexp((double)((1 << mbits) + m), e - bias - mbits);
        out[n++] = (float)v;
    }
    return n;
}

static void check_format(const char *name, fr_minifloat f, const float *v, int n)
{
    /* the enumeration and the format description agree on the range */
    CHECK_MSG(v[n - 1] == f.max, "%s: largest enumerated %g != max %g", name, v[n - 1], f.max);
    for (int i = 0; i < n; i++) {
        float r = fr_round_fmt(v[i], f);
        CHECK_MSG(qt_identical(r, v[i]), "%s: %a is representable but rounds to %a", name, v[i], r);
        r = fr_round_fmt(-v[i], f);
        CHECK_MSG(qt_identical(r, -v[i]), "%s: %a is representable but rounds to %a", name, -v[i], r);
        if (i + 1 == n)
            break;
        float lo = v[i], hi = v[i + 1];
        float mid = (lo + hi) * 0.5f; /* exact: both are short binary fractions */
        CHECK_MSG((double)mid == ((double)lo + (double)hi) / 2, "%s: midpoint not exact", name);
        float even = (i % 2 == 0) ? lo : hi;
        CHECK_MSG(qt_same(fr_round_fmt(mid, f), even), "%s: tie %a -> %a, want even %a", name, mid,
                  fr_round_fmt(mid, f), even);
        CHECK_MSG(qt_same(fr_round_fmt(-mid, f), -even), "%s: tie %a", name, -mid);
        float above = nextafterf(mid, INFINITY), below = nextafterf(mid, 0.0f);
        CHECK_MSG(qt_same(fr_round_fmt(above, f), hi), "%s: %a -> %a, want %a", name, above,
                  fr_round_fmt(above, f), hi);
        CHECK_MSG(qt_same(fr_round_fmt(below, f), lo), "%s: %a -> %a, want %a", name, below,
                  fr_round_fmt(below, f), lo);
        CHECK_MSG(qt_same(fr_round_fmt(-above, f), -hi), "%s: %a", name, -above);
        CHECK_MSG(qt_same(fr_round_fmt(-below, f), -lo), "%s: %a", name, -below);
        /* the float neighbours of a representable value stay on it */
        if (i > 0) {
            CHECK_MSG(qt_same(fr_round_fmt(nextafterf(hi, INFINITY), f), hi), "%s: above %a", name, hi);
            CHECK_MSG(qt_same(fr_round_fmt(nextafterf(hi, 0.0f), f), hi), "%s: below %a", name, hi);
        }
    }
    /* saturation: past max (including past the midpoint to the next binade
     * value that does not exist) everything lands on +-max */
    float ulp_top = v[n - 1] - v[n - 2];
    float past[] = {nextafterf(f.max, INFINITY), f.max + ulp_top * 0.5f,
                    nextafterf(f.max + ulp_top * 0.5f, INFINITY), f.max + ulp_top, f.max * 2.0f,
                    1e30f, FLT_MAX};
    for (size_t k = 0; k < sizeof past / sizeof past[0]; k++) {
        CHECK_MSG(fr_round_fmt(past[k], f) == f.max, "%s: %a does not saturate", name, past[k]);
        CHECK_MSG(fr_round_fmt(-past[k], f) == -f.max, "%s: %a does not saturate", name, -past[k]);
    }
    /* signed zero and underflow */
    float min_sub = v[1];
    CHECK_MSG(qt_identical(fr_round_fmt(0.0f, f), 0.0f), "%s: +0", name);
    CHECK_MSG(qt_identical(fr_round_fmt(-0.0f, f), -0.0f), "%s: -0 keeps its sign", name);
    CHECK_MSG(qt_identical(fr_round_fmt(min_sub * 0.5f, f), 0.0f), "%s: half min subnormal ties to 0", name);
    CHECK_MSG(qt_identical(fr_round_fmt(-min_sub * 0.5f, f), -0.0f), "%s: -half min subnormal -> -0", name);
    CHECK_MSG(qt_identical(fr_round_fmt(-min_sub * 0.25f, f), -0.0f), "%s: tiny negative -> -0", name);
    CHECK_MSG(qt_identical(fr_round_fmt(1e-45f, f), 0.0f), "%s: float subnormal -> 0", name);
    CHECK_MSG(fr_round_fmt(nextafterf(min_sub * 0.5f, 1.0f), f) == min_sub,
              "%s: just above half min subnormal", name);
    CHECK_MSG(fr_round_fmt(min_sub, f) == min_sub, "%s: min subnormal", name);
}

/* fp16 against the compiler's own binary16 conversion where it has one. */
static void check_fp16_against_compiler(const float *v, int n)
{
#if defined(__FLT16_MAX__)
    uint64_t state = 7;
    int compared = 0;
    for (int i = 0; i < 4 * n + 2000000; i++) {
        float x;
        if (i < n)
            x = v[i];
        else if (i < 2 * n)
            x = (v[i - n] + v[(i - n + 1) % n]) * 0.5f;
        else if (i < 3 * n)
            x = nextafterf((v[i - 2 * n] + v[(i - 2 * n + 1) % n]) * 0.5f, INFINITY);
        else if (i < 4 * n)
            x = nextafterf((v[i - 3 * n] + v[(i - 3 * n + 1) % n]) * 0.5f, 0.0f);
        else {
            uint32_t bits = (uint32_t)fr_test_splitmix64(&state);
            x = fr_bits_to_f32(bits);
            if (!isfinite(x))
                continue;
        }
        /* named difference: past 65520 (max + half an ulp) binary16 overflows
         * to Inf, frontier's fp16 scales saturate at 65504 */
        if (fabsf(x) >= 65520.0f) {
            CHECK_MSG(fabsf(fr_round_fp16(x)) == 65504.0f, "fp16: %a does not saturate", x);
            continue;
        }
        float want = (float)(_Float16)x;
        CHECK_MSG(qt_identical(fr_round_fp16(x), want), "fp16: %a -> %a, _Float16 gives %a", x,
                  fr_round_fp16(x), want);
        compared++;
    }
    printf("fp16: %d values agree with _Float16\n", compared);
#else
    (void)v;
    (void)n;
    printf("fp16: compiler has no _Float16, comparison against it skipped\n");
#endif
}

static void check_pow2_and_log2(void)
{
    for (int k = -149; k <= 127; k++)
        CHECK_MSG(fr_pow2f(k) == ldexpf(1.0f, k), "pow2f(%d)", k);
    uint64_t state = 11;
    /* every float exponent (normal and subnormal), several mantissas */
    for (uint32_t e = 0; e < 255; e++) {
        for (int t = 0; t < 40; t++) {
            uint32_t man = t == 0 ? 0 : t == 1 ? 0x7fffffu : t == 2 ? 1u
                                                                    : (uint32_t)fr_test_splitmix64(&state) & 0x7fffffu;
            uint32_t bits = (e << 23) | man;
            if (bits == 0)
                continue;
            float a = fr_bits_to_f32(bits);
            int fe;
            frexpf(a, &fe);
            CHECK_MSG(fr_floor_log2f(a) == fe - 1, "floor_log2(%a) = %d, want %d", a,
                      fr_floor_log2f(a), fe - 1);
            CHECK_MSG(fr_floor_log2f(-a) == fe - 1, "floor_log2(%a)", -a);
        }
    }
}

/* E8M0 / the MX scale exponent: e = floor(log2 amax) - emax, clamped to [-127, 127]. */
static void check_mx_scale(void)
{
    const int emax[] = {8, 15, 4, 2, 0};
    CHECK_MSG(fr_mx_scale_exp(0.0f, 2) == -127, "all-zero block");
    for (size_t j = 0; j < sizeof emax / sizeof emax[0]; j++) {
        for (int k = -149; k <= 127; k++) {
            float p = ldexpf(1.0f, k);
            float samples[] = {p, k < 127 ? nextafterf(2.0f * p, 0.0f) : FLT_MAX, p * 1.5f};
            for (int s = 0; s < 3; s++) {
                if (k == 127 && s == 2)
                    continue; /* 1.5 * 2^127 is finite but use FLT_MAX instead */
                int want = k - emax[j];
                want = want < -127 ? -127 : (want > 127 ? 127 : want);
                CHECK_MSG(fr_mx_scale_exp(samples[s], emax[j]) == want,
                          "mx scale of %a (emax %d) = %d, want %d", samples[s], emax[j],
                          fr_mx_scale_exp(samples[s], emax[j]), want);
            }
        }
    }
    /* every E8M0 code 0..254 decodes to 2^(code - 127); 255 is NaN */
    for (int code = 0; code < 255; code++)
        CHECK_MSG(fr_pow2f(code - 127) == ldexpf(1.0f, code - 127), "e8m0 code %d", code);
}

/* MXINT8: k/64, k in -127..127, ties to even k, saturating. */
static void check_mxint8(void)
{
    for (int k = -127; k <= 127; k++) {
        float v = (float)k / 64.0f;
        CHECK_MSG(fr_round_mxint8(v) == v, "mxint8 %d/64", k);
        if (k < 127) {
            float mid = ((float)k + 0.5f) / 64.0f;
            int even = (k % 2 == 0) ? k : k + 1;
            CHECK_MSG(fr_round_mxint8(mid) == (float)even / 64.0f, "mxint8 tie %a", mid);
            CHECK_MSG(fr_round_mxint8(nextafterf(mid, INFINITY)) == (float)(k + 1) / 64.0f,
                      "mxint8 above tie %a", mid);
            CHECK_MSG(fr_round_mxint8(nextafterf(mid, -INFINITY)) == (float)k / 64.0f,
                      "mxint8 below tie %a", mid);
        }
    }
    CHECK_MSG(fr_round_mxint8(2.0f) == 127.0f / 64.0f, "mxint8 saturates");
    CHECK_MSG(fr_round_mxint8(-1e30f) == -127.0f / 64.0f, "mxint8 saturates (negative)");
    CHECK_MSG(fr_round_mxint8(-128.0f / 64.0f) == -127.0f / 64.0f, "mxint8 is symmetric: -128 unused");
}

/* NF4 nearest code against a brute-force search over all 16 codes. */
static int nf4_brute(float y)
{
    const float codes[16] = FR_NF4_CODES;
    int best = 0;
    for (int j = 1; j < 16; j++)
        if (fabsf(y - codes[j]) < fabsf(y - codes[best]))
            best = j; /* strict: a tie keeps the smaller code */
    return best;
}

static void check_nf4(void)
{
    const float codes[16] = FR_NF4_CODES;
    /* the codebook is the decimals of docs/formats.md parsed to float32 */
    CHECK_MSG(codes[1] == strtof("-0.6961928", NULL) && codes[14] == strtof("0.7229568", NULL),
              "nf4 codebook");
    for (int j = 0; j + 1 < 16; j++)
        CHECK_MSG(codes[j] < codes[j + 1], "nf4 codes ascending");
    int n = 0;
    uint64_t state = 5;
    for (int i = 0; i < 16; i++) {
        float c = codes[i];
        float probes[] = {c, nextafterf(c, INFINITY), nextafterf(c, -INFINITY)};
        for (int p = 0; p < 3; p++, n++)
            CHECK_MSG(fr_nf4_nearest(probes[p]) == nf4_brute(probes[p]), "nf4 near %a", probes[p]);
        CHECK_MSG(fr_nf4_nearest(c) == i, "nf4 code %d maps to itself", i);
        if (i + 1 < 16) {
            float mid = (codes[i] + codes[i + 1]) * 0.5f;
            for (int d = -4; d <= 4; d++) {
                float y = mid;
                for (int s = 0; s < (d < 0 ? -d : d); s++)
                    y = nextafterf(y, d < 0 ? -INFINITY : INFINITY);
                CHECK_MSG(fr_nf4_nearest(y) == nf4_brute(y), "nf4 near midpoint %a: %d vs %d", y,
                          fr_nf4_nearest(y), nf4_brute(y));
                n++;
            }
        }
    }
    for (int i = 0; i < 200000; i++, n++) {
        float y = (float)(fr_test_uniform_open(&state) * 2.4 - 1.2);
        CHECK_MSG(fr_nf4_nearest(y) == nf4_brute(y), "nf4 %a", y);
    }
    CHECK_MSG(fr_nf4_nearest(-5.0f) == 0 && fr_nf4_nearest(5.0f) == 15, "nf4 out of range");
    CHECK_MSG(fr_nf4_nearest(-0.0f) == 7 && fr_nf4_nearest(0.0f) == 7, "nf4 zero");
    printf("nf4: %d probes agree with the brute-force search\n", n);
}

int main(void)
{
    static float v[1 << 16];
    struct {
        const char *name;
        fr_minifloat f;
        int exp_bits, mbits, ieee, fn;
    } fmts[] = {
        {"e4m3", FR_FMT_E4M3, 4, 3, 0, 1}, {"e5m2", FR_FMT_E5M2, 5, 2, 1, 0},
        {"e3m2", FR_FMT_E3M2, 3, 2, 0, 0}, {"e2m3", FR_FMT_E2M3, 2, 3, 0, 0},
        {"e2m1", FR_FMT_E2M1, 2, 1, 0, 0}, {"fp16", FR_FMT_FP16, 5, 10, 1, 0},
    };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        int n = enumerate(fmts[i].exp_bits, fmts[i].mbits, fmts[i].ieee, fmts[i].fn, v);
        check_format(fmts[i].name, fmts[i].f, v, n);
        printf("%s: %d non-negative values, their midpoints and neighbours checked\n",
               fmts[i].name, n);
        if (strcmp(fmts[i].name, "fp16") == 0)
            check_fp16_against_compiler(v, n);
    }
    /* the shorthands agree with the generic rule */
    for (int i = -2000; i <= 2000; i++) {
        float x = (float)i * 0.37f;
        CHECK_MSG(qt_identical(fr_round_e4m3(x), fr_round_fmt(x, FR_FMT_E4M3)), "e4m3 shorthand");
        CHECK_MSG(qt_identical(fr_round_e2m1(x), fr_round_fmt(x, FR_FMT_E2M1)), "e2m1 shorthand");
        CHECK_MSG(qt_identical(fr_round_fp16(x), fr_round_fmt(x, FR_FMT_FP16)), "fp16 shorthand");
    }
    /* the NVFP4 E2M1 table of docs/formats.md, boundary by boundary */
    const float e2m1_cases[][2] = {{0.25f, 0.0f}, {0.2500001f, 0.5f}, {0.7499999f, 0.5f},
                                   {0.75f, 1.0f}, {1.25f, 1.0f},      {1.2500001f, 1.5f},
                                   {1.7499999f, 1.5f}, {1.75f, 2.0f}, {2.5f, 2.0f},
                                   {2.5000002f, 3.0f}, {3.4999998f, 3.0f}, {3.5f, 4.0f},
                                   {5.0f, 4.0f},  {5.0000005f, 6.0f}, {100.0f, 6.0f}};
    for (size_t i = 0; i < sizeof e2m1_cases / sizeof e2m1_cases[0]; i++)
        CHECK_MSG(fr_round_e2m1(e2m1_cases[i][0]) == e2m1_cases[i][1], "e2m1 table: %a -> %a, want %a",
                  e2m1_cases[i][0], fr_round_e2m1(e2m1_cases[i][0]), e2m1_cases[i][1]);
    check_pow2_and_log2();
    check_mx_scale();
    check_mxint8();
    check_nf4();
    return fr_test_finish("test_numerics");
}
