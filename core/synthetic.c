/* Synthetic sources: spec parsing and CPU generation (docs/synthetic.md). */
#include "synthetic.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dist_names[FR_SYN_COUNT] = {
    [FR_SYN_GAUSSIAN] = "gaussian",
    [FR_SYN_LAPLACE] = "laplace",
    [FR_SYN_STUDENT_T3] = "student-t3",
    [FR_SYN_OUTLIERS] = "outliers",
};

/* At most this many tensors in one spec (a guard against "*1000000000"). */
#define FR_SYN_MAX_TENSORS 1000000

typedef struct synthetic_impl {
    uint64_t seed;
    int *dist; /* per tensor */
} synthetic_impl;

const char *fr_synthetic_dist_name(int dist)
{
    return dist >= 0 && dist < FR_SYN_COUNT ? dist_names[dist] : "unknown";
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

typedef struct syn_entry {
    int dist;
    int dtype;
    int ndim;
    int64_t shape[FR_MAX_DIMS];
    int64_t numel;
    uint64_t count;
} syn_entry;

/* Parses one "DIST:SHAPE[:DTYPE][*COUNT]" of length len. */
static fr_status parse_entry(const char *s, size_t len, syn_entry *e, fr_error *err)
{
    memset(e, 0, sizeof *e);
    e->dtype = FR_DTYPE_F32;
    e->count = 1;
    const char *end = s + len;
    const char *colon = memchr(s, ':', len);
    if (!colon)
        return fr_fail(err, FR_E_USAGE,
                       "invalid synthetic tensor '%.*s': expected DIST:ROWSxCOLS", (int)len, s);
    size_t dlen = (size_t)(colon - s);
    e->dist = -1;
    for (int d = 0; d < FR_SYN_COUNT; d++)
        if (strlen(dist_names[d]) == dlen && !strncmp(s, dist_names[d], dlen))
            e->dist = d;
    if (e->dist < 0)
        return fr_fail(err, FR_E_USAGE,
                       "invalid synthetic tensor '%.*s': unknown distribution '%.*s' "
                       "(gaussian, laplace, student-t3, outliers)",
                       (int)len, s, (int)dlen, s);
    const char *p = colon + 1;
    /* optional *COUNT at the end */
    const char *star = memchr(p, '*', (size_t)(end - p));
    const char *shape_end = star ? star : end;
    if (star && (parse_u64(star + 1, (size_t)(end - star - 1), &e->count) != 0 || e->count == 0 ||
                 e->count > FR_SYN_MAX_TENSORS))
        return fr_fail(err, FR_E_USAGE,
                       "invalid synthetic tensor '%.*s': bad repeat count after '*'", (int)len, s);
    /* optional :DTYPE */
    const char *colon2 = memchr(p, ':', (size_t)(shape_end - p));
    if (colon2) {
        size_t tlen = (size_t)(shape_end - colon2 - 1);
        const char *t = colon2 + 1;
        if (tlen == 3 && !strncmp(t, "f32", 3))
            e->dtype = FR_DTYPE_F32;
        else if (tlen == 4 && !strncmp(t, "bf16", 4))
            e->dtype = FR_DTYPE_BF16;
        else if (tlen == 3 && !strncmp(t, "f16", 3))
            e->dtype = FR_DTYPE_F16;
        else
            return fr_fail(err, FR_E_USAGE,
                           "invalid synthetic tensor '%.*s': unknown dtype '%.*s' (f32, bf16, f16)",
                           (int)len, s, (int)tlen, t);
        shape_end = colon2;
    }
    e->numel = 1;
    const char *q = p;
    while (q <= shape_end) {
        const char *x = memchr(q, 'x', (size_t)(shape_end - q));
        const char *dim_end = x ? x : shape_end;
        uint64_t dim;
        if (e->ndim == FR_MAX_DIMS)
            return fr_fail(err, FR_E_USAGE,
                           "invalid synthetic tensor '%.*s': more than %d dimensions", (int)len, s,
                           FR_MAX_DIMS);
        if (parse_u64(q, (size_t)(dim_end - q), &dim) != 0 || dim == 0 || dim > INT64_MAX)
            return fr_fail(err, FR_E_USAGE,
                           "invalid synthetic tensor '%.*s': dimensions must be positive integers "
                           "like 4096x4096",
                           (int)len, s);
        e->shape[e->ndim++] = (int64_t)dim;
        if (__builtin_mul_overflow(e->numel, (int64_t)dim, &e->numel) ||
            e->numel > INT64_MAX / 8)
            return fr_fail(err, FR_E_USAGE, "invalid synthetic tensor '%.*s': too many elements",
                           (int)len, s);
        if (!x)
            break;
        q = x + 1;
    }
    return FR_OK;
}

static const char *dtype_suffix(int dtype)
{
    return dtype == FR_DTYPE_BF16 ? ":bf16" : dtype == FR_DTYPE_F16 ? ":f16" : "";
}

/* Appends printf output to a growing string. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        size_t want = (*cap ? *cap * 2 : 128);
        while (want <= *len + (size_t)n)
            want *= 2;
        char *grown = realloc(*buf, want);
        if (!grown)
            return -1;
        *buf = grown;
        *cap = want;
    }
}

static void impl_free(void *p)
{
    synthetic_impl *impl = p;
    if (impl)
        free(impl->dist);
    free(impl);
}

/* fr_source's hook: fr_tensor_load_f32 on a synthetic tensor (serial; the
 * CPU executor calls fr_synthetic_load with its thread pool instead). */
static fr_status generate_f32(const fr_source *src, const fr_tensor *t, float *dst, fr_error *err)
{
    return fr_synthetic_load(src, t, dst, NULL, err);
}

void fr_synthetic_close(fr_source *src)
{
    /* fr_source_close frees what fr_synthetic_open allocated: the path, the
     * tensors and their names, and impl through the impl_free hook */
    fr_source_close(src);
}

fr_status fr_synthetic_open(const char *spec, uint64_t seed, fr_source **out, fr_error *err)
{
    fr_status st = FR_OK;
    syn_entry *entries = NULL;
    size_t n_entries = 0;
    char *canon = NULL;
    size_t canon_len = 0, canon_cap = 0;
    fr_source *src = NULL;
    uint64_t n_tensors = 0;
    *out = NULL;

    if (!spec || !*spec)
        return fr_fail(err, FR_E_USAGE, "empty --synthetic spec");
    size_t spec_len = strlen(spec);
    entries = calloc(spec_len / 2 + 1, sizeof *entries);
    if (!entries)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate the synthetic spec");
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        st = parse_entry(p, len, &entries[n_entries], err);
        if (st != FR_OK)
            goto cleanup;
        n_tensors += entries[n_entries].count;
        if (n_tensors > FR_SYN_MAX_TENSORS) {
            st = fr_fail(err, FR_E_USAGE, "invalid --synthetic spec: more than %d tensors",
                         FR_SYN_MAX_TENSORS);
            goto cleanup;
        }
        n_entries++;
        if (!comma)
            break;
        p = comma + 1;
    }

    src = calloc(1, sizeof *src);
    synthetic_impl *impl = calloc(1, sizeof *impl);
    if (src) {
        src->impl = impl;
        src->impl_free = impl_free;
        src->generate_f32 = generate_f32;
    }
    if (!src || !impl || !(src->tensors = calloc(n_tensors, sizeof *src->tensors)) ||
        !(impl->dist = calloc(n_tensors, sizeof *impl->dist))) {
        if (!src)
            free(impl);
        st = fr_fail(err, FR_E_NOMEM, "cannot allocate the synthetic source");
        goto cleanup;
    }
    impl->seed = seed;
    src->kind = FR_SOURCE_SYNTHETIC;
    for (size_t e = 0; e < n_entries; e++) {
        const syn_entry *en = &entries[e];
        if (e && append(&canon, &canon_len, &canon_cap, ",") != 0)
            goto nomem;
        if (append(&canon, &canon_len, &canon_cap, "%s:", dist_names[en->dist]) != 0)
            goto nomem;
        for (int d = 0; d < en->ndim; d++)
            if (append(&canon, &canon_len, &canon_cap, "%s%" PRId64, d ? "x" : "", en->shape[d]))
                goto nomem;
        if (append(&canon, &canon_len, &canon_cap, "%s", dtype_suffix(en->dtype)) != 0)
            goto nomem;
        if (en->count > 1 &&
            append(&canon, &canon_len, &canon_cap, "*%" PRIu64, en->count) != 0)
            goto nomem;
        for (uint64_t c = 0; c < en->count; c++) {
            size_t k = src->n_tensors;
            fr_tensor *t = &src->tensors[k];
            char name[64];
            snprintf(name, sizeof name, "synthetic.%zu.%s", k, dist_names[en->dist]);
            if (!(t->name = strdup(name)))
                goto nomem;
            src->n_tensors++;
            t->dtype = (fr_dtype)en->dtype;
            snprintf(t->dtype_name, sizeof t->dtype_name, "%s",
                     en->dtype == FR_DTYPE_BF16 ? "BF16" : en->dtype == FR_DTYPE_F16 ? "F16" : "F32");
            t->ndim = en->ndim;
            memcpy(t->shape, en->shape, sizeof t->shape);
            t->numel = en->numel;
            t->cls = FR_CLASS_OTHER;
            t->file = -1;
            t->offset = 0;
            t->nbytes = (uint64_t)en->numel * (en->dtype == FR_DTYPE_F32 ? 4u : 2u);
            t->encoding = FR_ENC_SYNTHETIC;
            t->skip_reason = NULL;
            t->scale_tensor = -1;
            t->synthetic_id = k;
            impl->dist[k] = en->dist;
        }
    }
    /* The seed is part of the source's identity (resume, merge). */
    if (append(&canon, &canon_len, &canon_cap, ";seed=%" PRIu64, seed) != 0)
        goto nomem;
    src->path = canon;
    canon = NULL;
    *out = src;
    src = NULL;
    goto cleanup;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "cannot allocate the synthetic source");
