/*
 * What the plugin tests share: the checks of tests/check.h, and running
 * one configuration the way the sweep does (size, then quantize, through
 * the registry's checked calls and a host call context).
 */
#ifndef FR_PLUGIN_TEST_H
#define FR_PLUGIN_TEST_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"

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
