/*
 * Frontier figures rendered with cairo (svg, pdf, png); docs/analysis.md,
 * "Figures". All geometry is in points (1/72 in); png is the same drawing
 * scaled to the requested dpi.
 */
#include "frontier/export/plot.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FRONTIER_HAVE_CAIRO
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#endif

/* Okabe & Ito (2008) colour-blind-safe palette, yellow left out (it vanishes
 * on white); black comes last, after every colour. */
static const int palette[FR_PALETTE_SIZE][3] = {
    {0, 114, 178},   /* blue */
    {213, 94, 0},    /* vermillion */
    {0, 158, 115},   /* bluish green */
    {204, 121, 167}, /* reddish purple */
    {230, 159, 0},   /* orange */
    {86, 180, 233},  /* sky blue */
    {0, 0, 0},       /* black */
};

void fr_plot_color_rgb(int color, int rgb[3])
{
    if (color == FR_COLOR_BLACK) {
        rgb[0] = rgb[1] = rgb[2] = 0;
    } else if (color == FR_COLOR_GREY || color < 0) {
        rgb[0] = rgb[1] = rgb[2] = 89;
    } else {
        memcpy(rgb, palette[color % FR_PALETTE_SIZE], sizeof palette[0]);
    }
}

/* Smallest step of the form {1, 2, 5} x 10^k giving at most max_ticks intervals. */
static double nice_step(double range, int max_ticks)
{
    double base = pow(10.0, floor(log10(range / max_ticks)));
    static const double mult[] = {1, 2, 5, 10};
    for (size_t i = 0; i < 4; i++)
        if (range / (mult[i] * base) <= max_ticks)
            return mult[i] * base;
    return 10 * base;
}

size_t fr_plot_ticks(double lo, double hi, int log_axis, double *ticks, size_t max,
                     double *axis_lo, double *axis_hi)
{
    size_t n = 0;
    if (!isfinite(lo) || !isfinite(hi) || (log_axis && (lo <= 0 || hi <= 0))) {
        lo = log_axis ? 0.1 : 0;
        hi = 1;
    }
    if (log_axis) {
        double f = pow(hi / lo, 0.05);
        if (f < 1.15)
            f = 1.15;
        lo /= f;
        hi *= f;
        *axis_lo = lo;
        *axis_hi = hi;
        int k0 = (int)ceil(log10(lo) - 1e-9), k1 = (int)floor(log10(hi) + 1e-9);
        if (k1 - k0 >= 1) {
            /* two or more decades: label the decades only (every other beyond 8) */
            int stride = (k1 - k0) > 8 ? 2 : 1;
            for (int k = k0; k <= k1 && n < max; k += stride)
                ticks[n++] = pow(10.0, k);
        } else {
            /* within about a decade: 1, 2, 5 x 10^k */
            static const double mult[] = {1, 2, 5};
            for (int k = k0 - 1; k <= k1 + 1; k++)
                for (size_t i = 0; i < 3; i++) {
                    double t = mult[i] * pow(10.0, k);
                    if (t >= lo && t <= hi && n < max)
                        ticks[n++] = t;
                }
        }
        return n;
    }
    if (hi - lo < 1e-12 * (fabs(lo) + fabs(hi)) || hi == lo) {
        lo -= 0.5;
        hi += 0.5;
    }
    double pad = 0.04 * (hi - lo);
    lo -= pad;
    hi += pad;
    *axis_lo = lo;
    *axis_hi = hi;
    double step = nice_step(hi - lo, 7);
    for (double t = ceil(lo / step - 1e-9) * step; t <= hi + 1e-9 * step && n < max; t += step)
        ticks[n++] = fabs(t) < 1e-12 * step ? 0.0 : t;
    return n;
}

/* ---- which points a writer draws ---- */

int fr_series_point_drawn(const fr_plot *p, const fr_plot_series *s, size_t i)
{
    return isfinite(s->x[i]) && isfinite(s->y[i]) && (!p->log_y || s->y[i] > 0);
}

int fr_series_point_wanted(const fr_plot *p, const fr_plot_series *s, size_t i, int want_emph)
{
    return fr_series_point_drawn(p, s, i) &&
           (want_emph < 0 || (s->emphasis ? s->emphasis[i] != 0 : 1) == want_emph);
}

