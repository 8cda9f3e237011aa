/*
 * Joining frontier datasets (`frontier merge`, frontier/dataset/dataset_merge.c).
 *
 * Sources, tensors and configurations are deduplicated by identity and
 * their ids renumbered in order of first appearance:
 *   source        kind + sha256 (+ size) when both have a digest, else
 *                 kind + path + size + mtime; synthetic: kind + spec;seed
 *   tensor        source + name (dtype and shape must then agree)
 *   configuration name, which must come with the same family, origin,
 *                 params and nominal bits in every input
 * A (tensor, configuration) row present in several inputs must agree on
 * every metric within 1e-12 relative (seconds and device are ignored);
 * otherwise the merge is refused with FR_E_MISMATCH naming the row.
 */
#ifndef FR_MERGE_H
#define FR_MERGE_H

#include <stddef.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

typedef struct fr_merge_stats {
    size_t n_duplicate_rows; /* rows found in more than one input */
} fr_merge_stats;

/* Merges n datasets (names are their paths, for messages) into *out (which
 * is initialised here). Root attributes: created now, host of this machine,
 * devices joined; the caller sets command_line. */
fr_status fr_dataset_merge(const fr_dataset *in, const char *const *names, size_t n,
                           fr_dataset *out, fr_merge_stats *stats, fr_error *err);

/* |a - b| <= 1e-12 * max(|a|, |b|), with NaN equal to NaN and infinities
 * equal to themselves. */
int fr_metric_agrees(double a, double b);

#endif
