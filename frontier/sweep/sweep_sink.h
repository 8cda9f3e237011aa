/*
 * The row sink of a sweep (frontier/sweep/sweep_sink.c): what an executor
 * reports through its fr_sweep_sink (frontier/exec/executor.h) turned into
 * the dataset's rows (docs/dataset.md).
 *
 * - An outcome of a tensor's item is sized by its quantizer's size_bits
 *   (the registry's checked call), its metrics derived
 *   (frontier/exec/metrics.h), and appended to /results.
 * - The outcomes of an expert stack's items (frontier/sweep/sweep_plan.h)
 *   are kept until every expert has reported a configuration; the stack's
 *   row is then their sum in expert order, whatever order they arrived in,
 *   and with --split-experts each expert's /expert_results row follows.
 *   The stack's norm is the experts' norms summed the same way.
 * - A failure is recorded in /skipped, with at most FR_WARNINGS_PER_CONFIG
 *   warning lines per configuration; a tensor skipped as a whole (or one
 *   expert of a stack) is recorded once.
 * - Numeric flags (frontier/exec/numeric_flags.h) of an item's outcomes are
 *   gathered, and reported in warning lines once the item is done.
 * Rows are kept in memory; the committer (frontier/sweep/sweep_commit.h)
 * writes them when due and holds the first failure to keep one.
 */
#ifndef FR_SWEEP_SINK_H
#define FR_SWEEP_SINK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"
#include "frontier/exec/executor.h"
#include "frontier/exec/numeric_flags.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_commit.h"
#include "frontier/sweep/sweep_plan.h"

/* Warnings per configuration before further failures go to /skipped only. */
#define FR_WARNINGS_PER_CONFIG 3

typedef struct fr_row_sink {
    const fr_sweep_plan *plan;       /* the items whose outcomes arrive */
    fr_dataset *ds;                  /* where their rows go */
    fr_sweep_stats *stats;           /* n_rows_new, n_failed, n_skipped, n_selected */
    fr_sweep_committer *committer;   /* commits when due, progress, the first failure */
    uint64_t seed;                   /* of the size_bits calls */
    int split_experts;               /* --split-experts */
    volatile sig_atomic_t *stop;     /* nonzero to stop early, or NULL */
    size_t *warnings;                /* per selected configuration: failures warned of */
    struct fr_expert_tally *tallies; /* per expert stack of the plan: what its experts reported */
    /* numeric flags per (item, config) of the flat plan (plan->item_configs):
     * each outcome's flags and scale quotients, for the item's warning lines */
    uint32_t *item_flags;
    fr_scale_detail *item_scale;
    size_t n_item_flags;
} fr_row_sink;

/* A sink for the items of a built plan; opt gives the seed, --split-experts
 * and the stop flag. The sink is fr_row_sink_free's to free, also on failure. */
fr_status fr_row_sink_init(fr_row_sink *s, const fr_sweep_plan *plan, fr_dataset *ds,
                           fr_sweep_stats *stats, fr_sweep_committer *committer,
                           const fr_sweep_options *opt, fr_error *err);
/* The executor's side of it: cancelled once the stop flag is set or the
 * committer holds a failure. */
fr_sweep_sink fr_row_sink_callbacks(fr_row_sink *s);
void fr_row_sink_free(fr_row_sink *s);

#endif
