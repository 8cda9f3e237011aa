/*
 * The summary a sweep prints at its end (frontier/cli/sweep_summary.c).
 */
#ifndef FR_SWEEP_SUMMARY_H
#define FR_SWEEP_SUMMARY_H

#include <stdio.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"
#include "frontier/sweep/sweep.h"

/* Per configuration with rows: model-level bits per weight (sum total_bits /
 * sum numel), global rel_err sqrt(sum sq_err / sum sq_norm), and the best
 * and worst tensor class by class-level global rel_err. The table lists every
 * configuration with verbose, else the least rel_err (and out_rel_err) in each
 * band of bits per weight with the configurations that have the same rows;
 * json lists every configuration. */
fr_status fr_sweep_summary_print(FILE *out, const fr_dataset *ds, const char *output,
                                 const fr_sweep_stats *stats, int json, int verbose,
                                 fr_error *err);

#endif
