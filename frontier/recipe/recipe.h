/*
 * The recipe: one configuration per tensor, as `frontier allocate -o`
 * writes it and `frontier quantize --recipe` and `frontier annotate` read it
 * (docs/analysis.md, "allocate"; docs/quantize.md). One type, one reader,
 * one writer (frontier/recipe/recipe.c), so the three commands cannot
 * disagree about the file:
 *
 *   "recipe"   the map tensor -> configuration, what quantize applies
 *   "tensors"  per tensor: name, class, config, family, llama_cpp_type,
 *              numel, total_bits, bits_per_weight, its error, err_term, fixed
 *   "format": "frontier-recipe", "version": 1, "dataset", "metric",
 *              "objective" (what the allocation minimised, with where its
 *              sensitivities came from) and the allocation's totals
 */
#ifndef FR_RECIPE_H
#define FR_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct fr_recipe_tensor {
    const char *name;     /* the tensor */
    const char *config;   /* its configuration; NULL when the file maps the tensor to
                           * something that is not a string (read) */
    /* the "tensors" report: all written; read back, only error (NAN when
     * the file has none for the tensor; the other fields stay 0 or NULL) */
    const char *cls;      /* tensor class */
    const char *family;   /* the configuration's family */
    uint64_t numel, total_bits;
    double error;         /* the tensor's error under error_name */
    double err_term;      /* sq_err or out_sq_err */
    int fixed;            /* pinned by allocate --fixed */
    const char *source_format; /* how the source stores the tensor ("Q4_1"; "" or NULL
                                * for float elements): a kept tensor's llama_cpp_type */
    const char *llama_type; /* the ggml type written ("q5_0", "f16"; a llama-quantize mix
                             * names it), NULL: the family table's (or null) */
} fr_recipe_tensor;

typedef struct fr_recipe {
    size_t n_tensors;
    fr_recipe_tensor *tensors; /* in the order of the map */
    /* the allocation's totals, written beside the map (names as
     * docs/analysis.md gives them); read back, only bits_per_weight (NAN
     * when absent) and error_name ("rel_err", the one quantize compares
     * its own with) and objective */
    const char *dataset;       /* the dataset the allocation was solved on */
    const char *llama_mix;     /* a llama-quantize stock mix ("Q4_K_M": allocate --llama-mix),
                                * NULL for an allocation (not written then) */
    const char *metric;        /* "rel_err", "out_rel_err" or "sqnr_db" */
    /* what the allocation minimised: "sensitivity", "weight_error" or
     * "output_error" (fr_alloc_objective_name); NULL: not written (a
     * llama-quantize mix). Read back (NULL when the file has none: files
     * from before it) */
    const char *objective;
    /* under "sensitivity": the calibration file the alphas were read from
     * (NULL: none, written as null), the alpha given to tensors without one
     * (NaN: none) and the predicted KL divergence sum alpha err^2. Written
     * beside any objective: sensitivity_source null says none was used */
    const char *sensitivity_source;
    double default_sensitivity;
    double predicted_kl;
    const char *error_name;    /* each tensor's error: "rel_err" or "out_rel_err" */
    double budget_bits_per_weight;
    uint64_t capacity_bits, total_bits, numel;
    double bits_per_weight;
    double value;              /* the metric's value over the tensors */
    int has_rel_err;           /* also the global rel_err (for sqnr_db) */
    double rel_err;
    double err_sum, norm_sum;
    double lower_bound;        /* the metric's value at the LP lower bound */
    int optimal;               /* proven optimal */
    uint64_t search_states;
    void *json;                /* the reader's parsed file, which the strings point into */
} fr_recipe;

/* fr_recipe_read's flags */
#define FR_RECIPE_UNTAGGED 0x1u /* also read a file without "format": "frontier-recipe"
                                 * (a bare {"recipe": {...}} map, as annotate accepts) */

/* Reads the recipe at path. FR_E_IO when it cannot be opened, FR_E_FORMAT
 * when it is not a recipe (not JSON, no "recipe" map, or, without
 * FR_RECIPE_UNTAGGED, no "format": "frontier-recipe"); both name path.
 * Tensors and configurations are not checked here: each reader checks
 * them against its model or dataset. Free with fr_recipe_free. */
fr_status fr_recipe_read(const char *path, unsigned flags, fr_recipe *out, fr_error *err);
void fr_recipe_free(fr_recipe *r);

/* Writes r as JSON at path (frontier/dataset/output_file.h: a temporary
 * name renamed over path). Numbers read back as the same doubles; a
 * non-finite one is null. The llama_cpp_type of each tensor comes from its
 * configuration (the family table's GGML types). */
fr_status fr_recipe_write(const fr_recipe *r, const char *path, fr_error *err);

#endif
