/*
 * NVFP4 (NVIDIA Blackwell; compressed-tensors `nvfp4-pack-quantized`): E2M1
 * elements, one E4M3 scale per 16 elements of a row, one fp32 global scale.
 * docs/formats.md has the exact rules.
 */
#include "builtin.h"
#include "common.h"
#include "nvfp4_group.h"


static const frontier_config nvfp4_configs[] = {
    {"nvfp4", 4,
     "{\"element\":\"e2m1\",\"group_size\":16,\"scale_dtype\":\"e4m3\","
     "\"global_scale_dtype\":\"fp32\"}",
     NULL},
};

static const frontier_quantizer nvfp4_quantizer;

typedef struct nvfp4_job {
    const float *w;
    float *w_hat;
    int64_t cols, groups_per_row;
    float global_scale;
} nvfp4_job;

static void nvfp4_groups_range(void *arg, int64_t begin, int64_t end)
{
    nvfp4_job *job = arg;
    const float gs = job->global_scale;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->groups_per_row;
        int64_t start = (u % job->groups_per_row) * FR_NVFP4_GROUP;
        int64_t n = job->cols - start < FR_NVFP4_GROUP ? job->cols - start : FR_NVFP4_GROUP;
        const float *x = job->w + row * job->cols + start;
        float *x_hat = job->w_hat + row * job->cols + start;
        float amax = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        float s = fr_nvfp4_group_scale(amax, gs);
        for (int64_t i = 0; i < n; i++)
            x_hat[i] = fr_nvfp4_dequant(x[i], s, gs);
    }
}

int fr_nvfp4_qdq(const float *w, float *w_hat, int64_t rows, int64_t cols,
                 const float *joint_amax, frontier_call *call)
{
    float lo, hi;
    /* the global scale needs the tensor's amax first; this pass also
     * rejects non-finite weights, so the group pass can trust its input */
    int rc = fr_q_tensor_range(call, w, rows * cols, cols, &lo, &hi);
    if (rc != FRONTIER_OK)
        return rc;
    float amax = -lo > hi ? -lo : hi;
    if (joint_amax) {
        /* the group's amax is over this tensor too: never below its own */
        if (!(*joint_amax >= amax) || !isfinite(*joint_amax))
            return fr_q_fail(call, FRONTIER_ERR_INVALID,
                             "the fused group's joint amax %.9g is not at least the tensor's "
                             "own %.9g",
                             (double)*joint_amax, (double)amax);
        amax = *joint_amax;
    }
    nvfp4_job job = {.w = w, .w_hat = w_hat, .cols = cols};
    job.global_scale = fr_nvfp4_global_scale(amax);
    job.groups_per_row = fr_q_ceil_div(cols, FR_NVFP4_GROUP);
    fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(FR_NVFP4_GROUP),
                      nvfp4_groups_range, &job);
    return FRONTIER_OK;
}

static int nvfp4_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                              int64_t rows, int64_t cols, const frontier_calib *calib,
                              frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&nvfp4_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    return fr_nvfp4_qdq(w, w_hat, rows, cols, NULL, call);
}

static int nvfp4_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                           uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&nvfp4_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    /* 4-bit codes, an 8-bit E4M3 scale per group of 16 in each row, one fp32 global scale */
    return fr_q_size_bits(call, rows, cols, 4, 1, FR_NVFP4_GROUP, 8, 32, total_bits, NULL);
}

/* Row blocks: groups of 16 in a row, the fp32 global scale from the
 * tensor's amax. Storage: nvfp4-pack-quantized. */
static int nvfp4_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                               frontier_call *call)
{
    (void)cfg;
    (void)call;
    t->row_multiple = 1;
    t->needs_range = 1;
    t->storage = FRONTIER_STORAGE_NVFP4;
    return FRONTIER_OK;
}

static const frontier_quantizer nvfp4_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "nvfp4",
    .description = "NVFP4: E2M1 elements, E4M3 scale per 16, fp32 global scale",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/nvfp4.cu, attached when registered */
    .n_configs = sizeof nvfp4_configs / sizeof nvfp4_configs[0],
    .configs = nvfp4_configs,
    .size_bits = nvfp4_size_bits,
    .quantize_cpu = nvfp4_quantize_cpu,
    .config_traits = nvfp4_config_traits,
};

const frontier_quantizer *fr_nvfp4_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &nvfp4_quantizer : NULL;
}
