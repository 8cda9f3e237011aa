/*
 * Export of rows and frontiers (docs/analysis.md, "export"). This file
 * holds the figure model: Pareto points by family or by class, the uniform
 * frontier and the stored mixed-precision curve turned into the series of
 * an fr_plot, which every figure writer (pgfplots, gnuplot, cairo) renders
 * alike; fr_export hands the points or the figure to the writer of the
 * format: export_rows.h (csv, json), export_tex.h, export_gnuplot.h, and
 * plot.h (svg, pdf, png).
 */
#include "frontier/export/export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "frontier/analysis/annotate.h"
#include "frontier/export/export_gnuplot.h"
#include "frontier/export/export_rows.h"
#include "frontier/export/export_tex.h"

static const char *const format_names[FR_EXPORT_COUNT] = {
    [FR_EXPORT_CSV] = "csv", [FR_EXPORT_JSON] = "json", [FR_EXPORT_TEX] = "tex",
    [FR_EXPORT_GNUPLOT] = "gnuplot", [FR_EXPORT_SVG] = "svg", [FR_EXPORT_PDF] = "pdf",
    [FR_EXPORT_PNG] = "png",
};

const char *fr_export_format_name(fr_export_format f)
{
    return (unsigned)f < FR_EXPORT_COUNT ? format_names[f] : "?";
}

int fr_export_format_from_name(const char *name)
{
    for (int f = 0; f < FR_EXPORT_COUNT; f++)
        if (name && !strcmp(name, format_names[f]))
            return f;
    return -1;
}

const char *fr_metric_label(fr_metric metric)
{
    switch (metric) {
    case FR_METRIC_OUT_REL_ERR: return "Relative output error";
    case FR_METRIC_SQNR_DB: return "SQNR (dB)";
    default: return "Relative weight error";
    }
}

/* ---- storage: every array a figure points into, freed at once ---- */

typedef struct arena {
    void **blocks;
    size_t n, cap;
} arena;

static void *arena_alloc(arena *a, size_t size)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        void **nb = realloc(a->blocks, cap * sizeof *nb);
        if (!nb)
            return NULL;
        a->blocks = nb;
        a->cap = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (p)
        a->blocks[a->n++] = p;
    return p;
}

static void arena_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->blocks[i]);
    free(a->blocks);
    free(a);
}

void fr_figure_free(fr_figure *fig)
{
    if (fig->storage)
        arena_free(fig->storage);
    memset(fig, 0, sizeof *fig);
}

/* ---- the series ---- */

/* The y value of the stored mixed curve in the plotted metric, NaN when
 * the curve measures another error. */
static double mixed_y(const fr_curve_point *cp, fr_metric curve_metric, fr_metric y)
{
    int curve_out = curve_metric == FR_METRIC_OUT_REL_ERR, y_out = y == FR_METRIC_OUT_REL_ERR;
    if (curve_out != y_out)
        return NAN;
    if (y == FR_METRIC_SQNR_DB)
        return cp->rel_err == 0 ? INFINITY : -20.0 * log10(cp->rel_err);
    return cp->rel_err;
}

typedef struct series_builder {
    double *x, *y;
    unsigned char *emph;
    const char **labels;
    size_t n;
} series_builder;

static int builder_init(arena *a, series_builder *b, size_t cap)
{
    b->n = 0;
    b->x = arena_alloc(a, cap * sizeof *b->x);
    b->y = arena_alloc(a, cap * sizeof *b->y);
    b->emph = arena_alloc(a, cap);
    b->labels = arena_alloc(a, cap * sizeof *b->labels);
    return b->x && b->y && b->emph && b->labels;
}

/* A Pareto point as a marker: filled on the frontier, named there when
 * asked to. */
static void builder_add_point(series_builder *b, const fr_point *pt, const fr_export_options *opt)
{
    b->x[b->n] = pt->bits_per_weight;
    b->y[b->n] = fr_point_metric(pt, opt->y);
    b->emph[b->n] = (unsigned char)pt->on_frontier;
    b->labels[b->n] = opt->label_frontier && pt->on_frontier ? pt->config_name : NULL;
    b->n++;
}

/* The series under construction: fig->series has room for every series
 * fr_figure_build can add. Each adder returns 0 when out of memory. */
typedef struct figure_builder {
    arena *a;
    const fr_pareto *p;
    const fr_export_options *opt;
    fr_plot_series *series;
    size_t n;
} figure_builder;

/* By family: one marker series per family over the model-level points, in
 * order of first appearance. */