size_t fr_series_count_drawn(const fr_plot *p, const fr_plot_series *s, int want_emph)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += (size_t)fr_series_point_wanted(p, s, i, want_emph);
    return n;
}

#ifndef FRONTIER_HAVE_CAIRO

int fr_plot_available(void)
{
    return 0;
}

fr_status fr_plot_render(const fr_plot *plot, fr_plot_format format, const char *path,
                         fr_error *err)
{
    (void)plot;
    (void)format;
    return fr_fail(err, FR_E_USAGE,
                   "cannot write '%s': this frontier was built without cairo, so svg, pdf and png "
                   "are unavailable (install libcairo2-dev and rebuild, or use --format tex or "
                   "gnuplot)",
                   path);
}

#else

int fr_plot_available(void)
{
    return 1;
}

#define MAX_TICKS 32

typedef struct frame {
    double x0, x1, y0, y1;          /* plot area in points (y0 top) */
    double xlo, xhi, ylo, yhi;      /* data range of the axes */
    int log_y;
} frame;

static double map_x(const frame *f, double x)
{
    return f->x0 + (x - f->xlo) / (f->xhi - f->xlo) * (f->x1 - f->x0);
}

static double map_y(const frame *f, double y)
{
    double t, lo = f->ylo, hi = f->yhi;
    if (f->log_y) {
        t = log10(y);
        lo = log10(lo);
        hi = log10(hi);
    } else {
        t = y;
    }
    return f->y1 - (t - lo) / (hi - lo) * (f->y1 - f->y0);
}

static int usable(const frame *f, double x, double y)
{
    return isfinite(x) && isfinite(y) && (!f->log_y || y > 0);
}

static void set_color(cairo_t *cr, int color)
{
    int rgb[3];
    fr_plot_color_rgb(color, rgb);
    cairo_set_source_rgb(cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
}

static void marker_path(cairo_t *cr, int marker, double x, double y, double r)
{
    switch (marker) {
    case FR_MARK_SQUARE:
        cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
        break;
    case FR_MARK_TRIANGLE_UP:
    case FR_MARK_TRIANGLE_DOWN: {
        double s = marker == FR_MARK_TRIANGLE_UP ? 1 : -1;
        cairo_move_to(cr, x, y - s * 1.25 * r);
        cairo_line_to(cr, x + 1.1 * r, y + s * 0.65 * r);
        cairo_line_to(cr, x - 1.1 * r, y + s * 0.65 * r);
        cairo_close_path(cr);
        break;
    }
    case FR_MARK_DIAMOND:
        cairo_move_to(cr, x, y - 1.3 * r);
        cairo_line_to(cr, x + 0.95 * r, y);
        cairo_line_to(cr, x, y + 1.3 * r);
        cairo_line_to(cr, x - 0.95 * r, y);
        cairo_close_path(cr);
        break;
    case FR_MARK_PENTAGON:
        for (int k = 0; k < 5; k++) {
            double a = -M_PI / 2 + k * 2 * M_PI / 5;
            double px = x + 1.1 * r * cos(a), py = y + 1.1 * r * sin(a);
            if (k == 0)
                cairo_move_to(cr, px, py);
            else
                cairo_line_to(cr, px, py);
        }
        cairo_close_path(cr);
        break;
    case FR_MARK_CROSS:
        cairo_move_to(cr, x - r, y - r);
        cairo_line_to(cr, x + r, y + r);
        cairo_move_to(cr, x - r, y + r);
        cairo_line_to(cr, x + r, y - r);
        break;
    case FR_MARK_PLUS:
        cairo_move_to(cr, x - 1.2 * r, y);
        cairo_line_to(cr, x + 1.2 * r, y);
        cairo_move_to(cr, x, y - 1.2 * r);
        cairo_line_to(cr, x, y + 1.2 * r);
        break;
    default:
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * M_PI);
        break;
    }
}

