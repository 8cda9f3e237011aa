/*
 * Export of a dataset's rows and frontiers (docs/analysis.md, "export"):
 * tidy csv/json, a standalone pgfplots figure, a gnuplot script with its
 * data, and svg/pdf/png drawn with cairo.
 */
#ifndef FR_EXPORT_H
#define FR_EXPORT_H

#include "core/error.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/llama_mix.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/pareto.h"
#include "frontier/export/plot.h"

typedef enum fr_export_format {
    FR_EXPORT_CSV = 0,
    FR_EXPORT_JSON,
    FR_EXPORT_TEX,
    FR_EXPORT_GNUPLOT,
    FR_EXPORT_SVG,
    FR_EXPORT_PDF,
    FR_EXPORT_PNG,
    FR_EXPORT_COUNT
} fr_export_format;

const char *fr_export_format_name(fr_export_format f);
int fr_export_format_from_name(const char *name);

typedef struct fr_export_options {
    fr_export_format format;
    fr_metric y;                   /* rel_err, out_rel_err or sqnr_db */
    int log_y;
    fr_group_by by;                /* FR_BY_FAMILY (default) or FR_BY_CLASS */
    const char *title;             /* NULL: none */
    int label_frontier;            /* write the configuration names beside frontier points */
    fr_selection selection;
    const fr_mixed_curve *mixed;   /* the stored mixed-precision curve, or NULL */
    const fr_llama_mix_result *mixes; /* llama-quantize's stock mixes (n_mixes) in metric y,
                                       * drawn as labelled points by family; NULL: none */
    size_t n_mixes;
    const char *dataset_path;      /* recorded in the outputs */
} fr_export_options;

/* Writes path (and, for gnuplot, the data file beside it: the path with its
 * extension replaced by .dat). FR_E_USAGE for an option the format or the
 * build cannot honour (log scale of sqnr_db, svg without cairo). */
fr_status fr_export(const fr_dataset *ds, const fr_result_index *ix,
                    const fr_export_options *opt, const char *path, fr_error *err);

/* The figure the image formats draw, built from Pareto points (by family or
 * by class) and an optional mixed curve (frontier/export/export.c). Everything it
 * points to is owned by fig and freed by fr_figure_free. Exposed for tests. */
typedef struct fr_figure {
    fr_plot plot;
    fr_plot_series *series;
    void *storage;                 /* arrays the series point into */
} fr_figure;

fr_status fr_figure_build(const fr_pareto *p, const fr_export_options *opt, fr_figure *fig,
                          fr_error *err);
void fr_figure_free(fr_figure *fig);

/* The measured model quality stored by `frontier annotate` (/frontier/measured
 * of dataset_path): mean next-token KL divergence (log scale) against bits
 * per weight, uniform configurations and recipes as two series, in an image,
 * tex or gnuplot format (opt->format, opt->title). FR_E_FORMAT when the
 * dataset has no measured rows, FR_E_USAGE for csv/json. */
fr_status fr_export_measured(const char *dataset_path, const fr_export_options *opt,
                             const char *path, fr_error *err);

/* Axis label of a metric ("Relative weight error"). */
const char *fr_metric_label(fr_metric metric);

#endif
