/*
 * `imat-<int config>`: importance-weighted clipping search, as llama.cpp's
 * imatrix quantization weights its scale search (docs/formats.md): per
 * group, the shrunk range among factors 1, 0.95, ..., 0.5 that minimises
 * sum_j w_j (x_j - x^_j)^2 with w_j = mean x_j^2 of the layer's input,
 * i.e. diag(H). The weights come from `act_sq_mean`, or the Hessian's
 * diagonal, or an importance matrix (core/calib.h reads llama.cpp's); with
 * only `act_abs_mean`, its square (docs/calibration.md). Storage is the
 * base configuration's.
 */
#include "builtin.h"
#include "common.h"
#include "imat.h"
#include "wrap.h"

static int imat_accept(int family, const frontier_config *base, int variant, const char **suffix)
{
    (void)variant;
    *suffix = "";
    return fr_wrap_is_int_grouped(family, base);
}

static fr_wrap_list imat_list = {.prefix = "imat-", .method = "imat", .accept = imat_accept};
static frontier_quantizer imat_quantizer;

int fr_imat_weights(const frontier_calib *calib, int64_t cols, float *out)
{
    if (!calib->hessian && !calib->act_mean_abs)
        return 0;
    for (int64_t j = 0; j < cols; j++) {
        if (calib->hessian) {
            out[j] = calib->hessian[j * cols + j];
        } else {
            float a = calib->act_mean_abs[j];
            out[j] = a * a;
        }
    }
    return 1;
}

static int imat_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    if (!calib || calib->cols != cols)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "needs activation statistics for %lld inputs",
                         (long long)cols);
    const float *weight = calib->act_mean_sq;
    if (!weight) {
        float *d = fr_q_scratch(call, (size_t)cols * sizeof *d);
        if (!d)
            return fr_q_fail(call, FRONTIER_ERR_NOMEM, "out of memory");
        if (!fr_imat_weights(calib, cols, d))
            return fr_q_fail(call, FRONTIER_ERR_INVALID, "needs activation statistics");
        weight = d;
    }
    return fr_wrap_search_tensor(&imat_quantizer, cfg, w, w_hat, rows, cols, weight, call);
}

static int imat_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    return fr_wrap_size_bits(&imat_quantizer, cfg, rows, cols, total_bits, call);
}

const fr_ggml_type fr_imat_ggml_types[] = {{NULL, NULL}};

/* config_traits: the base's pack-quantized layout (the searched scales are
 * its own: the writers refuse a calibrated configuration); needs its
 * tensor's statistics, so no row blocks. */
static int imat_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                              frontier_call *call)
{
    return fr_wrap_config_traits(cfg, 1, t, call);
}

const frontier_quantizer *fr_imat_entry(const frontier_host_api *host)
{
    static const fr_wrap_family family = {
        .name = "imat",
        .description = "importance-weighted clipping search over the int configurations, "
                       "weights diag(H) (llama.cpp imatrix style)",
        .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_ACT_STATS,
        .size_bits = imat_size_bits,
        .quantize_cpu = imat_quantize_cpu,
        .config_traits = imat_config_traits,
    };
    return fr_wrap_entry(&imat_quantizer, &imat_list, &family, host);
}