static void draw_marker(cairo_t *cr, int marker, int color, double x, double y, double r,
                        int filled)
{
    cairo_new_path(cr);
    marker_path(cr, marker, x, y, r);
    if (marker == FR_MARK_CROSS || marker == FR_MARK_PLUS) {
        set_color(cr, color);
        cairo_set_line_width(cr, filled ? 1.1 : 0.7);
        cairo_stroke(cr);
        return;
    }
    if (filled) {
        set_color(cr, color);
        cairo_fill_preserve(cr);
        cairo_set_line_width(cr, 0.5);
        cairo_stroke(cr);
    } else {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        set_color(cr, color);
        cairo_set_line_width(cr, 0.8);
        cairo_stroke(cr);
    }
}

static void line_style(cairo_t *cr, const fr_plot_series *s)
{
    static const double dash[] = {3.5, 2.0};
    set_color(cr, s->color);
    cairo_set_line_width(cr, s->line == FR_LINE_STEPS ? 1.2 : 1.0);
    cairo_set_dash(cr, dash, s->line == FR_LINE_DASHED ? 2 : 0, 0);
    cairo_set_line_join(cr, s->line == FR_LINE_STEPS ? CAIRO_LINE_JOIN_MITER : CAIRO_LINE_JOIN_ROUND);
}

/* A staircase whose steps are narrower than its line only draws noise:
 * then it is drawn as the line through its points (the steps are under a
 * point's width apart, so the two differ by less than the stroke). */
static int steps_visible(const frame *f, const fr_plot_series *s)
{
    double prev = NAN, widest = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!usable(f, s->x[i], s->y[i]))
            continue;
        double x = map_x(f, s->x[i]);
        if (!isnan(prev))
            widest = fmax(widest, x - prev);
        prev = x;
    }
    return widest >= 1.5;
}

static void draw_line(cairo_t *cr, const frame *f, const fr_plot_series *s)
{
    int started = 0, steps = s->line == FR_LINE_STEPS && steps_visible(f, s);
    double py = 0;
    cairo_new_path(cr);
    for (size_t i = 0; i < s->n; i++) {
        if (!usable(f, s->x[i], s->y[i]))
            continue;
        double x = map_x(f, s->x[i]), y = map_y(f, s->y[i]);
        if (!started) {
            cairo_move_to(cr, x, y);
            started = 1;
        } else if (steps) {
            cairo_line_to(cr, x, py);
            cairo_line_to(cr, x, y);
        } else {
            cairo_line_to(cr, x, y);
        }
        py = y;
    }
    line_style(cr, s);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

/* Text helpers: the toy API is enough for Latin labels and keeps the
 * dependency to cairo alone. */
static void font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

static double text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* Draws s with its anchor (ax 0 left .. 1 right, baseline-relative ay 0
 * baseline .. 1 cap height above) at (x, y). */
static void text_at(cairo_t *cr, const char *s, double x, double y, double ax, double ay,
                    double size)
{
    double w = text_width(cr, s);
    cairo_move_to(cr, x - ax * w, y + ay * 0.72 * size);
    cairo_show_text(cr, s);
}

typedef struct tick_label {
    char base[32];
    char exp[16];   /* superscript, "" for none */
} tick_label;

static void format_tick(double v, int log_axis, int decades_only, tick_label *out)
{
    out->exp[0] = '\0';
    if (log_axis && decades_only) {
        int k = (int)lround(log10(v));
        snprintf(out->base, sizeof out->base, "10");
        /* U+2212 minus sign, as typeset exponents use */
        snprintf(out->exp, sizeof out->exp, "%s%d", k < 0 ? "\xe2\x88\x92" : "", abs(k));
    } else {
        snprintf(out->base, sizeof out->base, "%.6g", v);
    }
}

static double tick_label_width(cairo_t *cr, const tick_label *t, double size)
{
    font(cr, size, 0);
    double w = text_width(cr, t->base);
    if (t->exp[0]) {
        font(cr, size * 0.8, 0);
        w += text_width(cr, t->exp) + 0.3;
        font(cr, size, 0);
    }
    return w;
}

static void draw_tick_label(cairo_t *cr, const tick_label *t, double x, double y, double ax,
                            double ay, double size)
{
    double w = tick_label_width(cr, t, size);
    double left = x - ax * w, base = y + ay * 0.72 * size;
    font(cr, size, 0);
    cairo_move_to(cr, left, base);
    cairo_show_text(cr, t->base);
    if (t->exp[0]) {
        double bw = text_width(cr, t->base);
        font(cr, size * 0.8, 0);
        cairo_move_to(cr, left + bw + 0.3, base - 0.42 * size);
        cairo_show_text(cr, t->exp);
        font(cr, size, 0);
    }
}

typedef struct rect {
    double x0, y0, x1, y1;
} rect;

static int overlaps(const rect *a, const rect *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

static int inside(const rect *a, const rect *outer)
{
    return a->x0 >= outer->x0 && a->x1 <= outer->x1 && a->y0 >= outer->y0 && a->y1 <= outer->y1;
}

/* Marker boxes and points sampled along lines, in page coordinates: what a
 * legend or a label must not cover. */
typedef struct obstacles {
    rect *boxes;
    size_t n, cap;
} obstacles;

static int obstacle_add(obstacles *o, rect r)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 256;
        rect *nb = realloc(o->boxes, cap * sizeof *nb);
        if (!nb)
            return 0;
        o->boxes = nb;
        o->cap = cap;
    }
    o->boxes[o->n++] = r;
    return 1;
}

