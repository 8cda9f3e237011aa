/*
 * A frontier figure: what it shows (scatter series, the Pareto line, the
 * mixed-precision staircase, labels) independent of how it is written.
 * plot.c renders it with cairo (svg, pdf, png); export_tex.c and
 * export_gnuplot.c write the same figure as pgfplots and gnuplot. Sized
 * for one column of a two-column paper: 3.4 in wide, 8 pt text, 300 dpi
 * for png.
 */
#ifndef FR_PLOT_H
#define FR_PLOT_H

#include <stddef.h>

#include "core/error.h"

typedef enum fr_marker {
    FR_MARK_CIRCLE = 0,
    FR_MARK_SQUARE,
    FR_MARK_TRIANGLE_UP,
    FR_MARK_DIAMOND,
    FR_MARK_TRIANGLE_DOWN,
    FR_MARK_PENTAGON,
    FR_MARK_CROSS,
    FR_MARK_PLUS,
    FR_MARK_COUNT
} fr_marker;

typedef enum fr_line_style {
    FR_LINE_NONE = 0,
    FR_LINE_SOLID,   /* straight segments */
    FR_LINE_DASHED,  /* straight dashed segments: the uniform Pareto frontier */
    FR_LINE_STEPS    /* staircase (horizontal, then vertical): the achievable frontier of an
                        optimisation that may spend up to x bits */
} fr_line_style;

/* Palette index that means black / grey (not one of the series colours). */
#define FR_COLOR_BLACK (-1)
#define FR_COLOR_GREY (-2)
#define FR_PALETTE_SIZE 7

typedef struct fr_plot_series {
    const char *label;          /* legend entry; NULL: not in the legend */
    size_t n;
    const double *x, *y;
    const unsigned char *emphasis; /* per point: 1 filled marker, 0 hollow; NULL: all filled */
    const char *const *point_labels; /* per point text or NULL; NULL: none */
    int marker;                 /* fr_marker, or -1 for none */
    int color;                  /* palette index or FR_COLOR_* */
    fr_line_style line;
} fr_plot_series;

typedef struct fr_plot {
    const char *title;          /* NULL: none */
    const char *xlabel, *ylabel;
    int log_y;
    double width_in, height_in; /* 0: 3.4 x 2.55 */
    double font_pt;             /* 0: 8 */
    int dpi;                    /* png only; 0: 300 */
    size_t n_series;
    const fr_plot_series *series;
} fr_plot;

typedef enum fr_plot_format { FR_PLOT_SVG, FR_PLOT_PDF, FR_PLOT_PNG } fr_plot_format;

/* ---- which points a writer draws ---- */

/* Whether point i of a series is drawn: finite, and above 0 on a log axis
 * (the rule the renderer applies too). */
int fr_series_point_drawn(const fr_plot *plot, const fr_plot_series *s, size_t i);

/* Points of a series that are drawn; want_emph 1 or 0 counts only the
 * filled or the hollow ones, -1 all. */
size_t fr_series_count_drawn(const fr_plot *plot, const fr_plot_series *s, int want_emph);

/* Whether point i is drawn and, for want_emph >= 0, filled (1) or hollow (0). */
int fr_series_point_wanted(const fr_plot *plot, const fr_plot_series *s, size_t i,
                           int want_emph);

/* ---- rendering (plot.c) ---- */

/* 1 when this build renders svg/pdf/png (cairo was found). */
int fr_plot_available(void);

/* Renders the figure into path. FR_E_USAGE when built without cairo,
 * FR_E_OUTPUT when the file cannot be written. Points with a non-finite
 * coordinate, or y <= 0 on a log axis, are left out. */
fr_status fr_plot_render(const fr_plot *plot, fr_plot_format format, const char *path,
                         fr_error *err);

/* Series colours (Okabe & Ito 2008, "Color universal design", without the
 * yellow that vanishes on white; black last), as 0-255 RGB, shared with the pgfplots and
 * gnuplot writers so every format looks alike. */
void fr_plot_color_rgb(int color, int rgb[3]);

/* The axis range and ticks the renderer chooses, exposed for tests:
 * returns the number of major ticks written into ticks[max]. */
size_t fr_plot_ticks(double lo, double hi, int log_axis, double *ticks, size_t max,
                     double *axis_lo, double *axis_hi);

#endif
