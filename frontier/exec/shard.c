/*
 * Sharding a plan over devices (frontier/exec/shard.h).
 *
 * The split is static: a sweep knows every item's cost before it starts
 * (stored bytes x configurations: the fused GPU sweep and the CPU
 * references both scale with it), and the longest-processing-time rule
 * (largest first, each to the least loaded shard) finishes within 4/3 of
 * the best possible makespan (Graham, 1969). A static split keeps each
 * executor's own streaming and batching over its whole share.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/shard.h"

#ifdef FRONTIER_HAVE_CUDA
#include "kernels/launchers.h" /* fr_cuda_device_count */
#endif

double fr_shard_cost(const fr_sweep_item *it)
{
    uint64_t bytes = it->tensor->nbytes ? it->tensor->nbytes : (uint64_t)it->tensor->numel * 4u;
    return (double)bytes * (double)(it->n_configs ? it->n_configs : 1);
}

static const double *sort_cost; /* qsort has no context argument in C11 */

static int by_cost_desc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (sort_cost[i] != sort_cost[j])
        return sort_cost[i] > sort_cost[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

fr_status fr_shard_balance(const fr_sweep_item *items, size_t n_items, size_t n_shards,
                           size_t *shard, double *load, fr_error *err)
{
    if (n_shards == 0)
        return fr_fail(err, FR_E_FAIL, "no shard to balance over");
    double *cost = calloc(n_items + 1, sizeof *cost);
    size_t *order = calloc(n_items + 1, sizeof *order);
    double *total = calloc(n_shards, sizeof *total);
    if (!cost || !order || !total) {
        free(cost);
        free(order);
        free(total);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_items; i++) {
        cost[i] = fr_shard_cost(&items[i]);
        order[i] = i;
    }
    sort_cost = cost;
    qsort(order, n_items, sizeof *order, by_cost_desc);
    for (size_t k = 0; k < n_items; k++) {
        size_t best = 0;
        for (size_t s = 1; s < n_shards; s++)
            if (total[s] < total[best])
                best = s;
        shard[order[k]] = best;
        total[best] += cost[order[k]];
    }
    if (load)
        memcpy(load, total, sizeof *total * n_shards);
    free(cost);
    free(order);
    free(total);
    return FR_OK;
}

/* ---- devices ---- */

static int device_count(void)
{
#ifdef FRONTIER_HAVE_CUDA
    return fr_cuda_device_count();
#else
    return -1; /* built without CUDA */
#endif
}

#define DEVICE_FORMS "auto, cpu, cuda, cuda:N, cuda:all or cuda:N,M,..."

/* The numbers of "N,M,..." into list; FR_E_USAGE when malformed or repeated. */
static fr_status parse_list(const char *text, const char *list_text, fr_devices *list,
                            fr_error *err)
{
    const char *p = list_text;
    list->n = 0;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > 1024 || (*end && *end != ','))
            return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (" DEVICE_FORMS ")", text);
        for (int i = 0; i < list->n; i++)
            if (list->id[i] == (int)v)
                return fr_fail(err, FR_E_USAGE, "invalid --device '%s': device %ld is listed twice",
                               text, v);
        if (list->n == FR_MAX_DEVICES)
            return fr_fail(err, FR_E_USAGE, "invalid --device '%s': more than %d devices", text,
                           FR_MAX_DEVICES);
        list->id[list->n++] = (int)v;
        if (!*end)
            return FR_OK;
        p = end + 1;
    }
}

/* This rank's part of a node's devices: device k of the list goes to local
 * rank k mod local_size; with fewer devices than ranks, ranks share them. */
static void share(const fr_devices *all, int local_rank, int local_size, fr_devices *out)
{
    out->n = 0;
    if (local_size <= 1) {
        *out = *all;
        return;
    }
    if (all->n < local_size) {
        out->id[out->n++] = all->id[local_rank % all->n];
        return;
    }
    for (int k = local_rank; k < all->n; k += local_size)
        out->id[out->n++] = all->id[k];
}

