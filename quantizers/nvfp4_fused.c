/*
 * `nvfp4-fused`: NVFP4 with the global scale of the tensor's fused group
 * (q/k/v, gate/up, w1/w3, q_a/kv_a; vLLM loads them as one matrix with one
 * global scale): gs = 448 * 6 / amax_joint, amax_joint the largest |w| over
 * every member of the group. Group scales and codes are then nvfp4's
 * (the same function, fr_nvfp4_qdq). What `frontier quantize` writes for
 * NVFP4 members of a fused group, measured by `frontier sweep
 * --fused-global-scale` (docs/quantize.md, "The fused-scale rule").
 *
 * The joint amax spans other tensors, so no call on one tensor can compute
 * it: its traits ask the host for it (needs_group_amax), and the host (the
 * sweep's plan, quantize's plan) hands it in the call, read through the
 * host service group_amax. Without it the call fails. A host family: no
 * kernels (a CUDA sweep hands it to the CPU executor).
 */
#include "builtin.h"
#include "common.h"
#include "nvfp4_group.h"

static const frontier_config nvfp4_fused_configs[] = {
    {"nvfp4-fused", 4,
     "{\"element\":\"e2m1\",\"group_size\":16,\"scale_dtype\":\"e4m3\","
     "\"global_scale_dtype\":\"fp32\",\"global_scale\":\"fused-group\"}",
     NULL},
};

static const frontier_quantizer nvfp4_fused_quantizer;

static int nvfp4_fused_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                    int64_t rows, int64_t cols, const frontier_calib *calib,
                                    frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&nvfp4_fused_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    float amax;
    const frontier_host_api *host = fr_q_host();
    if (!host || !host->group_amax || !host->group_amax(call, &amax))
        return fr_q_fail(call, FRONTIER_ERR_INVALID,
                         "needs the joint amax of the tensor's fused group (q/k/v, gate/up, "
                         "w1/w3, q_a/kv_a with two or more members), which 'frontier sweep "
                         "--fused-global-scale' and 'frontier quantize' hand it");
    return fr_nvfp4_qdq(w, w_hat, rows, cols, &amax, call);
}

static int nvfp4_fused_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                                 uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&nvfp4_fused_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    /* nvfp4's: each member still stores its (shared) fp32 global scale */
    return fr_q_size_bits(call, rows, cols, 4, 1, FR_NVFP4_GROUP, 8, 32, total_bits, NULL);
}

/* The joint amax of the fused group, measured next to nvfp4 by
 * --fused-global-scale; stored as nvfp4-pack-quantized (the writer takes
 * the global scale from the same joint amax). Row blocks are not declared:
 * the blocked path does not hand the joint amax to blocks. */
static int nvfp4_fused_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                                     frontier_call *call)
{
    (void)cfg;
    (void)call;
    t->needs_group_amax = 1;
    t->fused_companion_of = "nvfp4";
    t->storage = FRONTIER_STORAGE_NVFP4;
    return FRONTIER_OK;
}

static const frontier_quantizer nvfp4_fused_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "nvfp4_fused",
    .description = "NVFP4 with the fused group's (q/k/v, gate/up) joint-amax global scale "
                   "(frontier sweep --fused-global-scale)",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC,
    .n_configs = sizeof nvfp4_fused_configs / sizeof nvfp4_fused_configs[0],
    .configs = nvfp4_fused_configs,
    .size_bits = nvfp4_fused_size_bits,
    .quantize_cpu = nvfp4_fused_quantize_cpu,
    .config_traits = nvfp4_fused_config_traits,
};

const frontier_quantizer *fr_nvfp4_fused_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &nvfp4_fused_quantizer : NULL;
}
