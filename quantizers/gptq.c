/*
 * `gptq-<int config>`: GPTQ (Frantar et al. 2022) over an integer base
 * configuration with group or row scales (docs/formats.md and
 * docs/calibration.md, "GPTQ"). Needs H = mean x x^T.
 *
 *   dead columns (H_jj = 0): H_jj = 1 and their weights zeroed;
 *   `-act`: columns in order of decreasing H_jj (stable), static groups;
 *   H += 0.01 mean(diag H) I (dampening; raised x10 up to three times when
 *   a Cholesky factorisation fails, each retry reported);
 *   U = upper Cholesky factor of H^-1 (LAPACKE, double; U in float32);
 *   columns in blocks of B = max(128, g) with lazy updates (OpenBLAS sgemm):
 *   per column i: q = Q(w_i); err = (w_i - q) / U_ii; the block's later
 *   columns -= err U_i,.; after the block the rest -= Err U_block,rest.
 * Group scales: by default computed when a group starts, from the
 * error-updated weights; `-refscale` takes them from the block as it stood
 * when the block started (the reference code's rule; the two differ only
 * for groups smaller than the block, so it is offered for g32 and g64);
 * `-act` and `gC` compute them once from the (dead-zeroed) weights before
 * any update. Rows are independent: they are processed in chunks of 64 rows
 * in parallel, with the same arithmetic whatever the thread count.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "common.h"
#include "wrap.h"

enum { GPTQ_PLAIN = 0, GPTQ_ACT = 1, GPTQ_REFSCALE = 2 };
#define GPTQ_BLOCK 128
#define GPTQ_ROWS 64
#define GPTQ_DAMP 0.01
#define GPTQ_DAMP_RETRIES 3

static int gptq_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    static const char *const suffixes[] = {"", "-act", "-refscale"};
    if (!fr_wrap_is_int_grouped(family, base))
        return 0;
    const fr_int_params *p = base->impl;
    *suffix = suffixes[variant < 3 ? variant : 0];
    return p->granularity == FR_INT_GROUP && p->group_size < GPTQ_BLOCK ? 3 : 2;
}

static const char *gptq_extra(int variant)
{
    switch (variant) {
    case GPTQ_ACT: return "\"act_order\":true,\"static_groups\":true,\"scales\":\"static\",\"damp\":0.01,\"block\":128";
    case GPTQ_REFSCALE: return "\"act_order\":false,\"scales\":\"block-start\",\"damp\":0.01,\"block\":128";
    default: return "\"act_order\":false,\"scales\":\"group-start\",\"damp\":0.01,\"block\":128";
    }
}

static fr_wrap_list gptq_list = {.prefix = "gptq-", .method = "gptq", .accept = gptq_accept,
                                 .extra_json = gptq_extra};
static frontier_quantizer gptq_quantizer;

/* Everything the row chunks share. */
typedef struct gptq_job {
    const fr_int_params *p;
    int variant;
    const float *w;      /* original [rows x cols] */
    float *w_hat;
    const float *u;      /* upper Cholesky factor of H^-1, permuted order, [cols x cols] */
    const int64_t *perm; /* permuted position -> original column */
    const uint8_t *dead;
    int64_t rows, cols, group, block;
    float *scratch;      /* per chunk: W, Q [GPTQ_ROWS x cols], Err [GPTQ_ROWS x block],
                          * params s, z [GPTQ_ROWS x groups_per_row] */
    size_t scratch_per_chunk;
    int64_t groups_per_row;
} gptq_job;

/* Group parameters of row r from n values (stride apart). */
static fr_int_qparams params_of(const fr_int_params *p, const float *x, int64_t n, int64_t stride)
{
    float lo, hi;
    fr_wrap_range(x, n, stride, &lo, &hi);
    return fr_wrap_int_qparams(p, lo, hi);
}

