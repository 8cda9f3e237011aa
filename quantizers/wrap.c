/* What the calibrated and optimised variants share (wrap.h). */
#include "wrap.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* recursive: building rht_gptq's list calls gptq's entry, which builds
 * (or finds) its own under the same lock */
static pthread_mutex_t build_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* A heap copy of the concatenation, or NULL. */
static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static char *params_of(const fr_wrap_list *list, const frontier_config *base, int variant)
{
    const char *extra = list->extra_json ? list->extra_json(variant) : NULL;
    const char *bp = base->params_json ? base->params_json : "{}";
    size_t n = strlen(list->method) + strlen(base->name) + strlen(bp) + (extra ? strlen(extra) : 0) + 64;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "{\"method\":\"%s\",\"base\":\"%s\"%s%s,\"base_params\":%s}", list->method,
                 base->name, extra ? "," : "", extra ? extra : "", bp);
    return s;
}

/* Visits every candidate base (kernel families, then the requested host
 * families); with `out` NULL it only counts. */
static int visit(fr_wrap_list *list, const frontier_host_api *host, size_t *count, int fill)
{
    size_t n = 0;
    for (int f = 0; f < FR_FAMILY_COUNT; f++) {
        if (f >= FR_KERNEL_FAMILY_COUNT && !(list->with_host_families & (1 << f)))
            continue;
        const frontier_quantizer *bq = fr_builtin_families[f].entry(host);
        if (!bq)
            return 0;
        for (size_t c = 0; c < bq->n_configs; c++) {
            const frontier_config *base = &bq->configs[c];
            const char *suffix = "";
            int variants = list->accept(f, base, 0, &suffix);
            for (int v = 0; v < variants; v++) {
                list->accept(f, base, v, &suffix);
                if (fill) {
                    frontier_config *cfg = &list->configs[n];
                    fr_wrap_params *p = &list->params[n];
                    *p = (fr_wrap_params){.base_family = f, .base_q = bq, .base = base, .variant = v};
                    char *name = join(list->prefix, base->name, suffix);
                    char *params = params_of(list, base, v);
                    if (!name || !params) {
                        free(name);
                        free(params);
                        return 0;
                    }
                    *cfg = (frontier_config){.name = name, .nominal_bits = base->nominal_bits,
                                             .params_json = params, .impl = p};
                }
                n++;
            }
        }
    }
    *count = n;
    return 1;
}

int fr_wrap_build(fr_wrap_list *list, const frontier_host_api *host)
{
    pthread_mutex_lock(&build_lock);
    int ok = list->configs != NULL;
    if (!ok) {
        size_t n = 0;
        ok = visit(list, host, &n, 0);
        frontier_config *configs = ok ? calloc(n ? n : 1, sizeof *configs) : NULL;
        fr_wrap_params *params = ok ? calloc(n ? n : 1, sizeof *params) : NULL;
        list->configs = configs;
        list->params = params;
        ok = configs && params && visit(list, host, &list->n_configs, 1);
        if (!ok) {
            /* names made before the failure stay allocated: this only
             * happens when memory runs out at start-up */
            free(configs);
            free(params);
            list->configs = NULL;
            list->params = NULL;
            list->n_configs = 0;
        }
    }
    pthread_mutex_unlock(&build_lock);
    return ok;
}

const frontier_quantizer *fr_wrap_entry(frontier_quantizer *q, fr_wrap_list *list,
                                        const fr_wrap_family *family,
                                        const frontier_host_api *host)
{
    if (!fr_q_set_host(host))
        return NULL;
    /* filled once, under the build lock: entries are called from several
     * threads while others read the descriptor */
    pthread_mutex_lock(&build_lock);
    const frontier_quantizer *out = NULL;
    if (fr_wrap_build(list, host)) {
        if (!q->struct_size)
            *q = (frontier_quantizer){
                .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
                .struct_size = sizeof(frontier_quantizer),
                .name = family->name,
                .description = family->description,
                .version = FRONTIER_VERSION,
                .flags = family->flags,
                .n_configs = list->n_configs,
                .configs = list->configs,
                .size_bits = family->size_bits,
                .quantize_cpu = family->quantize_cpu,
                .config_traits = family->config_traits,
            };
        out = q;
    }
    pthread_mutex_unlock(&build_lock);
    return out;
}

int fr_wrap_config_traits(const frontier_config *cfg, int keep_storage,
                          frontier_config_traits *t, frontier_call *call)
{
    const fr_wrap_params *p = cfg->impl;
    const frontier_quantizer *bq = p->base_q;
    if (!keep_storage || !bq->config_traits)
        return FRONTIER_OK;
    frontier_config_traits base;
    memset(&base, 0, sizeof base);
    base.struct_size = (uint32_t)sizeof base;
    int rc = bq->config_traits(p->base, &base, call);
    if (rc != FRONTIER_OK)
        return rc;
    t->storage = base.storage;
    t->storage_bits = base.storage_bits;
    t->storage_group_size = base.storage_group_size;
    t->storage_symmetric = base.storage_symmetric;
    t->storage_fp8_scope = base.storage_fp8_scope;
    return FRONTIER_OK;
}

