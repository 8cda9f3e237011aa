/* Per-tensor sensitivity: reference pass, one perturbation at a time, the fit. */
#include "frontier/engine/sensitivity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/call.h"
#include "core/synthetic.h"

/* One run's buffers. */
struct run {
    fr_lm *lm;
    const fr_sens_options *o;
    const int32_t *tokens;
    int64_t n_pos;   /* n_sequences x seq_len */
    float *ref;      /* [n_pos x n_vocab] the reference logits */
    float *ref_p;    /* [n_pos x n_vocab] their probabilities, exp(ref - ref_lse) */
    double *ref_lse; /* [n_pos] their logsumexp */
    float *cur;      /* [seq_len x n_vocab] one sequence's logits */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fr_sens_fit(const double *x, const double *y, size_t n, double *alpha, double *residual)
{
    double xx = 0, xy = 0, yy = 0;
    for (size_t i = 0; i < n; i++) {
        xx += x[i] * x[i];
        xy += x[i] * y[i];
        yy += y[i] * y[i];
    }
    double a = xx > 0 ? xy / xx : 0.0;
    double rr = 0;
    for (size_t i = 0; i < n; i++)
        rr += (y[i] - a * x[i]) * (y[i] - a * x[i]);
    *alpha = a;
    *residual = yy > 0 ? sqrt(rr) / sqrt(yy) : 0.0;
}

double fr_sens_logsumexp(const float *x, int64_t n)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    if (!isfinite(m))
        return m;
    /* expf of x_i - max (<= 0, exact in float when within a factor 2 of
     * max, else rounded once): its 0.5 ulp moves the result by about 6e-8,
     * far below the KL divergences measured; summed in double */
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)expf(x[i] - m);
    return (double)m + log(s);
}

double fr_sens_kl_row(const float *ref, double ref_lse, const float *x, double x_lse, int64_t n)
{
    double kl = 0;
    for (int64_t i = 0; i < n; i++) {
        double lp = (double)ref[i] - ref_lse;
        double lq = (double)x[i] - x_lse;
        kl += exp(lp) * (lp - lq);
    }
    return kl;
}

/* fr_sens_kl_row with the reference's probabilities already computed:
 * one exp per logit (in the logsumexp of x) instead of two. */
static double kl_row_p(const float *ref, const float *p, double ref_lse, const float *x,
                       int64_t n)
{
    double x_lse = fr_sens_logsumexp(x, n), kl = 0;
    for (int64_t i = 0; i < n; i++)
        kl += (double)p[i] * (((double)ref[i] - ref_lse) - ((double)x[i] - x_lse));
    return kl;
}

/* The logits of every sequence against the reference: mean KL over positions. */
static fr_status mean_kl(struct run *r, double *kl, fr_error *err)
{
    const int64_t T = r->o->seq_len, V = r->lm->n_vocab;
    double sum = 0;
    for (int64_t s = 0; s < r->o->n_sequences; s++) {
        fr_status st = r->lm->logits(r->lm, r->tokens + s * T, T, r->cur, err);
        if (st != FR_OK)
            return st;
        for (int64_t p = 0; p < T; p++) {
            const float *x = r->cur + p * V;
            int64_t at = s * T + p;
            sum += kl_row_p(r->ref + at * V, r->ref_p + at * V, r->ref_lse[at], x, V);
        }
    }
    *kl = sum / (double)r->n_pos;
    return FR_OK;
}

static fr_status reference(struct run *r, fr_error *err)
{
    const int64_t T = r->o->seq_len, V = r->lm->n_vocab;
    for (int64_t s = 0; s < r->o->n_sequences; s++) {
        fr_status st = r->lm->logits(r->lm, r->tokens + s * T, T, r->ref + s * T * V, err);
        if (st != FR_OK)
            return st;
    }
    for (int64_t p = 0; p < r->n_pos; p++) {
        r->ref_lse[p] = fr_sens_logsumexp(r->ref + p * V, V);
        for (int64_t i = 0; i < V; i++)
            r->ref_p[p * V + i] = (float)exp((double)r->ref[p * V + i] - r->ref_lse[p]);
    }
    return FR_OK;
}

