/*
 * `hqq-<int asym config>`: data-free half-quadratic optimisation of the
 * zero point (HQQ, Badri & Shaji 2023; docs/formats.md). With the base
 * scale s fixed, per group:
 *   z = the base zero point, beta = 10
 *   up to 20 times:  q = clamp(rint(x / s + z), 0, 2^b - 1); r = (q - z) s
 *                    err = mean |x - r| (double); stop when not below the best so far
 *                    e = shrink_p(x - r, beta), p = 0.7:  sign(e) max(|e| - |e|^(p-1) / beta, 0)
 *                    z = mean(q - (x - e) / s); beta *= 1.01
 * The zero point of the best iteration is stored as HQQ stores it, in
 * fp16 (an integer zero point leaves the grid s * Z in place and the
 * optimisation nothing to move: measured, docs/formats.md), so a group
 * stores an fp16 scale and an fp16 zero: b + 32/g bits per weight. The
 * base zero point is kept when fp16(z) reconstructs the group with a
 * larger mean |error|. x^ = (clamp(rint(x / s + z), 0, 2^b - 1) - z) s.
 * Float32 arithmetic per element, sums in double, rounded to float32 once.
 */
#include <math.h>

#include "builtin.h"
#include "common.h"
#include "hqq.h"
#include "wrap.h"

static int hqq_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    (void)variant;
    *suffix = "";
    return fr_wrap_is_int_grouped(family, base) && !((const fr_int_params *)base->impl)->symmetric;
}

static fr_wrap_list hqq_list = {.prefix = "hqq-", .method = "hqq", .accept = hqq_accept};
static frontier_quantizer hqq_quantizer;

/* mean |x - (clamp(rint(x / s + z), 0, L) - z) s| in double. */
static double hqq_error(const float *x, int64_t n, float s, float z, float levels)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float q = rintf(x[i] / s + z);
        q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
        e += fabs((double)x[i] - (double)((q - z) * s));
    }
    return e / (double)n;
}

static void hqq_group(const fr_int_params *p, const float *x, float *x_hat, int64_t n,
                      const float *wt)
{
    (void)wt;
    float lo, hi;
    fr_wrap_range(x, n, 1, &lo, &hi);
    fr_int_qparams qp = fr_wrap_int_qparams(p, lo, hi);
    const float levels = fr_int_asym_levels(p->bits);
    if (qp.s == 0.0f) {
        fr_wrap_group_error(p, qp, x, x_hat, n, NULL);
        return;
    }
    const float s = qp.s;
    float z = qp.z, beta = FR_HQQ_BETA, best_z = qp.z;
    double best = INFINITY;
    for (int it = 0; it < FR_HQQ_ITERS; it++) {
        double err = hqq_error(x, n, s, z, levels);
        if (!(err < best))
            break;
        best = err;
        best_z = z;
        double zsum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            float q = rintf(x[i] / s + z);
            q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
            float e = x[i] - (q - z) * s;
            float a = fabsf(e);
            float shrunk = a - fr_hqq_pow(a + 1e-8f) / beta;
            float we = shrunk > 0.0f ? copysignf(shrunk, e) : 0.0f;
            zsum += (double)(q - (x[i] - we) / s);
        }
        z = (float)(zsum / (double)n);
        beta *= FR_HQQ_KAPPA;
    }
    float zh = fr_round_fp16(best_z);
    if (!(hqq_error(x, n, s, zh, levels) <= hqq_error(x, n, s, qp.z, levels)))
        zh = qp.z;
    for (int64_t i = 0; i < n; i++) {
        float q = rintf(x[i] / s + zh);
        q = q < 0.0f ? 0.0f : (q > levels ? levels : q);
        x_hat[i] = (q - zh) * s;
    }
}

static int hqq_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                            int64_t rows, int64_t cols, const frontier_calib *calib,
                            frontier_call *call)
{
    (void)calib;
    return fr_wrap_per_group(&hqq_quantizer, cfg, w, w_hat, rows, cols, NULL, hqq_group, 8, call);
}

static int hqq_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&hqq_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    /* b-bit codes, an fp16 scale and an fp16 zero point per group */
    const fr_int_params *p = fr_wrap_int_base(cfg->impl);
    return fr_q_size_bits(call, rows, cols, (uint64_t)p->bits, 1, fr_wrap_group_cols(p, cols), 32,
                          0, total_bits, NULL);
}

const fr_ggml_type fr_hqq_ggml_types[] = {{NULL, NULL}};

/* config_traits: hQQ optimises scales and real-valued zero points per group;
 * no checkpoint storage holds them as frontier's writers compute them, and
 * row blocks are not declared. */
static int hqq_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 0, t, call);
}

const frontier_quantizer *fr_hqq_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "hqq",
        .description = "data-free half-quadratic optimisation of the zero point over the int "
                       "asym configurations (HQQ; p 0.7, beta 10, kappa 1.01, 20 iterations; "
                       "fp16 zero points)",
        .flags = FRONTIER_Q_DETERMINISTIC,
        .size_bits = hqq_size_bits,
        .quantize_cpu = hqq_quantize_cpu,
        .config_traits = hqq_config_traits,
    };
    return fr_wrap_entry(&hqq_quantizer, &hqq_list, &family, host);
}
