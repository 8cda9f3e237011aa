#include "metrics.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

void fr_error_sums_init(frontier_error_sums *sums)
{
    sums->sq_err = sums->sq_ref = sums->sq_hat = sums->dot = sums->max_abs_err = 0.0;
}

void fr_error_sums_add(frontier_error_sums *out, const frontier_error_sums *more)
{
    fr_error_sums_merge(out, more);
}

typedef struct sums_job {
    const float *w, *w_hat;
    frontier_error_sums *partial; /* one per chunk */
} sums_job;

static void sums_chunk(void *arg, int64_t begin, int64_t end)
{
    sums_job *job = arg;
    FR_ERROR_SUMS_OF_RANGE(&job->partial[begin / FR_METRICS_CHUNK], begin, end, job->w[i],
                           job->w_hat[i]);
}

fr_status fr_error_sums_accumulate(const float *w, const float *w_hat, int64_t n, fr_pool *pool,
                                   frontier_error_sums *out, fr_error *err)
{
    if (n <= 0)
        return FR_OK;
    int64_t n_chunks = fr_error_sums_chunks(n);
    sums_job job = {.w = w, .w_hat = w_hat};
    job.partial = malloc((size_t)n_chunks * sizeof *job.partial);
    if (!job.partial)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate %lld partial error sums",
                       (long long)n_chunks);
    fr_parallel_for(pool, n, FR_METRICS_CHUNK, sums_chunk, &job);
    for (int64_t c = 0; c < n_chunks; c++)
        fr_error_sums_add(out, &job.partial[c]);
    free(job.partial);
    return FR_OK;
}

void fr_metrics_from_sums(const frontier_error_sums *s, fr_metrics *m)
{
    if (s->sq_ref > 0.0)
        m->rel_err = sqrt(s->sq_err / s->sq_ref);
    else
        m->rel_err = s->sq_err > 0.0 ? INFINITY : 0.0;
    if (m->rel_err == 0.0)
        m->sqnr_db = INFINITY;
    else if (isinf(m->rel_err))
        m->sqnr_db = -INFINITY;
    else
        m->sqnr_db = -20.0 * log10(m->rel_err);
    m->max_abs_err = s->max_abs_err;
    if (!(s->sq_hat > 0.0))
        m->cosine = s->sq_ref > 0.0 ? 0.0 : 1.0;
    else if (!(s->sq_ref > 0.0))
        m->cosine = 0.0;
    else {
        /* sqrt(sq_ref * sq_hat) as plugin.h writes it (exactly 1 for an exact
         * reconstruction); two square roots only where the product overflows
         * or underflows */
        double prod = s->sq_ref * s->sq_hat;
        double denom = isfinite(prod) && prod > DBL_MIN ? sqrt(prod)
                                                        : sqrt(s->sq_ref) * sqrt(s->sq_hat);
        double c = s->dot / denom;
        m->cosine = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
    }
}

typedef struct output_job {
    const float *w, *w_hat;
    const float *hessian; /* the trace with H, or */
    const float *diag;    /* with its diagonal alone (hessian NULL) */
    int64_t rows, cols;
    double *partial;   /* one per chunk of FR_OUTPUT_ROWS rows */
    atomic_int failed; /* a chunk could not allocate its scratch */
} output_job;

/* Rows [r0, r0 + nr) with H: D = w - w_hat (float32; the difference of two
 * floats rounds once) into d, M = D H by sgemm into m, sum of M .* D in
 * double. */
static double hessian_rows(const output_job *job, int64_t r0, int64_t nr, float *d, float *m)
{
    const int64_t cols = job->cols;
    const float *w = job->w + r0 * cols;
    const float *h = job->w_hat ? job->w_hat + r0 * cols : NULL;
    for (int64_t i = 0; i < nr * cols; i++)
        d[i] = h ? w[i] - h[i] : w[i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)cols, (int)cols, 1.0f, d,
                (int)cols, job->hessian, (int)cols, 0.0f, m, (int)cols);
    double sum = 0.0;
    for (int64_t i = 0; i < nr * cols; i++)
        sum += (double)m[i] * (double)d[i];
    return sum;
}

