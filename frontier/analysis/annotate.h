/*
 * Measured model quality in a dataset (docs/dataset.md, "/frontier/measured"):
 * `frontier annotate RUN.h5 EVAL.json...` stores the results of
 * examples/eval/kld.py (mean next-token KL divergence, perplexity), one row
 * per configuration or recipe, beside the weight errors they are compared
 * with. Rows are keyed by name: annotating a name again replaces its row.
 */
#ifndef FR_ANNOTATE_H
#define FR_ANNOTATE_H

#include <stddef.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

#define FR_MEASURED_GROUP "/frontier/measured"

typedef struct fr_measured {
    char name[256];        /* the configuration, or the recipe's name */
    char kind[16];         /* "config" or "recipe" */
    double bits_per_weight;/* the recipe's, or the configuration's over the tensors it quantized */
    double kl_mean, kl_stderr, ppl_quant, ppl_orig, top1_agreement;
    double positions;      /* predicted positions the means are over */
    double predicted_kl;   /* a recipe's prediction (allocate's sensitivity objective:
                            * sum alpha x error^2, the recipe's "predicted_kl"), kept in
                            * the eval JSON; NaN when there is none */
    char *json;            /* the whole eval JSON, as given (owned) */
} fr_measured;

/* Parses one eval JSON text (kld.py's output) checked against ds: a
 * "config" must be in /configs, a "recipe" file must be readable (a path
 * relative to base_dir when not absolute) and name only tensors and
 * configurations of ds. FR_E_FORMAT for bad JSON or missing fields (named),
 * FR_E_USAGE for an unknown configuration or recipe. */
fr_status fr_measured_parse(const char *text, const char *what, const char *base_dir,
                            const fr_dataset *ds, fr_measured *out, fr_error *err);
void fr_measured_free(fr_measured *m);

/* Reads /frontier/measured (*n = 0 and FR_OK when absent). */
fr_status fr_measured_read(const char *path, fr_measured **rows, size_t *n, fr_error *err);
void fr_measured_free_all(fr_measured *rows, size_t n);

/* Merges rows into /frontier/measured of the dataset at path (same name:
 * replaced), in one all-or-nothing step: a copy beside it, edited, fsync()ed
 * and renamed over it. The dataset's own tables are not touched, so their
 * checksums stay valid (checked by reading the result back). */
fr_status fr_measured_store(const char *path, const fr_measured *rows, size_t n,
                            const char *command_line, fr_error *err);

#endif
