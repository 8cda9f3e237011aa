/*
 * int<b>-g32 with power-of-two scales: the worked example of
 * docs/adding-a-quantizer.md (the test family.add_example builds it into a
 * copy of the tree). Data-free; b-bit codes and an 8-bit exponent per group
 * of 32 consecutive elements of a row.
 */
#include "builtin.h"
#include "common.h"
#include "pow2_group.h"

#define POW2_CFG(b)                                                                           \
    {"pow2-int" #b "-g32", b,                                                                 \
     "{\"bits\":" #b ",\"group_size\":32,\"scale_dtype\":\"e8m0\",\"symmetric\":true}",       \
     (&(const fr_pow2_params){b})}

static const frontier_config pow2_configs[] = {POW2_CFG(3), POW2_CFG(4), POW2_CFG(8)};

static const frontier_quantizer pow2_quantizer;

typedef struct pow2_job {
    const float *w;
    float *w_hat;
    int64_t cols, groups_per_row;
    float qmax;
    fr_q_bad bad;
} pow2_job;

static void pow2_groups_range(void *arg, int64_t begin, int64_t end)
{
    pow2_job *job = arg;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->groups_per_row;
        int64_t start = (u % job->groups_per_row) * FR_POW2_GROUP;
        int64_t n = job->cols - start < FR_POW2_GROUP ? job->cols - start : FR_POW2_GROUP;
        const float *x = job->w + row * job->cols + start;
        float *x_hat = job->w_hat + row * job->cols + start;
        float amax = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            if (fr_q_nonfinite(x[i]))
                fr_q_bad_note(&job->bad, row * job->cols + start + i);
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        int e = fr_pow2_scale_exp(amax, job->qmax);
        float s = fr_pow2f(e), inv_s = fr_pow2f(-e);
        for (int64_t i = 0; i < n; i++)
            x_hat[i] = fr_pow2_dequant(x[i], s, inv_s, job->qmax);
    }
}

static int pow2_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&pow2_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_pow2_params *p = cfg->impl;
    pow2_job job = {.w = w, .w_hat = w_hat, .cols = cols, .qmax = fr_pow2_qmax(p->bits)};
    job.groups_per_row = fr_q_ceil_div(cols, FR_POW2_GROUP);
    fr_q_bad_init(&job.bad);
    fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(FR_POW2_GROUP),
                      pow2_groups_range, &job);
    return fr_q_bad_report(&job.bad, cols, call);
}

static int pow2_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&pow2_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_pow2_params *p = cfg->impl;
    /* b-bit codes, an 8-bit exponent per group of 32 in each row */
    return fr_q_size_bits(call, rows, cols, (uint64_t)p->bits, 1, FR_POW2_GROUP, 8, 0,
                          total_bits, NULL);
}

/* The scales of w, one per group of 32 in each row ([rows][groups]): what
 * the checkpoint writer stores, the codes being clamp(rint(x / s)) as
 * above. An all-zero group takes 0 (any scale gives it codes 0), which
 * every scale dtype holds. */
static int pow2_storage_scales(const frontier_config *cfg, const float *w, int64_t rows,
                               int64_t cols, float *scales, float *zero_points,
                               frontier_call *call)
{
    (void)zero_points;
    (void)call;
    const fr_pow2_params *p = cfg->impl;
    const float qmax = fr_pow2_qmax(p->bits);
    const int64_t groups = fr_q_ceil_div(cols, FR_POW2_GROUP);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + r * cols + g * FR_POW2_GROUP;
            int64_t n = cols - g * FR_POW2_GROUP < FR_POW2_GROUP ? cols - g * FR_POW2_GROUP
                                                                  : FR_POW2_GROUP;
            float amax = 0.0f;
            for (int64_t i = 0; i < n; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            scales[r * groups + g] = amax > 0.0f ? fr_pow2f(fr_pow2_scale_exp(amax, qmax)) : 0.0f;
        }
    return FRONTIER_OK;
}

/* What the host may know of a configuration (frontier_config_traits in
 * include/frontier/plugin.h): groups of 32 in a row and nothing
 * tensor-wide, so `frontier sweep --max-memory` runs it in blocks of any
 * rows; a checkpoint stores it as compressed-tensors pack-quantized
 * (symmetric b-bit codes, one scale per 32), the scales being its own. */
static int pow2_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                              frontier_call *call)
{
    (void)call;
    const fr_pow2_params *p = cfg->impl;
    t->row_multiple = 1;
    t->storage = FRONTIER_STORAGE_INT_PACK;
    t->storage_bits = p->bits;
    t->storage_group_size = FR_POW2_GROUP;
    t->storage_symmetric = 1;
    t->storage_scales = pow2_storage_scales;
    return FRONTIER_OK;
}

static const frontier_quantizer pow2_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "pow2",
    .description = "symmetric integers with a power-of-two (E8M0) scale per 32",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/pow2.cu, attached when registered */
    .n_configs = sizeof pow2_configs / sizeof pow2_configs[0],
    .configs = pow2_configs,
    .size_bits = pow2_size_bits,
    .quantize_cpu = pow2_quantize_cpu,
    .config_traits = pow2_config_traits,
};

const frontier_quantizer *fr_pow2_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &pow2_quantizer : NULL;
}
