/*
 * Model-level points and Pareto sets of a frontier dataset (docs/analysis.md).
 *
 * Every aggregate is exact: a tensor's squared error and squared norm are
 * stored, so the global relative error of a set of tensors is
 * sqrt(sum sq_err / sum sq_norm), and the output error aggregates as
 * sqrt(sum out_sq_err / sum out_sq_ref). Bits per weight of a set of tensors
 * is sum total_bits / sum numel.
 *
 * This header also holds what allocate.c and export.c share with it: the
 * metric, the selection of tensors and configurations, and the index of
 * results by (tensor, configuration).
 */
#ifndef FR_PARETO_H
#define FR_PARETO_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

/* ---- metrics ---- */

typedef enum fr_metric {
    FR_METRIC_REL_ERR = 0,     /* ||W - Q(W)||_F / ||W||_F, from sq_err / sq_norm */
    FR_METRIC_OUT_REL_ERR,     /* sqrt(tr(dW H dW^T) / tr(W H W^T)), needs calibration */
    FR_METRIC_SQNR_DB,         /* -20 log10(rel_err): same error terms as rel_err, maximised */
    FR_METRIC_COUNT
} fr_metric;

const char *fr_metric_name(fr_metric metric);
/* -1 when name is not a metric. */
int fr_metric_from_name(const char *name);

/* The error term and its normaliser of one result under a metric: sq_err and
 * the tensor's sq_norm, or out_sq_err and out_sq_ref. Returns 0 when they are
 * absent or not finite (no calibration, a failed row). */
int fr_metric_terms(fr_metric metric, const fr_ds_result *result, const fr_ds_tensor *tensor,
                    double *err_term, double *norm_term);

/* sqrt(err / norm) (rel_err, out_rel_err) or -20 log10 of it (sqnr_db).
 * norm == 0: 0 when err == 0, else +inf. */
double fr_metric_value(fr_metric metric, double err_sum, double norm_sum);

/* ---- selection of tensors and configurations ---- */

typedef struct fr_selection {
    const char *include;  /* extended regex on tensor names, NULL: all */
    const char *exclude;  /* extended regex on tensor names, NULL: none */
    const char *configs;  /* extended regex on configuration names, NULL: all */
} fr_selection;

typedef struct fr_selector {
    regex_t include, exclude, configs;
    int has_include, has_exclude, has_configs;
} fr_selector;

/* Compiles the expressions; a bad one fails with FR_E_USAGE naming it. */
fr_status fr_selector_init(fr_selector *sel, const fr_selection *spec, fr_error *err);
void fr_selector_free(fr_selector *sel);
int fr_selector_tensor(const fr_selector *sel, const char *name);
int fr_selector_config(const fr_selector *sel, const char *name);

/* Patterns compile with fr_pattern_compile (core/pattern.h). */

/* ---- index of results ---- */

/* cell[t * n_configs + c] is the index in ds->results of the result of
 * tensor ds->tensors[t] under configuration ds->configs[c], or -1. Table
 * positions, not ids: ids are mapped once here. */
typedef struct fr_result_index {
    const fr_dataset *ds;
    size_t n_tensors, n_configs;
    int64_t *cell;
} fr_result_index;

/* Fails with FR_E_FORMAT on a result naming an unknown tensor or
 * configuration id, or on two results for one (tensor, configuration). */
fr_status fr_result_index_build(const fr_dataset *ds, fr_result_index *ix, fr_error *err);
void fr_result_index_free(fr_result_index *ix);

static inline const fr_ds_result *fr_result_at(const fr_result_index *ix, size_t tensor,
                                                size_t config)
{
    int64_t r = ix->cell[tensor * ix->n_configs + config];
    return r < 0 ? NULL : &ix->ds->results[r];
}

/* Position of a configuration by name, -1 when absent. */
int64_t fr_config_position(const fr_dataset *ds, const char *name);

/* Whether configurations c1 and c2 (positions) have the same rows on every
 * tensor t with tensors[t] != 0 (NULL: every tensor): both absent, or both
 * present with bit-identical total_bits, sq_err, max_abs_err, out_sq_err and
 * out_sq_ref (NaN equal to NaN). Such configurations are one point wherever
 * those tensors are aggregated (g64, g128 and gC on 64-column tensors), so the
 * compact tables print them as one row that names the others. */
int fr_configs_same_rows(const fr_result_index *ix, size_t c1, size_t c2,
                         const unsigned char *tensors);

/* ---- points and Pareto sets ---- */

typedef enum fr_group_by {
    FR_BY_CONFIG = 0, /* one group: the model (every selected tensor) */
    FR_BY_FAMILY,     /* one group per quantizer family, over every selected tensor */
    FR_BY_CLASS,      /* one group per tensor class (attn_q, mlp_down, expert, ...) */
    FR_BY_TENSOR,     /* one group per tensor */
    FR_BY_COUNT
} fr_group_by;

