/*
 * The calibrated GPU path against the CPU reference (docs/gpu.md, "Output
 * error" and "GPTQ"):
 *  - out_rel_err terms: fr_cuda_output_term (cuBLAS, FP32 math) against
 *    fr_output_error_term (OpenBLAS) and a direct double trace, within
 *    1e-5 relative, for f32 and bf16 inputs and shapes across the 512-row
 *    chunks; deterministic (two runs bitwise equal); TF32 reported;
 *  - GPTQ: gptq's quantize_cuda (kernels/gptq.cu) against quantize_cpu for
 *    plain, -act and -refscale, sym and asym, groups 32..256 and gC, dead
 *    columns: rel_err and out_rel_err within FR_GPTQ_TOL relative (the
 *    lazy-update GEMMs sum in different orders, so a code near a rounding
 *    boundary can flip and the row's later columns follow; the measured
 *    worst case is printed), the share of differing reconstructions
 *    printed; the column-loop kernels against each other, bit for bit.
 * Without a device: exit 77. In the CPU emulation (gpu_emu.calib) the dense
 * parts are OpenBLAS / LAPACKE (no cuBLAS, cuSOLVER there), the kernels are
 * the device's.
 */
#include "gpu_test.h"

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/builtins.h"
#include "kernels/gptq.h"
#include "kernels/outerr.h"

#define FR_OUT_TOL 1e-5
#define FR_GPTQ_TOL 1e-3

static fr_pool *pool;
static uint64_t rng;

static double trace_direct(const float *w, const float *w_hat, const float *h, int64_t rows,
                           int64_t cols)
{
    double total = 0.0;
    double *d = malloc((size_t)cols * sizeof *d);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < cols; j++)
            d[j] = (double)w[r * cols + j] - (w_hat ? (double)w_hat[r * cols + j] : 0.0);
        for (int64_t i = 0; i < cols; i++) {
            double g = 0.0;
            for (int64_t j = 0; j < cols; j++)
                g += d[j] * (double)h[j * cols + i];
            total += g * d[i];
        }
    }
    free(d);
    return total;
}

