/*
 * The committer of a sweep (frontier/sweep/sweep_commit.c): when the rows
 * in memory are written to the dataset file, how the run's progress is
 * shown, and the first failure to keep a row or to commit, which ends the
 * run early: the executor is cancelled, no commit follows, and the file
 * keeps the rows of the last commit that succeeded (the engine,
 * frontier/sweep/sweep.c, reports that failure).
 *
 * A commit sorts the dataset and writes it as a whole file with
 * fr_dataset_write (tmp + fsync + rename), so the output always holds every
 * row up to the last commit. Commits come every interval: the one asked for
 * (--commit-interval) as it is, else 2 s stretched to 10x the time the last
 * commit took, so rewriting a large file never costs more than ~10%.
 */
#ifndef FR_SWEEP_COMMIT_H
#define FR_SWEEP_COMMIT_H

#include <stdint.h>

#include "core/error.h"
#include "core/progress.h"
#include "frontier/dataset/dataset.h"
#include "frontier/sweep/sweep.h"

typedef struct fr_sweep_committer {
    const char *output;       /* the dataset file */
    fr_dataset *ds;           /* the rows, the engine's */
    fr_sweep_stats *stats;    /* n_commits */
    double base;              /* seconds between commits asked for, or the default */
    int fixed;                /* base was asked for: not stretched */
    double interval;          /* seconds between commits now */
    double last_commit;       /* when the last commit ended (monotonic clock) */
    int exists;               /* the output exists (resumed, or committed): a commit replaces it */
    fr_status status;         /* FR_OK, or the first failure to keep a row or to commit */
    fr_error err;             /* its message */
    fr_progress *progress;    /* while the executor runs, or NULL */
    double started;           /* when it started */
    uint64_t items_done, bytes_done;
} fr_sweep_committer;

/* commit_interval: seconds, used as given; <= 0: the adaptive default.
 * exists: the output is a dataset being resumed (commits replace it). */
void fr_sweep_commit_init(fr_sweep_committer *c, const char *output, fr_dataset *ds,
                          fr_sweep_stats *stats, double commit_interval, int exists);

/* Commits now: sorts the rows, writes the file, sets the next interval. */
fr_status fr_sweep_commit(fr_sweep_committer *c, fr_error *err);
/* Commits when the interval has passed since the last commit and nothing
 * has failed (a failure to commit is kept in c->status). */
void fr_sweep_commit_due(fr_sweep_committer *c);
/* Keeps the first failure (of keeping a row, or of a commit): the run
 * stops (fr_sweep_commit_failed) and its error is the one reported. */
void fr_sweep_commit_fail(fr_sweep_committer *c, const fr_error *e);
int fr_sweep_commit_failed(const fr_sweep_committer *c);
/* The final commit: a commit when nothing has failed; else the first
 * failure, with its error in *err. */
fr_status fr_sweep_commit_final(fr_sweep_committer *c, fr_error *err);

/* The run's progress: started when the executor starts (n_items items of
 * `bytes` bytes; quiet: none), one item done (then a commit when due),
 * cleared before a warning line, finished when the executor returns.
 * fr_sweep_commit_run_end returns the seconds since fr_sweep_commit_run_start. */
void fr_sweep_commit_run_start(fr_sweep_committer *c, uint64_t n_items, uint64_t bytes, int quiet);
void fr_sweep_commit_item_done(fr_sweep_committer *c, uint64_t bytes);
void fr_sweep_commit_clear_progress(fr_sweep_committer *c);
double fr_sweep_commit_run_end(fr_sweep_committer *c);

#endif
