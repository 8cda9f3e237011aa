/*
 * `ggml-q8_0`, `ggml-q4_0`, `ggml-q4_1`, `ggml-q5_0`, `ggml-q5_1`, `ggml-mxfp4`,
 * `ggml-q2_k`, `ggml-q3_k`, `ggml-q4_k`, `ggml-q5_k`, `ggml-q6_k`,
 * `ggml-iq4_nl`, `ggml-iq4_xs`: llama.cpp's block types with the rules of
 * the quantizers llama-quantize runs without an importance matrix
 * (quantize_row_*_ref; quantize_iq4_nl/xs), so a sweep measures exactly what
 * `frontier quantize --format gguf` writes (quantizers/ggml_blocks.h and
 * ggml_kquants.h have the rules; docs/quantize.md, "GGUF", and
 * docs/formats.md the definitions). Blocks of 32 consecutive elements of a
 * row, or super-blocks of 256 (K-quants, IQ4_XS); size: the block bytes. On
 * a tensor whose rows the type's block does not divide, Q(W) and the size
 * are those of the type llama-quantize falls back to (fr_ggml_stored_type:
 * Q4_K to Q5_0, ..., F16 when no block fits), which the GGUF writer stores. The
 * same types weighted by an importance matrix are the `ggml_imat` family's
 * (quantizers/ggml_imat.c), through fr_ggml_quantize_rows. A host family
 * (FR_HOST_FAMILIES): no fused kernels; its quantize_cuda (kernels/ggml.cu)
 * runs this file's block code on the device, one thread per block.
 */
#include "ggml.h"

#include "builtin.h"
#include "common.h"
#include "ggml_blocks.h"

#define P(t, nm, gguf, bytes, ftype, elems)                                                     \
    {.type = (t), .name = (nm), .gguf_name = (gguf), .block_bytes = (bytes),                 \
     .file_type = (ftype), .block = (elems)}

const fr_ggml_params fr_ggml_block_types[FR_GGML_N_TYPES] = {
    P(FR_GGML_Q8_0, "q8_0", "Q8_0", 34, 7, 32),
    P(FR_GGML_Q4_0, "q4_0", "Q4_0", 18, 2, 32),
    P(FR_GGML_Q4_1, "q4_1", "Q4_1", 20, 3, 32),
    P(FR_GGML_Q5_0, "q5_0", "Q5_0", 22, 8, 32),
    P(FR_GGML_Q5_1, "q5_1", "Q5_1", 24, 9, 32),
    P(FR_GGML_MXFP4, "mxfp4", "MXFP4", 17, 38, 32), /* LLAMA_FTYPE_MOSTLY_MXFP4_MOE */
    /* general.file_type of Q3_K, Q4_K, Q5_K: llama-quantize's aliases (_M) */
    P(FR_GGML_Q2_K, "q2_k", "Q2_K", 84, 10, 256),
    P(FR_GGML_Q3_K, "q3_k", "Q3_K", 110, 12, 256),
    P(FR_GGML_Q4_K, "q4_k", "Q4_K", 144, 15, 256),
    P(FR_GGML_Q5_K, "q5_k", "Q5_K", 176, 17, 256),
    P(FR_GGML_Q6_K, "q6_k", "Q6_K", 210, 18, 256),
    P(FR_GGML_IQ4_NL, "iq4_nl", "IQ4_NL", 18, 25, 32),
    P(FR_GGML_IQ4_XS, "iq4_xs", "IQ4_XS", 136, 30, 256),
};

/* GGML_TYPE_F16, LLAMA_FTYPE_MOSTLY_F16: llama-quantize's last fallback */
const fr_ggml_params fr_ggml_f16 = P(FR_GGML_F16, "f16", "F16", 2, 1, 1);
#undef P

#define GGML_CFG(i, t, bits, bytes, sym, scale)                                                \
    {"ggml-" t, (bits),                                                                       \
     "{\"ggml_type\":\"" t "\",\"bits\":" #bits ",\"block\":32,\"block_bytes\":" #bytes       \
     ",\"symmetric\":" sym ",\"scale_dtype\":\"" scale "\"}",                                 \
     &fr_ggml_block_types[i]}

/* The super-block types and IQ4_NL: sub-blocks of `sub` elements whose
 * scales (and mins) are codes of `sub_bits` against fp16 steps. */
#define GGML_KCFG(i, t, bits, block, bytes, sub, sub_bits, sym)                                 \
    {"ggml-" t, (bits),                                                                       \
     "{\"ggml_type\":\"" t "\",\"bits\":" #bits ",\"block\":" #block ",\"block_bytes\":" #bytes \
     ",\"sub_block\":" #sub ",\"sub_scale_bits\":" #sub_bits ",\"symmetric\":" sym            \
     ",\"scale_dtype\":\"fp16\"}",                                                             \
     &fr_ggml_block_types[i]}

static const frontier_config ggml_configs[] = {
    GGML_CFG(0, "q8_0", 8, 34, "true", "fp16"),   GGML_CFG(1, "q4_0", 4, 18, "true", "fp16"),
    GGML_CFG(2, "q4_1", 4, 20, "false", "fp16"),  GGML_CFG(3, "q5_0", 5, 22, "true", "fp16"),
    GGML_CFG(4, "q5_1", 5, 24, "false", "fp16"),  GGML_CFG(5, "mxfp4", 4, 17, "true", "e8m0"),
    GGML_KCFG(6, "q2_k", 2, 256, 84, 16, 4, "false"),
    GGML_KCFG(7, "q3_k", 3, 256, 110, 16, 6, "true"),
    GGML_KCFG(8, "q4_k", 4, 256, 144, 32, 6, "false"),
    GGML_KCFG(9, "q5_k", 5, 256, 176, 32, 6, "false"),
    GGML_KCFG(10, "q6_k", 6, 256, 210, 16, 8, "true"),
    GGML_KCFG(11, "iq4_nl", 4, 32, 18, 32, 0, "true"),
    GGML_KCFG(12, "iq4_xs", 4, 256, 136, 32, 6, "true"),
};

