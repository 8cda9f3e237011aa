/*
 * Mixed-precision allocation: one configuration per tensor that minimises
 * the aggregated error under a bits-per-weight budget (docs/analysis.md,
 * "allocate").
 *
 * The problem is a multiple-choice knapsack: item i (a tensor) takes exactly
 * one option j (a configuration) of weight w_ij = total_bits (an integer)
 * and cost e_ij = sq_err (or out_sq_err); minimise sum e subject to
 * sum w <= capacity = floor(budget * sum numel). frontier/analysis/mckp.h
 * solves it exactly; frontier/analysis/allocate.c builds it from a dataset
 * and solves it for one budget or a range; frontier/analysis/
 * allocate_output.h writes the answer (the recipe through
 * frontier/recipe/recipe.h).
 */
#ifndef FR_ALLOCATE_H
#define FR_ALLOCATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/mckp.h"
#include "frontier/analysis/pareto.h"

/* ---- allocation over a dataset ---- */

typedef struct fr_alloc_fixed {
    const char *pattern; /* extended regex on tensor names */
    const char *config;  /* configuration name */
} fr_alloc_fixed;

/* What the knapsack minimises: the metric's aggregated squared error, or
 * (FR_OBJECTIVE_SENSITIVITY) the predicted KL divergence
 * sum_t alpha_t * err_t^2, err_t the tensor's relative error for the metric
 * (rel_err, or out_rel_err) and alpha_t its sensitivity (docs/analysis.md,
 * "The objective"). */
typedef enum fr_objective { FR_OBJECTIVE_ERROR = 0, FR_OBJECTIVE_SENSITIVITY = 1 } fr_objective;

typedef struct fr_alloc_options {
    fr_metric metric;           /* rel_err and sqnr_db minimise sq_err; out_rel_err out_sq_err */
    fr_selection selection;     /* tensors (--include/--exclude) and configurations (--configs) */
    size_t n_fixed;
    const fr_alloc_fixed *fixed; /* applied in order; the last match wins */
    uint64_t max_nodes;         /* 0: FR_MCKP_DEFAULT_MAX_NODES */
    int expert_units;           /* the experts of one (layer, projection) are one item (fr_units) */
    const uint8_t *storable;    /* [ds->n_tensors x ds->n_configs] table positions: 0 where
                                 * the target format cannot store the pair (allocate
                                 * --target); NULL: every pair */
} fr_alloc_options;

/* The objective's settings (fr_alloc_prepare_objective); a separate struct
 * so that fr_alloc_options keeps its layout. */
typedef struct fr_alloc_objective {
    fr_objective objective;
    const double *sensitivity;  /* alpha per ds->tensors, NaN where none */
    double default_sensitivity; /* alpha of a tensor without one; NaN: such a tensor is refused */
    /* metric out_rel_err (allocate --sensitivity-reference): a unit with no
     * output error on any selected configuration is allocated on its weight
     * error (its predicted KL alpha x rel_err^2, what the rescaled alphas are
     * calibrated to) instead of being left out; its choice's terms are NaN
     * (it has no out_rel_err) and it stays out of the global value */
    int weight_fallback;
} fr_alloc_objective;

typedef struct fr_alloc_option {
    size_t config;       /* position in ds->configs */
    uint64_t total_bits;
    double err_term;     /* sq_err or out_sq_err */
    double cost;         /* what is minimised: err_term, or alpha * err_term / norm_term */
} fr_alloc_option;

typedef struct fr_alloc_tensor {
    size_t tensor;       /* position in ds->tensors */
    uint64_t numel;
    double norm_term;    /* sq_norm or out_sq_ref */
    fr_metric metric;    /* whose terms its options have: the problem's, or rel_err for a
                          * unit on its weight error (fr_alloc_objective.weight_fallback) */
    int fixed;           /* pinned by --fixed */
    double alpha;        /* sensitivity used (FR_OBJECTIVE_SENSITIVITY), else NaN */
    size_t n_options;    /* undominated options, by increasing bits */
    fr_alloc_option *options;
    size_t n_members;    /* stored tensors of this item: 1, or the experts of an expert unit */
    size_t *members;     /* positions in ds->tensors, in expert order; members[0] == tensor */
    double *member_alpha; /* [n_members] sensitivity of each member (NaN when none) */
} fr_alloc_tensor;

