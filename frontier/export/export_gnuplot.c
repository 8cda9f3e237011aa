/*
 * The figure as a gnuplot script and its data file (docs/analysis.md,
 * "export"): FILE.gp draws a PDF for a paper column by default and finds
 * FILE.dat beside itself wherever gnuplot runs from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/export/export_gnuplot.h"
#include "frontier/dataset/output_file.h"

/* gnuplot point types of the pdfcairo/pngcairo/svg terminals: filled, open. */
static const int gp_points[FR_MARK_COUNT][2] = {
    {7, 6}, {5, 4}, {9, 8}, {13, 12}, {11, 10}, {15, 14}, {2, 2}, {1, 1},
};

/* A gnuplot string of s followed by suffix (which needs no escaping). */
static void gp_quote_with(FILE *f, const char *s, const char *suffix)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputs(suffix, f);
    fputc('"', f);
}

static void gp_quote(FILE *f, const char *s)
{
    gp_quote_with(f, s, "");
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A data block: the points of one series, or of its filled or hollow
 * markers (emph 1 or 0; -1 for a line's points). */
typedef struct gp_block {
    size_t series;
    int emph;
} gp_block;

/* The data file: a block per (series, emphasis) with points drawn,
 * separated by two blank lines so that `index k` selects block k. Lines
 * are one block; markers a block of filled points and one of hollow
 * points. Returns the number of blocks, listed in blocks[]. */
static size_t gp_write_data(FILE *d, const fr_plot *p, const char *path, const char *dataset_path,
                            gp_block *blocks)
{
    size_t nb = 0;
    fprintf(d, "# frontier %s data for %s, from '%s'\n", FRONTIER_VERSION, path,
            dataset_path ? dataset_path : "");
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        for (int emph = 1; emph >= 0; emph--) {
            int want = se->marker < 0 ? -1 : emph;
            if (se->marker < 0 && emph == 0)
                continue;
            if (fr_series_count_drawn(p, se, want) == 0)
                continue;
            if (nb)
                fputs("\n\n", d);
            fprintf(d, "# index %zu: %s%s\n", nb, se->label ? se->label : "(unlabelled line)",
                    want == 0 ? " (dominated)" : "");
            for (size_t i = 0; i < se->n; i++)
                if (fr_series_point_wanted(p, se, i, want))
                    fprintf(d, "%.10g %.10g\n", se->x[i], se->y[i]);
            blocks[nb++] = (gp_block){s, want};
        }
    }
    return nb;
}

/* Everything before the plot command: terminal and output (overridable
 * from the command line), style, labels, and the data file's name
 * relative to the script. */
static void gp_write_settings(FILE *g, const fr_plot *p, const char *stem, const char *dat,
                              const char *dataset_path)
{
    fprintf(g, "# Frontier figure written by frontier %s from '%s'.\n", FRONTIER_VERSION,
            dataset_path ? dataset_path : "");
    fputs("# Draws a PDF for a paper column (3.4 x 2.55 in, 8 pt text); choose another\n"
          "# terminal and file with: gnuplot -e \"term='svg size 340,255'; outfile='f.svg'\" THIS.gp\n",
          g);
    fputs("if (!exists(\"term\")) term = \"pdfcairo size 3.4in,2.55in font ',8'\"\n", g);
    /* files beside the script wherever gnuplot runs from: ARG0 is the script */
    fputs("here = \"\"\ni = strlen(ARG0)\nwhile (i > 0 && ARG0[i:i] ne \"/\") { i = i - 1 }\n"
          "if (i > 0) here = ARG0[1:i]\n",
          g);
    fputs("if (!exists(\"outfile\")) outfile = here.", g);
    gp_quote_with(g, base_name(stem), ".pdf");
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
            if (se->point_labels[i] && fr_series_point_drawn(p, se, i)) {
                fputs("set label ", g);
                gp_quote(g, se->point_labels[i]);
                fprintf(g, " at %.10g,%.10g offset character 0.8,0 noenhanced\n", se->x[i], se->y[i]);
            }
    }
    fputs("datafile = here.", g);
    gp_quote(g, base_name(dat));
    fputc('\n', g);
}

/* The plot command over the data blocks, lines first so that markers are
 * drawn over them; a series is titled on its first block. Returns 0 when
 * there was no block to plot. */
static int gp_write_plot(FILE *g, const fr_plot *p, const gp_block *blocks, size_t nb)
{
    fputs("plot \\\n", g);
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
            int titled = se->label && (b == 0 || blocks[b - 1].series != blocks[b].series);
            if (titled) {
                fputs(" title ", g);
                gp_quote(g, se->label);
            } else {
                fputs(" notitle", g);
            }
        }
    fputc('\n', g);
    return !first;
}

fr_status fr_export_gnuplot(const fr_plot *p, const char *path, const char *dataset_path,
                            fr_error *err)
{
    fr_status st = FR_OK;
    size_t len = strlen(path);
    char *dat = malloc(len + 8), *stem = malloc(len + 8);
    gp_block *blocks = calloc(2 * p->n_series + 1, sizeof *blocks);
    FILE *g = NULL, *d = NULL;
    if (!dat || !stem || !blocks) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    /* stem: path without its extension; the data file is stem.dat */
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
    if ((st = fr_output_open(dat, &d, err)) != FR_OK ||
        (st = fr_output_open(path, &g, err)) != FR_OK)
        goto done;
    size_t nb = gp_write_data(d, p, path, dataset_path, blocks);
    gp_write_settings(g, p, stem, dat, dataset_path);
    if (!gp_write_plot(g, p, blocks, nb))
        st = fr_fail(err, FR_E_FORMAT, "nothing to plot");
done:
    /* both files or neither: each is renamed into place only when written */
    if (st == FR_OK && d && g) {
        st = fr_output_close(d, dat, err);
        d = NULL;
        if (st == FR_OK)
            st = fr_output_close(g, path, err);
        else
            fr_output_abort(g);
        g = NULL;
    }
    fr_output_abort(d);
    fr_output_abort(g);
    free(dat);
    free(stem);
    free(blocks);
    return st;
}