static void skip(fr_sens_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void skip(fr_sens_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->reason, sizeof res->reason, fmt, ap);
    va_end(ap);
    res->skipped = res->reason;
    res->measured = 0;
}

/* The direction d of tensor k's perturbation (not yet scaled); a tensor it
 * cannot be made for is skipped (res->skipped), which is no error. */
static void direction(const struct run *r, size_t k, const float *w, float *d, fr_sens_result *res)
{
    const fr_lm_tensor *t = &r->lm->tensors[k];
    int64_t n = t->rows * t->cols;
    if (r->o->noise == FR_SENS_GAUSSIAN) {
        for (int64_t i = 0; i < n; i++)
            d[i] = fr_synthetic_value(FR_SYN_GAUSSIAN,
                                      fr_philox_element(r->o->seed, (uint64_t)k, (uint64_t)i));
        return;
    }
    frontier_call call;
    fr_error qerr = {0};
    fr_call_init(&call, NULL, r->o->seed, t->name, r->o->config->cfg->name);
    fr_status st = fr_quantizer_quantize_cpu(r->o->reg, r->o->config, w, d, t->rows, t->cols, NULL,
                                             t->name, &call, &qerr);
    fr_call_release(&call);
    if (st != FR_OK) {
        skip(res, "%s", qerr.msg);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        d[i] -= w[i];
}

static double sum_sq(const float *a, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * (double)a[i];
    return s;
}

/* One point: W + c d in place of W, the KL, W back. */
static fr_status one_level(struct run *r, size_t k, const float *w, const float *d, double c,
                           double w2, float *wp, double *r2, double *kl, fr_error *err)
{
    const fr_lm_tensor *t = &r->lm->tensors[k];
    int64_t n = t->rows * t->cols;
    double e2 = 0;
    for (int64_t i = 0; i < n; i++) {
        wp[i] = w[i] + (float)(c * (double)d[i]);
        double e = (double)wp[i] - (double)w[i];
        e2 += e * e;
    }
    *r2 = e2 / w2;
    fr_status st = r->lm->set(r->lm, k, wp, err);
    if (st == FR_OK)
        st = mean_kl(r, kl, err);
    fr_error back = {0};
    fr_status restored = r->lm->set(r->lm, k, w, &back);
    if (st == FR_OK && restored != FR_OK) {
        *err = back;
        st = restored;
    }
    return st;
}

/* Tensor k: its perturbation at each level, the KL there, the fit. */
static fr_status measure_tensor(struct run *r, size_t k, float *w, float *wp, float *d,
                                fr_sens_result *res, fr_error *err)
{
    const fr_lm_tensor *t = &r->lm->tensors[k];
    int64_t n = t->rows * t->cols;
    fr_status st = r->lm->get(r->lm, k, w, err);
    if (st != FR_OK)
        return st;
    double w2 = sum_sq(w, n);
    if (!(w2 > 0) || !isfinite(w2)) {
        skip(res, "its squared norm is %g (no relative error)", w2);
        return FR_OK;
    }
    direction(r, k, w, d, res);
    if (res->skipped)
        return FR_OK;
    double d2 = sum_sq(d, n);
    if (!(d2 > 0) || !isfinite(d2)) {
        skip(res, "the perturbation's squared norm is %g (the configuration represents it exactly?)",
             d2);
        return FR_OK;
    }
    size_t levels = r->o->n_levels ? r->o->n_levels : 1;
    for (size_t j = 0; j < levels; j++) {
        double c = r->o->n_levels ? r->o->levels[j] * sqrt(w2 / d2) : 1.0;
        if ((st = one_level(r, k, w, d, c, w2, wp, &res->r2[j], &res->kl[j], err)) != FR_OK)
            return st;
        if (!isfinite(res->kl[j])) {
            skip(res, "the KL divergence is not finite at r^2 = %g", res->r2[j]);
            return FR_OK;
        }
    }
    res->n_points = levels;
    fr_sens_fit(res->r2, res->kl, levels, &res->alpha, &res->residual);
    res->measured = 1;
    return FR_OK;
}

static size_t largest_selected(const fr_lm *lm, const unsigned char *sel, size_t *count)
{
    size_t most = 0;
    *count = 0;
    for (size_t k = 0; k < lm->n_tensors; k++) {
        if (sel && !sel[k])
            continue;
        size_t n = (size_t)(lm->tensors[k].rows * lm->tensors[k].cols);
        most = n > most ? n : most;
        (*count)++;
    }
    return most;
}

static fr_status measure_all(struct run *r, fr_sens_result *res, fr_sens_summary *sum,
                             double t0, fr_error *err)
{
    const fr_sens_options *o = r->o;
    size_t total, most = largest_selected(r->lm, o->selected, &total), done = 0;
    float *w = malloc(most * sizeof *w), *wp = malloc(most * sizeof *wp),
          *d = malloc(most * sizeof *d);
    fr_status st = w && wp && d ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
    double t_measure = now();
    for (size_t k = 0; k < r->lm->n_tensors && st == FR_OK; k++) {
        if (o->selected && !o->selected[k])
            continue;
        double t1 = now();
        if ((st = measure_tensor(r, k, w, wp, d, &res[k], err)) != FR_OK)
            break;
        res[k].seconds = now() - t1;
        sum->n_measured += res[k].measured;
        sum->n_skipped += res[k].skipped != NULL;
        done++;
        if (o->progress) {
            double per = (now() - t_measure) / (double)done;
            fr_sens_progress p = {done, total, k, &res[k], now() - t0, per * (double)(total - done)};
            o->progress(o->progress_ud, &p);
        }
    }
    free(w);
    free(wp);
    free(d);
    return st;
}

fr_status fr_sens_measure(fr_lm *lm, const int32_t *tokens, const fr_sens_options *o,
                          fr_sens_result *res, fr_sens_summary *sum, fr_error *err)
{
    memset(sum, 0, sizeof *sum);
    memset(res, 0, lm->n_tensors * sizeof *res);
    if (o->n_sequences < 1 || o->seq_len < 1 || lm->n_vocab < 1)
        return fr_fail(err, FR_E_USAGE, "sensitivity: %lld sequences of %lld tokens over %lld logits",
                       (long long)o->n_sequences, (long long)o->seq_len, (long long)lm->n_vocab);
    if (o->noise == FR_SENS_QUANT ? !o->reg || !o->config : o->n_levels == 0)
        return fr_fail(err, FR_E_USAGE, "sensitivity: %s",
                       o->noise == FR_SENS_QUANT ? "no configuration for the quantization error"
                                                 : "Gaussian noise needs at least one level");
    struct run r = {.lm = lm, .o = o, .tokens = tokens, .n_pos = o->n_sequences * o->seq_len};
    size_t V = (size_t)lm->n_vocab;
    r.ref = malloc((size_t)r.n_pos * V * sizeof *r.ref);
    r.ref_p = malloc((size_t)r.n_pos * V * sizeof *r.ref_p);
    r.ref_lse = malloc((size_t)r.n_pos * sizeof *r.ref_lse);
    r.cur = malloc((size_t)o->seq_len * V * sizeof *r.cur);
    fr_status st = r.ref && r.ref_p && r.ref_lse && r.cur ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
    double t0 = now();
    if (st == FR_OK && (st = reference(&r, err)) == FR_OK) {
        sum->seconds_reference = now() - t0;
        st = mean_kl(&r, &sum->kl_repeat, err);
    }
    if (st == FR_OK)
        st = measure_all(&r, res, sum, t0, err);
    sum->seconds = now() - t0;
    free(r.ref);
    free(r.ref_p);
    free(r.ref_lse);
    free(r.cur);
    return st;
}
