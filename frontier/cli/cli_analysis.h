/* What the analysis commands (pareto, allocate, export) share. */
#ifndef FR_CLI_ANALYSIS_H
#define FR_CLI_ANALYSIS_H

#include "core/error.h"
#include "frontier/dataset.h"
#include "frontier/pareto.h"

/* Reads a dataset and indexes its results. FR_E_FORMAT when it has no
 * results ("did the sweep finish?"). On failure nothing is left allocated;
 * on success the caller frees them (fr_result_index_free, fr_dataset_free). */
fr_status cli_read_dataset(const char *path, fr_dataset *ds, fr_result_index *ix, fr_error *err);

/* "2..8" or "2..8:0.25" (step default_step when absent). 0 when malformed. */
int cli_parse_range(const char *text, double default_step, double *lo, double *hi, double *step);

/* A finite number; 0 when text is not one. */
int cli_parse_double(const char *text, double *out);

#endif
