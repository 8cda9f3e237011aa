/*
 * `mse-<int config>`: data-free clipping search (docs/formats.md,
 * "Calibrated and optimised variants"): per group, the shrunk range among
 * factors 1, 0.95, ..., 0.5 with the least squared error of the group.
 * Storage is the base configuration's.
 */
#include "builtin.h"
#include "common.h"
#include "wrap.h"

static int mse_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    (void)variant;
    *suffix = "";
    return fr_wrap_is_int_grouped(family, base);
}

static fr_wrap_list mse_list = {.prefix = "mse-", .method = "mse", .accept = mse_accept};
static frontier_quantizer mse_quantizer;

static int mse_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                            int64_t cols, const frontier_calib *calib, frontier_call *call)
{
    (void)calib;
    return fr_wrap_search_tensor(&mse_quantizer, cfg, w, w_hat, rows, cols, NULL, call);
}

static int mse_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&mse_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_mse_ggml_types[] = {{NULL, NULL}};

/* config_traits: the clipping search chooses each group's scale; the
 * writers' rule (the base's scale from the group's range) would not
 * reproduce it, so no storage is declared, and row blocks are not declared
 * either. */
static int mse_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 0, t, call);
}

const frontier_quantizer *fr_mse_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "mse",
        .description = "data-free clipping search over the int configurations: per group the "
                       "range shrink (1 .. 0.5) with the least squared error",
        .flags = FRONTIER_Q_DETERMINISTIC,
        .size_bits = mse_size_bits,
        .quantize_cpu = mse_quantize_cpu,
        .config_traits = mse_config_traits,
    };
    return fr_wrap_entry(&mse_quantizer, &mse_list, &family, host);
}
