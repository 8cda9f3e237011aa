/* The committer of a sweep (frontier/sweep/sweep_commit.h). */
#include <time.h>

#include "core/log.h"
#include "frontier/dataset/dataset_write.h"
#include "frontier/sweep/sweep_commit.h"

/* Default seconds between commits; adaptively at least 10x the time the
 * last commit took (an interval asked for, --commit-interval, is used as it
 * is). */
#define FR_COMMIT_INTERVAL 2.0
#define FR_COMMIT_COST_FACTOR 10.0

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fr_sweep_commit_init(fr_sweep_committer *c, const char *output, fr_dataset *ds,
                          fr_sweep_stats *stats, double commit_interval, int exists)
{
    *c = (fr_sweep_committer){.output = output, .ds = ds, .stats = stats, .exists = exists,
                              .status = FR_OK};
    /* an interval asked for is kept as it is; the default adapts to the
     * cost of a commit */
    c->fixed = commit_interval > 0;
    c->base = c->fixed ? commit_interval : FR_COMMIT_INTERVAL;
}

fr_status fr_sweep_commit(fr_sweep_committer *c, fr_error *err)
{
    double t0 = now_seconds();
    fr_dataset_sort(c->ds);
    fr_status st = fr_dataset_write(c->output, c->ds, c->exists ? FR_DS_REPLACE : FR_DS_CREATE,
                                    err);
    double t1 = now_seconds();
    if (st == FR_OK) {
        c->exists = 1;
        c->stats->n_commits++;
        double base = c->base;
        if (!c->fixed && FR_COMMIT_COST_FACTOR * (t1 - t0) > base)
            base = FR_COMMIT_COST_FACTOR * (t1 - t0);
        c->interval = base;
        c->last_commit = t1;
        fr_debug("committed %zu rows to '%s' in %.3f s", c->ds->n_results, c->output, t1 - t0);
    }
    return st;
}

void fr_sweep_commit_due(fr_sweep_committer *c)
{
    if (c->status != FR_OK || now_seconds() - c->last_commit < c->interval)
        return;
    c->status = fr_sweep_commit(c, &c->err);
}

void fr_sweep_commit_fail(fr_sweep_committer *c, const fr_error *e)
{
    if (c->status != FR_OK)
        return;
    c->status = e->code;
    c->err = *e;
}

int fr_sweep_commit_failed(const fr_sweep_committer *c)
{
    return c->status != FR_OK;
}

fr_status fr_sweep_commit_final(fr_sweep_committer *c, fr_error *err)
{
    /* whatever happened: every row measured is kept */
    fr_error cerr = {0};
    fr_status st = c->status == FR_OK ? fr_sweep_commit(c, &cerr) : c->status;
    if (c->status != FR_OK)
        cerr = c->err;
    if (st != FR_OK)
        *err = cerr;
    return st;
}

void fr_sweep_commit_run_start(fr_sweep_committer *c, uint64_t n_items, uint64_t bytes, int quiet)
{
    c->started = now_seconds();
    c->progress = fr_progress_start("tensors", n_items, bytes, quiet);
}

void fr_sweep_commit_item_done(fr_sweep_committer *c, uint64_t bytes)
{
    c->items_done++;
    c->bytes_done += bytes;
    fr_progress_update(c->progress, c->items_done, c->bytes_done);
    fr_sweep_commit_due(c);
}

void fr_sweep_commit_clear_progress(fr_sweep_committer *c)
{
    fr_progress_clear(c->progress);
}

double fr_sweep_commit_run_end(fr_sweep_committer *c)
{
    fr_progress_finish(c->progress);
    c->progress = NULL;
    return now_seconds() - c->started;
}
