/*
 * `awq-<int config>`: activation-aware scaling (AWQ, Lin et al. 2023) over
 * an integer base with group or row scales (docs/formats.md). Needs the
 * per-input-channel mean |x_j| (or mean x_j^2, whose square root stands in)
 * and H.
 *   1. for a = k / 20, k = 0..19: s_j = max(m_j^a, 1e-4), m = mean |x|,
 *      s /= sqrt(max s * min s); W' = W diag(s); W^ = Q(W') diag(s)^-1;
 *      keep the a with the least tr(dW H dW^T) (the first of equal ones;
 *      a = 0 is plain round-to-nearest);
 *   2. per group of W': the range shrink f in 1, 0.95, ..., 0.5 with the
 *      least dw_g^T H_gg dw_g, dw_g = w_g - q'_g / s_g (the group's own
 *      block of H; the first of equal ones).
 * The scales s are folded into the stored weights' reconstruction (a
 * deployed AWQ checkpoint folds them into the previous layer), so storage is
 * the base configuration's.
 */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "awq.h"
#include "builtin.h"
#include "common.h"
#include "wrap.h"

static int awq_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    (void)variant;
    *suffix = "";
    return fr_wrap_is_int_grouped(family, base);
}

static fr_wrap_list awq_list = {.prefix = "awq-", .method = "awq", .accept = awq_accept};
static frontier_quantizer awq_quantizer;

typedef struct awq_job {
    const fr_int_params *p;
    const float *w, *h, *s;
    float *w_hat;
    int64_t rows, cols, group, groups_per_row;
    int clip;       /* 0: plain Q(W') / s; 1: with the clipping search */
    float *scaled;  /* [rows x cols] scratch: W' rows */
    _Atomic int64_t unclipped; /* groups whose search found no memory */
} awq_job;

/* dw^T H_gg dw of one group (columns start..start+n). */
static double group_out_error(const float *h, int64_t cols, int64_t start, int64_t n,
                              const double *dw)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float *hr = h + (start + i) * cols + start;
        double t = 0.0;
        for (int64_t j = 0; j < n; j++)
            t += (double)hr[j] * dw[j];
        e += dw[i] * t;
    }
    return e;
}

static void awq_groups(void *arg, int64_t begin, int64_t end)
{
    awq_job *job = arg;
    const fr_int_params *p = job->p;
    double stack[1024];
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->groups_per_row;
        int64_t start = (u % job->groups_per_row) * job->group;
        int64_t n = job->cols - start < job->group ? job->cols - start : job->group;
        const float *x = job->w + row * job->cols + start;
        float *xs = job->scaled + row * job->cols + start;
        float *out = job->w_hat + row * job->cols + start;
        const float *s = job->s + start;
        for (int64_t i = 0; i < n; i++)
            xs[i] = x[i] * s[i];
        float lo, hi;
        fr_wrap_range(xs, n, 1, &lo, &hi);
        int best = 0;
        /* a row group (gC) longer than the stack buffer takes heap memory;
         * without it the group keeps the unclipped range, which is counted */
        double *dw = n <= 1024 ? stack : (job->clip ? malloc((size_t)n * sizeof *dw) : NULL);
        if (job->clip && !dw)
            atomic_fetch_add(&job->unclipped, 1);
        if (job->clip && dw) {
            double best_e = INFINITY;
            for (int k = 0; k < FR_WRAP_SHRINKS; k++) {
                float slo, shi;
                fr_wrap_shrunk(lo, hi, fr_wrap_shrink(k), &slo, &shi);
                fr_int_qparams qp = fr_wrap_int_qparams(p, slo, shi);
                for (int64_t i = 0; i < n; i++)
                    dw[i] = (double)x[i] - (double)(fr_wrap_int_dequant(p, qp, xs[i]) / s[i]);
                double e = group_out_error(job->h, job->cols, start, n, dw);
                if (e < best_e) {
                    best_e = e;
                    best = k;
                }
            }
        }
        if (dw != stack)
            free(dw);
        float slo, shi;
        fr_wrap_shrunk(lo, hi, fr_wrap_shrink(best), &slo, &shi);
        fr_int_qparams qp = fr_wrap_int_qparams(p, slo, shi);
        for (int64_t i = 0; i < n; i++)
            out[i] = fr_wrap_int_dequant(p, qp, xs[i]) / s[i];
    }
}

/* tr(dW H dW^T) in double, dW = W - W^, in chunks of rows (sgemm). */
static double out_error(const float *w, const float *w_hat, const float *h, int64_t rows,
                        int64_t cols, float *d, float *g)
{
    double total = 0.0;
    for (int64_t r0 = 0; r0 < rows; r0 += FR_AWQ_CHUNK_ROWS) {
        int64_t nr = rows - r0 < FR_AWQ_CHUNK_ROWS ? rows - r0 : FR_AWQ_CHUNK_ROWS;
        for (int64_t i = 0; i < nr * cols; i++)
            d[i] = w[r0 * cols + i] - w_hat[r0 * cols + i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)cols, (int)cols, 1.0f,
                    d, (int)cols, h, (int)cols, 0.0f, g, (int)cols);
        for (int64_t i = 0; i < nr * cols; i++)
            total += (double)d[i] * (double)g[i];
    }
    return total;
}

