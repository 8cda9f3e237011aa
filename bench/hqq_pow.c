/*
 * The measurement behind quantizers/hqq.h's fr_hqq_pow (docs/gpu.md, "hqq-
 * and the power"): for every float b in [1e-8f, FLT_MAX] (the inputs of the
 * shrink's power, b = |e| + 1e-8f), the correctly rounded float32 value of
 * b^p, p = 0.7f - 1 (exact), against glibc's powf, the double power rounded
 * once ((float)pow((double)b, p)) and fr_hqq_pow itself:
 *  - d = glibc pow((double)b, (double)p); where d lies within 64 double
 *    ulps of a midpoint between two floats, the extended-precision powl
 *    (x87, 64-bit mantissa) decides the correctly rounded float (an input
 *    where even powl is within 2^-60 of the midpoint is counted as
 *    unresolved), else it is (float)d (glibc's pow is within 1 ulp);
 *  - every input whose exact power lies within MARGIN (default 4) double
 *    ulps of a midpoint is printed ("hard ..."): the table of fr_hqq_pow.
 * Standalone, about a minute on one core:
 *   gcc -O2 -I. -Icore bench/hqq_pow.c -lm -o /tmp/hqq_pow && /tmp/hqq_pow 4
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantizers/hqq.h"
static long double mid_dist(long double v, float *rounded)
{
    float lo = (float)v, other;
    if ((long double)lo > v)
        other = nextafterf(lo, 0.0f);
    else
        other = nextafterf(lo, INFINITY);
    long double mid = ((long double)lo + (long double)other) / 2.0L;
    *rounded = lo;
    return fabsl(v - mid) / v;
}

int main(int argc, char **argv)
{
    const float p = 0.7f - 1.0f;
    double margin = argc > 1 ? atof(argv[1]) : 4.0;
    float b0 = 0.0f + 1e-8f, fmax = 3.4028234663852886e38f;
    uint32_t u0, u1;
    memcpy(&u0, &b0, 4);
    memcpy(&u1, &fmax, 4);
    uint64_t n = 0, bad_powf = 0, bad_dpow = 0, bad_table = 0, hard = 0, unresolved = 0,
             checked = 0;
    for (uint32_t u = u0; u <= u1; u++) {
        float b;
        memcpy(&b, &u, 4);
        float c = powf(b, p);
        double d = pow((double)b, (double)p);
        float fd = (float)d, cr = fd;
        n++;
        /* distance of d from the midpoint next to it, in units of d's relative ulp */
        float other = (double)fd > d ? nextafterf(fd, 0.0f) : nextafterf(fd, INFINITY);
        double mid = ((double)fd + (double)other) / 2.0;
        if (fabs(d - mid) < 64.0 * 0x1p-52 * d) {
            checked++;
            long double l = powl((long double)b, (long double)p);
            long double dist = mid_dist(l, &cr);
            if (dist < 0x1p-60L)
                unresolved++;
            if (dist < margin * 0x1p-52L) {
                hard++;
                printf("hard 0x%08x %a cr 0x%08x %a powf %a dpow %a dist %.3Lg\n", u, b,
                       fr_f32_to_bits(cr), cr, c, fd, dist / 0x1p-52L);
            }
        }
        if (c != cr)
            bad_powf++;
        if (fd != cr)
            bad_dpow++;
        if (fr_hqq_pow(b) != cr)
            bad_table++;
        if (u == u1)
            break;
    }
    printf("inputs %llu: powf != correctly rounded %llu, (float)pow(double) != correctly rounded "
           "%llu, fr_hqq_pow != correctly rounded %llu; within 64 double ulps of a midpoint "
           "(checked with powl) %llu, within %g: %llu, unresolved by powl %llu\n",
           (unsigned long long)n, (unsigned long long)bad_powf, (unsigned long long)bad_dpow,
           (unsigned long long)bad_table,
           (unsigned long long)checked, margin, (unsigned long long)hard,
           (unsigned long long)unresolved);
    return 0;
}