/* An item (fr_alloc_tensor) is one allocation unit: a stored tensor, or with
 * expert_units all the 2-D experts of one (layer, projection) (fr_units in
 * frontier/analysis/units.h). A unit's option is a configuration measured
 * on all its members: total_bits, err_term and norm_term the sums over the
 * members in expert order (as a stack's row sums its experts,
 * docs/formats.md), cost
 * err_term or, under the sensitivity objective, the sum of the members'
 * alpha_m * err_m / norm_m. An allocation lists every member with the unit's
 * configuration, so n_choices counts stored tensors. */

/* A dataset turned into a knapsack: built once, solved for many budgets. */
typedef struct fr_alloc_problem {
    const fr_dataset *ds;
    const fr_result_index *ix;
    fr_metric metric;
    fr_objective objective;
    size_t n_tensors;
    fr_alloc_tensor *tensors;
    uint64_t numel;        /* sum over the allocated tensors */
    double norm_sum;
    uint64_t min_bits;     /* lightest achievable total */
    uint64_t max_bits;     /* total of the most accurate choice per tensor */
    size_t n_dropped;      /* selected tensors without a usable result for the metric */
    const char *dropped_example;
    size_t n_fallback;     /* units on their weight error (weight_fallback) */
    const char *fallback_example;
    size_t n_unstorable;   /* selected tensors whose results the target cannot store
                            * (opt->storable): left as they are, outside the budget */
    const char *unstorable_example;
    uint64_t max_nodes;
    double default_sensitivity; /* the objective's alpha for tensors without one (NaN: none) */
    const char *sensitivity_source; /* where the alphas came from (the --calib file), NULL:
                                     * none; set by the caller after preparing, written into
                                     * the recipe (fr_allocation_write_json) */
} fr_alloc_problem;

/* Fails with FR_E_USAGE for a --fixed configuration not in the dataset or
 * missing on a tensor it pins, or (sensitivity objective) for tensors
 * without a sensitivity and no default (their names in the message);
 * FR_E_FORMAT when no tensor has a usable result. */
fr_status fr_alloc_prepare(const fr_dataset *ds, const fr_result_index *ix,
                           const fr_alloc_options *opt, fr_alloc_problem *prob, fr_error *err);
/* fr_alloc_prepare with an objective (NULL: FR_OBJECTIVE_ERROR). */
fr_status fr_alloc_prepare_objective(const fr_dataset *ds, const fr_result_index *ix,
                                     const fr_alloc_options *opt, const fr_alloc_objective *obj,
                                     fr_alloc_problem *prob, fr_error *err);
void fr_alloc_problem_free(fr_alloc_problem *prob);

/* What prob minimises, as the recipe's "objective" and allocate's summary
 * name it: "sensitivity" (the predicted KL divergence), else the metric's
 * squared error, "output_error" for out_rel_err and "weight_error" for
 * rel_err and sqnr_db. */
const char *fr_alloc_objective_name(const fr_alloc_problem *prob);

/* Tensors of ds (with elements) that have a measured sensitivity in
 * alpha[ds->n_tensors] (fr_alloc_read_sensitivity): what allocate's default
 * objective looks for. */
size_t fr_alloc_count_sensitivity(const fr_dataset *ds, const double *alpha);

/* Configuration c on item i: its summed bits, err and norm terms, and the
 * objective's cost (alpha weighted under the sensitivity objective). 0 when
 * a member lacks a usable result for the metric. */
int fr_alloc_unit_terms(const fr_alloc_problem *prob, size_t i, size_t c, uint64_t *bits,
                        double *err_term, double *norm_term, double *cost);

/* Smallest achievable bits per weight of the problem. */
double fr_alloc_min_bpw(const fr_alloc_problem *prob);

typedef struct fr_alloc_choice {
    size_t tensor;       /* position in ds->tensors */
    size_t config;       /* position in ds->configs */
    uint64_t total_bits;
    uint64_t numel;
    double err_term, norm_term;
    int fixed;
} fr_alloc_choice;