static int add_family_series(figure_builder *fb)
{
    const fr_pareto *p = fb->p;
    const fr_export_options *opt = fb->opt;
    const char **families = arena_alloc(fb->a, (p->n_points + 1) * sizeof *families);
    if (!families)
        return 0;
    size_t nf = 0;
    for (size_t i = 0; i < p->n_points; i++) {
        size_t k = 0;
        while (k < nf && strcmp(families[k], p->points[i].family))
            k++;
        if (k == nf)
            families[nf++] = p->points[i].family;
    }
    for (size_t k = 0; k < nf; k++) {
        series_builder b;
        if (!builder_init(fb->a, &b, p->n_points))
            return 0;
        for (size_t i = 0; i < p->n_points; i++)
            if (!strcmp(p->points[i].family, families[k]))
                builder_add_point(&b, &p->points[i], opt);
        fb->series[fb->n++] = (fr_plot_series){families[k], b.n, b.x, b.y, b.emph,
                                               opt->label_frontier ? b.labels : NULL,
                                               (int)(k % FR_MARK_COUNT),
                                               (int)(k % FR_PALETTE_SIZE), FR_LINE_NONE};
    }
    return 1;
}

/* By family: the dashed line through the model's frontier points. */
static int add_uniform_frontier(figure_builder *fb)
{
    const fr_pareto *p = fb->p;
    series_builder f;
    if (!builder_init(fb->a, &f, p->n_points))
        return 0;
    for (size_t i = 0; i < p->n_points; i++)
        if (p->points[i].on_frontier) {
            f.x[f.n] = p->points[i].bits_per_weight;
            f.y[f.n] = fr_point_metric(&p->points[i], fb->opt->y);
            f.n++;
        }
    fb->series[fb->n++] = (fr_plot_series){"Pareto frontier", f.n, f.x, f.y, NULL,
                                           NULL, -1, FR_COLOR_GREY, FR_LINE_DASHED};
    return 1;
}

/* By family: the stored mixed-precision staircase, when it measures the
 * plotted error (a curve of another error is left out, with a warning). */
static int add_mixed_curve(figure_builder *fb)
{
    const fr_pareto *p = fb->p;
    const fr_export_options *opt = fb->opt;
    const fr_mixed_curve *mc = opt->mixed;
    if (!mc || !mc->n_points)
        return 1;
    series_builder m;
    if (!builder_init(fb->a, &m, mc->n_points))
        return 0;
    for (size_t i = 0; i < mc->n_points; i++) {
        double y = mixed_y(&mc->points[i], mc->metric, opt->y);
        if (isnan(y))
            continue;
        m.x[m.n] = mc->points[i].bits_per_weight;
        m.y[m.n] = y;
        m.n++;
    }
    if (m.n == 0) {
        fr_warn("the stored mixed-precision curve measures %s, not %s: not drawn "
                "(rerun 'frontier allocate --sweep-budgets --metric %s')",
                fr_metric_name(mc->metric), fr_metric_name(opt->y), fr_metric_name(opt->y));
        return 1;
    }
    if (p->n_groups && mc->numel != p->groups[0].common_numel)
        fr_warn("the mixed-precision curve covers %llu parameters and the uniform "
                "points %llu: they compare different tensor sets",
                (unsigned long long)mc->numel, (unsigned long long)p->groups[0].common_numel);
    fb->series[fb->n++] = (fr_plot_series){"Mixed precision", m.n, m.x, m.y, NULL, NULL, -1,
                                           FR_COLOR_BLACK, FR_LINE_STEPS};
    return 1;
}

/* By family: llama-quantize's stock mixes, each point named. */
static int add_llama_mixes(figure_builder *fb)
{
    const fr_export_options *opt = fb->opt;
    if (!opt->n_mixes)
        return 1;
    series_builder m;
    if (!builder_init(fb->a, &m, opt->n_mixes))
        return 0;
    for (size_t i = 0; i < opt->n_mixes; i++) {
        const fr_llama_mix_result *r = &opt->mixes[i];
        m.x[m.n] = r->bits_per_weight;
        m.y[m.n] = r->value;
        m.emph[m.n] = 1;
        m.labels[m.n] = fr_llama_mix_name(r->mix);
        m.n++;
    }
    fb->series[fb->n++] = (fr_plot_series){"llama.cpp mixes", m.n, m.x, m.y, NULL, m.labels,
                                           FR_MARK_DIAMOND, FR_COLOR_GREY, FR_LINE_NONE};
    return 1;
}

/* By class: per class its frontier line (unlabelled) and its markers, then
 * one legend-only entry that names the lines. */
