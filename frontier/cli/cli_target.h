/*
 * allocate --target FORMAT (docs/analysis.md, "--target"): which (tensor,
 * configuration) pairs of a dataset the format's writer can store, by the
 * writer's own rule (frontier/checkpoint/storable.h) applied to the model
 * the dataset was swept from.
 */
#ifndef FR_CLI_TARGET_H
#define FR_CLI_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

typedef struct cli_target {
    uint8_t *storable;   /* [ds->n_tensors x ds->n_configs]: 1 where the writer stores it */
    size_t n_refused;    /* measured pairs it cannot store */
    size_t n_tensors_hit; /* tensors with at least one such pair */
    char example[768];   /* "'TENSOR' under 'CONFIG': why" of the first one */
} cli_target;

/* Fills *tg for format `format` ("gguf", "compressed-tensors",
 * "dequantized") from the models of ds's /sources (model: the one to read
 * instead, a dataset of one source). FR_E_USAGE for an unknown format,
 * FR_E_IO / FR_E_FORMAT when a model cannot be read, FR_E_MISMATCH when it
 * lacks a tensor the dataset has. */
fr_status cli_target_build(const char *format, const fr_dataset *ds, const char *model,
                           cli_target *tg, fr_error *err);
void cli_target_free(cli_target *tg);

#endif
