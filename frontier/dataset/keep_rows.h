/*
 * The `keep` rows of a dataset (docs/quantized-sources.md): a tensor the
 * source stores in a quantized format (its /tensors `source_format` set)
 * can stay as released, at its stored bits with no error added. The sweep
 * writes one /results row of the configuration `keep` (FR_KEEP_CONFIG) per
 * such tensor, so pareto, allocate and export weigh "keep it" against the
 * measured configurations like any other choice.
 */
#ifndef FR_KEEP_ROWS_H
#define FR_KEEP_ROWS_H

#include <stddef.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

/* The params of the keep configuration in /configs. */
#define FR_KEEP_PARAMS "{\"keep\":\"stored\"}"

/* Adds the keep row of every tensor of ds that has a source format, a
 * stored size and a finite sq_norm (a tensor found to hold NaN or Inf has
 * no rows) and lacks one, and the keep configuration when it is missing;
 * an expert stack with /expert_results rows (--split-experts) also gets
 * one keep row per expert there (its stored bits divided evenly among the
 * experts); *n_added (may be NULL) counts the rows. A /configs entry named keep that
 * is not this one fails with FR_E_MISMATCH; out names the file in that
 * message. */
fr_status fr_dataset_add_keep_rows(fr_dataset *ds, const char *out, size_t *n_added,
                                   fr_error *err);

/* Nonzero when config is the keep configuration (by name). */
int fr_dataset_is_keep(const char *config);

/* llama.cpp's name of the type a kept tensor stays in (its source_format
 * lowercased: "Q4_1" -> "q4_1", what llama-quantize's --tensor-type takes
 * and, given a tensor's own type, copies as it is), into buf; NULL when
 * source_format is empty. */
const char *fr_dataset_keep_type(const char *source_format, char *buf, size_t len);

#endif
