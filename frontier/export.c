/*
 * Export of rows and frontiers (docs/analysis.md, "export").
 */
#include "frontier/export.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"

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

/* ---- the figure ---- */

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

fr_status fr_figure_build(const fr_pareto *p, const fr_export_options *opt, fr_figure *fig,
                          fr_error *err)
{
    memset(fig, 0, sizeof *fig);
    arena *a = calloc(1, sizeof *a);
    if (!a)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fig->storage = a;
    /* at most: one series per group or family, one line per group, the
     * legend-only line, the Pareto line and the mixed curve */
    size_t max_series = 2 * (p->n_points + p->n_groups) + 4;
    fig->series = arena_alloc(a, max_series * sizeof *fig->series);
    if (!fig->series)
        goto nomem;
    size_t ns = 0;
    int by_class = opt->by == FR_BY_CLASS;

    if (!by_class) {
        /* one series per family over the model-level points, then the frontier */
        const char **families = arena_alloc(a, (p->n_points + 1) * sizeof *families);
        if (!families)
            goto nomem;
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
            if (!builder_init(a, &b, p->n_points))
                goto nomem;
            for (size_t i = 0; i < p->n_points; i++) {
                const fr_point *pt = &p->points[i];
                if (strcmp(pt->family, families[k]))
                    continue;
                b.x[b.n] = pt->bits_per_weight;
                b.y[b.n] = fr_point_metric(pt, opt->y);
                b.emph[b.n] = (unsigned char)pt->on_frontier;
                b.labels[b.n] = opt->label_frontier && pt->on_frontier ? pt->config_name : NULL;
                b.n++;
            }
            fig->series[ns++] = (fr_plot_series){families[k], b.n, b.x, b.y, b.emph,
                                                 opt->label_frontier ? b.labels : NULL,
                                                 (int)(k % FR_MARK_COUNT),
                                                 (int)(k % FR_PALETTE_SIZE), FR_LINE_NONE};
        }
        series_builder f;
        if (!builder_init(a, &f, p->n_points))
            goto nomem;
        for (size_t i = 0; i < p->n_points; i++)
            if (p->points[i].on_frontier) {
                f.x[f.n] = p->points[i].bits_per_weight;
                f.y[f.n] = fr_point_metric(&p->points[i], opt->y);
                f.n++;
            }
        fig->series[ns++] = (fr_plot_series){"Pareto frontier", f.n, f.x, f.y, NULL,
                                             NULL, -1, FR_COLOR_GREY, FR_LINE_DASHED};
        if (opt->mixed && opt->mixed->n_points) {
            const fr_mixed_curve *mc = opt->mixed;
            series_builder m;
            if (!builder_init(a, &m, mc->n_points))
                goto nomem;
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
                        fr_metric_name(mc->metric), fr_metric_name(opt->y),
                        fr_metric_name(opt->y));
            } else {
                if (p->n_groups && mc->numel != p->groups[0].common_numel)
                    fr_warn("the mixed-precision curve covers %llu parameters and the uniform "
                            "points %llu: they compare different tensor sets",
                            (unsigned long long)mc->numel,
                            (unsigned long long)p->groups[0].common_numel);
                fig->series[ns++] = (fr_plot_series){"Mixed precision", m.n, m.x, m.y,
                                                     NULL, NULL, -1, FR_COLOR_BLACK,
                                                     FR_LINE_STEPS};
            }
        }
    } else {
        /* one series per class, each with its own frontier line */
        for (size_t g = 0; g < p->n_groups; g++) {
            const fr_pareto_group *grp = &p->groups[g];
            series_builder b, f;
            if (!builder_init(a, &b, grp->n_points + 1) || !builder_init(a, &f, grp->n_points + 1))
                goto nomem;
            for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++) {
                const fr_point *pt = &p->points[i];
                b.x[b.n] = pt->bits_per_weight;
                b.y[b.n] = fr_point_metric(pt, opt->y);
                b.emph[b.n] = (unsigned char)pt->on_frontier;
                b.labels[b.n] = opt->label_frontier && pt->on_frontier ? pt->config_name : NULL;
                b.n++;
                if (pt->on_frontier) {
                    f.x[f.n] = b.x[b.n - 1];
                    f.y[f.n] = b.y[b.n - 1];
                    f.n++;
                }
            }
            if (b.n == 0)
                continue;
            fig->series[ns++] = (fr_plot_series){NULL, f.n, f.x, f.y, NULL, NULL, -1,
                                                 (int)(g % FR_PALETTE_SIZE), FR_LINE_SOLID};
            fig->series[ns++] = (fr_plot_series){grp->name, b.n, b.x, b.y, b.emph,
                                                 opt->label_frontier ? b.labels : NULL,
                                                 (int)(g % FR_MARK_COUNT),
                                                 (int)(g % FR_PALETTE_SIZE), FR_LINE_NONE};
        }
        fig->series[ns++] = (fr_plot_series){"Pareto frontier (per class)", 0, NULL, NULL,
                                             NULL, NULL, -1, FR_COLOR_GREY, FR_LINE_SOLID};
    }
    fig->plot = (fr_plot){opt->title, "Bits per weight", fr_metric_label(opt->y), opt->log_y,
                          0, 0, 0, 0, ns, fig->series};
    return FR_OK;