cleanup:
    fr_synthetic_close(src);
    free(canon);
    free(entries);
    return st;
}

fr_status fr_synthetic_params_of(const fr_source *src, const fr_tensor *t,
                                 fr_synthetic_params *out, fr_error *err)
{
    const synthetic_impl *impl = src ? src->impl : NULL;
    if (!src || src->kind != FR_SOURCE_SYNTHETIC || !impl || t->encoding != FR_ENC_SYNTHETIC ||
        t->synthetic_id >= src->n_tensors)
        return fr_fail(err, FR_E_FAIL, "'%s' is not a synthetic tensor", t->name);
    out->dist = impl->dist[t->synthetic_id];
    out->dtype = t->dtype;
    out->seed = impl->seed;
    out->tensor = t->synthetic_id;
    return FR_OK;
}

typedef struct gen_job {
    fr_synthetic_params p;
    float *dst;
    int64_t base; /* element index of dst[0] */
} gen_job;

static void generate_range(void *arg, int64_t begin, int64_t end)
{
    const gen_job *job = arg;
    for (int64_t i = begin; i < end; i++)
        job->dst[i] = fr_synthetic_element(job->p.dist, job->p.dtype, job->p.seed, job->p.tensor,
                                           (uint64_t)(job->base + i));
}

fr_status fr_synthetic_load(const fr_source *src, const fr_tensor *t, float *dst, fr_pool *pool,
                            fr_error *err)
{
    gen_job job = {.dst = dst};
    fr_status st = fr_synthetic_params_of(src, t, &job.p, err);
    if (st != FR_OK)
        return st;
    fr_parallel_for(pool, t->numel, 1 << 16, generate_range, &job);
    return FR_OK;
}

fr_status fr_synthetic_load_range(const fr_source *src, const fr_tensor *t, int64_t begin,
                                  int64_t n, float *dst, fr_pool *pool, fr_error *err)
{
    gen_job job = {.dst = dst, .base = begin};
    fr_status st = fr_synthetic_params_of(src, t, &job.p, err);
    if (st != FR_OK)
        return st;
    if (begin < 0 || n < 0 || begin > t->numel || n > t->numel - begin)
        return fr_fail(err, FR_E_FAIL, "elements [%lld, %lld) of '%s': it has %lld",
                       (long long)begin, (long long)(begin + n), t->name, (long long)t->numel);
    fr_parallel_for(pool, n, 1 << 16, generate_range, &job);
    return FR_OK;
}
