/*
 * `frontier export --format gnuplot`: frontier/export/export_gnuplot.c.
 */
#ifndef FR_EXPORT_GNUPLOT_H
#define FR_EXPORT_GNUPLOT_H

#include "core/error.h"
#include "frontier/export/plot.h"

/* The figure as a gnuplot script at path and its data beside it (.dat). */
fr_status fr_export_gnuplot(const fr_plot *plot, const char *path, const char *dataset_path,
                            fr_error *err);

#endif
