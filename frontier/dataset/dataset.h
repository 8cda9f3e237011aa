/*
 * The frontier dataset (HDF5; schema in docs/dataset.md), in memory.
 * The sweep writes it, merge joins two, and the analysis commands read it
 * and add derived tables under /frontier.
 */
#ifndef FR_DATASET_H
#define FR_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    /* how the source stores it (optional: "" and 0 in files from before them) */
    char *source_format; /* the block format W was decoded from ("Q4_1"); "" when W is
                            the stored elements themselves (a float dtype) */
    uint64_t stored_bits; /* bits the source stores for the tensor (scales included) */
    /* what its out_sq_err and out_sq_ref were computed with (optional: "" in
     * files from before it): FR_OUT_ERROR_HESSIAN, FR_OUT_ERROR_DIAGONAL, or
     * "" (no output error) */
    char *out_error;
} fr_ds_tensor;

#define FR_OUT_ERROR_HESSIAN "hessian"   /* tr(dW H dW^T) */
#define FR_OUT_ERROR_DIAGONAL "diagonal" /* sum_ij act_sq_mean_j dW_ij^2 (--diagonal-output-error) */

/* Whether t's output error is the diagonal's. */
static inline int fr_ds_tensor_out_diagonal(const fr_ds_tensor *t)
{
    return t->out_error && !strcmp(t->out_error, FR_OUT_ERROR_DIAGONAL);
}

/* The configuration every tensor of a quantized source has beside the
 * measured ones (docs/quantized-sources.md): the tensor as released, at its
 * stored bits, with no error added. Not a quantizer: the sweep writes its
 * rows (fr_dataset_add_keep_rows), quantize copies such a tensor's bytes. */
#define FR_KEEP_CONFIG "keep"
#define FR_KEEP_FAMILY "keep"

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
    uint32_t flags;      /* FR_ROW_*: numeric edge cases (docs/dataset.md); 0 in older files */
    char device[16];     /* "cpu", "cuda:0" */
} fr_ds_result;

/* Bits of fr_ds_result.flags (/results `flags`, docs/dataset.md "Numeric
 * flags"). 0 means "not examined": files written before the column
 * existed, and rows of an executor that does not report the facts. */
#define FR_ROW_CHECKED 0x1u         /* the tensor's values were examined */
#define FR_ROW_ALL_ZERO 0x2u        /* every element is +0 or -0 */
#define FR_ROW_SUBNORMAL 0x4u       /* some element is a float32 subnormal */
#define FR_ROW_NEG_ZERO 0x8u        /* some element is -0.0 */
#define FR_ROW_SCALE_OVERFLOW 0x10u /* a scale saturates at its dtype's largest value */
#define FR_ROW_SCALE_UNDERFLOW 0x20u /* a group that is not all zero gets a scale of 0
                                       (or an e8m0 exponent clamped at -127) */
#define FR_ROW_SCALE_UNCHECKED 0x40u /* the configuration's params define no scale rule
                                        frontier can evaluate: the two bits above are not examined */
#define FR_ROW_GGUF_FALLBACK 0x80u  /* the configuration's GGUF type (traits gguf_type) cannot
                                       hold the tensor's rows: the row measures the type
                                       llama-quantize falls back to (frontier/sweep/gguf_fallback.h) */

/* A row of /expert_results (docs/dataset.md): one expert of an expert
 * stack under one configuration (frontier sweep --split-experts); the
 * stack's own row, the sum over its experts, is in /results. */
typedef struct fr_ds_expert_result {
    fr_ds_result row;    /* bits_per_weight and total_bits: one expert's */
    uint32_t expert;     /* index along the stack's leading dimension */
} fr_ds_expert_result;

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
    size_t n_expert_results; /* /expert_results: absent (0 rows) without --split-experts */
    fr_ds_expert_result *expert_results;
} fr_dataset;

/* The tensors of ds whose output error is the diagonal's (out_error
 * "diagonal"), for the lines that say so beside out_rel_err. */
size_t fr_dataset_diagonal_out_tensors(const fr_dataset *ds);

/* Reads every table of a dataset (not /frontier). Fails with FR_E_FORMAT
 * naming the file for anything that is not a frontier dataset of a known
 * schema version. */
fr_status fr_dataset_read(const char *path, fr_dataset *ds, fr_error *err);
void fr_dataset_free(fr_dataset *ds);

/* Lookups by id (ids are indices in the tables of a dataset this tool wrote,
 * but callers must not rely on that). NULL when absent. */
const fr_ds_tensor *fr_dataset_tensor(const fr_dataset *ds, uint32_t tensor_id);
const fr_ds_config *fr_dataset_config(const fr_dataset *ds, uint32_t config_id);

/* ---- building and writing (frontier/dataset/dataset.c, frontier/dataset/dataset_write.c) ----
 * Table arrays are allocated only by fr_dataset_read and the add functions
 * below (which grow them geometrically); do not realloc them elsewhere. A
 * zeroed fr_dataset is an empty one. */

/* Appends a copy of row (strings duplicated; NULL strings become ""). */
fr_status fr_dataset_add_source(fr_dataset *ds, const fr_ds_source *row, fr_error *err);
fr_status fr_dataset_add_tensor(fr_dataset *ds, const fr_ds_tensor *row, fr_error *err);
fr_status fr_dataset_add_config(fr_dataset *ds, const fr_ds_config *row, fr_error *err);
fr_status fr_dataset_add_result(fr_dataset *ds, const fr_ds_result *row, fr_error *err);
fr_status fr_dataset_add_skipped(fr_dataset *ds, const fr_ds_skipped *row, fr_error *err);
fr_status fr_dataset_add_expert_result(fr_dataset *ds, const fr_ds_result *row, uint32_t expert,
                                       fr_error *err);

/* Replaces a root string attribute (e.g. &ds->command_line) with a copy of value. */
fr_status fr_dataset_set_string(char **field, const char *value, fr_error *err);

/* Orders /results by (tensor_id, config_id), /expert_results by
 * (tensor_id, config_id, expert) and /skipped by (source_id,
 * name, config), so equal runs give equal files whatever the completion order. */
void fr_dataset_sort(fr_dataset *ds);

/* Reads only the root attributes format and schema_version: FR_OK with
 * *schema_version set when path is a frontier dataset of any version,
 * FR_E_IO when it cannot be opened, FR_E_FORMAT when it is not one. */
fr_status fr_dataset_probe(const char *path, int64_t *schema_version, fr_error *err);

/* Nonzero when path has derived tables under /frontier (pareto, allocate:
 * frontier/analysis/frontier_store.h). */
int ds_has_derived(const char *path);

#endif
