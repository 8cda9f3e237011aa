#include "metrics.h"

#include <float.h>
#include <math.h>
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