static void gptq_chunk(void *arg, int64_t begin, int64_t end)
{
    gptq_job *job = arg;
    const fr_int_params *p = job->p;
    const int64_t cols = job->cols, g = job->group, B = job->block, G = job->groups_per_row;
    const int static_params = job->variant == GPTQ_ACT || p->granularity == FR_INT_ROW;
    for (int64_t c = begin; c < end; c++) {
        float *W = job->scratch + (size_t)c * job->scratch_per_chunk;
        float *Q = W + (size_t)GPTQ_ROWS * cols;
        float *E = Q + (size_t)GPTQ_ROWS * cols;
        float *S = E + (size_t)GPTQ_ROWS * B;
        float *Z = S + (size_t)GPTQ_ROWS * G;
        float *snap = Z + (size_t)GPTQ_ROWS * G; /* [GPTQ_ROWS x B], -refscale */
        int64_t r0 = c * GPTQ_ROWS;
        int64_t nr = job->rows - r0 < GPTQ_ROWS ? job->rows - r0 : GPTQ_ROWS;
        /* the rows in permuted column order, dead columns zeroed */
        for (int64_t r = 0; r < nr; r++)
            for (int64_t i = 0; i < cols; i++) {
                int64_t j = job->perm[i];
                W[r * cols + i] = job->dead[j] ? 0.0f : job->w[(r0 + r) * cols + j];
            }
        if (static_params) {
            /* from the weights before any update, groups by original column */
            for (int64_t r = 0; r < nr; r++)
                for (int64_t k = 0; k < G; k++) {
                    int64_t start = k * g, n = cols - start < g ? cols - start : g;
                    float lo = 0.0f, hi = 0.0f;
                    for (int64_t j = start; j < start + n; j++) {
                        float v = job->dead[j] ? 0.0f : job->w[(r0 + r) * cols + j];
                        lo = v < lo ? v : lo;
                        hi = v > hi ? v : hi;
                    }
                    fr_int_qparams qp = fr_wrap_int_qparams(p, lo, hi);
                    S[r * G + k] = qp.s;
                    Z[r * G + k] = qp.z;
                }
        }
        for (int64_t i1 = 0; i1 < cols; i1 += B) {
            int64_t i2 = i1 + B < cols ? i1 + B : cols, nb = i2 - i1;
            if (job->variant == GPTQ_REFSCALE)
                for (int64_t r = 0; r < nr; r++)
                    memcpy(snap + r * B, W + r * cols + i1, (size_t)nb * sizeof *snap);
            for (int64_t i = i1; i < i2; i++) {
                const float d = job->u[i * cols + i];
                const float *urow = job->u + i * cols;
                for (int64_t r = 0; r < nr; r++) {
                    float *wr = W + r * cols;
                    fr_int_qparams qp;
                    if (static_params) {
                        int64_t k = job->perm[i] / g;
                        qp = (fr_int_qparams){S[r * G + k], Z[r * G + k]};
                    } else {
                        int64_t k = i / g;
                        if (i % g == 0) {
                            int64_t n = cols - i < g ? cols - i : g;
                            fr_int_qparams np = job->variant == GPTQ_REFSCALE
                                                    ? params_of(p, snap + r * B + (i - i1), n, 1)
                                                    : params_of(p, wr + i, n, 1);
                            S[r * G + k] = np.s;
                            Z[r * G + k] = np.z;
                        }
                        qp = (fr_int_qparams){S[r * G + k], Z[r * G + k]};
                    }
                    float x = wr[i];
                    float q = fr_wrap_int_dequant(p, qp, x);
                    Q[r * cols + i] = q;
                    float err = (x - q) / d;
                    E[r * B + (i - i1)] = err;
                    for (int64_t j = i + 1; j < i2; j++)
                        wr[j] -= err * urow[j];
                }
            }
            if (i2 < cols)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)(cols - i2),
                            (int)nb, -1.0f, E, (int)B, job->u + i1 * cols + i2, (int)cols, 1.0f,
                            W + i2, (int)cols);
        }
        for (int64_t r = 0; r < nr; r++)
            for (int64_t i = 0; i < cols; i++)
                job->w_hat[(r0 + r) * cols + job->perm[i]] = Q[r * cols + i];
    }
}

/* perm sorted by decreasing d, ties by index (a stable order). */
static const double *sort_key;
static int by_decreasing_key(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    double x = sort_key[i], y = sort_key[j];
    if (x != y)
        return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

/* U = upper Cholesky factor of (H + damp I)^-1 in double, H in the
 * permuted order; returns 0 when a factorisation fails. */
static int inverse_factor(const double *h, double damp, int64_t n, double *a)
{
    memcpy(a, h, (size_t)(n * n) * sizeof *a);
    for (int64_t i = 0; i < n; i++)
        a[i * n + i] += damp;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0)
        return 0;
    if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0)
        return 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++)
            a[i * n + j] = a[j * n + i];
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, a, (lapack_int)n) != 0)
        return 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++)
            a[i * n + j] = 0.0;
    return 1;
}

/* Serialises the qsort key (qsort has no context argument in C11). */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

