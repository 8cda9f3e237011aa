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
    char *name;       /* the tensor */
    char *reason;
    char *config;     /* the configuration that failed on it, "" when the whole tensor was skipped */
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

/* ---- building and writing (frontier/dataset.c, frontier/dataset_write.c) ----
 * Table arrays are allocated only by fr_dataset_read and the add functions
 * below (which grow them geometrically); do not realloc them elsewhere. A
 * zeroed fr_dataset is an empty one. */

/* Appends a copy of row (strings duplicated; NULL strings become ""). */
fr_status fr_dataset_add_source(fr_dataset *ds, const fr_ds_source *row, fr_error *err);
fr_status fr_dataset_add_tensor(fr_dataset *ds, const fr_ds_tensor *row, fr_error *err);
fr_status fr_dataset_add_config(fr_dataset *ds, const fr_ds_config *row, fr_error *err);
fr_status fr_dataset_add_result(fr_dataset *ds, const fr_ds_result *row, fr_error *err);
fr_status fr_dataset_add_skipped(fr_dataset *ds, const fr_ds_skipped *row, fr_error *err);

/* Replaces a root string attribute (e.g. &ds->command_line) with a copy of value. */
fr_status fr_dataset_set_string(char **field, const char *value, fr_error *err);

/* Orders /results by (tensor_id, config_id) and /skipped by (source_id,
 * name, config), so equal runs give equal files whatever the completion order. */
void fr_dataset_sort(fr_dataset *ds);

/* Reads only the root attributes format and schema_version: FR_OK with
 * *schema_version set when path is a frontier dataset of any version,
 * FR_E_IO when it cannot be opened, FR_E_FORMAT when it is not one. */
fr_status fr_dataset_probe(const char *path, int64_t *schema_version, fr_error *err);

/* How fr_dataset_write treats an existing file at path. */
typedef enum fr_ds_write_mode {
    FR_DS_CREATE = 0, /* path must not exist (checked atomically): else FR_E_OUTPUT */
    FR_DS_REPLACE = 1 /* path is replaced in one step */
} fr_ds_write_mode;

/*
 * Writes ds as a complete frontier dataset: everything goes to
 * "<path>.tmp", which is flushed (fsync) and then renamed over path (or
 * hard-linked to it for FR_DS_CREATE), so path always holds either the
 * previous complete file or the new one, even after kill -9 or a power
 * loss. FR_E_OUTPUT names path when it cannot be written.
 */
fr_status fr_dataset_write(const char *path, const fr_dataset *ds, fr_ds_write_mode mode,
                           fr_error *err);

#endif