static int sample_segment(obstacles *o, double xa, double ya, double xb, double yb)
{
    double len = hypot(xb - xa, yb - ya);
    int n = (int)ceil(len / 2.0);
    for (int k = 0; k <= n; k++) {
        double t = n ? (double)k / n : 0, x = xa + t * (xb - xa), y = ya + t * (yb - ya);
        if (!obstacle_add(o, (rect){x - 0.5, y - 0.5, x + 0.5, y + 0.5}))
            return 0;
    }
    return 1;
}

static int collect_obstacles(const fr_plot *p, const frame *f, double marker_r, obstacles *o)
{
    o->n = 0;
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        int have_prev = 0;
        double px = 0, py = 0;
        for (size_t i = 0; i < se->n; i++) {
            if (!usable(f, se->x[i], se->y[i]))
                continue;
            double x = map_x(f, se->x[i]), y = map_y(f, se->y[i]);
            if (se->marker >= 0 &&
                !obstacle_add(o, (rect){x - marker_r, y - marker_r, x + marker_r, y + marker_r}))
                return 0;
            if (se->line != FR_LINE_NONE && have_prev) {
                if (se->line == FR_LINE_STEPS) {
                    if (!sample_segment(o, px, py, x, py) || !sample_segment(o, x, py, x, y))
                        return 0;
                } else if (!sample_segment(o, px, py, x, y)) {
                    return 0;
                }
            }
            px = x;
            py = y;
            have_prev = 1;
        }
    }
    return 1;
}

static size_t hits(const obstacles *o, const rect *r)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n; i++)
        n += overlaps(r, &o->boxes[i]);
    return n;
}