nomem:
    fr_figure_free(fig);
    return fr_fail(err, FR_E_NOMEM, "out of memory");
}

/* ---- csv and json: tidy rows ---- */

static const char *const columns[] = {
    "kind", "group", "tensor", "class", "config", "family", "nominal_bits", "numel",
    "total_bits", "bits_per_weight", "rel_err", "sqnr_db", "out_rel_err", "max_abs_err",
    "cosine", "n_tensors", "on_frontier", "budget", "lower_bound",
};
#define N_COLUMNS (sizeof columns / sizeof columns[0])

/* One observation: strings NULL and numbers NaN when not applicable. */
typedef struct row {
    const char *kind, *group, *tensor, *cls, *config, *family;
    double num[N_COLUMNS - 6];
} row;

enum {
    C_NOMINAL, C_NUMEL, C_TOTAL, C_BPW, C_REL, C_SQNR, C_OUT, C_MAXABS, C_COS, C_NT, C_FRONT,
    C_BUDGET, C_LB
};

static void row_init(row *r, const char *kind)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    for (size_t i = 0; i < N_COLUMNS - 6; i++)
        r->num[i] = NAN;
}

/* Iterates the observations: fn(ctx, row) for results, points, mixed points. */
typedef int (*row_fn)(void *ctx, const row *r);

static int each_row(const fr_dataset *ds, const fr_result_index *ix, const fr_selector *sel,
                    const fr_pareto *p, const fr_mixed_curve *mc, row_fn fn, void *ctx)
{
    row r;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        if (!fr_selector_tensor(sel, ten->name))
            continue;
        for (size_t c = 0; c < ds->n_configs; c++) {
            const fr_ds_config *cf = &ds->configs[c];
            const fr_ds_result *res = fr_result_at(ix, t, c);
            if (!res || !fr_selector_config(sel, cf->name))
                continue;
            row_init(&r, "result");
            r.tensor = ten->name;
            r.cls = ten->cls;
            r.config = cf->name;
            r.family = cf->family;
            r.num[C_NOMINAL] = cf->nominal_bits;
            r.num[C_NUMEL] = (double)ten->numel;
            r.num[C_TOTAL] = (double)res->total_bits;
            r.num[C_BPW] = res->bits_per_weight;
            r.num[C_REL] = res->rel_err;
            r.num[C_SQNR] = res->sqnr_db;
            r.num[C_OUT] = res->out_rel_err;
            r.num[C_MAXABS] = res->max_abs_err;
            r.num[C_COS] = res->cosine;
            if (!fn(ctx, &r))
                return 0;
        }
    }
    for (size_t i = 0; i < p->n_points; i++) {
        const fr_point *pt = &p->points[i];
        row_init(&r, "point");
        r.group = p->groups[pt->group].name;
        r.config = pt->config_name;
        r.family = pt->family;
        r.num[C_NOMINAL] = pt->nominal_bits;
        r.num[C_NUMEL] = (double)pt->numel;
        r.num[C_TOTAL] = (double)pt->total_bits;
        r.num[C_BPW] = pt->bits_per_weight;
        r.num[C_REL] = pt->rel_err;
        r.num[C_SQNR] = pt->sqnr_db;
        r.num[C_OUT] = pt->out_rel_err;
        r.num[C_NT] = (double)pt->n_tensors;
        r.num[C_FRONT] = pt->on_frontier;
        if (!fn(ctx, &r))
            return 0;
    }
    for (size_t i = 0; mc && i < mc->n_points; i++) {
        const fr_curve_point *cp = &mc->points[i];
        row_init(&r, "mixed");
        r.group = "model";
        r.num[C_NUMEL] = (double)mc->numel;
        r.num[C_TOTAL] = (double)cp->total_bits;
        r.num[C_BPW] = cp->bits_per_weight;
        if (mc->metric == FR_METRIC_OUT_REL_ERR) {
            r.num[C_OUT] = cp->rel_err;
            r.num[C_LB] = cp->lower_bound_value;
        } else {
            r.num[C_REL] = cp->rel_err;
            r.num[C_SQNR] = cp->rel_err == 0 ? INFINITY : -20 * log10(cp->rel_err);
            r.num[C_LB] = mc->metric == FR_METRIC_SQNR_DB
                              ? pow(10.0, -cp->lower_bound_value / 20.0) /* back to rel_err */
                              : cp->lower_bound_value;
        }
        r.num[C_NT] = (double)mc->n_tensors;
        r.num[C_FRONT] = 1;
        r.num[C_BUDGET] = cp->budget;
        if (!fn(ctx, &r))
            return 0;
    }
    return 1;
}

