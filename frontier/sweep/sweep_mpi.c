/*
 * The ranks of an MPI job share one sweep (frontier/sweep/sweep_mpi.h).
 *
 * Messages, on a duplicate of MPI_COMM_WORLD:
 *   rank 0 -> r  TAG_PLAN     plan_header, then (when it has tasks) the
 *                             tasks and their flat configuration indices
 *   r -> rank 0  TAG_EVENT    batches of events, one per sink call
 *                             (outcome, skipped item, norm, item done),
 *                             the last one ending with EV_FINISHED
 *   rank 0 -> r  TAG_STOP     once per rank: stop early (rank 0 was
 *                             interrupted or cannot write), or, at the end,
 *                             the release after EV_FINISHED
 * Structs travel as bytes: every rank runs the same frontier build (the
 * same registry is checked by fr_mpi_agree), as mpirun starts it.
 */
#ifdef FRONTIER_HAVE_MPI

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/calib.h"
#include "core/log.h"
#include "frontier/model/calib_attach.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep_mpi.h"
#include "frontier/sweep/sweep_plan.h"

enum { TAG_PLAN = 1, TAG_TASKS, TAG_REFS, TAG_EVENT, TAG_STOP };
enum { EV_OUTCOME = 1, EV_SKIPPED, EV_NORM, EV_DONE, EV_FINISHED };

/* Seconds rank 0 waits for the other ranks' last rows once it was told to
 * stop, before the sweep commits: when a rank dies, mpirun sends the others
 * SIGTERM and, a second later (odls_base_sigkill_timeout), SIGKILL. What
 * arrives later is taken and dropped before MPI_Finalize (fr_mpi_finish). */
#define FR_MPI_STOP_WAIT 0.5
/* Messages taken per poll, so a flood from many ranks cannot starve rank
 * 0's own executor. */
#define FR_MPI_POLL_BATCH 64
/* A rank sends its events in batches, with non-blocking sends from a few
 * buffers: a blocking send of each would wait for rank 0 to take it (most
 * transports need the receiver's progress), ~1 ms each. A batch leaves
 * when full, when a tensor is done, or a second after the last one. */
#define FR_MPI_BATCH 64
#define FR_MPI_OUTBOXES 4
#define FR_MPI_FLUSH_SECONDS 1.0

typedef struct plan_header {
    int32_t go;          /* 1: tasks follow; 0: the sweep stopped before sharing */
    int32_t reserved;
    uint64_t n_tasks;
    uint64_t n_refs;
    /* the executor settings the engine gave rank 0 (seed, batch sizes,
     * buffers, ...), so every rank runs with the same; each rank keeps its
     * own threads, devices and statistics */
    fr_executor_options opt;
} plan_header;

typedef struct plan_task {
    uint64_t item;       /* index in rank 0's plan */
    uint64_t tensor;     /* index into its source's tensors */
    uint32_t source;     /* index into the sources, in command-line order */
    uint32_t n_configs;
    uint32_t has_calib;  /* rank 0 found statistics for it */
    uint32_t expert;     /* 0: the tensor; e + 1: expert e of the expert stack `tensor`
                            (docs/formats.md "Expert tensors"; fr_sweep_expert_view) */
} plan_task;

typedef struct event {
    int32_t kind;
    int32_t status;
    uint64_t item;       /* index in rank 0's plan */
    uint64_t bytes;      /* EV_DONE */
    double value;        /* EV_NORM: sum w^2; EV_FINISHED: seconds busy */
    char text[256];      /* EV_SKIPPED: the reason; EV_FINISHED: the error */
    fr_sweep_outcome outcome;
    fr_cuda_run_stats stats; /* EV_FINISHED */
} event;

typedef struct rank_report {
    int finished;
    int stop_sent;
    fr_status status;
    char error[256];
    double busy;
    size_t n_items;
    double load;
} rank_report;

struct fr_mpi {
    MPI_Comm comm;
    int rank, size, local_rank, local_size;
    fr_source *const *sources;
    size_t n_sources;
    fr_devices devices;
    int threads;
    char label[256];
    char (*hosts)[64];    /* per rank */
    fr_sweep_executor executor;
    int plan_sent;

    /* rank 0, while its executor runs */
    event *inbox;            /* FR_MPI_BATCH events */
    const fr_sweep_item *items;
    size_t n_items;
    const fr_sweep_sink *sink;
    uint8_t *done;
    size_t *local_global;
    rank_report *report;
    int n_finished;
    int ran;                 /* mpi_run shared out the work */
    int stopping;
    double stop_time;
    fr_cuda_run_stats stats;