static void check_output_terms(int64_t rows, int64_t cols, int dtype)
{
    fr_error err;
    const int64_t n = rows * cols;
    float *w = malloc((size_t)n * sizeof *w), *w_hat = malloc((size_t)n * sizeof *w_hat);
    uint16_t *w16 = malloc((size_t)n * sizeof *w16);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)(0.02 * gpu_normal(&rng));
        if (dtype == FRONTIER_DTYPE_BF16) {
            w16[i] = gpu_to_bf16(v);
            v = fr_bits_to_f32((uint32_t)w16[i] << 16);
        }
        w[i] = v;
        w_hat[i] = v + (float)(0.002 * gpu_normal(&rng));
    }
    float *h = gpu_make_hessian(&rng, cols, 2 * cols + 16, 0);
    void *w_dev = NULL;
    float *hat_dev = NULL, *h_dev = NULL;
    const size_t wbytes = (size_t)n * (dtype == FRONTIER_DTYPE_BF16 ? 2 : 4);
    GPU_OK(fr_cuda_malloc(&w_dev, wbytes, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_malloc((void **)&h_dev, (size_t)(cols * cols) * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, dtype == FRONTIER_DTYPE_BF16 ? (const void *)w16 : (const void *)w,
                          wbytes, &err));
    GPU_OK(fr_cuda_upload(hat_dev, w_hat, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(h_dev, h, (size_t)(cols * cols) * sizeof(float), &err));
    double cpu_ref, cpu_out, gpu_ref, gpu_out, gpu_out2, tf_out;
    GPU_OK(fr_output_error_term(w, NULL, rows, cols, h, pool, &cpu_ref, &err));
    GPU_OK(fr_output_error_term(w, w_hat, rows, cols, h, pool, &cpu_out, &err));
    fr_cuda_blas *b = NULL, *bt = NULL;
    GPU_OK(fr_cuda_blas_create(NULL, 0, &b, &err));
    GPU_OK(fr_cuda_blas_create(NULL, 1, &bt, &err));
    GPU_OK(fr_cuda_output_term(b, w_dev, dtype, NULL, rows, cols, h_dev, &gpu_ref, &err));
    GPU_OK(fr_cuda_output_term(b, w_dev, dtype, hat_dev, rows, cols, h_dev, &gpu_out, &err));
    GPU_OK(fr_cuda_output_term(b, w_dev, dtype, hat_dev, rows, cols, h_dev, &gpu_out2, &err));
    GPU_OK(fr_cuda_output_term(bt, w_dev, dtype, hat_dev, rows, cols, h_dev, &tf_out, &err));
    CHECK_NEAR(gpu_ref, cpu_ref, FR_OUT_TOL);
    CHECK_NEAR(gpu_out, cpu_out, FR_OUT_TOL);
    CHECK_MSG(gpu_out == gpu_out2, "two runs differ: %.17g %.17g", gpu_out, gpu_out2);
    if (n <= 300000) {
        double direct = trace_direct(w, w_hat, h, rows, cols);
        CHECK_NEAR(gpu_out, direct, FR_OUT_TOL);
    }
    printf("out terms %lldx%lld %s: ref rel diff %.2e, err rel diff %.2e (tf32: %.2e)\n",
           (long long)rows, (long long)cols, dtype == FRONTIER_DTYPE_BF16 ? "bf16" : "f32",
           fabs(gpu_ref - cpu_ref) / cpu_ref, fabs(gpu_out - cpu_out) / cpu_out,
           fabs(tf_out - cpu_out) / cpu_out);
    fr_cuda_blas_destroy(b);
    fr_cuda_blas_destroy(bt);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    fr_cuda_free(h_dev);
    free(w);
    free(w_hat);
    free(w16);
    free(h);
}

static double worst_rel = 0.0, worst_out = 0.0;

static void check_gptq(const fr_registry *reg, const char *name, int64_t rows, int64_t cols,
                       int dead)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    CHECK_MSG(fr_quantizer_has_cuda(q), "%s: gptq has no quantize_cuda", name);
    const int64_t n = rows * cols;
    float *w = malloc((size_t)n * sizeof *w), *cpu = malloc((size_t)n * sizeof *cpu),
          *gpu = malloc((size_t)n * sizeof *gpu);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(0.02 * gpu_normal(&rng) * (i % 97 == 3 ? 5.0 : 1.0));
    float *h = gpu_make_hessian(&rng, cols, cols + cols / 2, dead == 1);
    if (dead == 2) {
        /* indefinite: H - 0.05 mean(diag) I needs the dampening raised once
         * (0.01 -> 0.1), on both sides */
        double mean = 0.0;
        for (int64_t j = 0; j < cols; j++)
            mean += h[j * cols + j];
        mean /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            h[j * cols + j] = (float)(h[j * cols + j] - 0.05 * mean);
    }
    frontier_calib calib = {.cols = cols, .hessian = h};
    frontier_call call;
    fr_call_init(&call, pool, 1, "gptq", name);
    call.quantizer = q->name;
    int rc = q->quantize_cpu(ref->cfg, w, cpu, rows, cols, &calib, &call);
    CHECK_MSG(rc == FRONTIER_OK, "%s: quantize_cpu: %s", name, call.error);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL, *h_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_malloc((void **)&h_dev, (size_t)(cols * cols) * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(h_dev, h, (size_t)(cols * cols) * sizeof(float), &err));
    GPU_OK(fr_cuda_fill32(hat_dev, 0x7fc00001u, (size_t)n, NULL, &err));
    fr_call_init(&call, pool, 1, "gptq", name);
    call.quantizer = q->name;
    GPU_OK(fr_quantizer_quantize_cuda(reg, ref, w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols,
                                      &calib, "gptq", NULL, &call, &err));
    fr_call_release(&call);
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
    int64_t differ = 0, nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        differ += !gpu_same_value(cpu[i], gpu[i]);
        nonfinite += !isfinite(gpu[i]);
    }
    CHECK_MSG(nonfinite == 0, "%s: %lld reconstructions not written", name, (long long)nonfinite);
    frontier_error_sums sc, sg;
    fr_error_sums_init(&sc);
    fr_error_sums_init(&sg);
    GPU_OK(fr_error_sums_accumulate(w, cpu, n, pool, &sc, &err));
    GPU_OK(fr_error_sums_accumulate(w, gpu, n, pool, &sg, &err));
    double ref_t, out_c, out_g;
    GPU_OK(fr_output_error_term(w, NULL, rows, cols, h, pool, &ref_t, &err));
    GPU_OK(fr_output_error_term(w, cpu, rows, cols, h, pool, &out_c, &err));
    GPU_OK(fr_output_error_term(w, gpu, rows, cols, h, pool, &out_g, &err));
    double rel_c = sqrt(sc.sq_err / sc.sq_ref), rel_g = sqrt(sg.sq_err / sg.sq_ref);
    double orel_c = sqrt(out_c / ref_t), orel_g = sqrt(out_g / ref_t);
    double d_rel = fabs(rel_g - rel_c) / rel_c, d_out = fabs(orel_g - orel_c) / orel_c;
    worst_rel = fmax(worst_rel, d_rel);
    worst_out = fmax(worst_out, d_out);
    printf("%-28s %5lldx%-5lld%s: rel_err %.6g / %.6g (%.1e), out_rel_err %.6g / %.6g (%.1e), "
           "%lld of %lld w^ differ\n",
           name, (long long)rows, (long long)cols, dead == 1 ? " dead" : dead == 2 ? " indef" : "",
           rel_c, rel_g, d_rel,
           orel_c, orel_g, d_out, (long long)differ, (long long)n);
    CHECK_MSG(d_rel <= FR_GPTQ_TOL && d_out <= FR_GPTQ_TOL,
              "%s: GPU and CPU GPTQ differ by %.2e (rel_err) / %.2e (out_rel_err)", name, d_rel,
              d_out);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    fr_cuda_free(h_dev);
    free(w);
    free(cpu);
    free(gpu);
    free(h);
}