fr_status fr_devices_parse(const char *text, int local_rank, int local_size, fr_devices *out,
                           fr_error *err)
{
    const char *d = text ? text : "auto";
    memset(out, 0, sizeof *out);
    if (local_size < 1)
        local_size = 1;
    if (local_rank < 0 || local_rank >= local_size)
        local_rank = 0;
    if (!strcmp(d, "cpu"))
        return FR_OK;
    int is_auto = !strcmp(d, "auto");
    if (!is_auto && strcmp(d, "cuda") != 0 && strncmp(d, "cuda:", 5) != 0)
        return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (" DEVICE_FORMS ")", d);
    fr_devices asked = {0};
    int all = !strcmp(d, "cuda:all");
    if (!strncmp(d, "cuda:", 5) && !all) {
        fr_status st = parse_list(d, d + 5, &asked, err);
        if (st != FR_OK)
            return st;
    }
    int count = device_count();
    if (is_auto) {
        if (count > 0)
            out->id[out->n++] = local_rank % count;
        return FR_OK;
    }
    if (count < 0)
        return fr_fail(err, FR_E_DEVICE, "--device %s: this frontier was built without CUDA", d);
    if (count == 0)
        return fr_fail(err, FR_E_DEVICE, "--device %s: no CUDA device is available", d);
    for (int i = 0; i < asked.n; i++)
        if (asked.id[i] >= count)
            return fr_fail(err, FR_E_DEVICE, "--device %s: there are only %d CUDA devices", d,
                           count);
    if (!strcmp(d, "cuda")) {
        out->id[out->n++] = local_rank % count;
        return FR_OK;
    }
    out->spread = 1;
    if (all) {
        asked.n = count < FR_MAX_DEVICES ? count : FR_MAX_DEVICES;
        for (int i = 0; i < asked.n; i++)
            asked.id[i] = i;
    } else if (asked.n == 1 && !strchr(d, ',')) {
        *out = asked; /* cuda:N: that device, on every rank */
        return FR_OK;
    }
    share(&asked, local_rank, local_size, out);
    out->spread = 1;
    return FR_OK;
}

void fr_devices_name(const fr_devices *d, char *buf, size_t len)
{
    if (!len)
        return;
    if (d->n == 0) {
        snprintf(buf, len, "cpu");
        return;
    }
    size_t at = (size_t)snprintf(buf, len, "cuda:%d", d->id[0]);
    for (int i = 1; i < d->n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, ",%d", d->id[i]);
}

/* ---- several devices of one process ---- */

typedef struct lanes lanes;

typedef struct lane {
    lanes *all;
    int index;
    fr_sweep_item *items;    /* this lane's share, in plan order */
    size_t *global;          /* their indices in the plan */
    size_t n_items;
    fr_executor_options opt;
    fr_cuda_run_stats stats;
    fr_status status;
    fr_error err;
    pthread_t thread;
    int started;
} lane;

struct lanes {
    fr_exec_fn run;
    const fr_registry *reg;
    const fr_sweep_sink *sink;
    pthread_mutex_t lock;    /* the sink sees one call at a time */
    uint8_t *done;           /* per plan item: item_done was reported */
    lane *lane;
};

static void lane_outcome(void *ctx, const fr_sweep_outcome *o)
{
    lane *l = ctx;
    fr_sweep_outcome g = *o;
    g.item = l->global[o->item];
    pthread_mutex_lock(&l->all->lock);
    l->all->sink->outcome(l->all->sink->ctx, &g);
    pthread_mutex_unlock(&l->all->lock);
}

static void lane_skipped(void *ctx, size_t item, fr_status st, const char *reason)
{
    lane *l = ctx;
    pthread_mutex_lock(&l->all->lock);
    if (l->all->sink->item_skipped)
        l->all->sink->item_skipped(l->all->sink->ctx, l->global[item], st, reason);
    pthread_mutex_unlock(&l->all->lock);
}

