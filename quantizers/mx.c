/*
 * OCP Microscaling Formats (MX) v1.0: blocks of 32 along a row share an
 * E8M0 power-of-two scale; elements are FP8 (E4M3, E5M2), FP6 (E3M2, E2M3),
 * FP4 (E2M1) or INT8 (k/64). docs/formats.md has the exact rules.
 */
#include "builtin.h"
#include "common.h"
#include "mx_block.h"


/* emax_elem: exponent of the largest normal binade (OCP MX v1.0, table 1). */
#define MX_CFG(name, elemjson, is_int8, elem, emax, bits)                                     \
    {name, (bits),                                                                            \
     "{\"element\":\"" elemjson "\",\"block_size\":32,\"scale_dtype\":\"e8m0\"}",             \
     (&(const fr_mx_params){is_int8, elem, emax, bits})}

#define NO_ELEM {0, 0, 0.0f}

static const frontier_config mx_configs[] = {
    MX_CFG("mxfp8-e4m3", "e4m3", 0, FR_FMT_E4M3_INIT, 8, 8),
    MX_CFG("mxfp8-e5m2", "e5m2", 0, FR_FMT_E5M2_INIT, 15, 8),
    MX_CFG("mxfp6-e3m2", "e3m2", 0, FR_FMT_E3M2_INIT, 4, 6),
    MX_CFG("mxfp6-e2m3", "e2m3", 0, FR_FMT_E2M3_INIT, 2, 6),
    MX_CFG("mxfp4", "e2m1", 0, FR_FMT_E2M1_INIT, 2, 4),
    MX_CFG("mxint8", "int8", 1, NO_ELEM, 0, 8),
};

static const frontier_quantizer mx_quantizer;

typedef struct mx_job {
    const fr_mx_params *p;
    const float *w;
    float *w_hat;
    int64_t cols, blocks_per_row;
    fr_q_bad bad;
} mx_job;

static void mx_blocks_range(void *arg, int64_t begin, int64_t end)
{
    mx_job *job = arg;
    const fr_mx_params *p = job->p;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->blocks_per_row;
        int64_t start = (u % job->blocks_per_row) * FR_MX_BLOCK;
        int64_t n = job->cols - start < FR_MX_BLOCK ? job->cols - start : FR_MX_BLOCK;
        int64_t offset = row * job->cols + start;
        const float *x = job->w + offset;
        float *x_hat = job->w_hat + offset;
        float amax = 0.0f;
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            if (fr_q_nonfinite(x[i])) {
                fr_q_bad_note(&job->bad, offset + i);
                bad = 1;
                continue;
            }
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        float scale = fr_mx_block_scale(amax, p->emax_elem);
        for (int64_t i = 0; i < n; i++)
            x_hat[i] = bad ? 0.0f : fr_mx_dequant(x[i], scale, p->is_int8, p->elem);
    }
}

static int mx_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                           int64_t rows, int64_t cols, const frontier_calib *calib,
                           frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&mx_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    mx_job job = {.p = cfg->impl, .w = w, .w_hat = w_hat, .cols = cols};
    fr_q_bad_init(&job.bad);
    job.blocks_per_row = fr_q_ceil_div(cols, FR_MX_BLOCK);
    fr_q_parallel_for(call, rows * job.blocks_per_row, fr_q_grain(FR_MX_BLOCK), mx_blocks_range,
                      &job);
    return fr_q_bad_report(&job.bad, cols, call);
}

static int mx_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                        uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&mx_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_mx_params *p = cfg->impl;
    /* element codes plus one 8-bit E8M0 scale per block of 32 in each row */
    return fr_q_size_bits(call, rows, cols, (uint64_t)p->elem_bits, 1, FR_MX_BLOCK, 8, 0,
                          total_bits, NULL);
}

/* Row blocks: blocks of 32 in a row, nothing tensor-wide. Storage:
 * compressed-tensors' MXFP4 scheme (E2M1 with a uint8 E8M0 scale) only;
 * mxfp6, mxfp8 and mxint8 have no compressed-tensors format. */
static int mx_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                            frontier_call *call)
{
    (void)call;
    const fr_mx_params *p = cfg->impl;
    t->row_multiple = 1;
    if (!p->is_int8 && p->elem_bits == 4 && p->elem.max == 6.0f)
        t->storage = FRONTIER_STORAGE_MXFP4;
    return FRONTIER_OK;
}

static const frontier_quantizer mx_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "mx",
    .description = "OCP Microscaling v1.0: mxfp8, mxfp6, mxfp4, mxint8 (blocks of 32, E8M0 scale)",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/mx.cu, attached when registered */
    .n_configs = sizeof mx_configs / sizeof mx_configs[0],
    .configs = mx_configs,
    .size_bits = mx_size_bits,
    .quantize_cpu = mx_quantize_cpu,
    .config_traits = mx_config_traits,
};

/* OCP MXFP4 is GGML's MXFP4 block (32 E2M1 elements, one E8M0 scale). */
const fr_ggml_type fr_mx_ggml_types[] = {{"mxfp4", "mxfp4"}, {NULL, NULL}};

const frontier_quantizer *fr_mx_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &mx_quantizer : NULL;
}