static int add_class_series(figure_builder *fb)
{
    const fr_pareto *p = fb->p;
    const fr_export_options *opt = fb->opt;
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_pareto_group *grp = &p->groups[g];
        series_builder b, f;
        if (!builder_init(fb->a, &b, grp->n_points + 1) ||
            !builder_init(fb->a, &f, grp->n_points + 1))
            return 0;
        for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++) {
            const fr_point *pt = &p->points[i];
            builder_add_point(&b, pt, opt);
            if (pt->on_frontier) {
                f.x[f.n] = b.x[b.n - 1];
                f.y[f.n] = b.y[b.n - 1];
                f.n++;
            }
        }
        if (b.n == 0)
            continue;
        fb->series[fb->n++] = (fr_plot_series){NULL, f.n, f.x, f.y, NULL, NULL, -1,
                                               (int)(g % FR_PALETTE_SIZE), FR_LINE_SOLID};
        fb->series[fb->n++] = (fr_plot_series){grp->name, b.n, b.x, b.y, b.emph,
                                               opt->label_frontier ? b.labels : NULL,
                                               (int)(g % FR_MARK_COUNT),
                                               (int)(g % FR_PALETTE_SIZE), FR_LINE_NONE};
    }
    fb->series[fb->n++] = (fr_plot_series){"Pareto frontier (per class)", 0, NULL, NULL,
                                           NULL, NULL, -1, FR_COLOR_GREY, FR_LINE_SOLID};
    return 1;
}

fr_status fr_figure_build(const fr_pareto *p, const fr_export_options *opt, fr_figure *fig,
                          fr_error *err)
{
    memset(fig, 0, sizeof *fig);
    arena *a = calloc(1, sizeof *a);
    if (!a)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fig->storage = a;
    /* at most: one series per group or family, one line per group, the
     * legend-only line, the Pareto line, the mixed curve and the mixes */
    size_t max_series = 2 * (p->n_points + p->n_groups) + 5;
    fig->series = arena_alloc(a, max_series * sizeof *fig->series);
    if (!fig->series)
        goto nomem;
    figure_builder fb = {a, p, opt, fig->series, 0};
    int ok = opt->by == FR_BY_CLASS
                 ? add_class_series(&fb)
                 : add_family_series(&fb) && add_uniform_frontier(&fb) && add_mixed_curve(&fb) &&
                       add_llama_mixes(&fb);
    if (!ok)
        goto nomem;
    fig->plot = (fr_plot){opt->title, "Bits per weight", fr_metric_label(opt->y), opt->log_y,
                          0, 0, 0, 0, fb.n, fig->series};
    return FR_OK;
nomem:
    fr_figure_free(fig);
    return fr_fail(err, FR_E_NOMEM, "out of memory");
}

/* ---- the entry point ---- */

/* The figure of the points in the format asked for. */
static fr_status write_figure(const fr_pareto *p, const fr_export_options *opt, const char *path,
                              fr_error *err)
{
    fr_figure fig;
    fr_status st = fr_figure_build(p, opt, &fig, err);
    if (st != FR_OK)
        return st;
    switch (opt->format) {
    case FR_EXPORT_GNUPLOT:
        st = fr_export_gnuplot(&fig.plot, path, opt->dataset_path, err);
        break;
    case FR_EXPORT_TEX:
        st = fr_export_tex(&fig.plot, path, opt->dataset_path, err);
        break;
    default:
        st = fr_plot_render(&fig.plot,
                            opt->format == FR_EXPORT_SVG ? FR_PLOT_SVG
                            : opt->format == FR_EXPORT_PDF ? FR_PLOT_PDF : FR_PLOT_PNG,
                            path, err);
        break;
    }
    fr_figure_free(&fig);
    return st;
}

fr_status fr_export(const fr_dataset *ds, const fr_result_index *ix,
                    const fr_export_options *opt, const char *path, fr_error *err)
{
    fr_status st;
    fr_pareto p;

    if ((unsigned)opt->format >= FR_EXPORT_COUNT)
        return fr_fail(err, FR_E_USAGE, "unknown export format");
    if (opt->by != FR_BY_FAMILY && opt->by != FR_BY_CLASS)
        return fr_fail(err, FR_E_USAGE, "export groups points by family or class only");
    if (opt->log_y && opt->y == FR_METRIC_SQNR_DB)
        return fr_fail(err, FR_E_USAGE, "--log-y does not apply to sqnr_db, which is already in decibels");
    int image = opt->format == FR_EXPORT_SVG || opt->format == FR_EXPORT_PDF ||
                opt->format == FR_EXPORT_PNG;
    if (image && !fr_plot_available())
        return fr_plot_render(NULL, FR_PLOT_SVG, path, err);

    if ((st = fr_pareto_compute(ds, ix, &opt->selection,
                                opt->by == FR_BY_CLASS ? FR_BY_CLASS : FR_BY_CONFIG, opt->y, &p,
                                err)) != FR_OK)
        return st;
    if (opt->format == FR_EXPORT_CSV || opt->format == FR_EXPORT_JSON) {
        fr_rows_options rows = {.json = opt->format == FR_EXPORT_JSON,
                                .selection = &opt->selection,
                                .y = opt->y,
                                .by = opt->by,
                                .mixed = opt->mixed,
                                .mixes = opt->mixes,
                                .n_mixes = opt->n_mixes,
                                .dataset_path = opt->dataset_path};
        st = fr_export_rows(ds, ix, &p, &rows, path, err);
    } else
        st = write_figure(&p, opt, path, err);
    fr_pareto_free(&p);
    return st;
}

