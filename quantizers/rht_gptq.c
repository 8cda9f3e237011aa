/*
 * `rht+gptq-<int config>`: the random Hadamard rotation (rht.h) around
 * GPTQ, the Hessian rotated with the weights (H' = R H R^T). A family of
 * its own because it needs H, and the need is a family's flag.
 */
#include "builtin.h"
#include "common.h"
#include "rht.h"

static int rht_gptq_accept(int family, const frontier_config *base, int variant,
                           const char **suffix)
{
    (void)variant;
    *suffix = "";
    /* plain GPTQ only: -act and -refscale are not rotated */
    return family == FR_FAMILY_GPTQ && ((const fr_wrap_params *)base->impl)->variant == 0;
}

static const char *rht_gptq_extra(int variant)
{
    (void)variant;
    return "\"seed\":1,\"blocks\":\"greedy powers of two\",\"hessian\":\"rotated\"";
}

static fr_wrap_list rht_gptq_list = {.prefix = "rht+", .method = "rht", .accept = rht_gptq_accept,
                                     .extra_json = rht_gptq_extra,
                                     .with_host_families = 1 << FR_FAMILY_GPTQ};
static frontier_quantizer rht_gptq_quantizer;

static int rht_gptq_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                 int64_t rows, int64_t cols, const frontier_calib *calib,
                                 frontier_call *call)
{
    if (!calib || !calib->hessian || calib->cols != cols)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "needs a Hessian of %lld x %lld",
                         (long long)cols, (long long)cols);
    return fr_rht_quantize(&rht_gptq_quantizer, cfg, w, w_hat, rows, cols, calib, call);
}

static int rht_gptq_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                              uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&rht_gptq_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_rht_gptq_ggml_types[] = {{NULL, NULL}};

/* config_traits: rotated GPTQ: the rotation is part of what is stored, which
 * no storage here describes; needs the tensor's Hessian, so no row blocks. */
static int rht_gptq_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                                  frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 0, t, call);
}

const frontier_quantizer *fr_rht_gptq_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "rht_gptq",
        .description = "random Hadamard rotation around GPTQ, the Hessian rotated with the weights",
        .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_HESSIAN,
        .size_bits = rht_gptq_size_bits,
        .quantize_cpu = rht_gptq_quantize_cpu,
        .config_traits = rht_gptq_config_traits,
    };
    return fr_wrap_entry(&rht_gptq_quantizer, &rht_gptq_list, &family, host);
}