static void draw_legend_entry(cairo_t *cr, const fr_plot_series *se, double x, double y,
                              double sample, double marker_r, double fs)
{
    if (se->line != FR_LINE_NONE) {
        line_style(cr, se);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + sample, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    if (se->marker >= 0)
        draw_marker(cr, se->marker, se->color, x + 0.5 * sample, y, marker_r, 1);
    cairo_set_source_rgb(cr, 0, 0, 0);
    font(cr, fs, 0);
    text_at(cr, se->label, x + sample + 0.4 * fs, y, 0, 0.5, fs);
}

/* Sizes of the drawing, in points, all from the font size. */
typedef struct sizes {
    double fs, marker_r, gap;       /* text, marker radius, spacing around text */
    double sample, row, pad, inset; /* legend: line sample, row height, padding, inset */
} sizes;

/* The axes: frame and data ranges, ticks and their labels. */
typedef struct axes {
    frame f;
    size_t nxt, nyt;
    double xt[MAX_TICKS], yt[MAX_TICKS];
    tick_label xl[MAX_TICKS], yl[MAX_TICKS];
} axes;

/* Where the legend goes: a box inside the plot area, or band_rows rows of
 * entries above it (then the frame's top has moved down for them). */
typedef struct legend {
    size_t n_entries;
    int inside;
    rect box;
    size_t band_rows;
} legend;

/* Step 1. The axes fit the data (every usable point) and the plot area is
 * the page less the tick labels, the axis labels and the title: the frame
 * before any legend band. Measuring text sets cr's font. */
static void set_axes(cairo_t *cr, const fr_plot *p, const sizes *sz, double W, double H, axes *ax)
{
    const double fs = sz->fs, gap = sz->gap;
    frame *f = &ax->f;
    memset(ax, 0, sizeof *ax);
    f->log_y = p->log_y;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t s = 0; s < p->n_series; s++)
        for (size_t i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!usable(f, x, y))
                continue;
            xmin = fmin(xmin, x);
            xmax = fmax(xmax, x);
            ymin = fmin(ymin, y);
            ymax = fmax(ymax, y);
        }
    ax->nxt = fr_plot_ticks(xmin, xmax, 0, ax->xt, MAX_TICKS, &f->xlo, &f->xhi);
    ax->nyt = fr_plot_ticks(ymin, ymax, p->log_y, ax->yt, MAX_TICKS, &f->ylo, &f->yhi);
    int decades_only = 0;
    if (p->log_y) {
        decades_only = 1;
        for (size_t i = 0; i < ax->nyt; i++)
            if (fabs(log10(ax->yt[i]) - lround(log10(ax->yt[i]))) > 1e-9)
                decades_only = 0;
    }
    double ytw = 0;
    for (size_t i = 0; i < ax->nxt; i++)
        format_tick(ax->xt[i], 0, 0, &ax->xl[i]);
    for (size_t i = 0; i < ax->nyt; i++) {
        format_tick(ax->yt[i], p->log_y, decades_only, &ax->yl[i]);
        ytw = fmax(ytw, tick_label_width(cr, &ax->yl[i], fs));
    }
    double title_h = p->title ? 1.5 * fs : 0;
    f->x0 = gap + 1.1 * fs + gap + ytw + gap;
    f->x1 = W - fmax(0.5 * fs,
                     ax->nxt ? 0.5 * tick_label_width(cr, &ax->xl[ax->nxt - 1], fs) + 2 : 0);
    f->y0 = (p->title ? title_h + gap : 0.6 * fs + gap);
    f->y1 = H - (gap + 1.0 * fs + gap + 1.0 * fs + gap);
}

/* Step 2. The legend is one column in the first corner of the plot (upper
 * right, lower left, lower right, upper left) where it covers no marker or
 * line, and otherwise rows of entries in a band above the plot, which
 * moves f's top down. obs is scratch. Returns 0 when out of memory. */
static int place_legend(cairo_t *cr, const fr_plot *p, const sizes *sz, frame *f, obstacles *obs,
                        legend *lg)
{
    const double fs = sz->fs, sample = sz->sample, row = sz->row, pad = sz->pad,
                 inset = sz->inset;
    double text_w = 0;
    memset(lg, 0, sizeof *lg);
    font(cr, fs, 0);
    for (size_t s = 0; s < p->n_series; s++)
        if (p->series[s].label) {
            lg->n_entries++;
            text_w = fmax(text_w, text_width(cr, p->series[s].label));
        }
    if (!lg->n_entries)
        return 1;
    if (!collect_obstacles(p, f, sz->marker_r, obs))
        return 0;
    double lw = 2 * pad + sample + 0.4 * fs + text_w, lh = 2 * pad + lg->n_entries * row - 0.2 * fs;
    rect corners[4] = {
        {f->x1 - inset - lw, f->y0 + inset, f->x1 - inset, f->y0 + inset + lh},  /* upper right */
        {f->x0 + inset, f->y1 - inset - lh, f->x0 + inset + lw, f->y1 - inset},  /* lower left */
        {f->x1 - inset - lw, f->y1 - inset - lh, f->x1 - inset, f->y1 - inset},  /* lower right */
        {f->x0 + inset, f->y0 + inset, f->x0 + inset + lw, f->y0 + inset + lh},  /* upper left */
    };
    if (lw < 0.6 * (f->x1 - f->x0) && lh < 0.6 * (f->y1 - f->y0))
        for (size_t c = 0; c < 4 && !lg->inside; c++)
            if (hits(obs, &corners[c]) == 0) {
                lg->box = corners[c];
                lg->inside = 1;
            }
    if (lg->inside)
        return 1;
    /* flow the entries into rows across the plot width */
    double x = 0, avail = f->x1 - f->x0;
    lg->band_rows = 1;
    for (size_t s = 0; s < p->n_series; s++) {
        if (!p->series[s].label)
            continue;
        double w = sample + 0.4 * fs + text_width(cr, p->series[s].label) + fs;
        if (x > 0 && x + w - fs > avail) {
            lg->band_rows++;
            x = 0;
        }
        x += w;
    }
    f->y0 += lg->band_rows * row + 0.2 * fs;
    return 1;
}

