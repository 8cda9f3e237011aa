/*
 * Derived tables under /frontier in a dataset file (docs/analysis.md,
 * "Stored results"): Pareto points, allocations and the mixed-precision
 * curve, each a group holding a `points` (or `tensors`) table and
 * attributes recording the parameters and the command line.
 *
 * Writes are all-or-nothing: a transaction reads the dataset into memory
 * (HDF5's core driver), edits it there, and on commit writes its bytes to
 * a temporary file beside it ("<file>.frontier-tmp-<pid>"), fsync()s it and
 * renames it over the original, so an interrupted or failed command (a
 * full disk included) leaves the dataset as it was.
 */
#ifndef FR_FRONTIER_STORE_H
#define FR_FRONTIER_STORE_H

#include "core/error.h"
#include "frontier/analysis/allocate.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/pareto.h"

typedef struct fr_store fr_store;

/* FR_E_IO when the dataset cannot be read, FR_E_OUTPUT when no temporary
 * copy can be written beside it, FR_E_FORMAT when it is not HDF5. */
fr_status fr_store_begin(const char *path, fr_store **out, fr_error *err);
/* Closes, syncs and renames the copy over the dataset; frees the store. */
fr_status fr_store_commit(fr_store *store, fr_error *err);
/* Drops the copy; frees the store. NULL is fine. */
void fr_store_abort(fr_store *store);

/* /frontier/pareto_<by>_<metric> */
fr_status fr_store_pareto(fr_store *store, const fr_pareto *p, const fr_selection *selection,
                          const char *command_line, fr_error *err);
/* /frontier/allocation_<budget> (budget printed with %g) */
fr_status fr_store_allocation(fr_store *store, const fr_allocation *a,
                              const fr_alloc_problem *prob, const fr_selection *selection,
                              const char *command_line, fr_error *err);
/* /frontier/mixed_curve */
fr_status fr_store_mixed_curve(fr_store *store, const fr_mixed_curve *c,
                               const fr_selection *selection, const char *command_line,
                               fr_error *err);

/* Reads /frontier/mixed_curve; *found = 0 (and FR_OK) when the file has none. */
fr_status fr_store_read_mixed_curve(const char *path, fr_mixed_curve *out, int *found,
                                    fr_error *err);

/* Per-tensor sensitivities measured by an engine (frontier sensitivity
 * --dataset): /frontier/sensitivity, a `tensors` table (tensor, alpha,
 * residual) and attributes saying what they were measured on. */
typedef struct fr_stored_sensitivity {
    size_t n;
    const char *const *names; /* the model's tensor names */
    const double *alpha, *residual;
    const char *model;        /* "file sha256 <hex>" */
    const char *text;         /* the text measured on: "file (N bytes, sha256 <hex>)" */
    const char *perturbation; /* what each tensor was perturbed with */
    const char *engine;       /* the engine and its settings */
} fr_stored_sensitivity;
fr_status fr_store_sensitivity(fr_store *store, const fr_stored_sensitivity *sens,
                               const char *command_line, fr_error *err);

/* Reads /frontier/sensitivity of the dataset at path into alpha[t] for
 * each of ds's tensors (by name, or name + ".weight"; NaN where none);
 * *n_found counts them, 0 (and FR_OK) when the file stores none. text
 * (may be NULL with text_len 0): the `text` attribute. */
fr_status fr_store_read_sensitivity(const char *path, const fr_dataset *ds, double *alpha,
                                    size_t *n_found, char *text, size_t text_len,
                                    fr_error *err);

/* Name of a stored group (without "/frontier/"): "pareto_class_rel_err". */
void fr_store_pareto_name(const fr_pareto *p, char *buf, size_t size);
void fr_store_allocation_name(double budget, char *buf, size_t size);

#endif