static void lane_done(void *ctx, size_t item, uint64_t bytes)
{
    lane *l = ctx;
    pthread_mutex_lock(&l->all->lock);
    l->all->done[l->global[item]] = 1;
    if (l->all->sink->item_done)
        l->all->sink->item_done(l->all->sink->ctx, l->global[item], bytes);
    pthread_mutex_unlock(&l->all->lock);
}

static void lane_norm(void *ctx, size_t item, double sq_norm)
{
    lane *l = ctx;
    pthread_mutex_lock(&l->all->lock);
    if (l->all->sink->item_norm)
        l->all->sink->item_norm(l->all->sink->ctx, l->global[item], sq_norm);
    pthread_mutex_unlock(&l->all->lock);
}

static int lane_cancelled(void *ctx)
{
    lane *l = ctx;
    int c = 0;
    pthread_mutex_lock(&l->all->lock);
    if (l->all->sink->cancelled)
        c = l->all->sink->cancelled(l->all->sink->ctx);
    pthread_mutex_unlock(&l->all->lock);
    return c;
}

static void *lane_main(void *arg)
{
    lane *l = arg;
    fr_sweep_sink sink = {.ctx = l, .outcome = lane_outcome, .item_skipped = lane_skipped,
                          .item_done = lane_done, .item_norm = lane_norm,
                          .cancelled = lane_cancelled};
    l->status = l->all->run(l->all->reg, l->items, l->n_items, &l->opt, &sink, &l->err);
    return NULL;
}

void fr_cuda_stats_add(fr_cuda_run_stats *into, const fr_cuda_run_stats *s)
{
    if (s->wall_s > into->wall_s)
        into->wall_s = s->wall_s;
    into->gpu_s += s->gpu_s;
    into->generate_s += s->generate_s;
    into->h2d_s += s->h2d_s;
    into->stage_s += s->stage_s;
    into->numeric_s += s->numeric_s;
    into->output_s += s->output_s;
    into->plugin_s += s->plugin_s;
    into->plugin_out_s += s->plugin_out_s;
    into->h2d_bytes += s->h2d_bytes;
    into->tensor_bytes += s->tensor_bytes;
    into->elements += s->elements;
    into->fused_configs += s->fused_configs;
    into->plugin_configs += s->plugin_configs;
    into->cpu_configs += s->cpu_configs;
    into->chunked_tensors += s->chunked_tensors;
    into->nf4_mean_fallbacks += s->nf4_mean_fallbacks;
}

size_t fr_shard_lost(const fr_sweep_item *items, size_t n_items, const uint8_t *done, char *buf,
                     size_t len)
{
    size_t n_lost = 0, at = 0, named = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < n_items; i++)
        n_lost += !done[i];
    if (!n_lost || !len)
        return n_lost;
    at = (size_t)snprintf(buf, len, "%zu tensor%s not measured:", n_lost, n_lost == 1 ? "" : "s");
    for (size_t i = 0; i < n_items && at < len; i++) {
        if (done[i])
            continue;
        if (named == 8 || at + strlen(items[i].tensor->name) + 8 > len) {
            at += (size_t)snprintf(buf + at, len - at, ", ...");
            break;
        }
        at += (size_t)snprintf(buf + at, len - at, "%s '%s'", named ? "," : "",
                               items[i].tensor->name);
        named++;
    }
    return n_lost;
}