    /* other ranks */
    event *outbox[FR_MPI_OUTBOXES];
    MPI_Request sending[FR_MPI_OUTBOXES];
    int current;             /* the outbox being filled */
    size_t n_queued;
    double last_flush;
    int got_stop;
    const volatile sig_atomic_t *stop_flag;
};

/* A message cut to a buffer (a long plugin path in an error is acceptable to lose). */
static void copy_text(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- start, agree, finish ---- */

fr_status fr_mpi_start(fr_mpi **out, fr_error *err)
{
    int provided = 0, initialized = 0;
    *out = NULL;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return fr_fail(err, FR_E_DEVICE, "cannot initialise MPI");
    if (initialized)
        MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED)
        return fr_fail(err, FR_E_DEVICE,
                       "the MPI library offers thread level %d; frontier needs "
                       "MPI_THREAD_SERIALIZED (%d)",
                       provided, MPI_THREAD_SERIALIZED);
    fr_mpi *m = calloc(1, sizeof *m);
    if (!m)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);
    MPI_Comm node;
    MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, m->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &m->local_rank);
    MPI_Comm_size(node, &m->local_size);
    MPI_Comm_free(&node);
    *out = m;
    return FR_OK;
}

int fr_mpi_rank(const fr_mpi *m) { return m->rank; }
int fr_mpi_size(const fr_mpi *m) { return m->size; }
int fr_mpi_local_rank(const fr_mpi *m) { return m->local_rank; }
int fr_mpi_local_size(const fr_mpi *m) { return m->local_size; }

/* Rank 0 after an early stop: the other ranks' last batches, taken (and
 * dropped) so that their sends complete and every rank reaches
 * MPI_Finalize. */