int fr_awq_calib_ok(const frontier_calib *calib, int64_t cols)
{
    return calib && calib->cols == cols && calib->hessian &&
           (calib->act_mean_abs || calib->act_mean_sq);
}

void fr_awq_act_means(const frontier_calib *calib, int64_t cols, float *m)
{
    for (int64_t j = 0; j < cols; j++)
        m[j] = calib->act_mean_abs ? calib->act_mean_abs[j] : sqrtf(calib->act_mean_sq[j]);
}

void fr_awq_scales(const float *m, int64_t cols, int k, float *s)
{
    float a = (float)k / (float)FR_AWQ_GRID;
    float smax = 0.0f, smin = INFINITY;
    for (int64_t j = 0; j < cols; j++) {
        float v = powf(m[j], a);
        s[j] = v < 1e-4f ? 1e-4f : v;
        smax = s[j] > smax ? s[j] : smax;
        smin = s[j] < smin ? s[j] : smin;
    }
    float norm = sqrtf(smax * smin);
    for (int64_t j = 0; j < cols; j++)
        s[j] = s[j] / norm;
}

int fr_awq_quantize_choice(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                           int64_t cols, const frontier_calib *calib, frontier_call *call,
                           fr_awq_choice *choice)
{
    int rc = fr_q_check_call(&awq_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc == FRONTIER_OK)
        rc = fr_wrap_check_finite(w, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!fr_awq_calib_ok(calib, cols))
        return fr_q_fail(call, FRONTIER_ERR_INVALID,
                         "needs a Hessian and per-channel activation statistics for %lld inputs",
                         (long long)cols);
    const fr_int_params *p = fr_wrap_int_base(cfg->impl);
    float *m = fr_q_scratch(call, (size_t)cols * sizeof *m);
    float *s = fr_q_scratch(call, (size_t)cols * sizeof *s);
    float *best_s = fr_q_scratch(call, (size_t)cols * sizeof *best_s);
    float *scaled = fr_q_scratch(call, (size_t)(rows * cols) * sizeof *scaled);
    float *d = fr_q_scratch(call, (size_t)(FR_AWQ_CHUNK_ROWS * cols) * sizeof *d);
    float *g = fr_q_scratch(call, (size_t)(FR_AWQ_CHUNK_ROWS * cols) * sizeof *g);
    if (!m || !s || !best_s || !scaled || !d || !g)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
    fr_awq_act_means(calib, cols, m);

    awq_job job = {.p = p, .w = w, .h = calib->hessian, .s = s, .w_hat = w_hat, .rows = rows,
                   .cols = cols, .group = fr_wrap_group_cols(p, cols), .scaled = scaled};
    job.groups_per_row = fr_q_ceil_div(cols, job.group);
    double best_e = INFINITY;
    int best_k = -1;
    for (int k = 0; k < FR_AWQ_GRID; k++) {
        fr_awq_scales(m, cols, k, s);
        job.clip = 0;
        fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(job.group), awq_groups, &job);
        double e = out_error(w, w_hat, calib->hessian, rows, cols, d, g);
        if (choice)
            choice->err[k] = e;
        if (e < best_e) {
            best_e = e;
            best_k = k;
            memcpy(best_s, s, (size_t)cols * sizeof *s);
        }
    }
    if (choice)
        choice->alpha = best_k;
    if (best_k < 0)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, FR_AWQ_NO_FINITE_ERROR);
    job.s = best_s;
    job.clip = 1;
    fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(job.group * 16), awq_groups, &job);
    if (atomic_load(&job.unclipped))
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory in the clipping search");
    return FRONTIER_OK;
}

static int awq_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                            int64_t rows, int64_t cols, const frontier_calib *calib,
                            frontier_call *call)
{
    return fr_awq_quantize_choice(cfg, w, w_hat, rows, cols, calib, call, NULL);
}

static int awq_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&awq_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_awq_ggml_types[] = {{NULL, NULL}};

/* config_traits: aWQ scales input channels before quantizing: a checkpoint
 * also needs the activation scales, which no storage here holds; needs its
 * tensor's statistics, so no row blocks. */
static int awq_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 0, t, call);
}

const frontier_quantizer *fr_awq_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "awq",
        .description = "activation-aware per-channel scaling plus clipping search over the int "
                       "group/row configurations (needs mean |x| and H)",
        .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS,
        .size_bits = awq_size_bits,
        .quantize_cpu = awq_quantize_cpu,
        .config_traits = awq_config_traits,
    };
    return fr_wrap_entry(&awq_quantizer, &awq_list, &family, host);
}
