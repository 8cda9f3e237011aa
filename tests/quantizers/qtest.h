/*
 * Small helpers of the quantizer tests: failure counting, the built-in
 * descriptors looked up by configuration name (without the registry, which
 * is tested on its own), seeded gaussian data, and one quantize call with
 * the real host services of core/call.h.
 */
#ifndef FR_QTEST_H
#define FR_QTEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/call.h"
#include "core/parallel.h"
#include "quantizers/builtin.h"

static int qt_failures;

#define QT_CHECK(cond, ...)                                                                   \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            if (++qt_failures <= 50) {                                                        \
                fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);      \
                fprintf(stderr, __VA_ARGS__);                                                 \
                fputc('\n', stderr);                                                          \
            }                                                                                 \
        }                                                                                     \
    } while (0)

static inline int qt_finish(const char *name)
{
    if (qt_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, qt_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* Bitwise equality, except that -0.0 and +0.0 are the same value. */
static inline int qt_same(float a, float b)
{
    return a == b || memcmp(&a, &b, sizeof a) == 0;
}

/* Bitwise equality including the sign of zero. */
static inline int qt_identical(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Finds a built-in configuration by its canonical name. */
static inline int qt_find(const char *name, const frontier_quantizer **q,
                          const frontier_config **cfg)
{
    for (size_t e = 0; e < fr_n_builtin_entries; e++) {
        const frontier_quantizer *d = fr_builtin_entries[e](fr_host_api());
        if (!d)
            continue;
        for (size_t c = 0; c < d->n_configs; c++)
            if (strcmp(d->configs[c].name, name) == 0) {
                *q = d;
                *cfg = &d->configs[c];
                return 1;
            }
    }
    return 0;
}

/* One quantize_cpu call; the error message (if any) is copied to msg. */
static inline int qt_quantize(const frontier_quantizer *q, const frontier_config *cfg,
                              const float *w, float *w_hat, int64_t rows, int64_t cols,
                              fr_pool *pool, char *msg, size_t msg_size)
{
    frontier_call call;
    fr_call_init(&call, pool, 42, "test", cfg->name);
    call.quantizer = q->name;
    int rc = q->quantize_cpu(cfg, w, w_hat, rows, cols, NULL, &call);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", call.error);
    fr_call_release(&call);
    return rc;
}

static inline int qt_size(const frontier_quantizer *q, const frontier_config *cfg, int64_t rows,
                          int64_t cols, uint64_t *bits, char *msg, size_t msg_size)
{
    frontier_call call;
    fr_call_init(&call, NULL, 42, "test", cfg->name);
    int rc = q->size_bits(cfg, rows, cols, bits, &call);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", call.error);
    fr_call_release(&call);
    return rc;
}

/* splitmix64 (Steele, Lea, Flood 2014) */
static inline uint64_t qt_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1) */
static inline double qt_uniform(uint64_t *state)
{
    return ((double)(qt_next(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* n standard gaussian floats times sigma (Box-Muller in double). */
static inline void qt_gaussian(float *x, int64_t n, uint64_t seed, double sigma)
{
    uint64_t state = seed;
    for (int64_t i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(qt_uniform(&state)));
        double t = 6.283185307179586 * qt_uniform(&state);
        x[i] = (float)(sigma * r * cos(t));
        if (i + 1 < n)
            x[i + 1] = (float)(sigma * r * sin(t));
    }
}

#endif
