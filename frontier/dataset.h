/*
 * The frontier dataset (HDF5; schema in docs/dataset.md), in memory.
 * The sweep writes it, merge joins two, and the analysis commands read it
 * and add derived tables under /frontier.
 */
#ifndef FR_DATASET_H
#define FR_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define FR_SCHEMA_VERSION 1

typedef struct fr_ds_source {
    uint32_t source_id;
    char *path;       /* as given on the command line, or the synthetic spec */
    char *kind;       /* "safetensors", "safetensors-sharded", "gguf", "onnx", "synthetic" */
    uint64_t size;    /* bytes of all files (0 for synthetic) */
    char *sha256;     /* hex digest of the files, "" when not computed */
    int64_t mtime;    /* newest file mtime, seconds since the epoch (0 for synthetic) */
    uint32_t n_tensors;
    uint64_t n_params;
} fr_ds_source;

typedef struct fr_ds_tensor {
    uint32_t tensor_id;
    uint32_t source_id;
    char *name;
    char *cls;        /* fr_class_name() */
    char *dtype;      /* stored dtype, "BF16" */
    char *shape;      /* "4096x4096" in C order */
    uint64_t numel;
    int64_t rows, cols; /* the matrix view quantizers see */
    double sq_norm;   /* sum w^2 (double): lets global errors be aggregated exactly */
} fr_ds_tensor;

typedef struct fr_ds_config {
    uint32_t config_id;
    char *name;       /* "int4-g128-asym" */
    char *family;     /* the quantizer's name: "int" */
    double nominal_bits;
    char *params;     /* JSON object */
    char *origin;     /* "builtin" or the plugin's path */
} fr_ds_config;

typedef struct fr_ds_result {
    uint32_t tensor_id;
    uint32_t config_id;
    double bits_per_weight;
    uint64_t total_bits;
    double rel_err;
    double sqnr_db;
    double max_abs_err;
    double cosine;
    double out_rel_err;  /* NaN without calibration */
    double sq_err;       /* sum (w - w_hat)^2 */
    double out_sq_err;   /* tr(dW H dW^T), NaN without calibration */
    double out_sq_ref;   /* tr(W H W^T), NaN without calibration */
    double seconds;
    char device[16];     /* "cpu", "cuda:0" */
} fr_ds_result;

typedef struct fr_ds_skipped {
    uint32_t source_id;
    char *name;
    char *reason;
} fr_ds_skipped;

typedef struct fr_dataset {
    /* root attributes */
    char *format;          /* "frontier" */
    int64_t schema_version;
    char *tool_version;
    char *created;         /* ISO 8601 UTC */
    char *command_line;
    char *host;
    char *devices;
    size_t n_sources, n_tensors, n_configs, n_results, n_skipped;
    fr_ds_source *sources;
    fr_ds_tensor *tensors;
    fr_ds_config *configs;
    fr_ds_result *results;
    fr_ds_skipped *skipped;
} fr_dataset;

/* Reads every table of a dataset (not /frontier). Fails with FR_E_FORMAT
 * naming the file for anything that is not a frontier dataset of a known
 * schema version. */
fr_status fr_dataset_read(const char *path, fr_dataset *ds, fr_error *err);
void fr_dataset_free(fr_dataset *ds);

/* Lookups by id (ids are indices in the tables of a dataset this tool wrote,
 * but callers must not rely on that). NULL when absent. */
const fr_ds_tensor *fr_dataset_tensor(const fr_dataset *ds, uint32_t tensor_id);
const fr_ds_config *fr_dataset_config(const fr_dataset *ds, uint32_t config_id);

#endif