const char *fr_group_by_name(fr_group_by by);
int fr_group_by_from_name(const char *name);

/* One configuration aggregated over the common tensors of its group. */
typedef struct fr_point {
    size_t group;            /* index into fr_pareto.groups */
    size_t config;           /* position in ds->configs */
    const char *config_name; /* borrowed from the dataset */
    const char *family;
    double nominal_bits;
    uint64_t total_bits;
    uint64_t numel;
    size_t n_tensors;
    double sq_err, sq_norm;          /* sums over the tensors */
    double out_sq_err, out_sq_ref;   /* sums; NaN when a tensor lacks them */
    double bits_per_weight;
    double rel_err, sqnr_db, out_rel_err;
    int on_frontier;         /* Pareto-optimal in (bits, metric) within its group */
    size_t same_as;          /* position in ds->configs of the first configuration (in
                                the group's order) with the same rows as this one on
                                every tensor the group sums (fr_configs_same_rows);
                                its own config when none comes before it */
} fr_point;

typedef struct fr_pareto_group {
    char *name;              /* "model", the family, the class or the tensor name */
    size_t n_tensors;        /* selected tensors of the group with any result */
    uint64_t numel;          /* their parameters */
    size_t n_common;         /* tensors measured by every compared configuration */
    uint64_t common_numel;
    size_t n_configs;        /* configurations compared */
    size_t n_partial;        /* of which measured on only some of the group's tensors */
    const char *partial_example; /* one of those, for the message */
    size_t first_point, n_points; /* its points, sorted by bits_per_weight */
} fr_pareto_group;

typedef struct fr_pareto {
    fr_group_by by;
    fr_metric metric;
    size_t n_groups;
    fr_pareto_group *groups;
    size_t n_points;
    fr_point *points;
    int expert_units;        /* counted in allocation units (fr_units), not stored tensors */
} fr_pareto;

/* Computes the points of every group and marks the Pareto-optimal ones
 * (minimise bits_per_weight, optimise the metric). A group compares the
 * configurations (matching the selection) measured on any of its selected
 * tensors, restricted to the tensors that ALL of them were measured on
 * (a result with the metric's terms finite), so every point of a group
 * covers the same weights. Fails with FR_E_FORMAT when the dataset has no
 * usable result for the metric. */
fr_status fr_pareto_compute(const fr_dataset *ds, const fr_result_index *ix,
                            const fr_selection *selection, fr_group_by by, fr_metric metric,
                            fr_pareto *out, fr_error *err);
/* fr_pareto_compute over allocation units (fr_units_build with
 * expert_units): with expert_units the experts of one (layer, projection)
 * count as one unit, measured by a configuration when all of them are, and
 * --by tensor gives one group per unit. n_tensors, n_common and a point's
 * n_tensors then count units. */
fr_status fr_pareto_compute_units(const fr_dataset *ds, const fr_result_index *ix,
                                  const fr_selection *selection, fr_group_by by,
                                  fr_metric metric, int expert_units, fr_pareto *out,
                                  fr_error *err);
void fr_pareto_free(fr_pareto *p);

/* Marks on_frontier over points[0..n): a point is on the frontier when no
 * other has bits <= and error <= with one of them strictly smaller (equal
 * points are both kept). Points with a non-finite metric value are never on
 * it. Exposed for tests and the mixed-precision curve. */
void fr_pareto_mark(fr_point *points, size_t n, fr_metric metric);

/* The metric's value of a point. */
double fr_point_metric(const fr_point *p, fr_metric metric);

/* The bands of bits per weight the compact tables give one row each:
 * [0, 2) [2, 3) [3, 4) [4, 5) [5, 7) [7, inf), the 1-, 2-, 3-, 4-, 5-6- and
 * 7-8-bit formats with their scales. fr_bpw_band is -1 for NaN. */
#define FR_BPW_BANDS 6
int fr_bpw_band(double bits_per_weight);
const char *fr_bpw_band_name(int band);

/* Every point: one block per group, frontier points starred (--verbose). */
void fr_pareto_print(FILE *out, const fr_pareto *p, int frontier_only);

/* The compact table: in each group, the point with the least error in each
 * band of bits per weight (with frontier_only, the least among the
 * Pareto-optimal ones), with the configurations that have the same rows as
 * it named beside it. */
void fr_pareto_print_bands(FILE *out, const fr_pareto *p, int frontier_only);

/* The row of that table for a group and band: the point with the least
 * error (then the fewest bits, then the first in the group's order) among
 * the first points of their same rows, NULL when the band has none. */
const fr_point *fr_pareto_band_best(const fr_pareto *p, size_t group, int band, int frontier_only);

#endif
