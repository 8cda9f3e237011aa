/*
 * NormalFloat-4 (QLoRA, Dettmers et al. 2023; bitsandbytes nf4): blocks of
 * 64 along a row with an fp32 absmax, and the double-quantized form whose
 * block absmax values are stored as int8 around their mean in groups of 256
 * blocks. docs/formats.md has the exact rules.
 */
#include "builtin.h"
#include "common.h"
#include "nf4_block.h"


static const frontier_config nf4_configs[] = {
    {"nf4-g64", 4,
     "{\"element\":\"nf4\",\"block_size\":64,\"scale_dtype\":\"fp32\",\"double_quant\":false}",
     (&(const fr_nf4_params){0})},
    {"nf4-g64-dq", 4,
     "{\"element\":\"nf4\",\"block_size\":64,\"scale_dtype\":\"int8\","
     "\"double_quant\":true,\"dq_group_size\":256}",
     (&(const fr_nf4_params){1})},
};

static const frontier_quantizer nf4_quantizer;

typedef struct nf4_job {
    const float *w;
    float *w_hat;
    int64_t cols, blocks_per_row, n_blocks;
    float *absmax; /* -dq: per block, in row-major block order */
    float mean;    /* -dq: m */
    fr_q_bad bad;
} nf4_job;

static void nf4_block_extent(const nf4_job *job, int64_t block, int64_t *offset, int64_t *n)
{
    int64_t row = block / job->blocks_per_row;
    int64_t start = (block % job->blocks_per_row) * FR_NF4_BLOCK;
    *offset = row * job->cols + start;
    *n = job->cols - start < FR_NF4_BLOCK ? job->cols - start : FR_NF4_BLOCK;
}

/* absmax of one block; records non-finite weights */
static float nf4_block_absmax(nf4_job *job, int64_t offset, int64_t n)
{
    const float *x = job->w + offset;
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (fr_q_nonfinite(x[i])) {
            fr_q_bad_note(&job->bad, offset + i);
            continue;
        }
        float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    return amax;
}

static void nf4_apply(nf4_job *job, int64_t offset, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        job->w_hat[offset + i] = fr_nf4_dequant(job->w[offset + i], a);
}

static void nf4_blocks_range(void *arg, int64_t begin, int64_t end)
{
    nf4_job *job = arg;
    for (int64_t b = begin; b < end; b++) {
        int64_t offset, n;
        nf4_block_extent(job, b, &offset, &n);
        nf4_apply(job, offset, n, nf4_block_absmax(job, offset, n));
    }
}

static void nf4_absmax_range(void *arg, int64_t begin, int64_t end)
{
    nf4_job *job = arg;
    for (int64_t b = begin; b < end; b++) {
        int64_t offset, n;
        nf4_block_extent(job, b, &offset, &n);
        job->absmax[b] = nf4_block_absmax(job, offset, n);
    }
}

/* -dq, one second-level group of 256 blocks per unit */
static void nf4_dq_range(void *arg, int64_t begin, int64_t end)
{
    nf4_job *job = arg;
    for (int64_t g = begin; g < end; g++) {
        int64_t b0 = g * FR_NF4_DQ_GROUP;
        int64_t b1 = b0 + FR_NF4_DQ_GROUP < job->n_blocks ? b0 + FR_NF4_DQ_GROUP : job->n_blocks;
        float max_dev = 0.0f;
        for (int64_t b = b0; b < b1; b++) {
            float dev = fabsf(job->absmax[b] - job->mean);
            max_dev = dev > max_dev ? dev : max_dev;
        }
        float c = fr_nf4_dq_step(max_dev);
        for (int64_t b = b0; b < b1; b++) {
            int64_t offset, n;
            nf4_block_extent(job, b, &offset, &n);
            nf4_apply(job, offset, n, fr_nf4_dq_absmax(job->absmax[b], job->mean, c));
        }
    }
}

static int nf4_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                            int64_t rows, int64_t cols, const frontier_calib *calib,
                            frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&nf4_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_nf4_params *p = cfg->impl;
    nf4_job job = {.w = w, .w_hat = w_hat, .cols = cols};
    fr_q_bad_init(&job.bad);
    job.blocks_per_row = fr_q_ceil_div(cols, FR_NF4_BLOCK);
    job.n_blocks = rows * job.blocks_per_row;
    if (!p->double_quant) {
        fr_q_parallel_for(call, job.n_blocks, fr_q_grain(FR_NF4_BLOCK), nf4_blocks_range, &job);
        return fr_q_bad_report(&job.bad, cols, call);
    }

    job.absmax = fr_q_scratch(call, (size_t)job.n_blocks * sizeof(float));
    if (!job.absmax)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "cannot allocate %lld block scales",
                         (long long)job.n_blocks);
    fr_q_parallel_for(call, job.n_blocks, fr_q_grain(FR_NF4_BLOCK), nf4_absmax_range, &job);
    rc = fr_q_bad_report(&job.bad, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    /* m: accumulated in double in block order (independent of threads), then fp32 */
    double sum = 0.0;
    for (int64_t b = 0; b < job.n_blocks; b++)
        sum += job.absmax[b];
    job.mean = (float)(sum / (double)job.n_blocks);
    fr_q_parallel_for(call, fr_q_ceil_div(job.n_blocks, FR_NF4_DQ_GROUP),
                      fr_q_grain((int64_t)FR_NF4_DQ_GROUP * FR_NF4_BLOCK), nf4_dq_range, &job);
    return FRONTIER_OK;
}

static int nf4_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&nf4_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_nf4_params *p = cfg->impl;
    if (!p->double_quant) /* 4-bit codes, an fp32 absmax per block of 64 in each row */
        return fr_q_size_bits(call, rows, cols, 4, 1, FR_NF4_BLOCK, 32, 0, total_bits, NULL);
    /* 4-bit codes, an int8 absmax code per block, an fp32 step per 256 blocks, fp32 mean */
    uint64_t bits, blocks;
    rc = fr_q_size_bits(call, rows, cols, 4, 1, FR_NF4_BLOCK, 8, 32, &bits, &blocks);
    if (rc != FRONTIER_OK)
        return rc;
    uint64_t steps = blocks / FR_NF4_DQ_GROUP + (blocks % FR_NF4_DQ_GROUP != 0);
    if (!fr_q_add_u64(bits, 32 * steps, total_bits)) /* blocks <= numel < 2^62: 32 * steps fits */
        return fr_q_fail(call, FRONTIER_ERR_INVALID,
                         "size of a %lld x %lld tensor overflows 64 bits", (long long)rows,
                         (long long)cols);
    return FRONTIER_OK;
}

/* Row blocks: blocks of 64 in a row, unless double quantization subtracts
 * the mean of all the tensor's block scales. No compressed-tensors format. */
static int nf4_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    (void)call;
    const fr_nf4_params *p = cfg->impl;
    if (!p->double_quant)
        t->row_multiple = 1;
    else
        t->whole_tensor_reason = "tensor-wide scale (nf4 double quantization subtracts the mean "
                                 "of the tensor's block scales)";
    return FRONTIER_OK;
}

static const frontier_quantizer nf4_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "nf4",
    .description = "NormalFloat-4 (QLoRA) in blocks of 64, with or without double quantization",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/nf4.cu, attached when registered */
    .n_configs = sizeof nf4_configs / sizeof nf4_configs[0],
    .configs = nf4_configs,
    .size_bits = nf4_size_bits,
    .quantize_cpu = nf4_quantize_cpu,
    .config_traits = nf4_config_traits,
};

const frontier_quantizer *fr_nf4_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &nf4_quantizer : NULL;
}