fr_status fr_export_measured(const char *dataset_path, const fr_export_options *opt,
                             const char *path, fr_error *err)
{
    if (opt->format == FR_EXPORT_CSV || opt->format == FR_EXPORT_JSON)
        return fr_fail(err, FR_E_USAGE, "--measured draws a figure (svg, pdf, png, tex, gnuplot); "
                                        "'frontier annotate RUN.h5 --list' prints the rows");
    int image = opt->format == FR_EXPORT_SVG || opt->format == FR_EXPORT_PDF ||
                opt->format == FR_EXPORT_PNG;
    if (image && !fr_plot_available())
        return fr_plot_render(NULL, FR_PLOT_SVG, path, err);
    fr_measured *rows;
    size_t n;
    fr_status st = fr_measured_read(dataset_path, &rows, &n, err);
    if (st != FR_OK)
        return st;
    double *xy = calloc(6 * (n + 1), sizeof *xy);
    if (!xy) {
        fr_measured_free_all(rows, n);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    /* uniform configurations, recipes, and the recipes' predictions (the
     * sensitivity model's sum alpha x error^2, where the recipe has one) */
    double *ux = xy, *uy = xy + n, *rx = xy + 2 * n, *ry = xy + 3 * n;
    double *px = xy + 4 * n, *py = xy + 5 * n;
    size_t nu = 0, nr = 0, np = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(rows[i].kl_mean > 0) || !isfinite(rows[i].bits_per_weight))
            continue; /* a log axis: KL 0 (the original) is not drawn */
        if (!strcmp(rows[i].kind, "recipe")) {
            rx[nr] = rows[i].bits_per_weight;
            ry[nr++] = rows[i].kl_mean;
            if (rows[i].predicted_kl > 0 && isfinite(rows[i].predicted_kl)) {
                px[np] = rows[i].bits_per_weight;
                py[np++] = rows[i].predicted_kl;
            }
        } else {
            ux[nu] = rows[i].bits_per_weight;
            uy[nu++] = rows[i].kl_mean;
        }
    }
    fr_measured_free_all(rows, n);
    if (nu + nr == 0) {
        free(xy);
        return fr_fail(err, FR_E_FORMAT, "'%s' has no measured results with KL > 0 (store some "
                       "with 'frontier annotate')", dataset_path);
    }
    fr_plot_series series[3];
    size_t ns = 0;
    if (nu)
        series[ns++] = (fr_plot_series){"uniform configurations", nu, ux, uy, NULL, NULL,
                                        FR_MARK_CIRCLE, FR_COLOR_GREY, FR_LINE_NONE};
    if (nr)
        series[ns++] = (fr_plot_series){np ? "recipes (allocations), measured" : "recipes (allocations)",
                                        nr, rx, ry, NULL, NULL,
                                        FR_MARK_TRIANGLE_UP, 0, FR_LINE_NONE};
    if (np)
        series[ns++] = (fr_plot_series){"recipes, predicted (sum alpha x error^2)", np, px, py,
                                        NULL, NULL, FR_MARK_TRIANGLE_DOWN, 1, FR_LINE_NONE};
    fr_plot plot = {opt->title, "Bits per weight",
                    np ? "Mean KL divergence (nats)" : "Measured mean KL divergence (nats)", 1,
                    0, 0, 0, 0, ns, series};
    switch (opt->format) {
    case FR_EXPORT_GNUPLOT: st = fr_export_gnuplot(&plot, path, dataset_path, err); break;
    case FR_EXPORT_TEX: st = fr_export_tex(&plot, path, dataset_path, err); break;
    default:
        st = fr_plot_render(&plot,
                            opt->format == FR_EXPORT_SVG ? FR_PLOT_SVG
                            : opt->format == FR_EXPORT_PDF ? FR_PLOT_PDF : FR_PLOT_PNG,
                            path, err);
        break;
    }
    free(xy);
    return st;
}