/* The column-loop kernels (FR_GPTQ_LOOP_*) give the same w^ bit for bit:
 * plain, -refscale, static (-act, gC) scales, B = 128 and 256, a row count
 * that leaves the last warp partial; the lookahead (the default, where there
 * are more than two blocks: 384, 640 and 320 columns here) against the
 * serial update (`serial`): the same products split along W's columns,
 * which cuBLAS may sum in another order, so w^ may differ where a value
 * sits on a rounding boundary: at most 1 in 1000 (the emulation's OpenBLAS
 * gives the same bits). */
static void check_gptq_loops(void)
{
    static const struct {
        int bits, sym, row_scales;
        int64_t group;
        int variant;
        int64_t rows, cols;
    } c[] = {
        {4, 1, 0, 128, FR_GPTQ_PLAIN, 77, 384},
        {3, 0, 0, 32, FR_GPTQ_REFSCALE, 45, 256},
        {4, 0, 0, 256, FR_GPTQ_PLAIN, 21, 640},
        {2, 1, 0, 64, FR_GPTQ_ACT, 38, 320},
        {3, 0, 1, 200, FR_GPTQ_ACT, 19, 200},
    };
    fr_error err;
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        const int64_t rows = c[k].rows, cols = c[k].cols, n = rows * cols;
        float *w = malloc((size_t)n * sizeof *w), *first = malloc((size_t)n * sizeof *first),
              *out = malloc((size_t)n * sizeof *out);
        for (int64_t i = 0; i < n; i++)
            w[i] = (float)(0.02 * gpu_normal(&rng));
        float *h = gpu_make_hessian(&rng, cols, cols + cols / 2, 0);
        void *w_dev = NULL;
        float *hat_dev = NULL;
        GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * sizeof(float), &err));
        GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
        GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * sizeof(float), &err));
        int64_t differ = 0, serial_differ = 0;
        for (int loop = FR_GPTQ_LOOP_WARP8; loop <= FR_GPTQ_LOOP_BLOCK + 1; loop++) {
            /* the last pass: warp8 with the serial update */
            const int serial = loop > FR_GPTQ_LOOP_BLOCK;
            fr_gptq_params p = {c[k].bits, c[k].sym, c[k].row_scales,
                                c[k].row_scales ? cols : c[k].group, c[k].variant,
                                serial ? FR_GPTQ_LOOP_WARP8 : loop, serial, 0};
            int retries = 0;
            double damp = 0.0;
            GPU_OK(fr_cuda_fill32(hat_dev, 0x7fc00001u, (size_t)n, NULL, &err));
            GPU_OK(fr_cuda_gptq(w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols, h, 0, &p, NULL,
                                &retries, &damp, &err));
            GPU_OK(fr_cuda_download(loop == 0 ? first : out, hat_dev, (size_t)n * sizeof(float),
                                    &err));
            if (loop > 0)
                for (int64_t i = 0; i < n; i++)
                    *(serial ? &serial_differ : &differ) +=
                        memcmp(&first[i], &out[i], sizeof(float)) != 0;
        }
        printf("gptq column loops (int%d %s g%lld variant %d, %lldx%lld): %lld w^ differ; "
               "serial update: %lld differ\n",
               c[k].bits, c[k].sym ? "sym" : "asym", (long long)(c[k].row_scales ? cols : c[k].group),
               c[k].variant, (long long)rows, (long long)cols, (long long)differ,
               (long long)serial_differ);
        CHECK_MSG(differ == 0, "gptq column loops disagree on %lld values", (long long)differ);
        CHECK_MSG(serial_differ * 1000 <= n,
                  "gptq lookahead and serial update disagree on %lld of %lld values",
                  (long long)serial_differ, (long long)n);
        fr_cuda_free(w_dev);
        fr_cuda_free(hat_dev);
        free(w);
        free(first);
        free(out);
        free(h);
    }
}