typedef struct fr_allocation {
    fr_metric metric;
    double budget;            /* bits per weight asked for */
    uint64_t capacity_bits;   /* floor(budget * numel) */
    uint64_t total_bits;
    uint64_t numel;
    double bits_per_weight;   /* achieved */
    double err_sum, norm_sum;
    fr_objective objective;
    double cost_sum;          /* the minimised objective: err_sum, or the predicted KL divergence */
    double value;             /* the metric's global value (rel_err, out_rel_err, sqnr_db) */
    double lower_bound_value; /* the metric's value at the LP lower bound */
    fr_mckp_stats stats;
    size_t n_choices;
    fr_alloc_choice *choices;
} fr_allocation;

/* The sensitivity alpha of every tensor of ds (alpha[ds->n_tensors], NaN
 * where the file has none) from a calibration file's <module>.sensitivity
 * (docs/calibration.md): the tensor's own module only (no q/k/v sharing:
 * each projection has its own alpha); a tied embedding (an embed tensor in
 * a dataset without an lm_head tensor) takes lm_head's, as in a sweep. A
 * negative alpha (a noisy fit) is taken as 0. Errors of the file as
 * fr_calib_open/fr_calib_lookup. */
fr_status fr_alloc_read_sensitivity(const fr_dataset *ds, const char *calib_path, double *alpha,
                                    fr_error *err);

/* alpha (per unit squared weight error, measured with the error of the
 * configuration named ref) turned into alpha per unit squared output error:
 * each finite alpha[t] times (rel_err / out_rel_err)^2 of ref on tensor t.
 * A tensor without an output error (out_sq_ref NaN: no statistics for it)
 * keeps its alpha: the allocation puts it on its weight error
 * (fr_alloc_objective.weight_fallback). FR_E_USAGE when ref is not in ds;
 * FR_E_FORMAT naming a tensor with an alpha but no finite, nonzero rel_err
 * and out_rel_err under ref (ref not measured on it), or when no tensor has
 * an output error (a sweep without --calib). */
fr_status fr_alloc_rescale_sensitivity(const fr_dataset *ds, const fr_result_index *ix,
                                       const char *ref, double *alpha, fr_error *err);

/* Predicted KL divergence of the uniform configuration c over the tensors
 * of the selection that have a result for the metric and a sensitivity
 * (alpha[t], or default_alpha where NaN): sum alpha_t err_t^2; NaN when a
 * selected tensor lacks the result or a sensitivity. *n_tensors counts
 * the tensors summed. */
double fr_alloc_predicted_uniform(const fr_dataset *ds, const fr_result_index *ix,
                                  fr_metric metric, const fr_selector *sel, const double *alpha,
                                  double default_alpha, size_t c, size_t *n_tensors);

/* Fails with FR_E_USAGE naming the minimum when budget is below it. */
fr_status fr_alloc_solve(const fr_alloc_problem *prob, double budget, fr_allocation *out,
                         fr_error *err);
void fr_allocation_free(fr_allocation *a);

/* ---- the mixed-precision curve ---- */

typedef struct fr_curve_point {
    double budget;
    double bits_per_weight;  /* achieved, <= budget */
    uint64_t total_bits;
    double err_sum;
    double value;            /* metric value */
    double rel_err;          /* the global relative error (out_rel_err for that metric) */
    double lower_bound_value;
    int optimal;
} fr_curve_point;

typedef struct fr_mixed_curve {
    fr_metric metric;
    uint64_t numel;          /* of the tensors allocated */
    size_t n_tensors;
    double norm_sum;
    size_t n_points;
    fr_curve_point *points;  /* by increasing budget */
} fr_mixed_curve;

/* Solves every budget lo, lo+step, ..., <= hi (plus, when uniform_too, the
 * bits per weight of every configuration measured on all allocated tensors
 * inside [lo, hi], so the curve passes exactly through each uniform
 * configuration's size). Budgets below the minimum are skipped. */
fr_status fr_alloc_sweep(const fr_alloc_problem *prob, double lo, double hi, double step,
                         int uniform_too, fr_mixed_curve *out, fr_error *err);
void fr_mixed_curve_free(fr_mixed_curve *c);

#endif
