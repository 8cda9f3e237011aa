#include "common.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>

static const frontier_host_api *q_host;

int fr_q_set_host(const frontier_host_api *host)
{
    /* the built-ins use every v1 service */
    if (!host || host->abi_version < 1 || host->struct_size < sizeof(frontier_host_api) ||
        !host->set_error || !host->scratch_alloc || !host->parallel_for)
        return 0;
    q_host = host;
    return 1;
}

const frontier_host_api *fr_q_host(void)
{
    return q_host;
}

void fr_q_parallel_for(frontier_call *call, int64_t n, int64_t grain, frontier_range_fn fn,
                       void *arg)
{
    if (grain < 1)
        grain = 1;
    if (q_host) {
        q_host->parallel_for(call, n, grain, fn, arg);
        return;
    }
    for (int64_t b = 0; b < n; b += grain)
        fn(arg, b, b + grain < n ? b + grain : n);
}

int fr_q_fail(frontier_call *call, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (q_host)
        q_host->set_error(call, "%s", msg);
    return code;
}

void *fr_q_scratch(frontier_call *call, size_t bytes)
{
    return q_host ? q_host->scratch_alloc(call, bytes) : NULL;
}

int64_t fr_q_grain(int64_t unit_elems)
{
    if (unit_elems < 1)
        unit_elems = 1;
    int64_t grain = FR_Q_CHUNK_ELEMS / unit_elems;
    return grain < 1 ? 1 : grain;
}

int fr_q_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int fr_q_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

int fr_q_check_shape(const frontier_quantizer *q, const frontier_config *cfg, int64_t rows,
                     int64_t cols, frontier_call *call)
{
    if (!q_host)
        return FRONTIER_ERR_INTERNAL; /* entry not called: no way to report */
    if (!cfg || cfg < q->configs || cfg >= q->configs + q->n_configs)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "%s: configuration '%s' is not one of mine",
                         q->name, cfg && cfg->name ? cfg->name : "(null)");
    if (rows < 1 || cols < 1)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "empty tensor (%lld x %lld)",
                         (long long)rows, (long long)cols);
    if (rows > INT64_MAX / cols)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "%lld x %lld elements overflow 64 bits",
                         (long long)rows, (long long)cols);
    return FRONTIER_OK;
}

int fr_q_check_call(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                    const float *w_hat, int64_t rows, int64_t cols, frontier_call *call)
{
    int rc = fr_q_check_shape(q, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!w || !w_hat)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no input or output buffer");
    return FRONTIER_OK;
}

int fr_q_size_bits(frontier_call *call, int64_t rows, int64_t cols, uint64_t elem_bits,
                   int64_t unit_rows, int64_t unit_cols, uint64_t bits_per_unit,
                   uint64_t extra_bits, uint64_t *total_bits, uint64_t *units)
{
    uint64_t numel, codes, n_units = 0, unit_bits = 0, total;
    int ok = fr_q_mul_u64((uint64_t)rows, (uint64_t)cols, &numel) &&
             fr_q_mul_u64(numel, elem_bits, &codes);
    if (ok && unit_rows > 0 && unit_cols > 0)
        ok = fr_q_mul_u64((uint64_t)fr_q_ceil_div(rows, unit_rows),
                          (uint64_t)fr_q_ceil_div(cols, unit_cols), &n_units) &&
             fr_q_mul_u64(n_units, bits_per_unit, &unit_bits);
    ok = ok && fr_q_add_u64(codes, unit_bits, &total) && fr_q_add_u64(total, extra_bits, &total);
    if (!ok)
        return fr_q_fail(call, FRONTIER_ERR_INVALID,
                         "size of a %lld x %lld tensor overflows 64 bits", (long long)rows,
                         (long long)cols);
    *total_bits = total;
    if (units)
        *units = n_units;
    return FRONTIER_OK;
}

void fr_q_bad_init(fr_q_bad *bad)
{
    atomic_init(&bad->first, INT64_MAX);
}

void fr_q_bad_note(fr_q_bad *bad, int64_t index)
{
    int64_t seen = atomic_load(&bad->first);
    while (index < seen && !atomic_compare_exchange_weak(&bad->first, &seen, index)) {
    }
}

int fr_q_bad_report(fr_q_bad *bad, int64_t cols, frontier_call *call)
{
    int64_t first = atomic_load(&bad->first);
    if (first == INT64_MAX)
        return FRONTIER_OK;
    return fr_q_fail(call, FRONTIER_ERR_INVALID, "non-finite weight at row %lld, column %lld",
                     (long long)(first / cols), (long long)(first % cols));
}

typedef struct range_job {
    const float *w;
    int64_t n;
    float *lo, *hi; /* one per chunk */
    fr_q_bad bad;
} range_job;

static void range_chunk(void *arg, int64_t begin, int64_t end)
{
    range_job *job = arg;
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int64_t i = begin; i < end; i++) {
        float x = job->w[i];
        if (fr_q_nonfinite(x)) {
            fr_q_bad_note(&job->bad, i);
            continue;
        }
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    int64_t chunk = begin / FR_Q_CHUNK_ELEMS;
    job->lo[chunk] = lo;
    job->hi[chunk] = hi;
}

int fr_q_tensor_range(frontier_call *call, const float *w, int64_t n, int64_t cols, float *lo,
                      float *hi)
{
    range_job job = {.w = w, .n = n};
    int64_t n_chunks = fr_q_ceil_div(n, FR_Q_CHUNK_ELEMS);
    *lo = FLT_MAX;
    *hi = -FLT_MAX;
    if (n <= 0)
        return FRONTIER_OK;
    job.lo = fr_q_scratch(call, 2 * (size_t)n_chunks * sizeof(float));
    if (!job.lo)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "cannot allocate %lld partial ranges",
                         (long long)n_chunks);
    job.hi = job.lo + n_chunks;
    fr_q_bad_init(&job.bad);
    fr_q_parallel_for(call, n, FR_Q_CHUNK_ELEMS, range_chunk, &job);
    int rc = fr_q_bad_report(&job.bad, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    for (int64_t c = 0; c < n_chunks; c++) {
        *lo = job.lo[c] < *lo ? job.lo[c] : *lo;
        *hi = job.hi[c] > *hi ? job.hi[c] : *hi;
    }
    return FRONTIER_OK;
}