int fr_wrap_size_bits(const frontier_quantizer *q, const frontier_config *cfg, int64_t rows,
                      int64_t cols, uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(q, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_wrap_params *p = cfg->impl;
    return p->base_q->size_bits(p->base, rows, cols, total_bits, call);
}

const fr_int_params *fr_wrap_int_base(const fr_wrap_params *p)
{
    if (p->base_family != FR_FAMILY_INT)
        return NULL;
    const fr_int_params *ip = p->base->impl;
    return ip->granularity == FR_INT_TENSOR ? NULL : ip;
}

int fr_wrap_is_int_grouped(int family, const frontier_config *base)
{
    if (family != FR_FAMILY_INT)
        return 0;
    const fr_int_params *ip = base->impl;
    return ip->granularity != FR_INT_TENSOR;
}

int64_t fr_wrap_group_cols(const fr_int_params *p, int64_t cols)
{
    return p->granularity == FR_INT_ROW ? cols : p->group_size;
}

void fr_wrap_range(const float *x, int64_t n, int64_t stride, float *lo, float *hi)
{
    float l = 0.0f, h = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i * stride];
        l = v < l ? v : l;
        h = v > h ? v : h;
    }
    *lo = l;
    *hi = h;
}

int fr_wrap_check_finite(const float *w, int64_t rows, int64_t cols, frontier_call *call)
{
    fr_q_bad bad;
    fr_q_bad_init(&bad);
    int64_t n = rows * cols;
    for (int64_t i = 0; i < n; i++)
        if (fr_q_nonfinite(w[i])) {
            fr_q_bad_note(&bad, i);
            break;
        }
    return fr_q_bad_report(&bad, cols, call);
}

double fr_wrap_group_error(const fr_int_params *p, fr_int_qparams qp, const float *x, float *x_hat,
                           int64_t n, const float *wt)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float r = fr_wrap_int_dequant(p, qp, x[i]);
        double d = (double)x[i] - (double)r;
        e += (wt ? (double)wt[i] : 1.0) * d * d;
        if (x_hat)
            x_hat[i] = r;
    }
    return e;
}

int fr_wrap_search_group(const fr_int_params *p, const float *x, float *x_hat, int64_t n,
                         const float *wt)
{
    float lo, hi;
    fr_wrap_range(x, n, 1, &lo, &hi);
    int best = 0;
    double best_e = INFINITY;
    fr_int_qparams best_qp = {0.0f, 0.0f};
    for (int k = 0; k < FR_WRAP_SHRINKS; k++) {
        float slo, shi;
        fr_wrap_shrunk(lo, hi, fr_wrap_shrink(k), &slo, &shi);
        fr_int_qparams qp = fr_wrap_int_qparams(p, slo, shi);
        double e = fr_wrap_group_error(p, qp, x, NULL, n, wt);
        if (e < best_e) {
            best_e = e;
            best = k;
            best_qp = qp;
        }
    }
    fr_wrap_group_error(p, best_qp, x, x_hat, n, NULL);
    return best;
}

/* One job per tensor: every group of an int base through group_fn. */
typedef struct group_job {
    const fr_int_params *p;
    const float *w;
    float *w_hat;
    const float *col_weight; /* [cols] or NULL */
    int64_t cols, group, groups_per_row;
    fr_wrap_group_fn group_fn;
} group_job;

static void group_range(void *arg, int64_t begin, int64_t end)
{
    group_job *job = arg;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->groups_per_row;
        int64_t start = (u % job->groups_per_row) * job->group;
        int64_t n = job->cols - start < job->group ? job->cols - start : job->group;
        int64_t at = row * job->cols + start;
        job->group_fn(job->p, job->w + at, job->w_hat + at, n,
                      job->col_weight ? job->col_weight + start : NULL);
    }
}

int fr_wrap_per_group(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                      float *w_hat, int64_t rows, int64_t cols, const float *col_weight,
                      fr_wrap_group_fn group_fn, int64_t cost, frontier_call *call)
{
    int rc = fr_q_check_call(q, cfg, w, w_hat, rows, cols, call);
    if (rc == FRONTIER_OK)
        rc = fr_wrap_check_finite(w, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_int_params *p = fr_wrap_int_base(cfg->impl);
    group_job job = {.p = p, .w = w, .w_hat = w_hat, .col_weight = col_weight, .cols = cols,
                     .group = fr_wrap_group_cols(p, cols), .group_fn = group_fn};
    job.groups_per_row = fr_q_ceil_div(cols, job.group);
    fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(job.group * cost), group_range,
                      &job);
    return FRONTIER_OK;
}

static void search_one(const fr_int_params *p, const float *x, float *x_hat, int64_t n,
                       const float *wt)
{
    fr_wrap_search_group(p, x, x_hat, n, wt);
}

int fr_wrap_search_tensor(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                          float *w_hat, int64_t rows, int64_t cols, const float *col_weight,
                          frontier_call *call)
{
    return fr_wrap_per_group(q, cfg, w, w_hat, rows, cols, col_weight, search_one, 1, call);
}
