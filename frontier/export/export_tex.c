/*
 * The figure as a standalone pgfplots document (docs/analysis.md, "export"):
 * the data inline, the palette and markers of the cairo rendering, for
 * pdflatex.
 */
#include <stdio.h>

#include "frontier/export/export_tex.h"
#include "frontier/dataset/output_file.h"

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
        if (!fr_series_point_wanted(p, s, i, want_emph))
            continue;
        fprintf(f, "%.10g %.10g\n", s->x[i], s->y[i]);
    }
    fputs("};\n", f);
}

/* Up to the axis options: the document class, pgfplots and the palette
 * as named colours. */
static void tex_preamble(FILE *f, const char *dataset_path)
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
}

/* The axis environment's options, up to and with the closing bracket. */
static void tex_axis_options(FILE *f, const fr_plot *p)
{
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
}

static void tex_legend_entry(FILE *f, const char *label)
{
    fputs("\\addlegendentry{", f);
    tex_escape(f, label);
    fputs("}\n", f);
}

/* A line series; one with no point drawn still gets its legend entry (the
 * per-class frontier lines are named by such an empty series). */
static void tex_line(FILE *f, const fr_plot *p, const fr_plot_series *se, const char *color)
{
    const char *style = se->line == FR_LINE_DASHED ? "dashed, thick"
                      : se->line == FR_LINE_STEPS ? "const plot, very thick" : "thick";
    if (fr_series_count_drawn(p, se, -1) == 0) {
        if (se->label) {
            fprintf(f, "\\addlegendimage{%s, %s}\n", color, style);
            tex_legend_entry(f, se->label);
        }
        return;
    }
    fprintf(f, "\\addplot[%s, %s, mark=none%s]", color, style, se->label ? "" : ", forget plot");
    tex_table(f, p, se, -1);
    if (se->label)
        tex_legend_entry(f, se->label);
}

/* A marker series: filled (frontier) points then hollow ones, the legend
 * entry on the first plot drawn, then the point labels. */
static void tex_markers(FILE *f, const fr_plot *p, const fr_plot_series *se, const char *color)
{
    const char *mark = pgf_marks[se->marker % FR_MARK_COUNT];
    const char *rot = se->marker == FR_MARK_TRIANGLE_DOWN ? ", rotate=180" : "";
    int legend_done = !se->label;
    for (int emph = 1; emph >= 0; emph--) {
        if (fr_series_count_drawn(p, se, emph) == 0)
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
            tex_legend_entry(f, se->label);
            legend_done = 1;
        }
    }
    if (se->point_labels)
        for (size_t i = 0; i < se->n; i++)
            if (se->point_labels[i] && fr_series_point_drawn(p, se, i)) {
                fprintf(f, "\\node[anchor=west, font=\\footnotesize] at (axis cs:%.10g,%.10g) {",
                        se->x[i], se->y[i]);
                tex_escape(f, se->point_labels[i]);
                fputs("};\n", f);
            }
}

fr_status fr_export_tex(const fr_plot *p, const char *path, const char *dataset_path,
                        fr_error *err)
{
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st != FR_OK)
        return st;
    tex_preamble(f, dataset_path);
    fputs("\\begin{document}\n\\begin{tikzpicture}\n\\begin{axis}[\n", f);
    tex_axis_options(f, p);
    char color[16];
    /* lines first, under the markers, as in the cairo rendering */
    for (int pass = 0; pass < 2; pass++)
        for (size_t s = 0; s < p->n_series; s++) {
            const fr_plot_series *se = &p->series[s];
            int is_line = se->line != FR_LINE_NONE;
            if (is_line != (pass == 0))
                continue;
            tex_color_name(color, sizeof color, se->color);
            if (is_line)
                tex_line(f, p, se, color);
            else
                tex_markers(f, p, se, color);
        }
    fputs("\\end{axis}\n\\end{tikzpicture}\n\\end{document}\n", f);
    return fr_output_close(f, path, err);
}
