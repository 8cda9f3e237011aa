/*
 * Small helpers of the quantizer tests (checks: tests/check.h): the built-in
 * descriptors looked up by configuration name in the registry (the calls
 * below go to the descriptor's functions directly, not through the
 * registry's checked calls, which are tested on their own), seeded gaussian
 * data, and one quantize call with the real host services of core/call.h.
 */
#ifndef FR_QTEST_H
#define FR_QTEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"

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

/* The registry of the built-ins, registered on first use and kept until
 * exit; a built-in the registry refuses ends the test. */
static inline const fr_registry *qt_registry(void)
{
    static fr_registry reg;
    static int ready;
    if (!ready) {
        fr_error err = {0};
        if (fr_registry_init(&reg, &err) != FR_OK) {
            fprintf(stderr, "cannot register the built-in quantizers: %s\n", err.msg);
            exit(1);
        }
        ready = 1;
    }
    return &reg;
}

/* Finds a built-in configuration by its canonical name. */
static inline int qt_find(const char *name, const frontier_quantizer **q,
                          const frontier_config **cfg)
{
    const fr_registry *reg = qt_registry();
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    if (!ref)
        return 0;
    *q = fr_config_quantizer(reg, ref);
    *cfg = ref->cfg;
    return 1;
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

/* n standard gaussian floats times sigma (Box-Muller in double). */
static inline void qt_gaussian(float *x, int64_t n, uint64_t seed, double sigma)
{
    uint64_t state = seed;
    for (int64_t i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(fr_test_uniform_open(&state)));
        double t = 6.283185307179586 * fr_test_uniform_open(&state);
        x[i] = (float)(sigma * r * cos(t));
        if (i + 1 < n)
            x[i + 1] = (float)(sigma * r * sin(t));
    }
}

#endif