static int gptq_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    int rc = fr_q_check_call(&gptq_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc == FRONTIER_OK)
        rc = fr_wrap_check_finite(w, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!calib || !calib->hessian || calib->cols != cols)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "needs a Hessian of %lld x %lld",
                         (long long)cols, (long long)cols);
    if (cols > 65536)
        return fr_q_fail(call, FRONTIER_ERR_UNSUPPORTED,
                         "%lld input columns: the CPU GPTQ holds H in memory up to 65536",
                         (long long)cols);
    const fr_wrap_params *wp = cfg->impl;
    const fr_int_params *p = fr_wrap_int_base(wp);
    const int64_t n = cols;
    double *h = fr_q_scratch(call, (size_t)(n * n) * sizeof *h);
    double *a = fr_q_scratch(call, (size_t)(n * n) * sizeof *a);
    double *diag = fr_q_scratch(call, (size_t)n * sizeof *diag);
    int64_t *perm = fr_q_scratch(call, (size_t)n * sizeof *perm);
    uint8_t *dead = fr_q_scratch(call, (size_t)n);
    float *u = fr_q_scratch(call, (size_t)(n * n) * sizeof *u);
    if (!h || !a || !diag || !perm || !dead || !u)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory for a %lld x %lld Hessian",
                         (long long)n, (long long)n);
    double mean_diag = 0.0;
    for (int64_t j = 0; j < n; j++) {
        diag[j] = calib->hessian[j * n + j];
        dead[j] = diag[j] == 0.0;
        if (dead[j])
            diag[j] = 1.0;
        mean_diag += diag[j];
        perm[j] = j;
    }
    mean_diag /= (double)n;
    if (wp->variant == GPTQ_ACT) {
        pthread_mutex_lock(&sort_lock);
        sort_key = diag;
        qsort(perm, (size_t)n, sizeof *perm, by_decreasing_key);
        pthread_mutex_unlock(&sort_lock);
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            h[i * n + j] = i == j ? diag[perm[i]] : (double)calib->hessian[perm[i] * n + perm[j]];
    double damp = GPTQ_DAMP * mean_diag;
    int tries = 0;
    while (!inverse_factor(h, damp, n, a)) {
        if (++tries > GPTQ_DAMP_RETRIES)
            return fr_q_fail(call, FRONTIER_ERR_INVALID,
                             "H + %g I is not positive definite after %d dampening retries",
                             damp, GPTQ_DAMP_RETRIES);
        damp *= 10.0;
        if (fr_q_host() && fr_q_host()->log)
            fr_q_host()->log(call, FRONTIER_LOG_WARN,
                             "H is not positive definite: dampening raised to %g x mean(diag H)",
                             damp / mean_diag);
    }
    for (int64_t i = 0; i < n * n; i++)
        u[i] = (float)a[i];

    gptq_job job = {.p = p, .variant = wp->variant, .w = w, .w_hat = w_hat, .u = u, .perm = perm,
                    .dead = dead, .rows = rows, .cols = cols, .group = fr_wrap_group_cols(p, cols)};
    job.block = job.group > GPTQ_BLOCK && p->granularity == FR_INT_GROUP ? job.group : GPTQ_BLOCK;
    job.groups_per_row = fr_q_ceil_div(cols, job.group);
    int64_t chunks = fr_q_ceil_div(rows, GPTQ_ROWS);
    job.scratch_per_chunk = (size_t)GPTQ_ROWS * (2 * (size_t)cols + 2 * (size_t)job.block +
                                                 2 * (size_t)job.groups_per_row);
    job.scratch = fr_q_scratch(call, (size_t)chunks * job.scratch_per_chunk * sizeof(float));
    if (!job.scratch)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
    fr_q_parallel_for(call, chunks, 1, gptq_chunk, &job);
    return FRONTIER_OK;
}

static int gptq_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&gptq_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_gptq_ggml_types[] = {{NULL, NULL}};

/* config_traits: the base's pack-quantized layout (the error-fed codes are
 * its own: the writers refuse a calibrated configuration); needs the
 * tensor's Hessian, so no row blocks. */
static int gptq_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                              frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 1, t, call);
}

const frontier_quantizer *fr_gptq_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "gptq",
        .description = "GPTQ over the int group/row configurations (needs H); -act: act-order "
                       "with static groups; -refscale: the reference code's group scales",
        .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_HESSIAN,
        .size_bits = gptq_size_bits,
        .quantize_cpu = gptq_quantize_cpu,
        .config_traits = gptq_config_traits,
    };
    return fr_wrap_entry(&gptq_quantizer, &gptq_list, &family, host);
}
