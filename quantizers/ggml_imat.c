/*
 * `imat-ggml-<type>` for the super-block types and IQ4_NL (imat-ggml-q2_k
 * ... imat-ggml-q6_k, imat-ggml-iq4_nl, imat-ggml-iq4_xs): llama-quantize
 * --imatrix, i.e. the same blocks as `ggml-<type>` with ggml's weighted
 * searches (quantize_row_q*_K_impl, quantize_iq4_nl/xs with quant_weights),
 * each element weighted by its column's importance. The importance is
 * `act_sq_mean` (what a llama.cpp importance matrix holds, read as such:
 * docs/calibration.md), else the Hessian's diagonal (the same mean x_j^2),
 * else the square of `act_abs_mean`, as `imat-` takes them.
 *
 * A family of its own because needing statistics is a family's flag; the
 * configurations wrap the ggml family's (quantizers/wrap.h) and store
 * exactly its blocks, so size and layout are the base's. Its quantize_cuda
 * (kernels/ggml.cu) runs the same weighted searches on the device.
 */
#include "builtin.h"
#include "common.h"
#include "ggml.h"
#include "imat.h"
#include "wrap.h"

static int ggml_imat_accept(int family, const frontier_config *base, int variant,
                            const char **suffix)
{
    (void)variant;
    *suffix = "";
    if (family != FR_FAMILY_GGML)
        return 0;
    /* the legacy types' weighted paths (quantize_row_q4_0_impl, ...) are not
     * reproduced: only the types whose searches take the importance here */
    switch (((const fr_ggml_params *)base->impl)->type) {
    case FR_GGML_Q2_K:
    case FR_GGML_Q3_K:
    case FR_GGML_Q4_K:
    case FR_GGML_Q5_K:
    case FR_GGML_Q6_K:
    case FR_GGML_IQ4_NL:
    case FR_GGML_IQ4_XS: return 1;
    default: return 0;
    }
}

static const char *ggml_imat_extra(int variant)
{
    (void)variant;
    return "\"importance\":\"act_sq_mean\"";
}

static fr_wrap_list ggml_imat_list = {.prefix = "imat-", .method = "imatrix",
                                      .accept = ggml_imat_accept, .extra_json = ggml_imat_extra,
                                      .with_host_families = 1 << FR_FAMILY_GGML};
static frontier_quantizer ggml_imat_quantizer;

const float *fr_ggml_importance(const frontier_calib *calib, int64_t cols, float *scratch)
{
    if (!calib || calib->cols != cols)
        return NULL;
    if (calib->act_mean_sq)
        return calib->act_mean_sq;
    return fr_imat_weights(calib, cols, scratch) ? scratch : NULL;
}

static int ggml_imat_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                  int64_t rows, int64_t cols, const frontier_calib *calib,
                                  frontier_call *call)
{
    if (!calib || calib->cols != cols)
        return fr_q_fail(call, FRONTIER_ERR_INVALID,
                         "needs an importance matrix (activation statistics) for %lld inputs",
                         (long long)cols);
    float *scratch = calib->act_mean_sq ? NULL : fr_q_scratch(call, (size_t)cols * sizeof(float));
    if (!calib->act_mean_sq && !scratch)
        return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
    const float *qw = fr_ggml_importance(calib, cols, scratch);
    if (!qw)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "needs activation statistics");
    const fr_wrap_params *p = cfg->impl;
    return fr_ggml_quantize_rows(&ggml_imat_quantizer, cfg, p->base->impl, w, w_hat, rows, cols,
                                 qw, call);
}

static int ggml_imat_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                               uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&ggml_imat_quantizer, cfg, rows, cols, total_bits, call);
}

/* What the GGUF writer needs to store one: the base's block type, and the
 * importance it weighs by (the same function quantize_cpu uses), so the
 * file's blocks are llama-quantize --imatrix's. No checkpoint storage: the
 * compressed-tensors layouts cannot hold ggml's scale codes. */
static int ggml_imat_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                                   frontier_call *call)
{
    (void)call;
    const fr_wrap_params *p = cfg->impl;
    t->gguf_type = ((const fr_ggml_params *)p->base->impl)->name;
    if (FRONTIER_TRAITS_HAS(t, gguf_importance))
        t->gguf_importance = fr_ggml_importance;
    return FRONTIER_OK;
}

/* The blocks llama-quantize --imatrix writes are the type's: a tensor-type
 * file names the type (the importance goes to llama-quantize with
 * --imatrix). */
const fr_ggml_type fr_ggml_imat_ggml_types[] = {
    {"imat-ggml-q2_k", "q2_k"},     {"imat-ggml-q3_k", "q3_k"},     {"imat-ggml-q4_k", "q4_k"},
    {"imat-ggml-q5_k", "q5_k"},     {"imat-ggml-q6_k", "q6_k"},     {"imat-ggml-iq4_nl", "iq4_nl"},
    {"imat-ggml-iq4_xs", "iq4_xs"}, {NULL, NULL},
};

const frontier_quantizer *fr_ggml_imat_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "ggml_imat",
        .description = "llama.cpp's K-quants and IQ4 weighted by an importance matrix, as "
                       "llama-quantize --imatrix writes them",
        .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_ACT_STATS,
        .size_bits = ggml_imat_size_bits,
        .quantize_cpu = ggml_imat_quantize_cpu,
        .config_traits = ggml_imat_config_traits,
    };
    return fr_wrap_entry(&ggml_imat_quantizer, &ggml_imat_list, &family, host);
}
