/*
 * The writers behind fr_export (frontier/export/export.h), one file each:
 * export_rows.c (csv, json), export_tex.c (pgfplots), export_gnuplot.c;
 * plot.c draws svg/pdf/png. The series helpers at the end are defined with
 * the figure model in export.c. Internal to the export: not installed.
 */
#ifndef FR_EXPORT_WRITERS_H
#define FR_EXPORT_WRITERS_H

#include <stddef.h>

#include "core/error.h"
#include "frontier/export/export.h"

/* Every selected result, Pareto point and mixed-curve point as one tidy
 * row, into path as csv or json (opt->format). */
fr_status fr_export_rows(const fr_dataset *ds, const fr_result_index *ix, const fr_pareto *p,
                         const fr_export_options *opt, const char *path, fr_error *err);

/* The figure as a standalone pgfplots document. */
fr_status fr_export_tex(const fr_plot *plot, const char *path, const char *dataset_path,
                        fr_error *err);

/* The figure as a gnuplot script at path and its data beside it (.dat). */
fr_status fr_export_gnuplot(const fr_plot *plot, const char *path, const char *dataset_path,
                            fr_error *err);

/* Whether point i of a series is drawn: finite, and above 0 on a log axis
 * (the rule plot.c applies too). */
int fr_series_point_drawn(const fr_plot *plot, const fr_plot_series *s, size_t i);

/* Points of a series that are drawn; want_emph 1 or 0 counts only the
 * filled or the hollow ones, -1 all. */
size_t fr_series_count_drawn(const fr_plot *plot, const fr_plot_series *s, int want_emph);

/* Whether point i is drawn and, for want_emph >= 0, filled (1) or hollow (0). */
int fr_series_point_wanted(const fr_plot *plot, const fr_plot_series *s, size_t i,
                           int want_emph);

#endif