static int poll_events(fr_mpi *m);
static void drain_late(fr_mpi *m)
{
    while (m->ran && m->report && m->n_finished < m->size - 1) {
        if (poll_events(m))
            continue;
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
}

void fr_mpi_finish(fr_mpi *m)
{
    if (!m)
        return;
    if (m->rank == 0)
        drain_late(m);
    MPI_Comm_free(&m->comm);
    free(m->hosts);
    free(m->report);
    free(m->inbox);
    free(m);
    MPI_Finalize();
}

/* FNV-1a over what must be equal on every rank for the shares to mean the
 * same work: the registry's configurations (indices travel) and each
 * source's tensors (indices travel) with their shapes and sizes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t fingerprint(const fr_registry *reg, fr_source *const *sources, size_t n_sources,
                            uint64_t *sources_part)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t s = 0; s < n_sources; s++) {
        const fr_source *src = sources[s];
        h = fnv(h, &src->n_tensors, sizeof src->n_tensors);
        for (size_t t = 0; t < src->n_tensors; t++) {
            const fr_tensor *x = &src->tensors[t];
            h = fnv(h, x->name, strlen(x->name) + 1);
            h = fnv(h, x->shape, sizeof x->shape[0] * (size_t)x->ndim);
            h = fnv(h, &x->nbytes, sizeof x->nbytes);
        }
    }
    *sources_part = h;
    for (size_t c = 0; c < reg->n_configs; c++) {
        const char *name = reg->configs[c].cfg->name;
        const char *origin = fr_config_origin(reg, &reg->configs[c]);
        h = fnv(h, name, strlen(name) + 1);
        h = fnv(h, origin, strlen(origin) + 1);
    }
    return h;
}

/* "mpi 4 ranks on 2 hosts: cuda:0 x2, cuda:1 x2" from each rank's device. */
static void make_label(fr_mpi *m, char (*dev)[64])
{
    size_t at = 0, n_hosts = 0;
    for (int r = 0; r < m->size; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = !strcmp(m->hosts[q], m->hosts[r]);
        n_hosts += !seen;
    }
    at = (size_t)snprintf(m->label, sizeof m->label, "mpi %d ranks", m->size);
    if (n_hosts > 1)
        at += (size_t)snprintf(m->label + at, sizeof m->label - at, " on %zu hosts", n_hosts);
    for (int r = 0; r < m->size && at < sizeof m->label; r++) {
        int seen = 0, count = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = !strcmp(dev[q], dev[r]);
        if (seen)
            continue;
        for (int q = r; q < m->size; q++)
            count += !strcmp(dev[q], dev[r]);
        at += (size_t)snprintf(m->label + at, sizeof m->label - at, "%s%s", r ? ", " : ": ",
                               dev[r]);
        if (count > 1 && at < sizeof m->label)
            at += (size_t)snprintf(m->label + at, sizeof m->label - at, " x%d", count);
    }
}

fr_status fr_mpi_agree(fr_mpi *m, fr_status mine, const fr_registry *reg,
                       fr_source *const *sources, size_t n_sources, const fr_devices *devices,
                       int threads, int *failed_rank, fr_error *err)
{
    typedef struct setup {
        int64_t status;
        uint64_t all, sources;
        char host[64];
        char device[64];
    } setup;
    setup me;
    memset(&me, 0, sizeof me);
    me.status = mine;
    if (mine == FR_OK) {
        me.all = fingerprint(reg, sources, n_sources, &me.sources);
        fr_devices_name(devices, me.device, sizeof me.device);
        if (devices->n == 0)
            snprintf(me.device, sizeof me.device, "cpu (%d thread%s)", threads,
                     threads == 1 ? "" : "s");
    }
    if (gethostname(me.host, sizeof me.host - 1) != 0)
        snprintf(me.host, sizeof me.host, "?");
    setup *all = calloc((size_t)m->size, sizeof *all);
    char(*dev)[64] = calloc((size_t)m->size, sizeof *dev);
    m->hosts = calloc((size_t)m->size, sizeof *m->hosts);
    if (!all || !dev || !m->hosts) {
        free(all);
        free(dev);
        MPI_Abort(m->comm, FR_E_NOMEM); /* the others wait in the collective */
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, m->comm);
    fr_status st = FR_OK;
    *failed_rank = -1;
    for (int r = 0; r < m->size; r++) {
        memcpy(m->hosts[r], all[r].host, sizeof m->hosts[r]);
        memcpy(dev[r], all[r].device, sizeof dev[r]);
    }
    for (int r = 0; r < m->size && st == FR_OK; r++) {
        if (all[r].status != FR_OK) {
            *failed_rank = r;
            st = (fr_status)all[r].status;
            if (r != m->rank)
                fr_fail(err, st, "rank %d on '%s' could not start the sweep (exit %d)", r,
                        all[r].host, (int)st);
        }
    }
    for (int r = 1; r < m->size && st == FR_OK; r++) {
        if (all[r].sources != all[0].sources) {
            *failed_rank = r;
            st = fr_fail(err, FR_E_MISMATCH,
                         "rank %d on '%s' reads other models than rank 0 on '%s' (tensor names, "
                         "shapes or sizes differ): every rank must see the same files",
                         r, all[r].host, all[0].host);
        } else if (all[r].all != all[0].all) {
            *failed_rank = r;
            st = fr_fail(err, FR_E_MISMATCH,
                         "rank %d on '%s' registers other quantizers than rank 0 on '%s' (a "
                         "--plugin or FRONTIER_PLUGIN_PATH differs)",
                         r, all[r].host, all[0].host);
        }
    }
    if (st == FR_OK) {
        m->sources = sources;
        m->n_sources = n_sources;
        m->devices = *devices;
        m->threads = threads;
        make_label(m, dev);
        m->executor.device = m->label;
        m->report = calloc((size_t)m->size, sizeof *m->report);
        m->inbox = malloc(sizeof *m->inbox * FR_MPI_BATCH);
        if (!m->report || !m->inbox) {
            MPI_Abort(m->comm, FR_E_NOMEM);
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
        }
    }
    free(all);
    free(dev);
    return st;
}

/* ---- rank 0 ---- */

static void send_stop(fr_mpi *m, int r)
{
    int zero = 0;
    if (m->report[r].stop_sent)
        return;
    MPI_Send(&zero, 1, MPI_INT, r, TAG_STOP, m->comm);
    m->report[r].stop_sent = 1;
}

static void stop_all(fr_mpi *m)
{
    if (m->stopping)
        return;
    m->stopping = 1;
    m->stop_time = now_seconds();
    for (int r = 1; r < m->size; r++)
        if (!m->report[r].finished)
            send_stop(m, r);
}

static void dispatch(fr_mpi *m, int from, const event *ev)
{
    const fr_sweep_sink *sink = m->sink;
    if (ev->kind == EV_FINISHED) {
        rank_report *rp = &m->report[from];
        if (rp->finished)
            return;
        rp->finished = 1;
        rp->status = (fr_status)ev->status;
        rp->busy = ev->value;
        memcpy(rp->error, ev->text, sizeof rp->error);
        rp->error[sizeof rp->error - 1] = '\0';
        fr_cuda_stats_add(&m->stats, &ev->stats);
        m->n_finished++;
        return;
    }
    if (!m->items || ev->item >= m->n_items)
        return; /* after the run (fr_mpi_finish), or from another build: dropped */
    size_t item = (size_t)ev->item;
    switch (ev->kind) {
    case EV_OUTCOME: {
        fr_sweep_outcome o = ev->outcome;
        o.item = item;
        if (o.config < m->items[item].n_configs)
            sink->outcome(sink->ctx, &o);
        break;
    }
    case EV_SKIPPED:
        if (sink->item_skipped)
            sink->item_skipped(sink->ctx, item, (fr_status)ev->status, ev->text);
        break;
    case EV_NORM:
        if (sink->item_norm)
            sink->item_norm(sink->ctx, item, ev->value);
        break;
    case EV_DONE:
        m->done[item] = 1;
        if (sink->item_done)
            sink->item_done(sink->ctx, item, ev->bytes);
        break;
    default:
        break;
    }
}

/* Takes the batches that have arrived (at most FR_MPI_POLL_BATCH); returns
 * how many. */
static int poll_events(fr_mpi *m)
{
    int n = 0;
    for (; n < FR_MPI_POLL_BATCH; n++) {
        int flag = 0, bytes = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_EVENT, m->comm, &flag, &status);
        if (!flag)
            break;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        if (bytes < 0 || (size_t)bytes > sizeof(event) * FR_MPI_BATCH)
            bytes = 0; /* cannot happen between ranks of one build */
        MPI_Recv(m->inbox, bytes, MPI_BYTE, status.MPI_SOURCE, TAG_EVENT, m->comm,
                 MPI_STATUS_IGNORE);
        for (size_t k = 0; k < (size_t)bytes / sizeof(event); k++)
            dispatch(m, status.MPI_SOURCE, &m->inbox[k]);
    }
    return n;
}