static void csv_string(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int csv_row(void *ctx, const row *r)
{
    FILE *f = ctx;
    const char *strs[6] = {r->kind, r->group, r->tensor, r->cls, r->config, r->family};
    for (size_t i = 0; i < 6; i++) {
        if (i)
            fputc(',', f);
        csv_string(f, strs[i]);
    }
    for (size_t i = 0; i < N_COLUMNS - 6; i++) {
        fputc(',', f);
        double v = r->num[i];
        if (isnan(v))
            continue;
        if (isinf(v))
            fputs(v > 0 ? "inf" : "-inf", f);
        else if (v == floor(v) && fabs(v) < 1e15)
            fprintf(f, "%.0f", v);
        else
            fprintf(f, "%.17g", v);
    }
    fputc('\n', f);
    return !ferror(f);
}

typedef struct json_ctx {
    cJSON *results, *points, *mixed;
} json_ctx;

static int json_row(void *ctx, const row *r)
{
    json_ctx *j = ctx;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return 0;
    cJSON *arr = !strcmp(r->kind, "result") ? j->results : !strcmp(r->kind, "point") ? j->points
                                                                                     : j->mixed;
    cJSON_AddItemToArray(arr, o);
    const char *strs[6] = {r->kind, r->group, r->tensor, r->cls, r->config, r->family};
    for (size_t i = 0; i < 6; i++)
        if (strs[i])
            cJSON_AddStringToObject(o, columns[i], strs[i]);
    for (size_t i = 0; i < N_COLUMNS - 6; i++) {
        double v = r->num[i];
        if (isnan(v))
            continue;
        if (i == C_FRONT)
            cJSON_AddBoolToObject(o, columns[6 + i], v != 0);
        else
            cJSON_AddItemToObject(o, columns[6 + i],
                                  isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    }
    return 1;
}

/* ---- pgfplots and gnuplot from the figure ---- */

static void tex_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '_': case '%': case '&': case '#': case '$': case '{': case '}':
            fprintf(f, "\\%c", *s);
            break;
        case '~': fputs("\\textasciitilde{}", f); break;
        case '^': fputs("\\textasciicircum{}", f); break;
        case '\\': fputs("\\textbackslash{}", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *const pgf_marks[FR_MARK_COUNT] = {
    "*", "square*", "triangle*", "diamond*", "triangle*", "pentagon*", "x", "+",
};

static int finite_point(const fr_plot *p, const fr_plot_series *s, size_t i)
{
    return isfinite(s->x[i]) && isfinite(s->y[i]) && (!p->log_y || s->y[i] > 0);
}

static void tex_color_name(char *buf, size_t size, int color)
{
    if (color == FR_COLOR_BLACK)
        snprintf(buf, size, "black");
    else if (color < 0)
        snprintf(buf, size, "frgrey");
    else
        snprintf(buf, size, "frc%d", color % FR_PALETTE_SIZE);
}

static void tex_table(FILE *f, const fr_plot *p, const fr_plot_series *s, int want_emph)
{
    fputs(" table {\nx y\n", f);
    for (size_t i = 0; i < s->n; i++) {
        if (!finite_point(p, s, i))
            continue;
        if (want_emph >= 0 && (s->emphasis ? s->emphasis[i] != 0 : 1) != want_emph)
            continue;
        fprintf(f, "%.10g %.10g\n", s->x[i], s->y[i]);
    }
    fputs("};\n", f);
}

static size_t count_points(const fr_plot *p, const fr_plot_series *s, int want_emph)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (finite_point(p, s, i) &&
            (want_emph < 0 || (s->emphasis ? s->emphasis[i] != 0 : 1) == want_emph))
            n++;
    return n;
}

static void write_tex(FILE *f, const fr_plot *p, const char *dataset_path)
{
    fprintf(f, "%% Frontier figure written by frontier %s from '", FRONTIER_VERSION);
    fputs(dataset_path ? dataset_path : "", f);
    fputs("'.\n%% Compile with pdflatex; needs pgfplots (TeX Live: pgfplots, standalone).\n"
          "\\IfFileExists{standalone.cls}{\\documentclass[border=2pt]{standalone}}"
          "{\\documentclass{article}\\pagestyle{empty}}\n"
          "\\usepackage{pgfplots}\n\\pgfplotsset{compat=1.11}\n",
          f);
    for (int c = 0; c < FR_PALETTE_SIZE; c++) {
        int rgb[3];
        fr_plot_color_rgb(c, rgb);
        fprintf(f, "\\definecolor{frc%d}{RGB}{%d,%d,%d}\n", c, rgb[0], rgb[1], rgb[2]);
    }
    int grey[3];
    fr_plot_color_rgb(FR_COLOR_GREY, grey);
    fprintf(f, "\\definecolor{frgrey}{RGB}{%d,%d,%d}\n", grey[0], grey[1], grey[2]);
    fputs("\\begin{document}\n\\begin{tikzpicture}\n\\begin{axis}[\n", f);
    fprintf(f, "  width=%.2fin, height=%.2fin,\n", p->width_in > 0 ? p->width_in : 3.4,
            p->height_in > 0 ? p->height_in : 2.55);
    fputs("  scale only axis=false,\n  font=\\footnotesize,\n"
          "  tick label style={font=\\footnotesize},\n  label style={font=\\footnotesize},\n"
          "  legend style={font=\\footnotesize, cells={anchor=west}, draw=black!40},\n"
          "  grid=major, major grid style={black!12},\n",
          f);
    size_t n_legend = 0;
    for (size_t s = 0; s < p->n_series; s++)
        n_legend += p->series[s].label != NULL;
    /* few entries fit in the empty upper right of a frontier; many go above */
    if (n_legend > 5) {
        fputs("  legend columns=3, legend style={at={(0.5,1.03)}, anchor=south,\n"
              "    /tikz/every even column/.append style={column sep=0.6em}},\n", f);
        if (p->title) /* lift the title over the legend's rows */
            fprintf(f, "  title style={yshift=%dpt},\n", (int)((n_legend + 2) / 3) * 11 + 4);
    } else
        fputs("  legend pos=north east,\n", f);
    if (p->log_y)
        fputs("  ymode=log,\n", f);
    fputs("  xlabel={", f);
    tex_escape(f, p->xlabel);
    fputs("},\n  ylabel={", f);
    tex_escape(f, p->ylabel);
    fputs("},\n", f);
    if (p->title) {
        fputs("  title={", f);
        tex_escape(f, p->title);
        fputs("},\n", f);
    }
    fputs("]\n", f);
    char color[16];
    /* lines first, under the markers, as in the cairo rendering */
    for (int pass = 0; pass < 2; pass++)
        for (size_t s = 0; s < p->n_series; s++) {
            const fr_plot_series *se = &p->series[s];
            int is_line = se->line != FR_LINE_NONE;
            if (is_line != (pass == 0))
                continue;
            tex_color_name(color, sizeof color, se->color);
            if (is_line) {
                const char *style = se->line == FR_LINE_DASHED ? "dashed, thick"
                                  : se->line == FR_LINE_STEPS ? "const plot, very thick" : "thick";
                if (count_points(p, se, -1) == 0) {
                    if (se->label) {
                        fprintf(f, "\\addlegendimage{%s, %s}\n\\addlegendentry{", color, style);
                        tex_escape(f, se->label);
                        fputs("}\n", f);
                    }
                    continue;
                }
                fprintf(f, "\\addplot[%s, %s, mark=none%s]", color, style,
                        se->label ? "" : ", forget plot");
                tex_table(f, p, se, -1);
                if (se->label) {
                    fputs("\\addlegendentry{", f);
                    tex_escape(f, se->label);
                    fputs("}\n", f);
                }
                continue;
            }
            const char *mark = pgf_marks[se->marker % FR_MARK_COUNT];
            const char *rot = se->marker == FR_MARK_TRIANGLE_DOWN ? ", rotate=180" : "";
            int legend_done = !se->label;
            for (int emph = 1; emph >= 0; emph--) {
                if (count_points(p, se, emph) == 0)
                    continue;
                if (emph)
                    fprintf(f, "\\addplot[only marks, mark=%s, color=%s, mark options={solid%s}%s]",
                            mark, color, rot, legend_done ? ", forget plot" : "");
                else
                    fprintf(f, "\\addplot[only marks, mark=%s, color=%s, mark options={solid, "
                               "fill=white%s}%s]",
                            mark, color, rot, legend_done ? ", forget plot" : "");
                tex_table(f, p, se, emph);
                if (!legend_done) {
                    fputs("\\addlegendentry{", f);
                    tex_escape(f, se->label);
                    fputs("}\n", f);
                    legend_done = 1;
                }
            }
            if (se->point_labels)
                for (size_t i = 0; i < se->n; i++)
                    if (se->point_labels[i] && finite_point(p, se, i)) {
                        fprintf(f, "\\node[anchor=west, font=\\footnotesize] at (axis cs:%.10g,%.10g) {",
                                se->x[i], se->y[i]);
                        tex_escape(f, se->point_labels[i]);
                        fputs("};\n", f);
                    }
        }
    fputs("\\end{axis}\n\\end{tikzpicture}\n\\end{document}\n", f);
}

/* gnuplot point types of the pdfcairo/pngcairo/svg terminals: filled, open. */
static const int gp_points[FR_MARK_COUNT][2] = {
    {7, 6}, {5, 4}, {9, 8}, {13, 12}, {11, 10}, {15, 14}, {2, 2}, {1, 1},
};

static void gp_quote(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static fr_status write_gnuplot(const fr_plot *p, const char *path, const char *dataset_path,
                               fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    size_t len = strlen(path);
    char *dat = malloc(len + 8), *stem = malloc(len + 8);
    FILE *g = NULL, *d = NULL;
    if (!dat || !stem) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    strcpy(dat, path);
    char *dot = strrchr(dat, '.'), *slash = strrchr(dat, '/');
    if (dot && (!slash || dot > slash))
        *dot = '\0';
    strcpy(stem, dat);
    strcat(dat, ".dat");
    if (!strcmp(dat, path)) {
        st = fr_fail(err, FR_E_USAGE, "cannot write gnuplot script '%s': its data file would have the same name (use a .gp extension)", path);
        goto done;
    }
    d = fopen(dat, "w");
    if (!d) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", dat,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    g = fopen(path, "w");
    if (!g) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    /* data: one block per (series, emphasis), separated by two blank lines */
    typedef struct block {
        size_t series;
        int emph;
    } block;
    block *blocks = calloc(2 * p->n_series + 1, sizeof *blocks);
    if (!blocks) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t nb = 0;
    fprintf(d, "# frontier %s data for %s, from '%s'\n", FRONTIER_VERSION, path,
            dataset_path ? dataset_path : "");
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        for (int emph = 1; emph >= 0; emph--) {
            int want = se->marker < 0 ? -1 : emph;
            if (se->marker < 0 && emph == 0)
                continue;
            if (count_points(p, se, want) == 0)
                continue;
            if (nb)
                fputs("\n\n", d);
            fprintf(d, "# index %zu: %s%s\n", nb, se->label ? se->label : "(unlabelled line)",
                    want == 0 ? " (dominated)" : "");
            for (size_t i = 0; i < se->n; i++)
                if (finite_point(p, se, i) &&
                    (want < 0 || (se->emphasis ? se->emphasis[i] != 0 : 1) == want))
                    fprintf(d, "%.10g %.10g\n", se->x[i], se->y[i]);
            blocks[nb++] = (block){s, want};
        }
    }
    fprintf(g, "# Frontier figure written by frontier %s from '%s'.\n", FRONTIER_VERSION,
            dataset_path ? dataset_path : "");
    fputs("# Draws a PDF for a paper column (3.4 x 2.55 in, 8 pt text); choose another\n"
          "# terminal and file with: gnuplot -e \"term='svg size 340,255'; outfile='f.svg'\" THIS.gp\n",
          g);
    fputs("if (!exists(\"term\")) term = \"pdfcairo size 3.4in,2.55in font ',8'\"\n", g);
    /* files beside the script wherever gnuplot runs from: ARG0 is the script */
    const char *dat_base = strrchr(dat, '/') ? strrchr(dat, '/') + 1 : dat;
    const char *stem_base = strrchr(stem, '/') ? strrchr(stem, '/') + 1 : stem;
    fputs("here = \"\"\ni = strlen(ARG0)\nwhile (i > 0 && ARG0[i:i] ne \"/\") { i = i - 1 }\n"
          "if (i > 0) here = ARG0[1:i]\n",
          g);
    fputs("if (!exists(\"outfile\")) outfile = here.", g);
    {
        char *pdf = malloc(strlen(stem_base) + 5);
        if (!pdf) {
            free(blocks);
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
            goto done;
        }
        sprintf(pdf, "%s.pdf", stem_base);
        gp_quote(g, pdf);
        free(pdf);
    }
    fputs("\neval \"set terminal \".term\nset output outfile\n", g);
    fputs("set key top right box opaque samplen 2 spacing 1.1\nset grid back lc rgb '#e0e0e0'\n"
          "set border lw 0.8\nset tics nomirror out scale 0.6\nset mxtics 1\n",
          g);
    fputs("set xlabel ", g);
    gp_quote(g, p->xlabel);
    fputs("\nset ylabel ", g);
    gp_quote(g, p->ylabel);
    fputc('\n', g);
    if (p->title) {
        fputs("set title ", g);
        gp_quote(g, p->title);
        fputc('\n', g);
    }
    if (p->log_y)
        fputs("set logscale y\nset format y \"10^{%L}\"\n", g);
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        for (size_t i = 0; se->point_labels && i < se->n; i++)
            if (se->point_labels[i] && finite_point(p, se, i)) {
                fputs("set label ", g);
                gp_quote(g, se->point_labels[i]);
                fprintf(g, " at %.10g,%.10g offset character 0.8,0 noenhanced\n", se->x[i], se->y[i]);
            }
    }
    fputs("datafile = here.", g);
    gp_quote(g, dat_base);
    fputs("\nplot \\\n", g);
    /* lines first, then markers */
    int first = 1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t b = 0; b < nb; b++) {
            const fr_plot_series *se = &p->series[blocks[b].series];
            int is_line = se->line != FR_LINE_NONE;
            if (is_line != (pass == 0))
                continue;
            int rgb[3];
            fr_plot_color_rgb(se->color, rgb);
            if (!first)
                fputs(", \\\n", g);
            first = 0;
            fprintf(g, "  datafile index %zu using 1:2 ", b);
            if (is_line)
                fprintf(g, "with %s lw %s dt %d lc rgb '#%02x%02x%02x'",
                        se->line == FR_LINE_STEPS ? "steps" : "lines",
                        se->line == FR_LINE_STEPS ? "2" : "1.5",
                        se->line == FR_LINE_DASHED ? 2 : 1, rgb[0], rgb[1], rgb[2]);
            else
                fprintf(g, "with points pt %d ps 0.6 lc rgb '#%02x%02x%02x'",
                        gp_points[se->marker % FR_MARK_COUNT][blocks[b].emph ? 0 : 1], rgb[0],
                        rgb[1], rgb[2]);
            /* title on the first block of a labelled series */
            int titled = se->label && (b == 0 || blocks[b - 1].series != blocks[b].series);
            if (titled) {
                fputs(" title ", g);
                gp_quote(g, se->label);
            } else {
                fputs(" notitle", g);
            }
        }
    fputc('\n', g);
    free(blocks);
    if (first) {
        st = fr_fail(err, FR_E_FORMAT, "nothing to plot");
        goto done;
    }
done:
    if (d && (fclose(d) != 0) && st == FR_OK)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", dat,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
    if (g && (ferror(g) | fclose(g)) && st == FR_OK)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
    free(dat);
    free(stem);
    return st;
}