/* The same rows with the diagonal alone: sum of diag_j D_ij^2 in double,
 * in element order, D_ij the float32 difference as above. */
static double diagonal_rows(const output_job *job, int64_t r0, int64_t nr)
{
    const int64_t cols = job->cols;
    double sum = 0.0;
    for (int64_t r = r0; r < r0 + nr; r++) {
        const float *w = job->w + r * cols;
        const float *h = job->w_hat ? job->w_hat + r * cols : NULL;
        for (int64_t j = 0; j < cols; j++) {
            const float d = h ? w[j] - h[j] : w[j];
            sum += (double)job->diag[j] * ((double)d * (double)d);
        }
    }
    return sum;
}

/* Chunks [begin, end) of FR_OUTPUT_ROWS rows, each chunk's term into
 * partial[c]. */
static void output_chunks(void *arg, int64_t begin, int64_t end)
{
    output_job *job = arg;
    const int64_t cols = job->cols;
    float *d = NULL;
    if (job->hessian && !(d = malloc((size_t)FR_OUTPUT_ROWS * (size_t)cols * 2 * sizeof(float)))) {
        atomic_store(&job->failed, 1);
        return;
    }
    for (int64_t c = begin; c < end; c++) {
        const int64_t r0 = c * FR_OUTPUT_ROWS;
        const int64_t nr = job->rows - r0 < FR_OUTPUT_ROWS ? job->rows - r0 : FR_OUTPUT_ROWS;
        job->partial[c] = job->hessian
                              ? hessian_rows(job, r0, nr, d, d + (size_t)FR_OUTPUT_ROWS * (size_t)cols)
                              : diagonal_rows(job, r0, nr);
    }
    free(d);
}

/* The chunks in parallel, their terms added to *out in chunk order. */
static fr_status output_accumulate(output_job *job, fr_pool *pool, double *out, fr_error *err)
{
    const int64_t rows = job->rows, cols = job->cols;
    if (rows <= 0 || cols <= 0)
        return FR_OK;
    if (job->hessian && cols > INT32_MAX / FR_OUTPUT_ROWS)
        return fr_fail(err, FR_E_USAGE, "output error: %lld input columns are more than BLAS "
                       "takes", (long long)cols);
    const int64_t n_chunks = rows / FR_OUTPUT_ROWS + (rows % FR_OUTPUT_ROWS != 0);
    atomic_init(&job->failed, 0);
    job->partial = malloc((size_t)n_chunks * sizeof *job->partial);
    if (!job->partial)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate %lld partial output errors",
                       (long long)n_chunks);
    fr_parallel_for(pool, n_chunks, 1, output_chunks, job);
    if (atomic_load(&job->failed)) {
        free(job->partial);
        return fr_fail(err, FR_E_NOMEM, "cannot allocate the output error's scratch (%lld x %lld "
                       "floats)", (long long)FR_OUTPUT_ROWS * 2, (long long)cols);
    }
    for (int64_t c = 0; c < n_chunks; c++)
        *out += job->partial[c];
    free(job->partial);
    return FR_OK;
}

fr_status fr_output_error_term(const float *w, const float *w_hat, int64_t rows, int64_t cols,
                               const float *hessian, fr_pool *pool, double *out, fr_error *err)
{
    *out = 0.0;
    return fr_output_error_accumulate(w, w_hat, rows, cols, hessian, pool, out, err);
}

fr_status fr_output_error_accumulate(const float *w, const float *w_hat, int64_t rows,
                                     int64_t cols, const float *hessian, fr_pool *pool,
                                     double *out, fr_error *err)
{
    output_job job = {.w = w, .w_hat = w_hat, .hessian = hessian, .rows = rows, .cols = cols};
    return output_accumulate(&job, pool, out, err);
}

fr_status fr_output_error_diag_accumulate(const float *w, const float *w_hat, int64_t rows,
                                          int64_t cols, const float *diag, fr_pool *pool,
                                          double *out, fr_error *err)
{
    output_job job = {.w = w, .w_hat = w_hat, .diag = diag, .rows = rows, .cols = cols};
    return output_accumulate(&job, pool, out, err);
}