static const frontier_quantizer ggml_quantizer;

typedef struct ggml_job {
    fr_ggml_qtype type;
    const float *w, *qw;
    const float *sigma2; /* per row, for a weighted legacy type; else NULL */
    float *w_hat;
    int64_t cols, block, blocks_per_row;
    fr_q_bad bad;
} ggml_job;

static void ggml_blocks_range(void *arg, int64_t begin, int64_t end)
{
    ggml_job *job = arg;
    uint8_t blk[FR_GGML_MAX_BLOCK_BYTES];
    float y[FR_GGML_MAX_BLOCK];
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->blocks_per_row;
        int64_t start = (u % job->blocks_per_row) * job->block;
        int n = (int)(job->cols - start < job->block ? job->cols - start : job->block);
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
        fr_ggml_encode_block_in_row(job->type, x, n, job->qw ? job->qw + start : NULL,
                                    job->sigma2 ? job->sigma2[row] : 0.0f, blk);
        fr_ggml_decode_block(job->type, blk, y);
        for (int i = 0; i < n; i++)
            x_hat[i] = y[i];
    }
}

int fr_ggml_quantize_rows(const frontier_quantizer *q, const frontier_config *cfg,
                          const fr_ggml_params *p, const float *w, float *w_hat, int64_t rows,
                          int64_t cols, const float *qw, frontier_call *call)
{
    int rc = fr_q_check_call(q, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    p = fr_ggml_stored_type(p, cols); /* what llama-quantize stores on these rows */
    ggml_job job = {.type = p->type, .w = w, .qw = qw, .w_hat = w_hat, .cols = cols,
                    .block = p->block, .blocks_per_row = fr_q_ceil_div(cols, p->block)};
    if (qw && fr_ggml_legacy_weighted(p->type)) {
        /* the weighted legacy searches read the whole row's sum of squares */
        float *sigma2 = fr_q_scratch(call, (size_t)rows * sizeof *sigma2);
        if (!sigma2)
            return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
        for (int64_t r = 0; r < rows; r++)
            sigma2[r] = fr_ggml_row_sigma2(w + r * cols, cols);
        job.sigma2 = sigma2;
    }
    fr_q_bad_init(&job.bad);
    fr_q_parallel_for(call, rows * job.blocks_per_row, fr_q_grain(p->block), ggml_blocks_range,
                      &job);
    return fr_q_bad_report(&job.bad, cols, call);
}

int fr_ggml_block_size_bits(const frontier_quantizer *q, const frontier_config *cfg,
                            const fr_ggml_params *p, int64_t rows, int64_t cols,
                            uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(q, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    p = fr_ggml_stored_type(p, cols);
    /* whole blocks of the type stored; a row is a multiple of its block */
    return fr_q_size_bits(call, rows, cols, 0, 1, p->block, 8u * p->block_bytes, 0, total_bits,
                          NULL);
}

static int ggml_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    (void)calib; /* the imatrix-weighted searches are ggml_imat's */
    return fr_ggml_quantize_rows(&ggml_quantizer, cfg, cfg->impl, w, w_hat, rows, cols, NULL,
                                 call);
}

static int ggml_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    return fr_ggml_block_size_bits(&ggml_quantizer, cfg, cfg->impl, rows, cols, total_bits, call);
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
    .description = "llama.cpp's block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4, Q2_K..Q6_K, "
                   "IQ4_NL, IQ4_XS with llama-quantize's rules (what frontier quantize "
                   "--format gguf writes)",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* kernels/ attaches its quantize_cuda */
    .n_configs = sizeof ggml_configs / sizeof ggml_configs[0],
    .configs = ggml_configs,
    .size_bits = ggml_size_bits,
    .quantize_cpu = ggml_quantize_cpu,
    .config_traits = ggml_config_traits,
};

/* Every configuration is its type's llama.cpp storage, so the tensor-type
 * file of a recipe (llama-quantize --tensor-type-file) and the recipe's
 * llama_cpp_type name it; the GGUF writer reads the same type from the
 * configuration's traits (gguf_type). */
const fr_ggml_type fr_ggml_ggml_types[] = {
    {"ggml-q8_0", "q8_0"},   {"ggml-q4_0", "q4_0"},     {"ggml-q4_1", "q4_1"},
    {"ggml-q5_0", "q5_0"},   {"ggml-q5_1", "q5_1"},     {"ggml-mxfp4", "mxfp4"},
    {"ggml-q2_k", "q2_k"},   {"ggml-q3_k", "q3_k"},     {"ggml-q4_k", "q4_k"},
    {"ggml-q5_k", "q5_k"},   {"ggml-q6_k", "q6_k"},     {"ggml-iq4_nl", "iq4_nl"},
    {"ggml-iq4_xs", "iq4_xs"}, {NULL, NULL},
};

const frontier_quantizer *fr_ggml_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &ggml_quantizer : NULL;
}