/* Step 3. White page, grid at the major ticks. */
static void draw_grid(cairo_t *cr, const axes *ax)
{
    const frame *f = &ax->f;
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_set_line_width(cr, 0.4);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    for (size_t i = 0; i < ax->nxt; i++) {
        double x = map_x(f, ax->xt[i]);
        cairo_move_to(cr, x, f->y0);
        cairo_line_to(cr, x, f->y1);
    }
    for (size_t i = 0; i < ax->nyt; i++) {
        double y = map_y(f, ax->yt[i]);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x1, y);
    }
    cairo_stroke(cr);
}

/* Step 4. The data, clipped to the plot area: every line under every
 * marker, and in each marker series the hollow (dominated) points under
 * the filled frontier points. */
static void draw_data(cairo_t *cr, const fr_plot *p, const frame *f, double marker_r)
{
    cairo_save(cr);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_clip(cr);
    for (size_t s = 0; s < p->n_series; s++)
        if (p->series[s].line != FR_LINE_NONE && p->series[s].n > 1)
            draw_line(cr, f, &p->series[s]);
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        if (se->marker < 0)
            continue;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < se->n; i++) {
                int filled = se->emphasis ? se->emphasis[i] != 0 : 1;
                if (filled != pass || !usable(f, se->x[i], se->y[i]))
                    continue;
                draw_marker(cr, se->marker, se->color, map_x(f, se->x[i]), map_y(f, se->y[i]),
                            marker_r, filled);
            }
    }
    cairo_restore(cr);
}

/* Step 5. Each point label goes to the first of eight places around its
 * point that stays inside the plot and covers nothing in obs (markers,
 * lines, the legend, earlier labels); one with no such place is left out.
 * Returns 0 when out of memory. */
static int draw_point_labels(cairo_t *cr, const fr_plot *p, const frame *f, const sizes *sz,
                             obstacles *obs)
{
    const double fs = sz->fs, marker_r = sz->marker_r;
    rect area = {f->x0 + 1, f->y0 + 1, f->x1 - 1, f->y1 - 1};
    font(cr, fs, 0);
    for (size_t s = 0; s < p->n_series; s++) {
        const fr_plot_series *se = &p->series[s];
        if (!se->point_labels)
            continue;
        for (size_t i = 0; i < se->n; i++) {
            const char *txt = se->point_labels[i];
            if (!txt || !usable(f, se->x[i], se->y[i]))
                continue;
            double x = map_x(f, se->x[i]), y = map_y(f, se->y[i]);
            double w = text_width(cr, txt), h = 0.75 * fs, d = marker_r + 1.5;
            /* right, upper right, lower right, left, upper left, lower left, above, below */
            const double cand[][2] = {{x + d, y + h / 2},     {x + d, y - d / 2},
                                      {x + d, y + d / 2 + h}, {x - d - w, y + h / 2},
                                      {x - d - w, y - d / 2}, {x - d - w, y + d / 2 + h},
                                      {x - w / 2, y - d},     {x - w / 2, y + d + h}};
            for (size_t k = 0; k < sizeof cand / sizeof cand[0]; k++) {
                rect r = {cand[k][0] - 0.5, cand[k][1] - h - 0.5, cand[k][0] + w + 0.5,
                          cand[k][1] + 0.25 * fs};
                if (!inside(&r, &area) || hits(obs, &r))
                    continue;
                set_color(cr, FR_COLOR_BLACK);
                cairo_move_to(cr, cand[k][0], cand[k][1]);
                cairo_show_text(cr, txt);
                if (!obstacle_add(obs, r))
                    return 0;
                break;
            }
        }
    }
    return 1;
}

/* Step 6. The frame, inward ticks with their labels, and on a log axis
 * the minor ticks at 2..9 of every decade. */
