#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Redraw period on a terminal, and line period otherwise (seconds). */
#define FR_PROGRESS_TTY_PERIOD 0.1
#define FR_PROGRESS_LOG_PERIOD 5.0
#define FR_PROGRESS_BAR_WIDTH 24

struct fr_progress {
    char what[32];
    uint64_t total_items, total_bytes;
    uint64_t items, bytes;
    double start, last_draw;
    int tty;
    int drawn; /* a bar is on the current terminal line */
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fr_format_duration(double seconds, char *buf, unsigned len)
{
    if (!(seconds >= 0) || seconds > 3.6e7) {
        snprintf(buf, len, "?");
        return;
    }
    long s = lround(seconds);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else if (s >= 60)
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
    else
        snprintf(buf, len, "%lds", s);
}

fr_progress *fr_progress_start(const char *what, uint64_t total_items, uint64_t total_bytes,
                               int quiet)
{
    if (quiet)
        return NULL;
    fr_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->what, sizeof p->what, "%s", what ? what : "items");
    p->total_items = total_items;
    p->total_bytes = total_bytes;
    p->tty = isatty(STDERR_FILENO);
    p->start = p->last_draw = now_seconds();
    return p;
}

static void draw(fr_progress *p, double now, int final)
{
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)p->bytes / elapsed : 0; /* bytes/s */
    char eta[32] = "?", took[32];
    if (rate > 0 && p->total_bytes >= p->bytes)
        fr_format_duration((double)(p->total_bytes - p->bytes) / rate, eta, sizeof eta);
    fr_format_duration(elapsed, took, sizeof took);
    double frac = p->total_items ? (double)p->items / (double)p->total_items : 1.0;
    if (p->total_bytes)
        frac = (double)p->bytes / (double)p->total_bytes;
    if (frac > 1)
        frac = 1;
    if (p->tty) {
        char bar[FR_PROGRESS_BAR_WIDTH + 1];
        int filled = (int)(frac * FR_PROGRESS_BAR_WIDTH);
        for (int i = 0; i < FR_PROGRESS_BAR_WIDTH; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[FR_PROGRESS_BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %llu/%llu %s  %.2f GB/s  %s %s\033[K", bar,
                (unsigned long long)p->items, (unsigned long long)p->total_items, p->what,
                rate / 1e9, final ? "took" : "eta", final ? took : eta);
        if (final)
            fputc('\n', stderr);
        p->drawn = !final;
    } else {
        fprintf(stderr, "frontier: %llu/%llu %s (%.0f%%), %.2f GB/s, %s %s\n",
                (unsigned long long)p->items, (unsigned long long)p->total_items, p->what,
                100.0 * frac, rate / 1e9, final ? "took" : "eta", final ? took : eta);
    }
    fflush(stderr);
    p->last_draw = now;
}

void fr_progress_update(fr_progress *p, uint64_t items_done, uint64_t bytes_done)
{
    if (!p)
        return;
    p->items = items_done;
    p->bytes = bytes_done;
    double now = now_seconds();
    double period = p->tty ? FR_PROGRESS_TTY_PERIOD : FR_PROGRESS_LOG_PERIOD;
    if (now - p->last_draw >= period)
        draw(p, now, 0);
}

void fr_progress_clear(fr_progress *p)
{
    if (p && p->tty && p->drawn) {
        fputs("\r\033[K", stderr);
        p->drawn = 0;
    }
}

void fr_progress_finish(fr_progress *p)
{
    if (!p)
        return;
    /* a plain log gets a final line only when the run was long enough to
     * have shown progress at all */
    double now = now_seconds();
    if (p->tty || now - p->start >= FR_PROGRESS_LOG_PERIOD)
        draw(p, now, 1);
    free(p);
}