/* H = -I: not positive definite after three retries on either side, the
 * same error code. */
static void check_gptq_fails(const fr_registry *reg)
{
    fr_error err;
    const int64_t rows = 4, cols = 32, n = rows * cols;
    const fr_config_ref *ref = NULL;
    for (size_t c = 0; c < reg->n_configs; c++)
        if (!strcmp(reg->configs[c].cfg->name, "gptq-int4-g32-sym"))
            ref = &reg->configs[c];
    CHECK(ref != NULL);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    float w[4 * 32], out[4 * 32], h[32 * 32];
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)gpu_normal(&rng);
    for (int64_t i = 0; i < cols * cols; i++)
        h[i] = i % (cols + 1) == 0 ? -1.0f : 0.0f;
    frontier_calib calib = {.cols = cols, .hessian = h};
    frontier_call call;
    fr_call_init(&call, pool, 1, "gptq", ref->cfg->name);
    int rc_cpu = q->quantize_cpu(ref->cfg, w, out, rows, cols, &calib, &call);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, sizeof w, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, sizeof out, &err));
    GPU_OK(fr_cuda_upload(w_dev, w, sizeof w, &err));
    fr_call_init(&call, pool, 1, "gptq", ref->cfg->name);
    int rc_gpu = q->quantize_cuda(ref->cfg, w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols,
                                  &calib, NULL, &call);
    CHECK_MSG(rc_cpu != FRONTIER_OK && rc_gpu == rc_cpu,
              "H = -I: cpu %d, gpu %d (%s)", rc_cpu, rc_gpu, call.error);
    printf("H = -I: cpu and gpu both fail (%d): %s\n", rc_gpu, call.error);
    fr_call_release(&call);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
}

int main(void)
{
    gpu_require_device();
    fr_error err;
    rng = gpu_seed();
    GPU_OK(fr_pool_create(0, &pool, &err));
    if (fr_cuda_blas_available()) {
        static const int64_t shapes[][2] = {{1, 5}, {37, 100}, {600, 257}, {1100, 512}};
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            check_output_terms(shapes[s][0], shapes[s][1], FRONTIER_DTYPE_F32);
            check_output_terms(shapes[s][0], shapes[s][1], FRONTIER_DTYPE_BF16);
        }
    } else {
        printf("SKIP (out terms): no device BLAS in this build\n");
    }
    fr_registry reg;
    GPU_OK(fr_registry_init(&reg, &err));
    static const struct {
        const char *name;
        int64_t rows, cols;
        int dead;
    } g[] = {
        {"gptq-int4-g128-sym", 256, 512, 0},
        {"gptq-int4-g128-sym", 100, 300, 1},
        {"gptq-int3-g32-asym", 130, 384, 0},
        {"gptq-int3-g32-asym-refscale", 130, 384, 0},
        {"gptq-int2-g64-sym-refscale", 64, 256, 1},
        {"gptq-int4-g256-asym", 96, 640, 0},
        {"gptq-int4-g128-sym-act", 200, 512, 1},
        {"gptq-int2-gC-sym", 64, 200, 0},
        {"gptq-int3-gC-asym-act", 80, 256, 0},
        {"gptq-int8-g32-sym", 33, 96, 0},
        {"gptq-int4-g64-asym", 48, 192, 2},
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++)
        check_gptq(&reg, g[k].name, g[k].rows, g[k].cols, g[k].dead);
    check_gptq_fails(&reg);
    check_gptq_loops();
    printf("GPTQ GPU vs CPU: worst relative difference %.2e (rel_err), %.2e (out_rel_err); "
           "tolerance %.0e\n", worst_rel, worst_out, FR_GPTQ_TOL);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_calib");
}
