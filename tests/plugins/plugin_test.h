/*
 * What the plugin tests share: the check macros and their failure count,
 * and running one configuration the way the sweep does (size, then
 * quantize, through the registry's checked calls and a host call context).
 */
#ifndef FR_PLUGIN_TEST_H
#define FR_PLUGIN_TEST_H

#include <stdio.h>
#include <string.h>

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"

/* unused in plugin_driver, which is a host, not a test */
static int pt_failures __attribute__((unused));

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            pt_failures++;                                                         \
        }                                                                          \
    } while (0)

/* Messages are compared whole: they are part of the interface. */
static inline void pt_check_msg(const char *file, int line, const char *got, const char *expected)
{
    if (strcmp(got, expected) != 0) {
        fprintf(stderr, "%s:%d: message\n  got:      %s\n  expected: %s\n", file, line, got,
                expected);
        pt_failures++;
    }
}
#define CHECK_MSG(got, expected) pt_check_msg(__FILE__, __LINE__, (got), (expected))

/* The exit code of a test: 1 after reporting the count when a check failed. */
static inline int pt_exit_code(const char *test)
{
    if (pt_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", test, pt_failures);
        return 1;
    }
    return 0;
}

/* One configuration on one tensor as the sweep runs it: its size, then
 * quantize-dequantize on the CPU, with seed and tensor in the call context. */
static inline fr_status pt_run_config(const fr_registry *reg, const fr_config_ref *ref,
                                      fr_pool *pool, uint64_t seed, const char *tensor,
                                      const float *w, float *w_hat, int64_t rows, int64_t cols,
                                      uint64_t *total_bits, fr_error *err)
{
    frontier_call call;
    fr_call_init(&call, pool, seed, tensor, ref->cfg->name);
    fr_status st = fr_quantizer_size_bits(reg, ref, rows, cols, tensor, &call, total_bits, err);
    if (st == FR_OK)
        st = fr_quantizer_quantize_cpu(reg, ref, w, w_hat, rows, cols, NULL, tensor, &call, err);
    fr_call_release(&call);
    return st;
}

#endif