/* Rank 0's own share reports through these: translated to the plan's
 * indices, then the other ranks' events that have arrived meanwhile. */
static void local_outcome(void *ctx, const fr_sweep_outcome *o)
{
    fr_mpi *m = ctx;
    fr_sweep_outcome g = *o;
    g.item = m->local_global[o->item];
    m->sink->outcome(m->sink->ctx, &g);
    poll_events(m);
}

static void local_skipped(void *ctx, size_t item, fr_status st, const char *reason)
{
    fr_mpi *m = ctx;
    if (m->sink->item_skipped)
        m->sink->item_skipped(m->sink->ctx, m->local_global[item], st, reason);
}

static void local_done(void *ctx, size_t item, uint64_t bytes)
{
    fr_mpi *m = ctx;
    m->done[m->local_global[item]] = 1;
    if (m->sink->item_done)
        m->sink->item_done(m->sink->ctx, m->local_global[item], bytes);
    poll_events(m);
}

static void local_norm(void *ctx, size_t item, double sq_norm)
{
    fr_mpi *m = ctx;
    if (m->sink->item_norm)
        m->sink->item_norm(m->sink->ctx, m->local_global[item], sq_norm);
}

static int sink_cancelled(const fr_mpi *m)
{
    return m->sink->cancelled && m->sink->cancelled(m->sink->ctx);
}

static int local_cancelled(void *ctx)
{
    fr_mpi *m = ctx;
    poll_events(m);
    if (sink_cancelled(m)) {
        stop_all(m);
        return 1;
    }
    return 0;
}

