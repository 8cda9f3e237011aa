/*
 * FP8 (OCP OFP8 E4M3FN / E5M2) with fp32 scales per tensor, per row
 * (channel), or per 128 x 128 tile of the matrix view (the DeepSeek-V3
 * block-wise layout). docs/formats.md has the exact rules.
 */
#include "builtin.h"
#include "common.h"
#include "fp8_group.h"


#define FP8_CFG(elem, ename, gran, gname)                                                     \
    {"fp8-" ename "-" gname, 8,                                                               \
     "{\"element\":\"" ename "\",\"granularity\":\"" gname "\",\"scale_dtype\":\"fp32\"}",    \
     (&(const fr_fp8_params){elem, gran})}

static const frontier_config fp8_configs[] = {
    FP8_CFG(FR_FMT_E4M3_INIT, "e4m3", FR_FP8_TENSOR, "tensor"),
    FP8_CFG(FR_FMT_E4M3_INIT, "e4m3", FR_FP8_CHANNEL, "channel"),
    FP8_CFG(FR_FMT_E4M3_INIT, "e4m3", FR_FP8_BLOCK128, "block128"),
    FP8_CFG(FR_FMT_E5M2_INIT, "e5m2", FR_FP8_TENSOR, "tensor"),
    FP8_CFG(FR_FMT_E5M2_INIT, "e5m2", FR_FP8_CHANNEL, "channel"),
    FP8_CFG(FR_FMT_E5M2_INIT, "e5m2", FR_FP8_BLOCK128, "block128"),
};

static const frontier_quantizer fp8_quantizer;

typedef struct fp8_job {
    const fr_fp8_params *p;
    const float *w;
    float *w_hat;
    int64_t rows, cols, tiles_per_row;
    float tensor_scale;
    fr_q_bad bad;
} fp8_job;

static void fp8_tensor_range(void *arg, int64_t begin, int64_t end)
{
    fp8_job *job = arg;
    for (int64_t i = begin; i < end; i++)
        job->w_hat[i] = fr_fp8_dequant(job->w[i], job->tensor_scale, job->p->elem);
}

/* One tile of rows [r0, r1) x cols [c0, c1): amax, then the elements. */
static void fp8_tile(fp8_job *job, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    float amax = 0.0f;
    int bad = 0;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = job->w + r * job->cols;
        for (int64_t c = c0; c < c1; c++) {
            if (fr_q_nonfinite(x[c])) {
                fr_q_bad_note(&job->bad, r * job->cols + c);
                bad = 1;
                continue;
            }
            float a = fabsf(x[c]);
            amax = a > amax ? a : amax;
        }
    }
    float s = bad ? 0.0f : fr_fp8_scale(amax, job->p->elem.max);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = job->w + r * job->cols;
        float *x_hat = job->w_hat + r * job->cols;
        for (int64_t c = c0; c < c1; c++)
            x_hat[c] = fr_fp8_dequant(x[c], s, job->p->elem);
    }
}

static void fp8_rows_range(void *arg, int64_t begin, int64_t end)
{
    fp8_job *job = arg;
    for (int64_t r = begin; r < end; r++)
        fp8_tile(job, r, r + 1, 0, job->cols);
}

static void fp8_tiles_range(void *arg, int64_t begin, int64_t end)
{
    fp8_job *job = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t r0 = t / job->tiles_per_row * FR_FP8_TILE;
        int64_t c0 = t % job->tiles_per_row * FR_FP8_TILE;
        int64_t r1 = r0 + FR_FP8_TILE < job->rows ? r0 + FR_FP8_TILE : job->rows;
        int64_t c1 = c0 + FR_FP8_TILE < job->cols ? c0 + FR_FP8_TILE : job->cols;
        fp8_tile(job, r0, r1, c0, c1);
    }
}

static int fp8_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                            int64_t rows, int64_t cols, const frontier_calib *calib,
                            frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&fp8_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    fp8_job job = {.p = cfg->impl, .w = w, .w_hat = w_hat, .rows = rows, .cols = cols};
    fr_q_bad_init(&job.bad);
    switch (job.p->granularity) {
    case FR_FP8_TENSOR: {
        float lo, hi;
        rc = fr_q_tensor_range(call, w, rows * cols, cols, &lo, &hi);
        if (rc != FRONTIER_OK)
            return rc;
        float amax = -lo > hi ? -lo : hi;
        job.tensor_scale = fr_fp8_scale(amax, job.p->elem.max);
        fr_q_parallel_for(call, rows * cols, FR_Q_CHUNK_ELEMS, fp8_tensor_range, &job);
        return FRONTIER_OK;
    }
    case FR_FP8_CHANNEL:
        fr_q_parallel_for(call, rows, fr_q_grain(cols), fp8_rows_range, &job);
        break;
    default:
        job.tiles_per_row = fr_q_ceil_div(cols, FR_FP8_TILE);
        fr_q_parallel_for(call, fr_q_ceil_div(rows, FR_FP8_TILE) * job.tiles_per_row,
                          fr_q_grain((int64_t)FR_FP8_TILE * FR_FP8_TILE), fp8_tiles_range, &job);
        break;
    }
    return fr_q_bad_report(&job.bad, cols, call);
}

static int fp8_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&fp8_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_fp8_params *p = cfg->impl;
    switch (p->granularity) {
    case FR_FP8_TENSOR:
        return fr_q_size_bits(call, rows, cols, 8, 0, 0, 0, 32, total_bits, NULL);
    case FR_FP8_CHANNEL:
        return fr_q_size_bits(call, rows, cols, 8, 1, cols, 32, 0, total_bits, NULL);
    default:
        return fr_q_size_bits(call, rows, cols, 8, FR_FP8_TILE, FR_FP8_TILE, 32, 0, total_bits,
                              NULL);
    }
}

/* Row blocks: a channel scale is row-local, a 128 x 128 tile needs blocks
 * of whole tiles, the tensor scale the tensor's amax. Storage:
 * float-quantized, which is E4M3 only. */
static int fp8_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    (void)call;
    const fr_fp8_params *p = cfg->impl;
    switch (p->granularity) {
    case FR_FP8_CHANNEL: t->row_multiple = 1; break;
    case FR_FP8_BLOCK128: t->row_multiple = FR_FP8_TILE; break;
    default: t->row_multiple = 1, t->needs_range = 1; break;
    }
    if (p->elem.max == 448.0f) {
        t->storage = FRONTIER_STORAGE_FP8;
        t->storage_fp8_scope = p->granularity == FR_FP8_CHANNEL    ? FRONTIER_FP8_CHANNEL
                               : p->granularity == FR_FP8_BLOCK128 ? FRONTIER_FP8_BLOCK128
                                                                   : FRONTIER_FP8_TENSOR;
    }
    return FRONTIER_OK;
}

static const frontier_quantizer fp8_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "fp8",
    .description = "FP8 E4M3FN / E5M2 with an fp32 scale per tensor, row or 128x128 tile",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/fp8.cu, attached when registered */
    .n_configs = sizeof fp8_configs / sizeof fp8_configs[0],
    .configs = fp8_configs,
    .size_bits = fp8_size_bits,
    .quantize_cpu = fp8_quantize_cpu,
    .config_traits = fp8_config_traits,
};

const frontier_quantizer *fr_fp8_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &fp8_quantizer : NULL;
}