/* ---- entry point ---- */

fr_status fr_export(const fr_dataset *ds, const fr_result_index *ix,
                    const fr_export_options *opt, const char *path, fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    fr_pareto p;
    fr_figure fig;
    fr_selector sel;
    FILE *f = NULL;
    memset(&p, 0, sizeof p);
    memset(&fig, 0, sizeof fig);
    memset(&sel, 0, sizeof sel);

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
        goto done;

    switch (opt->format) {
    case FR_EXPORT_CSV:
    case FR_EXPORT_JSON: {
        if ((st = fr_selector_init(&sel, &opt->selection, err)) != FR_OK)
            goto done;
        if (opt->format == FR_EXPORT_CSV) {
            f = fopen(path, "w");
            if (!f) {
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                             fr_errno_text(errno, ebuf, sizeof ebuf));
                goto done;
            }
            for (size_t i = 0; i < N_COLUMNS; i++)
                fprintf(f, "%s%s", i ? "," : "", columns[i]);
            fputc('\n', f);
            each_row(ds, ix, &sel, &p, opt->mixed, csv_row, f);
        } else {
            cJSON *root = cJSON_CreateObject();
            json_ctx j = {cJSON_CreateArray(), cJSON_CreateArray(), cJSON_CreateArray()};
            if (!root || !j.results || !j.points || !j.mixed) {
                cJSON_Delete(root);
                cJSON_Delete(j.results);
                cJSON_Delete(j.points);
                cJSON_Delete(j.mixed);
                st = fr_fail(err, FR_E_NOMEM, "out of memory");
                goto done;
            }
            cJSON_AddStringToObject(root, "format", "frontier-export");
            cJSON_AddNumberToObject(root, "version", 1);
            cJSON_AddStringToObject(root, "dataset", opt->dataset_path ? opt->dataset_path : "");
            cJSON_AddStringToObject(root, "metric", fr_metric_name(opt->y));
            cJSON_AddStringToObject(root, "by", fr_group_by_name(opt->by));
            cJSON_AddItemToObject(root, "results", j.results);
            cJSON_AddItemToObject(root, "points", j.points);
            cJSON_AddItemToObject(root, "mixed", j.mixed);
            int ok = each_row(ds, ix, &sel, &p, opt->mixed, json_row, &j);
            char *text = ok ? cJSON_Print(root) : NULL;
            cJSON_Delete(root);
            if (!text) {
                st = fr_fail(err, FR_E_NOMEM, "out of memory");
                goto done;
            }
            f = fopen(path, "w");
            if (!f) {
                cJSON_free(text);
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                             fr_errno_text(errno, ebuf, sizeof ebuf));
                goto done;
            }
            fputs(text, f);
            fputc('\n', f);
            cJSON_free(text);
        }
        break;
    }
    case FR_EXPORT_TEX:
    case FR_EXPORT_GNUPLOT:
    case FR_EXPORT_SVG:
    case FR_EXPORT_PDF:
    case FR_EXPORT_PNG:
        if ((st = fr_figure_build(&p, opt, &fig, err)) != FR_OK)
            goto done;
        if (opt->format == FR_EXPORT_GNUPLOT) {
            st = write_gnuplot(&fig.plot, path, opt->dataset_path, err);
        } else if (opt->format == FR_EXPORT_TEX) {
            f = fopen(path, "w");
            if (!f) {
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                             fr_errno_text(errno, ebuf, sizeof ebuf));
                goto done;
            }
            write_tex(f, &fig.plot, opt->dataset_path);
        } else {
            st = fr_plot_render(&fig.plot,
                                opt->format == FR_EXPORT_SVG ? FR_PLOT_SVG
                                : opt->format == FR_EXPORT_PDF ? FR_PLOT_PDF : FR_PLOT_PNG,
                                path, err);
        }
        break;
    default:
        break;
    }
done:
    if (f) {
        int bad = ferror(f);
        if ((fclose(f) != 0 || bad) && st == FR_OK)
            st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                         fr_errno_text(errno, ebuf, sizeof ebuf));
    }
    fr_selector_free(&sel);
    fr_figure_free(&fig);
    fr_pareto_free(&p);
    return st;
}