static void draw_frame(cairo_t *cr, const fr_plot *p, const axes *ax, const sizes *sz)
{
    const frame *f = &ax->f;
    const double fs = sz->fs, gap = sz->gap;
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 0.6);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_stroke(cr);
    const double tick = 0.4 * fs, minor = 0.22 * fs;
    for (size_t i = 0; i < ax->nxt; i++) {
        double x = map_x(f, ax->xt[i]);
        cairo_move_to(cr, x, f->y1);
        cairo_line_to(cr, x, f->y1 - tick);
        draw_tick_label(cr, &ax->xl[i], x, f->y1 + gap + 0.72 * fs, 0.5, 0, fs);
    }
    for (size_t i = 0; i < ax->nyt; i++) {
        double y = map_y(f, ax->yt[i]);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 + tick, y);
        draw_tick_label(cr, &ax->yl[i], f->x0 - gap, y, 1, 0.5, fs);
    }
    if (p->log_y) {
        for (int k = (int)floor(log10(f->ylo)); k <= (int)ceil(log10(f->yhi)); k++)
            for (int m = 2; m <= 9; m++) {
                double v = m * pow(10.0, k);
                if (v <= f->ylo || v >= f->yhi)
                    continue;
                double y = map_y(f, v);
                cairo_move_to(cr, f->x0, y);
                cairo_line_to(cr, f->x0 + minor, y);
            }
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_stroke(cr);
}

/* Step 7. Axis labels, centred on the plot area, and the title. */
static void draw_labels(cairo_t *cr, const fr_plot *p, const frame *f, const sizes *sz, double H)
{
    const double fs = sz->fs, gap = sz->gap;
    font(cr, fs, 0);
    if (p->xlabel)
        text_at(cr, p->xlabel, 0.5 * (f->x0 + f->x1), H - gap - 0.25 * fs, 0.5, 0, fs);
    if (p->ylabel) {
        cairo_save(cr);
        cairo_translate(cr, gap + 0.8 * fs, 0.5 * (f->y0 + f->y1));
        cairo_rotate(cr, -M_PI / 2);
        text_at(cr, p->ylabel, 0, 0, 0.5, 0, fs);
        cairo_restore(cr);
    }
    if (p->title) {
        font(cr, fs + 1, 1);
        text_at(cr, p->title, 0.5 * (f->x0 + f->x1), gap + 0.72 * (fs + 1), 0.5, 0, fs + 1);
        font(cr, fs, 0);
    }
}

/* Step 8. The legend where step 2 placed it: a boxed column, or the rows
 * of the band above the plot, flowed as step 2 counted them. */
static void draw_legend(cairo_t *cr, const fr_plot *p, const frame *f, const sizes *sz,
                        const legend *lg)
{
    const double fs = sz->fs, sample = sz->sample, row = sz->row, pad = sz->pad;
    if (lg->n_entries && lg->inside) {
        const rect *L = &lg->box;
        cairo_rectangle(cr, L->x0, L->y0, L->x1 - L->x0, L->y1 - L->y0);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
        cairo_set_line_width(cr, 0.4);
        cairo_stroke(cr);
        size_t e = 0;
        for (size_t s = 0; s < p->n_series; s++)
            if (p->series[s].label)
                draw_legend_entry(cr, &p->series[s], L->x0 + pad,
                                  L->y0 + pad + (double)e++ * row + 0.5 * fs, sample,
                                  sz->marker_r, fs);
    } else if (lg->n_entries) {
        double x = 0, avail = f->x1 - f->x0;
        size_t r = 0;
        double top = f->y0 - lg->band_rows * row - 0.2 * fs;
        for (size_t s = 0; s < p->n_series; s++) {
            if (!p->series[s].label)
                continue;
            font(cr, fs, 0);
            double w = sample + 0.4 * fs + text_width(cr, p->series[s].label) + fs;
            if (x > 0 && x + w - fs > avail) {
                r++;
                x = 0;
            }
            draw_legend_entry(cr, &p->series[s], f->x0 + x, top + (double)r * row + 0.5 * fs,
                              sample, sz->marker_r, fs);
            x += w;
        }
    }
}

