/*
 * frontier/exec/metrics.c: the error sums and the metrics of docs/formats.md, cases
 * worked by hand, the all-zero rules, and sums that do not depend on the
 * thread count.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "frontier/exec/metrics.h"
#include "qtest.h"

static fr_metrics metrics_of(const float *w, const float *w_hat, int64_t n, fr_pool *pool)
{
    frontier_error_sums sums;
    fr_metrics m;
    fr_error err;
    fr_error_sums_init(&sums);
    CHECK_MSG(fr_error_sums_accumulate(w, w_hat, n, pool, &sums, &err) == FR_OK, "accumulate");
    fr_metrics_from_sums(&sums, &m);
    return m;
}

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-15 * fabs(b);
}

int main(void)
{
    fr_pool *pool1 = NULL, *pool2 = NULL, *pool5 = NULL;
    fr_error err;
    if (fr_pool_create(1, &pool1, &err) != FR_OK || fr_pool_create(2, &pool2, &err) != FR_OK ||
        fr_pool_create(5, &pool5, &err) != FR_OK) {
        fprintf(stderr, "test_metrics: %s\n", err.msg);
        return 1;
    }

    /* W = (3, 4), Q(W) = (3, 0): ||dW|| = 4, ||W|| = 5, <W, Q> = 9, ||Q|| = 3 */
    {
        const float w[] = {3, 4}, q[] = {3, 0};
        fr_metrics m = metrics_of(w, q, 2, pool1);
        CHECK_MSG(close_to(m.rel_err, 0.8), "rel_err %.17g", m.rel_err);
        CHECK_MSG(close_to(m.sqnr_db, -20.0 * log10(0.8)), "sqnr %.17g", m.sqnr_db);
        CHECK_MSG(m.max_abs_err == 4.0, "max_abs_err %g", m.max_abs_err);
        CHECK_MSG(close_to(m.cosine, 0.6), "cosine %.17g", m.cosine);
    }
    /* exact reconstruction: rel_err 0, sqnr +inf, cosine 1; -0.0 equals +0.0 */
    {
        const float w[] = {1, -0.0f, 2}, q[] = {1, 0.0f, 2};
        fr_metrics m = metrics_of(w, q, 3, pool1);
        CHECK_MSG(m.rel_err == 0 && isinf(m.sqnr_db) && m.sqnr_db > 0 && m.cosine == 1 &&
                      m.max_abs_err == 0,
                  "exact: %g %g %g", m.rel_err, m.sqnr_db, m.cosine);
    }
    /* all-zero W and Q(W): rel_err 0, cosine 1 */
    {
        const float z[] = {0, 0, 0, 0};
        fr_metrics m = metrics_of(z, z, 4, pool1);
        CHECK_MSG(m.rel_err == 0 && isinf(m.sqnr_db) && m.cosine == 1, "all zero");
    }
    /* Q(W) all zero but W not: rel_err 1, sqnr 0 dB, cosine 0 */
    {
        const float w[] = {1, -2}, z[] = {0, 0};
        fr_metrics m = metrics_of(w, z, 2, pool1);
        CHECK_MSG(m.rel_err == 1 && m.sqnr_db == 0 && m.cosine == 0 && m.max_abs_err == 2,
                  "zero reconstruction: %g %g %g", m.rel_err, m.sqnr_db, m.cosine);
        /* W all zero but Q(W) not: rel_err +inf, sqnr -inf, cosine 0 */
        m = metrics_of(z, w, 2, pool1);
        CHECK_MSG(isinf(m.rel_err) && isinf(m.sqnr_db) && m.sqnr_db < 0 && m.cosine == 0,
                  "zero tensor: %g %g %g", m.rel_err, m.sqnr_db, m.cosine);
    }
    /* opposite sign: cosine -1 (clamped into [-1, 1]) */
    {
        const float w[] = {0.1f, 0.2f, 0.3f}, q[] = {-0.1f, -0.2f, -0.3f};
        fr_metrics m = metrics_of(w, q, 3, pool1);
        CHECK_MSG(m.cosine >= -1.0 && m.cosine <= -1.0 + 1e-15, "cosine %.17g", m.cosine);
        CHECK_MSG(close_to(m.rel_err, 2.0), "rel_err %.17g", m.rel_err);
    }
    /* huge values: the sums do not overflow in double, the cosine stays finite */
    {
        const float w[] = {FLT_MAX, FLT_MAX}, q[] = {FLT_MAX, FLT_MAX / 2};
        fr_metrics m = metrics_of(w, q, 2, pool1);
        CHECK_MSG(isfinite(m.rel_err) && isfinite(m.cosine) && m.cosine > 0.9, "huge: %g %g",
                  m.rel_err, m.cosine);
    }

    /* 1, 2 and 5 threads give bit-identical sums; they equal a serial sum in the
     * same chunks; and they agree with a long double sum to rounding */
    {
        const int64_t n = 1000003; /* 16 chunks, the last one short */
        float *w = malloc(n * sizeof *w), *q = malloc(n * sizeof *q);
        if (!w || !q) {
            CHECK_MSG(0, "out of memory");
        } else {
            qt_gaussian(w, n, 3, 1.0);
            qt_gaussian(q, n, 4, 0.01);
            for (int64_t i = 0; i < n; i++)
                q[i] += w[i];
            frontier_error_sums s1, s2, s5, ref;
            fr_error_sums_init(&s1);
            fr_error_sums_init(&s2);
            fr_error_sums_init(&s5);
            fr_error_sums_accumulate(w, q, n, pool1, &s1, &err);
            fr_error_sums_accumulate(w, q, n, pool2, &s2, &err);
            fr_error_sums_accumulate(w, q, n, pool5, &s5, &err);
            CHECK_MSG(memcmp(&s1, &s2, sizeof s1) == 0 && memcmp(&s1, &s5, sizeof s1) == 0,
                      "sums depend on the thread count");
            fr_error_sums_init(&ref);
            long double sq_err = 0, sq_ref = 0;
            for (int64_t c0 = 0; c0 < n; c0 += FR_METRICS_CHUNK) {
                frontier_error_sums part = {0, 0, 0, 0, 0};
                for (int64_t i = c0; i < n && i < c0 + FR_METRICS_CHUNK; i++) {
                    double d = (double)w[i] - (double)q[i];
                    part.sq_err += d * d;
                    part.sq_ref += (double)w[i] * w[i];
                    part.sq_hat += (double)q[i] * q[i];
                    part.dot += (double)w[i] * q[i];
                    part.max_abs_err = fabs(d) > part.max_abs_err ? fabs(d) : part.max_abs_err;
                    sq_err += (long double)d * d;
                    sq_ref += (long double)w[i] * w[i];
                }
                fr_error_sums_add(&ref, &part);
            }
            CHECK_MSG(memcmp(&s1, &ref, sizeof ref) == 0, "sums differ from the chunked serial sum");
            CHECK_MSG(fabs(s1.sq_err - (double)sq_err) <= 1e-12 * (double)sq_err &&
                          fabs(s1.sq_ref - (double)sq_ref) <= 1e-12 * (double)sq_ref,
                      "double sums far from long double");
            /* accumulate adds to what is there */
            frontier_error_sums twice = s1;
            fr_error_sums_accumulate(w, q, n, pool2, &twice, &err);
            CHECK_MSG(twice.sq_err == 2 * s1.sq_err && twice.max_abs_err == s1.max_abs_err,
                      "accumulate does not add");
            fr_metrics m;
            fr_metrics_from_sums(&s1, &m);
            CHECK_MSG(m.rel_err > 0.009 && m.rel_err < 0.011, "rel_err %g of 1%% noise", m.rel_err);
        }
        free(w);
        free(q);
    }
    fr_pool_destroy(pool1);
    fr_pool_destroy(pool2);
    fr_pool_destroy(pool5);
    return fr_test_finish("test_metrics");
}