/* Sends rank r its share: the tasks of the items with shard[i] == r. */
static fr_status send_share(fr_mpi *m, const fr_registry *reg, const size_t *shard, int r,
                            const fr_executor_options *opt, fr_error *err)
{
    plan_header h = {.go = 1, .opt = *opt};
    h.opt.cuda_stats = NULL;
    for (size_t i = 0; i < m->n_items; i++)
        if (shard[i] == (size_t)r) {
            h.n_tasks++;
            h.n_refs += m->items[i].n_configs;
        }
    plan_task *tasks = calloc(h.n_tasks + 1, sizeof *tasks);
    uint32_t *refs = calloc(h.n_refs + 1, sizeof *refs);
    if (!tasks || !refs) {
        free(tasks);
        free(refs);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    size_t k = 0, at = 0;
    for (size_t i = 0; i < m->n_items; i++) {
        if (shard[i] != (size_t)r)
            continue;
        const fr_sweep_item *it = &m->items[i];
        size_t s = 0;
        while (s < m->n_sources && m->sources[s] != it->src)
            s++;
        /* an expert of an expert stack is a view outside the source's
         * tensors (frontier/sweep/sweep_plan.h): the task names the stack and the expert */
        uint64_t tensor = 0;
        uint32_t expert = 0;
        fr_status st = fr_sweep_plan_item_origin(it, &tensor, &expert, err);
        if (st != FR_OK) {
            free(tasks);
            free(refs);
            return st;
        }
        tasks[k] = (plan_task){.item = i, .tensor = tensor, .source = (uint32_t)s,
                               .n_configs = (uint32_t)it->n_configs,
                               .has_calib = it->calib != NULL, .expert = expert};
        for (size_t c = 0; c < it->n_configs; c++)
            refs[at++] = (uint32_t)(it->configs[c] - reg->configs);
        k++;
    }
    if (h.n_tasks * sizeof *tasks > (uint64_t)INT32_MAX || h.n_refs * sizeof *refs > (uint64_t)INT32_MAX) {
        free(tasks);
        free(refs);
        return fr_fail(err, FR_E_NOMEM, "the share of rank %d is too large for one message", r);
    }
    MPI_Send(&h, (int)sizeof h, MPI_BYTE, r, TAG_PLAN, m->comm);
    if (h.n_tasks) {
        MPI_Send(tasks, (int)(h.n_tasks * sizeof *tasks), MPI_BYTE, r, TAG_TASKS, m->comm);
        MPI_Send(refs, (int)(h.n_refs * sizeof *refs), MPI_BYTE, r, TAG_REFS, m->comm);
    }
    free(tasks);
    free(refs);
    return FR_OK;
}

/* What the run lost, once every rank has answered (or stopped answering). */
static fr_status conclude(fr_mpi *m, fr_status local, const fr_error *lerr, fr_error *err)
{
    char lost[640];
    fr_shard_lost(m->items, m->n_items, m->done, lost, sizeof lost);
    m->report[0].finished = 1;
    m->report[0].status = local;
    copy_text(m->report[0].error, sizeof m->report[0].error, lerr->msg);
    int failed = -1, interrupted = 0;
    for (int r = 0; r < m->size; r++) {
        const rank_report *rp = &m->report[r];
        if (!rp->finished) {
            fr_warn("rank %d on '%s' did not answer after the stop", r, m->hosts[r]);
            interrupted = 1;
        } else if (rp->status == FR_E_INTERRUPT) {
            if (r > 0 && !m->stopping)
                fr_warn("rank %d on '%s' was interrupted", r, m->hosts[r]);
            interrupted = 1;
        } else if (rp->status != FR_OK) {
            fr_warn("rank %d on '%s' stopped: %s", r, m->hosts[r], rp->error);
            if (failed < 0)
                failed = r;
        }
    }
    if (lost[0])
        fr_warn("%s; run the same command with --resume to measure them", lost);
    if (failed >= 0)
        return fr_fail(err, m->report[failed].status, "rank %d on '%s': %s", failed,
                       m->hosts[failed], m->report[failed].error);
    if (interrupted)
        return fr_fail(err, FR_E_INTERRUPT, "interrupted");
    return FR_OK;
}

static void log_balance(const fr_mpi *m)
{
    char line[512];
    size_t at = 0;
    double most = 0, sum = 0;
    for (int r = 0; r < m->size; r++) {
        most = m->report[r].busy > most ? m->report[r].busy : most;
        sum += m->report[r].busy;
    }
    at = (size_t)snprintf(line, sizeof line, "mpi: seconds busy per rank");
    for (int r = 0; r < m->size && at < sizeof line; r++)
        at += (size_t)snprintf(line + at, sizeof line - at, "%s%.3f", r ? " " : ": ",
                               m->report[r].busy);
    if (most > 0 && at < sizeof line)
        snprintf(line + at, sizeof line - at, " (mean/max %.2f)", sum / m->size / most);
    fr_info("%s", line);
}

static fr_status mpi_run(void *ctx, const fr_registry *reg, const fr_sweep_item *items,
                         size_t n_items, const fr_executor_options *opt, const fr_sweep_sink *sink,
                         fr_error *err)
{
    fr_mpi *m = ctx;
    fr_status st = FR_OK;
    size_t *shard = calloc(n_items + 1, sizeof *shard);
    double *load = calloc((size_t)m->size, sizeof *load);
    fr_sweep_item *local = calloc(n_items + 1, sizeof *local);
    m->local_global = calloc(n_items + 1, sizeof *m->local_global);
    m->done = calloc(n_items + 1, 1);
    memset(m->report, 0, sizeof *m->report * (size_t)m->size);
    m->n_finished = 0;
    m->ran = 1;
    m->items = items;
    m->n_items = n_items;
    m->sink = sink;
    m->plan_sent = 1;
    memset(&m->stats, 0, sizeof m->stats);
    if (!shard || !load || !local || !m->local_global || !m->done) {
        MPI_Abort(m->comm, FR_E_NOMEM);
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if ((st = fr_shard_balance(items, n_items, (size_t)m->size, shard, load, err)) != FR_OK) {
        MPI_Abort(m->comm, st);
        goto done;
    }
    for (int r = 1; r < m->size; r++)
        if ((st = send_share(m, reg, shard, r, opt, err)) != FR_OK) {
            MPI_Abort(m->comm, st); /* the ranks already sent to would wait forever */
            goto done;
        }
    size_t n_local = 0;
    for (size_t i = 0; i < n_items; i++)
        if (shard[i] == 0) {
            m->local_global[n_local] = i;
            local[n_local++] = items[i];
        }
    for (size_t i = 0; i < n_items; i++)
        m->report[shard[i]].n_items++;
    for (int r = 0; r < m->size; r++)
        fr_debug("mpi: rank %d on '%s': %zu tensors, cost %.3g", r, m->hosts[r],
                 m->report[r].n_items, load[r]);

    fr_sweep_sink mine = {.ctx = m, .outcome = local_outcome, .item_skipped = local_skipped,
                          .item_done = local_done, .item_norm = local_norm,
                          .cancelled = local_cancelled};
    fr_executor_options xopt = *opt;
    fr_cuda_run_stats local_stats;
    memset(&local_stats, 0, sizeof local_stats);
    xopt.cuda_stats = &local_stats;
    fr_error lerr = {0};
    double t0 = now_seconds();
    fr_status lst = fr_exec_devices(&m->devices, reg, local, n_local, &xopt, &mine, &lerr);
    m->report[0].busy = now_seconds() - t0;
    fr_cuda_stats_add(&m->stats, &local_stats);

    /* the others, until each has finished (or, once stopped, for a while) */
    while (m->n_finished < m->size - 1) {
        if (poll_events(m))
            continue;
        if (!m->stopping && sink_cancelled(m))
            stop_all(m);
        if (m->stopping && now_seconds() - m->stop_time > FR_MPI_STOP_WAIT)
            break;
        struct timespec nap = {0, 1000000}; /* 1 ms: idle, not spinning */
        nanosleep(&nap, NULL);
    }
    for (int r = 1; r < m->size; r++)
        if (m->report[r].finished)
            send_stop(m, r);
    if (opt->cuda_stats)
        *opt->cuda_stats = m->stats;
    log_balance(m);
    st = conclude(m, lst, &lerr, err);
done:
    free(shard);
    free(load);
    free(local);
    free(m->local_global);
    free(m->done);
    m->local_global = NULL;
    m->done = NULL;
    m->items = NULL;
    m->n_items = 0;
    return st;
}

const fr_sweep_executor *fr_mpi_executor(fr_mpi *m)
{
    m->executor.ctx = m;
    m->executor.run = mpi_run;
    m->executor.device = m->label;
    return &m->executor;
}

void fr_mpi_release(fr_mpi *m)
{
    if (!m || m->rank != 0 || m->plan_sent)
        return;
    plan_header h;
    memset(&h, 0, sizeof h);
    for (int r = 1; r < m->size; r++)
        MPI_Send(&h, (int)sizeof h, MPI_BYTE, r, TAG_PLAN, m->comm);
    m->plan_sent = 1;
}

/* ---- the other ranks ---- */

typedef struct worker {
    fr_mpi *m;
    const plan_task *tasks;
} worker;

/* Sends the outbox being filled and waits until the next one is free. */
static void flush_events(fr_mpi *m)
{
    if (m->n_queued) {
        MPI_Isend(m->outbox[m->current], (int)(m->n_queued * sizeof(event)), MPI_BYTE, 0,
                  TAG_EVENT, m->comm, &m->sending[m->current]);
        m->current = (m->current + 1) % FR_MPI_OUTBOXES;
        MPI_Wait(&m->sending[m->current], MPI_STATUS_IGNORE);
        m->n_queued = 0;
    }
    m->last_flush = now_seconds();
}

static void send_event(fr_mpi *m, const event *ev)
{
    m->outbox[m->current][m->n_queued++] = *ev;
    if (m->n_queued == FR_MPI_BATCH || ev->kind == EV_DONE || ev->kind == EV_FINISHED ||
        now_seconds() - m->last_flush > FR_MPI_FLUSH_SECONDS)
        flush_events(m);
}

static void fwd_outcome(void *ctx, const fr_sweep_outcome *o)
{
    worker *w = ctx;
    event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = EV_OUTCOME;
    ev.item = w->tasks[o->item].item;
    ev.outcome = *o;
    send_event(w->m, &ev);
}

static void fwd_skipped(void *ctx, size_t item, fr_status st, const char *reason)
{
    worker *w = ctx;
    event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = EV_SKIPPED;
    ev.status = st;
    ev.item = w->tasks[item].item;
    copy_text(ev.text, sizeof ev.text, reason);
    send_event(w->m, &ev);
}

static void fwd_done(void *ctx, size_t item, uint64_t bytes)
{
    worker *w = ctx;
    event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = EV_DONE;
    ev.item = w->tasks[item].item;
    ev.bytes = bytes;
    send_event(w->m, &ev);
}

static void fwd_norm(void *ctx, size_t item, double sq_norm)
{
    worker *w = ctx;
    event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = EV_NORM;
    ev.item = w->tasks[item].item;
    ev.value = sq_norm;
    send_event(w->m, &ev);
}

static int fwd_cancelled(void *ctx)
{
    worker *w = ctx;
    fr_mpi *m = w->m;
    if (!m->got_stop) {
        int flag = 0;
        MPI_Iprobe(0, TAG_STOP, m->comm, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            int zero;
            MPI_Recv(&zero, 1, MPI_INT, 0, TAG_STOP, m->comm, MPI_STATUS_IGNORE);
            m->got_stop = 1;
        }
    }
    return m->got_stop || (m->stop_flag && *m->stop_flag);
}

/* The statistics of a task's tensor, by the names rank 0 found them under:
 * its own module, else (a tied embedding, frontier/sweep/sweep_plan.h) the
 * output layer's. */
static fr_status worker_calib(fr_calib_file *cf, const fr_source *src, const fr_sweep_item *it,
                              const plan_task *t, frontier_calib *out, fr_error *err)
{
    fr_calib_stats cs;
    /* the planner's lookup, so both find the same statistics: an expert of
     * a stack takes its expert's slice, a tied embedding lm_head's; quiet,
     * since rank 0 prints the lines */
    fr_status st = fr_sweep_plan_item_calib(
        cf, it, t->expert, t->expert ? (uint32_t)src->tensors[t->tensor].shape[0] : 0,
        fr_calib_has_lm_head(src->tensors, src->n_tensors), 1, &cs, NULL, err);
    if (st != FR_OK)
        return st;
    if (!cs.found)
        return fr_fail(err, FR_E_MISMATCH,
                       "'%s': rank 0 found calibration statistics for it, this rank does not "
                       "(%s)",
                       it->tensor->name, cs.skip_reason);
    *out = cs.calib;
    return FR_OK;
}

/* Items of this rank's share, from the tasks rank 0 sent. */
static fr_status worker_items(fr_mpi *m, const fr_registry *reg, const fr_sweep_options *opt,
                              const plan_task *tasks, size_t n_tasks, const uint32_t *refs,
                              size_t n_refs, fr_sweep_item *items, fr_tensor *views,
                              const fr_config_ref **cfgs, frontier_calib *calib,
                              fr_calib_file **cf, fr_error *err)
{
    size_t at = 0;
    for (size_t k = 0; k < n_tasks; k++) {
        const plan_task *t = &tasks[k];
        if (t->source >= m->n_sources || t->tensor >= m->sources[t->source]->n_tensors ||
            at + t->n_configs > n_refs)
            return fr_fail(err, FR_E_FAIL, "rank %d: a task from rank 0 names no tensor", m->rank);
        const fr_source *src = m->sources[t->source];
        const fr_tensor *tensor = &src->tensors[t->tensor];
        fr_sweep_item *it = &items[k];
        /* expert e of a stack: the view rank 0 planned */
        if (t->expert && (!fr_sweep_expert_stack(tensor) || t->expert > (uint64_t)tensor->shape[0]))
            return fr_fail(err, FR_E_FAIL, "rank %d: a task from rank 0 names no expert of '%s'",
                           m->rank, tensor->name);
        fr_sweep_plan_item_on(it, src, tensor, t->expert, &views[k]);
        it->n_configs = t->n_configs;
        it->configs = &cfgs[at];
        for (size_t c = 0; c < t->n_configs; c++, at++) {
            if (refs[at] >= reg->n_configs)
                return fr_fail(err, FR_E_FAIL, "rank %d: a task from rank 0 names no configuration",
                               m->rank);
            cfgs[at] = &reg->configs[refs[at]];
        }
        it->calib = NULL;
        if (!t->has_calib)
            continue;
        fr_status st;
        if (!*cf && (!opt->calib || (st = fr_calib_open(opt->calib, cf, err)) != FR_OK))
            return opt->calib ? st : fr_fail(err, FR_E_FAIL, "rank %d: no --calib", m->rank);
        if ((st = worker_calib(*cf, src, it, t, &calib[k], err)) != FR_OK)
            return st;
        it->calib = &calib[k];
    }
    return FR_OK;
}

fr_status fr_mpi_serve(fr_mpi *m, const fr_registry *reg, const fr_sweep_options *opt,
                       fr_error *err)
{
    plan_header h;
    MPI_Recv(&h, (int)sizeof h, MPI_BYTE, 0, TAG_PLAN, m->comm, MPI_STATUS_IGNORE);
    if (!h.go)
        return FR_OK;
    fr_status st = FR_OK;
    plan_task *tasks = calloc(h.n_tasks + 1, sizeof *tasks);
    uint32_t *refs = calloc(h.n_refs + 1, sizeof *refs);
    fr_sweep_item *items = calloc(h.n_tasks + 1, sizeof *items);
    const fr_config_ref **cfgs = calloc(h.n_refs + 1, sizeof *cfgs);
    frontier_calib *calib = calloc(h.n_tasks + 1, sizeof *calib);
    fr_tensor *views = calloc(h.n_tasks + 1, sizeof *views);
    fr_calib_file *cf = NULL;
    int boxes = 1;
    for (int b = 0; b < FR_MPI_OUTBOXES; b++) {
        m->outbox[b] = malloc(sizeof(event) * FR_MPI_BATCH);
        m->sending[b] = MPI_REQUEST_NULL;
        boxes &= m->outbox[b] != NULL;
    }
    m->current = 0;
    m->n_queued = 0;
    m->last_flush = now_seconds();
    if (!tasks || !refs || !items || !cfgs || !calib || !views || !boxes) {
        MPI_Abort(m->comm, FR_E_NOMEM); /* rank 0 would wait for this rank's share */
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if (h.n_tasks) {
        MPI_Recv(tasks, (int)(h.n_tasks * sizeof *tasks), MPI_BYTE, 0, TAG_TASKS, m->comm,
                 MPI_STATUS_IGNORE);
        MPI_Recv(refs, (int)(h.n_refs * sizeof *refs), MPI_BYTE, 0, TAG_REFS, m->comm,
                 MPI_STATUS_IGNORE);
    }
    m->stop_flag = opt->stop;
    worker w = {.m = m, .tasks = tasks};
    fr_cuda_run_stats stats;
    memset(&stats, 0, sizeof stats);
    event fin;
    memset(&fin, 0, sizeof fin);
    fin.kind = EV_FINISHED;
    double t0 = now_seconds();
    fr_error xerr = {0};
    fr_status xst = worker_items(m, reg, opt, tasks, (size_t)h.n_tasks, refs, (size_t)h.n_refs,
                                 items, views, cfgs, calib, &cf, &xerr);
    if (xst == FR_OK) {
        fr_executor_options xopt = h.opt;
        xopt.threads = m->threads;
        xopt.device = -1; /* fr_exec_devices sets this rank's */
        xopt.cuda_stats = &stats;
        fr_sweep_sink sink = {.ctx = &w, .outcome = fwd_outcome, .item_skipped = fwd_skipped,
                              .item_done = fwd_done, .item_norm = fwd_norm,
                              .cancelled = fwd_cancelled};
        xst = fr_exec_devices(&m->devices, reg, items, (size_t)h.n_tasks, &xopt, &sink, &xerr);
    }
    fin.status = xst;
    fin.value = now_seconds() - t0;
    fr_debug("rank %d: %llu tensors in %.3f s (%s)", m->rank, (unsigned long long)h.n_tasks,
             fin.value, xst == FR_OK ? "done" : xerr.msg);
    fin.stats = stats;
    if (xst != FR_OK)
        copy_text(fin.text, sizeof fin.text, xerr.msg);
    send_event(m, &fin);
    MPI_Waitall(FR_MPI_OUTBOXES, m->sending, MPI_STATUSES_IGNORE);
    /* rank 0 answers every EV_FINISHED with one TAG_STOP, unless it sent
     * it earlier to stop this rank */
    if (!m->got_stop) {
        int zero;
        MPI_Recv(&zero, 1, MPI_INT, 0, TAG_STOP, m->comm, MPI_STATUS_IGNORE);
        m->got_stop = 1;
    }
    /* the worker's own failure is rank 0's to report */
    st = FR_OK;
done:
    fr_calib_close(cf);
    free(tasks);
    free(refs);
    free(items);
    free(views);
    free(cfgs);
    free(calib);
    for (int b = 0; b < FR_MPI_OUTBOXES; b++) {
        free(m->outbox[b]);
        m->outbox[b] = NULL;
    }
    return st;
}

#else
typedef int fr_sweep_mpi_unused; /* ISO C: a translation unit is never empty */
#endif
