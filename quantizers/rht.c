/*
 * `rht+<config>` around every configuration of the kernel families
 * (rht.h has the rotation). Data-free; the error is measured in the
 * original basis, where the host compares W with R^T Q(R W).
 */
#include "rht.h"

#include <math.h>
#include <string.h>

#include "builtin.h"
#include "common.h"
#include "core/philox.h"

void fr_rht_signs(float *signs, int64_t cols, uint64_t seed)
{
    for (int64_t j = 0; j < cols; j++) {
        fr_philox_words r = fr_philox4x32_10((uint32_t)(j / 4), (uint32_t)((j / 4) >> 32), 0, 0,
                                             (uint32_t)seed, (uint32_t)(seed >> 32));
        signs[j] = (r.w[j % 4] & 1u) ? -1.0f : 1.0f;
    }
}

static void fwht(float *x, int64_t n)
{
    for (int64_t h = 1; h < n; h *= 2)
        for (int64_t i = 0; i < n; i += 2 * h)
            for (int64_t j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] * scale;
}

void fr_rht_row(float *x, int64_t cols, const float *signs, int inverse)
{
    if (!inverse)
        for (int64_t j = 0; j < cols; j++)
            x[j] = x[j] * signs[j];
    int64_t at = 0;
    while (at < cols) {
        int64_t n = 1;
        while (n * 2 <= cols - at)
            n *= 2;
        fwht(x + at, n);
        at += n;
    }
    if (inverse)
        for (int64_t j = 0; j < cols; j++)
            x[j] = x[j] * signs[j];
}

typedef struct rot_job {
    float *m;
    int64_t cols;
    const float *signs;
    int inverse;
} rot_job;

static void rot_range(void *arg, int64_t begin, int64_t end)
{
    rot_job *job = arg;
    for (int64_t r = begin; r < end; r++)
        fr_rht_row(job->m + r * job->cols, job->cols, job->signs, job->inverse);
}

static void rotate_rows(frontier_call *call, float *m, int64_t rows, int64_t cols,
                        const float *signs, int inverse)
{
    rot_job job = {m, cols, signs, inverse};
    fr_q_parallel_for(call, rows, fr_q_grain(cols), rot_range, &job);
}

int fr_rht_quantize(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                    float *w_hat, int64_t rows, int64_t cols, const frontier_calib *calib,
                    frontier_call *call)
{
    int rc = fr_q_check_call(q, cfg, w, w_hat, rows, cols, call);
    if (rc == FRONTIER_OK)
        rc = fr_wrap_check_finite(w, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_wrap_params *p = cfg->impl;
    float *signs = fr_q_scratch(call, (size_t)cols * sizeof *signs);
    float *wr = fr_q_scratch(call, (size_t)(rows * cols) * sizeof *wr);
    if (!signs || !wr)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
    fr_rht_signs(signs, cols, FR_RHT_SEED);
    memcpy(wr, w, (size_t)(rows * cols) * sizeof *wr);
    rotate_rows(call, wr, rows, cols, signs, 0);

    frontier_calib rc_calib = {0}, *inner = NULL;
    if (calib && calib->hessian && calib->cols == cols) {
        /* H' = R H R^T: rotate the rows of H, transpose (H R^T is not
         * symmetric), rotate the rows again, transpose back */
        float *h = fr_q_scratch(call, (size_t)(cols * cols) * sizeof *h);
        float *t = fr_q_scratch(call, (size_t)(cols * cols) * sizeof *t);
        float *diag = fr_q_scratch(call, (size_t)cols * sizeof *diag);
        if (!h || !t || !diag)
            return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory for the rotated Hessian");
        memcpy(h, calib->hessian, (size_t)(cols * cols) * sizeof *h);
        rotate_rows(call, h, cols, cols, signs, 0);
        for (int64_t i = 0; i < cols; i++)
            for (int64_t j = 0; j < cols; j++)
                t[j * cols + i] = h[i * cols + j];
        rotate_rows(call, t, cols, cols, signs, 0);
        for (int64_t i = 0; i < cols; i++)
            for (int64_t j = 0; j < cols; j++)
                h[j * cols + i] = t[i * cols + j];
        for (int64_t j = 0; j < cols; j++)
            diag[j] = h[j * cols + j];
        rc_calib = (frontier_calib){.cols = cols, .hessian = h, .act_mean_sq = diag};
        inner = &rc_calib;
    }
    rc = p->base_q->quantize_cpu(p->base, wr, w_hat, rows, cols, inner, call);
    if (rc != FRONTIER_OK)
        return rc;
    rotate_rows(call, w_hat, rows, cols, signs, 1);
    return FRONTIER_OK;
}

static int rht_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    (void)base;
    (void)variant;
    *suffix = "";
    return family < FR_KERNEL_FAMILY_COUNT;
}

static const char *rht_extra(int variant)
{
    (void)variant;
    return "\"seed\":1,\"blocks\":\"greedy powers of two\"";
}

static fr_wrap_list rht_list = {.prefix = "rht+", .method = "rht", .accept = rht_accept,
                                .extra_json = rht_extra};
static frontier_quantizer rht_quantizer;

static int rht_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                            int64_t cols, const frontier_calib *calib, frontier_call *call)
{
    return fr_rht_quantize(&rht_quantizer, cfg, w, w_hat, rows, cols, calib, call);
}

static int rht_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&rht_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_rht_ggml_types[] = {{NULL, NULL}};

/* config_traits: the rotation is part of what is stored (a runtime must undo
 * it), which no storage here describes; row blocks are not declared. */
static int rht_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 0, t, call);
}

const frontier_quantizer *fr_rht_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "rht",
        .description = "random Hadamard rotation (seed 1, recorded) around every data-free "
                       "configuration; error measured in the original basis",
        .flags = FRONTIER_Q_DETERMINISTIC,
        .size_bits = rht_size_bits,
        .quantize_cpu = rht_quantize_cpu,
        .config_traits = rht_config_traits,
    };
    return fr_wrap_entry(&rht_quantizer, &rht_list, &family, host);
}
