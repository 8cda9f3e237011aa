/*
 * `frontier export --format tex`: frontier/export/export_tex.c.
 */
#ifndef FR_EXPORT_TEX_H
#define FR_EXPORT_TEX_H

#include "core/error.h"
#include "frontier/export/plot.h"

/* The figure as a standalone pgfplots document. */
fr_status fr_export_tex(const fr_plot *plot, const char *path, const char *dataset_path,
                        fr_error *err);

#endif
