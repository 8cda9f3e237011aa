/*
 * `ggml-q8_0`, `ggml-q4_0`, `ggml-q4_1`, `ggml-q5_0`, `ggml-q5_1`, `ggml-mxfp4`:
 * llama.cpp's legacy block types and MXFP4 with the rules of its reference quantizers
 * (quantize_row_*_ref, ggml-quants.c), so a sweep measures exactly what
 * `frontier quantize --format gguf` writes (quantizers/ggml_blocks.h has the
 * rules; docs/quantize.md, "GGUF", the definition). Blocks of 32 consecutive
 * elements of a row; size: the block bytes (34, 18, 20, 22, 24, 17 per 32). Host
 * only (FR_HOST_FAMILIES): no kernels.
 */
#include "builtin.h"
#include "common.h"
#include "ggml_blocks.h"

const fr_ggml_params fr_ggml_block_types[FR_GGML_N_TYPES] = {
    {FR_GGML_Q8_0, "q8_0", "Q8_0", 34, 7},
    {FR_GGML_Q4_0, "q4_0", "Q4_0", 18, 2},
    {FR_GGML_Q4_1, "q4_1", "Q4_1", 20, 3},
    {FR_GGML_Q5_0, "q5_0", "Q5_0", 22, 8},
    {FR_GGML_Q5_1, "q5_1", "Q5_1", 24, 9},
    {FR_GGML_MXFP4, "mxfp4", "MXFP4", 17, 38}, /* LLAMA_FTYPE_MOSTLY_MXFP4_MOE */
};

#define GGML_CFG(i, t, bits, bytes, sym, scale)                                                \
    {"ggml-" t, (bits),                                                                       \
     "{\"ggml_type\":\"" t "\",\"bits\":" #bits ",\"block\":32,\"block_bytes\":" #bytes       \
     ",\"symmetric\":" sym ",\"scale_dtype\":\"" scale "\"}",                                 \
     &fr_ggml_block_types[i]}

static const frontier_config ggml_configs[] = {
    GGML_CFG(0, "q8_0", 8, 34, "true", "fp16"),   GGML_CFG(1, "q4_0", 4, 18, "true", "fp16"),
    GGML_CFG(2, "q4_1", 4, 20, "false", "fp16"),  GGML_CFG(3, "q5_0", 5, 22, "true", "fp16"),
    GGML_CFG(4, "q5_1", 5, 24, "false", "fp16"),  GGML_CFG(5, "mxfp4", 4, 17, "true", "e8m0"),
};

static const frontier_quantizer ggml_quantizer;

typedef struct ggml_job {
    fr_ggml_qtype type;
    const float *w;
    float *w_hat;
    int64_t cols, blocks_per_row;
    fr_q_bad bad;
} ggml_job;

static void ggml_blocks_range(void *arg, int64_t begin, int64_t end)
{
    ggml_job *job = arg;
    uint8_t blk[FR_GGML_MAX_BLOCK_BYTES];
    float y[FR_GGML_BLOCK];
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->blocks_per_row;
        int64_t start = (u % job->blocks_per_row) * FR_GGML_BLOCK;
        int n = (int)(job->cols - start < FR_GGML_BLOCK ? job->cols - start : FR_GGML_BLOCK);
        int64_t offset = row * job->cols + start;
        const float *x = job->w + offset;
        float *x_hat = job->w_hat + offset;
        int bad = 0;
        for (int i = 0; i < n; i++)
            if (fr_q_nonfinite(x[i])) {
                fr_q_bad_note(&job->bad, offset + i);
                bad = 1;
            }
        if (bad) {
            for (int i = 0; i < n; i++)
                x_hat[i] = 0.0f;
            continue;
        }
        /* Q(W) is the decoded block: the bytes a GGUF file holds */
        fr_ggml_encode_block(job->type, x, n, blk);
        fr_ggml_decode_block(job->type, blk, y);
        for (int i = 0; i < n; i++)
            x_hat[i] = y[i];
    }
}

static int ggml_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&ggml_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_ggml_params *p = cfg->impl;
    ggml_job job = {.type = p->type, .w = w, .w_hat = w_hat, .cols = cols,
                    .blocks_per_row = fr_q_ceil_div(cols, FR_GGML_BLOCK)};
    fr_q_bad_init(&job.bad);
    fr_q_parallel_for(call, rows * job.blocks_per_row, fr_q_grain(FR_GGML_BLOCK),
                      ggml_blocks_range, &job);
    return fr_q_bad_report(&job.bad, cols, call);
}

static int ggml_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&ggml_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_ggml_params *p = cfg->impl;
    /* whole blocks (a short last block of a row counts fully) */
    return fr_q_size_bits(call, rows, cols, 0, 1, FR_GGML_BLOCK, 8u * p->block_bytes, 0,
                          total_bits, NULL);
}

/* GGUF: each configuration is its type's reference quantizer, so the GGUF
 * writer stores its blocks. Row blocks are not declared (a host family the
 * blocked path has not been checked on). */
static int ggml_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                              frontier_call *call)
{
    (void)call;
    const fr_ggml_params *p = cfg->impl;
    t->gguf_type = p->name;
    return FRONTIER_OK;
}

static const frontier_quantizer ggml_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "ggml",
    .description = "llama.cpp's block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4 with its "
                   "reference quantizers' rules (what frontier quantize --format gguf writes)",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* host only: no GPU functions */
    .n_configs = sizeof ggml_configs / sizeof ggml_configs[0],
    .configs = ggml_configs,
    .size_bits = ggml_size_bits,
    .quantize_cpu = ggml_quantize_cpu,
    .config_traits = ggml_config_traits,
};

/* The table line says FR_NO_GGML: the GGUF writer maps these configurations
 * itself (frontier/checkpoint/quantize_gguf.c); the int family's list says which int
 * configurations merely share a ggml storage. */
const fr_ggml_type fr_ggml_ggml_types[] = {{NULL, NULL}};

const frontier_quantizer *fr_ggml_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &ggml_quantizer : NULL;
}