fr_status fr_exec_lanes(fr_exec_fn run, const int *device, int n_lanes, const fr_registry *reg,
                        const fr_sweep_item *items, size_t n_items, const fr_executor_options *opt,
                        const fr_sweep_sink *sink, fr_error *err)
{
    fr_status st = FR_OK;
    lanes L = {.run = run, .reg = reg, .sink = sink};
    size_t *shard = calloc(n_items + 1, sizeof *shard);
    L.done = calloc(n_items + 1, 1);
    L.lane = calloc((size_t)n_lanes, sizeof *L.lane);
    if (!shard || !L.done || !L.lane) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if ((st = fr_shard_balance(items, n_items, (size_t)n_lanes, shard, NULL, err)) != FR_OK)
        goto done;
    int threads = opt->threads > 0 ? opt->threads : fr_cpu_count();
    for (int l = 0; l < n_lanes; l++) {
        lane *ln = &L.lane[l];
        ln->all = &L;
        ln->index = l;
        ln->items = calloc(n_items + 1, sizeof *ln->items);
        ln->global = calloc(n_items + 1, sizeof *ln->global);
        if (!ln->items || !ln->global) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
            goto done;
        }
        ln->opt = *opt;
        ln->opt.device = device[l];
        ln->opt.threads = threads / n_lanes > 0 ? threads / n_lanes : 1;
        ln->opt.cuda_stats = &ln->stats;
    }
    for (size_t i = 0; i < n_items; i++) {
        lane *ln = &L.lane[shard[i]];
        ln->global[ln->n_items] = i;
        ln->items[ln->n_items++] = items[i];
    }
    pthread_mutex_init(&L.lock, NULL);
    for (int l = 0; l < n_lanes; l++) {
        int rc = pthread_create(&L.lane[l].thread, NULL, lane_main, &L.lane[l]);
        if (rc != 0) {
            L.lane[l].status = fr_fail(&L.lane[l].err, FR_E_NOMEM, "cannot start a thread for device %d: %s",
                                       device[l], strerror(rc));
            continue;
        }
        L.lane[l].started = 1;
    }
    for (int l = 0; l < n_lanes; l++)
        if (L.lane[l].started)
            pthread_join(L.lane[l].thread, NULL);
    pthread_mutex_destroy(&L.lock);

    fr_cuda_run_stats total;
    memset(&total, 0, sizeof total);
    for (int l = 0; l < n_lanes; l++)
        fr_cuda_stats_add(&total, &L.lane[l].stats);
    if (opt->cuda_stats)
        *opt->cuda_stats = total;
    /* an interruption is the run's; a failed device is reported with what it lost */
    int failed = -1;
    for (int l = 0; l < n_lanes; l++) {
        fr_status ls = L.lane[l].status;
        if (ls == FR_E_INTERRUPT && st == FR_OK)
            st = fr_fail(err, FR_E_INTERRUPT, "interrupted");
        else if (ls != FR_OK && ls != FR_E_INTERRUPT && failed < 0)
            failed = l;
    }
    if (failed >= 0) {
        char lost[640];
        fr_shard_lost(items, n_items, L.done, lost, sizeof lost);
        *err = L.lane[failed].err;
        st = L.lane[failed].status;
        fr_error_prefix(err, "device %d: ", device[failed]);
        if (lost[0]) {
            size_t at = strlen(err->msg);
            snprintf(err->msg + at, sizeof err->msg - at, "; %s", lost);
        }
    }
done:
    if (L.lane)
        for (int l = 0; l < n_lanes; l++) {
            free(L.lane[l].items);
            free(L.lane[l].global);
        }
    free(L.lane);
    free(L.done);
    free(shard);
    return st;
}

fr_status fr_exec_devices(const fr_devices *d, const fr_registry *reg, const fr_sweep_item *items,
                          size_t n_items, const fr_executor_options *opt,
                          const fr_sweep_sink *sink, fr_error *err)
{
    fr_executor_options one = *opt;
    if (d->n == 0) {
        one.device = -1;
        return fr_exec_cpu(reg, items, n_items, &one, sink, err);
    }
#ifdef FRONTIER_HAVE_CUDA
    if (d->n == 1 && !d->spread) {
        one.device = d->id[0];
        return fr_exec_cuda(reg, items, n_items, &one, sink, err);
    }
    return fr_exec_lanes(fr_exec_cuda, d->id, d->n, reg, items, n_items, opt, sink, err);
#else
    return fr_fail(err, FR_E_DEVICE, "this frontier was built without CUDA");
#endif
}
