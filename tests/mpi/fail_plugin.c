/*
 * A test plugin that fails on one tensor, for the scale-out tests
 * (tests/mpi/sweep_mpi_failure.sh). Its one configuration, "failtest-sign",
 * is w_hat = sign(w) * mean |w| over the tensor. FRONTIER_TEST_FAIL=MODE:RxC
 * makes it misbehave on the tensors of matrix shape R x C:
 *   error  returns an error (the sweep's per-configuration failure path)
 *   term   raises SIGTERM in its own process, then succeeds: that process
 *          (one rank of an MPI job) stops after the jobs in flight
 *   kill   raises SIGKILL: the process dies mid-sweep
 * Unset, it never fails. Only this test plugin reads the variable; nothing
 * in frontier does.
 */
#include <frontier/plugin.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const frontier_host_api *host;

static int sign_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    (void)cfg;
    (void)call;
    *total_bits = (uint64_t)rows * (uint64_t)cols + 32; /* one sign bit each, one float32 scale */
    return FRONTIER_OK;
}

/* The mode asked for this shape, or "" when none. */
static const char *fail_mode(int64_t rows, int64_t cols, char mode[8])
{
    const char *spec = getenv("FRONTIER_TEST_FAIL");
    long long r = 0, c = 0;
    mode[0] = '\0';
    if (!spec || sscanf(spec, "%7[a-z]:%lldx%lld", mode, &r, &c) != 3 || r != rows || c != cols)
        mode[0] = '\0';
    return mode;
}

static int sign_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    (void)cfg;
    (void)calib;
    char mode[8];
    fail_mode(rows, cols, mode);
    if (!strcmp(mode, "error")) {
        host->set_error(call, "failtest: asked to fail on %lldx%lld", (long long)rows,
                        (long long)cols);
        return FRONTIER_ERR_INTERNAL;
    }
    if (!strcmp(mode, "kill"))
        raise(SIGKILL);
    if (!strcmp(mode, "term"))
        raise(SIGTERM);
    int64_t n = rows * cols;
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += fabs((double)w[i]);
    float scale = (float)(sum / (double)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        w_hat[i] = w[i] < 0 ? -scale : scale;
    return FRONTIER_OK;
}

static const frontier_config configs[] = {
    {.name = "failtest-sign", .nominal_bits = 1.0, .params_json = "{}", .impl = NULL},
};

static const frontier_quantizer descriptor = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "failtest",
    .description = "sign times mean |w|; fails on a tensor shape named by FRONTIER_TEST_FAIL",
    .version = "1",
    .flags = FRONTIER_Q_DETERMINISTIC,
    .n_configs = 1,
    .configs = configs,
    .size_bits = sign_size_bits,
    .quantize_cpu = sign_quantize_cpu,
};

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *h)
{
    host = h;
    return &descriptor;
}