static fr_status render(cairo_t *cr, const fr_plot *p, double W, double H)
{
    const double fs = p->font_pt > 0 ? p->font_pt : 8.0;
    const sizes sz = {fs, 0.3 * fs, 0.4 * fs, 1.8 * fs, 1.2 * fs, 0.35 * fs, 0.4 * fs};
    fr_status st = FR_OK;
    obstacles obs = {NULL, 0, 0};
    axes ax;
    legend lg;

    set_axes(cr, p, &sz, W, H, &ax);
    /* the labels must avoid what is drawn where the frame finally is */
    if (!place_legend(cr, p, &sz, &ax.f, &obs, &lg) ||
        !collect_obstacles(p, &ax.f, sz.marker_r, &obs)) {
        st = FR_E_NOMEM;
        goto done;
    }
    draw_grid(cr, &ax);
    draw_data(cr, p, &ax.f, sz.marker_r);
    if ((lg.inside && !obstacle_add(&obs, lg.box)) ||
        !draw_point_labels(cr, p, &ax.f, &sz, &obs)) {
        st = FR_E_NOMEM;
        goto done;
    }
    draw_frame(cr, p, &ax, &sz);
    draw_labels(cr, p, &ax.f, &sz, H);
    draw_legend(cr, p, &ax.f, &sz, &lg);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        st = FR_E_OUTPUT;
done:
    free(obs.boxes);
    return st;
}

static fr_status render_to(const fr_plot *p, fr_plot_format format, const char *path,
                           fr_error *err);

/* Renders into "<path>.tmp-<pid>" and renames it over path once cairo has
 * finished without error: a full disk never leaves a truncated figure. */
fr_status fr_plot_render(const fr_plot *p, fr_plot_format format, const char *path,
                         fr_error *err)
{
    char ebuf[128];
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return fr_fail(err, FR_E_NOMEM, "out of memory drawing '%s'", path);
    snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
    fr_status st = render_to(p, format, tmp, err);
    if (st == FR_OK && rename(tmp, path) != 0)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
    if (st != FR_OK) {
        unlink(tmp);
        /* messages name the file the user asked for */
        if (err) {
            char *at = strstr(err->msg, tmp);
            if (at) {
                size_t tl = strlen(tmp), pl = strlen(path);
                memmove(at + pl, at + tl, strlen(at + tl) + 1);
                memcpy(at, path, pl);
            }
        }
    }
    free(tmp);
    return st;
}

static fr_status render_to(const fr_plot *p, fr_plot_format format, const char *path,
                           fr_error *err)
{
    char ebuf[128];
    double w_in = p->width_in > 0 ? p->width_in : 3.4, h_in = p->height_in > 0 ? p->height_in : 2.55;
    double W = 72 * w_in, H = 72 * h_in;
    int dpi = p->dpi > 0 ? p->dpi : 300;
    cairo_surface_t *surface = NULL;
    /* cairo reports a file it cannot create only when it finishes; check first */
    FILE *probe = fopen(path, "wb");
    if (!probe)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    fclose(probe);
    switch (format) {
    case FR_PLOT_SVG:
        surface = cairo_svg_surface_create(path, W, H);
        break;
    case FR_PLOT_PDF:
        surface = cairo_pdf_surface_create(path, W, H);
        break;
    case FR_PLOT_PNG:
        surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)lround(w_in * dpi),
                                             (int)lround(h_in * dpi));
        break;
    }
    if (!surface || cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        fr_status st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                               surface ? cairo_status_to_string(cairo_surface_status(surface))
                                       : "no surface");
        if (surface)
            cairo_surface_destroy(surface);
        return st;
    }
    cairo_t *cr = cairo_create(surface);
    if (format == FR_PLOT_PNG)
        cairo_scale(cr, dpi / 72.0, dpi / 72.0);
    fr_status st = render(cr, p, W, H);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    if (st == FR_OK && format == FR_PLOT_PNG)
        cs = cairo_surface_write_to_png(surface, path);
    cairo_surface_finish(surface);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (st == FR_E_NOMEM)
        return fr_fail(err, FR_E_NOMEM, "out of memory drawing '%s'", path);
    if (st != FR_OK || cs != CAIRO_STATUS_SUCCESS)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       cairo_status_to_string(cs));
    return FR_OK;
}

#endif
