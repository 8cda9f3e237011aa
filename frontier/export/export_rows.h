/*
 * `frontier export` as data (csv, json): frontier/export/export_rows.c.
 */
#ifndef FR_EXPORT_ROWS_H
#define FR_EXPORT_ROWS_H

#include "core/error.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/llama_mix.h"
#include "frontier/analysis/pareto.h"
#include "frontier/dataset/dataset.h"

/* What the rows are of and what the json records about them (fr_export's
 * options, frontier/export/export.h, as far as the rows need them). */
typedef struct fr_rows_options {
    int json;                      /* 1: json, 0: csv */
    const fr_selection *selection; /* tensors and configurations */
    fr_metric y;                   /* recorded in the json */
    fr_group_by by;                /* recorded in the json */
    const fr_mixed_curve *mixed;   /* the stored mixed-precision curve, or NULL */
    const fr_llama_mix_result *mixes; /* llama-quantize's stock mixes (n_mixes), or NULL */
    size_t n_mixes;
    const char *dataset_path;      /* recorded in the json */
} fr_rows_options;

/* Every selected result, Pareto point, mixed-curve point and stock mix as
 * one tidy row, into path as csv or json (opt->json). */
fr_status fr_export_rows(const fr_dataset *ds, const fr_result_index *ix, const fr_pareto *p,
                         const fr_rows_options *opt, const char *path, fr_error *err);

#endif
