/*
 * The GPU paths of `rht+<config>` and `rht+gptq-*` (kernels/rht.cu;
 * docs/gpu.md, "RHT on the GPU") against the CPU reference:
 *  - the rotation kernel (fr_cuda_rht_rows) against fr_rht_row, forward and
 *    inverse, f32/bf16/f16 inputs, in place and not, on awkward widths
 *    (1, 2, 3, 63, 172 = 128 + 32 + 8 + 4, 4096, 8192 and 8193 around the
 *    shared-memory limit, 14336, 16383 = fourteen blocks): bit for bit;
 *  - rht+ of every kernel family (int group/row/tensor, fp8, nvfp4, mx,
 *    nf4, nf4-dq): quantize_cuda into NaN-poisoned outputs against
 *    quantize_cpu, bit for bit (every step is the CPU's float32
 *    arithmetic), with and without a Hessian in the statistics;
 *  - rht+gptq: quantize_cuda against quantize_cpu (rotated W and H, then
 *    GPTQ): bit for bit in the CPU emulation (gpu_emu.rht), where GPTQ's
 *    dense parts are the CPU's LAPACKE / OpenBLAS; on a device within
 *    GPTQ's tolerance (1e-3 relative in rel_err and out_rel_err; cuBLAS's
 *    and cuSOLVER's float orders), the worst difference and the differing
 *    reconstructions printed; without a Hessian both fail alike.
 * Without a device: exit 77.
 */
#include "gpu_test.h"

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/metrics.h"
#include "kernels/rht.h"
#include "frontier/exec/builtins.h"
#include "quantizers/rht.h"

#define FR_GPTQ_TOL 1e-3

static fr_pool *pool;
static uint64_t rng;
static double worst_rel = 0.0, worst_out = 0.0;
static int64_t worst_differ = 0;

/* fr_cuda_rht_rows against fr_rht_row on a rows x cols tensor in dtype. */
static void check_rotation(int64_t rows, int64_t cols, int dtype, int inverse)
{
    fr_error err;
    const int64_t n = rows * cols;
    gpu_tensor t;
    gpu_tensor_random(&t, rows, cols, dtype, &rng, 0);
    float *signs = malloc((size_t)cols * sizeof *signs), *cpu = malloc((size_t)n * sizeof *cpu),
          *gpu = malloc((size_t)n * sizeof *gpu);
    fr_rht_signs(signs, cols, FR_RHT_SEED);
    memcpy(cpu, t.f32, (size_t)n * sizeof *cpu);
    for (int64_t r = 0; r < rows; r++)
        fr_rht_row(cpu + r * cols, cols, signs, inverse);
    void *in_dev = NULL;
    float *out_dev = NULL, *signs_dev = NULL;
    GPU_OK(fr_cuda_malloc(&in_dev, (size_t)n * gpu_dtype_size(dtype), &err));
    GPU_OK(fr_cuda_malloc((void **)&out_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_malloc((void **)&signs_dev, (size_t)cols * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(in_dev, t.bytes, (size_t)n * gpu_dtype_size(dtype), &err));
    GPU_OK(fr_cuda_upload(signs_dev, signs, (size_t)cols * sizeof(float), &err));
    GPU_OK(fr_cuda_fill32(out_dev, GPU_POISON, (size_t)n, NULL, &err));
    GPU_OK(fr_cuda_rht_rows(in_dev, dtype, out_dev, rows, cols, signs_dev, inverse, NULL, &err));
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(gpu, out_dev, (size_t)n * sizeof(float), &err));
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (fr_f32_to_bits(cpu[i]) != fr_f32_to_bits(gpu[i])) {
            if (first < 0)
                first = i;
            differ++;
        }
    CHECK_MSG(differ == 0,
              "rotation %lldx%lld %s%s: %lld elements differ (first %lld: cpu %a, gpu %a)",
              (long long)rows, (long long)cols, gpu_dtype_name(dtype), inverse ? " inverse" : "",
              (long long)differ, (long long)first, first >= 0 ? cpu[first] : 0.0,
              first >= 0 ? gpu[first] : 0.0);
    if (dtype == FRONTIER_DTYPE_F32) {
        /* in place */
        GPU_OK(fr_cuda_rht_rows(in_dev, dtype, (float *)in_dev, rows, cols, signs_dev, inverse,
                                NULL, &err));
        GPU_OK(fr_cuda_sync(NULL, &err));
        GPU_OK(fr_cuda_download(gpu, in_dev, (size_t)n * sizeof(float), &err));
        int64_t differ_in = 0;
        for (int64_t i = 0; i < n; i++)
            differ_in += fr_f32_to_bits(cpu[i]) != fr_f32_to_bits(gpu[i]);
        CHECK_MSG(differ_in == 0, "rotation %lldx%lld in place: %lld elements differ",
                  (long long)rows, (long long)cols, (long long)differ_in);
    }
    fr_cuda_free(in_dev);
    fr_cuda_free(out_dev);
    fr_cuda_free(signs_dev);
    free(signs);
    free(cpu);
    free(gpu);
    gpu_tensor_free(&t);
}

/* quantize_cuda of one configuration against its quantize_cpu; returns
 * the number of reconstructions that differ and the relative differences
 * of rel_err and (with h) out_rel_err. */
static int64_t compare_quantize(const fr_registry *reg, const char *name, const gpu_tensor *t,
                                const float *h, double *d_rel, double *d_out)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return -1;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    CHECK_MSG(fr_quantizer_has_cuda(q), "%s: %s has no quantize_cuda", name, q->name);
    const int64_t rows = t->rows, cols = t->cols, n = rows * cols;
    float *cpu = malloc((size_t)n * sizeof *cpu), *gpu = malloc((size_t)n * sizeof *gpu);
    frontier_calib calib = {.cols = cols, .hessian = h};
    frontier_call call;
    fr_call_init(&call, pool, 1, "rht", name);
    call.quantizer = q->name;
    int rc = q->quantize_cpu(ref->cfg, t->f32, cpu, rows, cols, h ? &calib : NULL, &call);
    CHECK_MSG(rc == FRONTIER_OK, "%s: quantize_cpu: %s", name, call.error);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    const size_t wbytes = (size_t)n * gpu_dtype_size(t->dtype);
    GPU_OK(fr_cuda_malloc(&w_dev, wbytes, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, t->bytes, wbytes, &err));
    GPU_OK(fr_cuda_fill32(hat_dev, GPU_POISON, (size_t)n, NULL, &err));
    fr_call_init(&call, pool, 1, "rht", name);
    call.quantizer = q->name;
    GPU_OK(fr_quantizer_quantize_cuda(reg, ref, w_dev, t->dtype, hat_dev, rows, cols,
                                      h ? &calib : NULL, "rht", NULL, &call, &err));
    fr_call_release(&call);
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
    int64_t differ = 0, nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        differ += !gpu_same_value(cpu[i], gpu[i]);
        nonfinite += !isfinite(gpu[i]) && isfinite(cpu[i]);
    }
    CHECK_MSG(nonfinite == 0, "%s: %lld reconstructions not written", name, (long long)nonfinite);
    frontier_error_sums sc, sg;
    fr_error_sums_init(&sc);
    fr_error_sums_init(&sg);
    GPU_OK(fr_error_sums_accumulate(t->f32, cpu, n, pool, &sc, &err));
    GPU_OK(fr_error_sums_accumulate(t->f32, gpu, n, pool, &sg, &err));
    double rel_c = sqrt(sc.sq_err / sc.sq_ref), rel_g = sqrt(sg.sq_err / sg.sq_ref);
    *d_rel = rel_c > 0.0 ? fabs(rel_g - rel_c) / rel_c : fabs(rel_g);
    *d_out = 0.0;
    if (h) {
        double ref_t, out_c, out_g;
        GPU_OK(fr_output_error_term(t->f32, NULL, rows, cols, h, pool, &ref_t, &err));
        GPU_OK(fr_output_error_term(t->f32, cpu, rows, cols, h, pool, &out_c, &err));
        GPU_OK(fr_output_error_term(t->f32, gpu, rows, cols, h, pool, &out_g, &err));
        double orel_c = sqrt(out_c / ref_t), orel_g = sqrt(out_g / ref_t);
        *d_out = orel_c > 0.0 ? fabs(orel_g - orel_c) / orel_c : fabs(orel_g);
    }
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    free(cpu);
    free(gpu);
    return differ;
}

/* rht+<data-free base>: bit for bit, on a device too. */
static void check_rht(const fr_registry *reg, const char *name, int64_t rows, int64_t cols,
                      int dtype, int with_h)
{
    gpu_tensor t;
    gpu_tensor_random(&t, rows, cols, dtype, &rng, 0);
    float *h = with_h ? gpu_make_hessian(&rng, cols, cols + 8, 0) : NULL;
    double d_rel = 0.0, d_out = 0.0;
    int64_t differ = compare_quantize(reg, name, &t, h, &d_rel, &d_out);
    printf("%-24s %5lldx%-5lld %-4s%s: %lld of %lld w^ differ\n", name, (long long)rows,
           (long long)cols, gpu_dtype_name(dtype), with_h ? " +H" : "   ", (long long)differ,
           (long long)(rows * cols));
    CHECK_MSG(differ == 0, "%s %lldx%lld %s: %lld reconstructions differ from the CPU's", name,
              (long long)rows, (long long)cols, gpu_dtype_name(dtype), (long long)differ);
    free(h);
    gpu_tensor_free(&t);
}

/* rht+gptq: bit for bit in the emulation, GPTQ's tolerance on a device. */
static void check_rht_gptq(const fr_registry *reg, const char *name, int64_t rows, int64_t cols,
                           int dead)
{
    gpu_tensor t;
    t.rows = rows;
    t.cols = cols;
    t.dtype = FRONTIER_DTYPE_F32;
    t.f32 = malloc((size_t)(rows * cols) * sizeof(float));
    t.bytes = t.f32;
    for (int64_t i = 0; i < rows * cols; i++)
        t.f32[i] = (float)(0.02 * gpu_normal(&rng) * (i % 97 == 3 ? 5.0 : 1.0));
    float *h = gpu_make_hessian(&rng, cols, cols + cols / 2, dead == 1);
    if (dead == 2) {
        /* indefinite (the rotation keeps the spectrum): the dampening is
         * raised once on both sides */
        double mean = 0.0;
        for (int64_t j = 0; j < cols; j++)
            mean += h[j * cols + j];
        mean /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            h[j * cols + j] = (float)(h[j * cols + j] - 0.05 * mean);
    }
    double d_rel = 0.0, d_out = 0.0;
    int64_t differ = compare_quantize(reg, name, &t, h, &d_rel, &d_out);
    worst_rel = fmax(worst_rel, d_rel);
    worst_out = fmax(worst_out, d_out);
    worst_differ = differ > worst_differ ? differ : worst_differ;
    printf("%-28s %5lldx%-5lld%s: rel_err diff %.1e, out_rel_err diff %.1e, %lld of %lld w^ "
           "differ\n",
           name, (long long)rows, (long long)cols,
           dead == 1 ? " dead" : dead == 2 ? " indef" : "", d_rel, d_out, (long long)differ,
           (long long)(rows * cols));
#ifdef FRONTIER_EMULATED_CUDA
    /* the emulation's dense parts are the CPU's own calls */
    CHECK_MSG(differ == 0, "%s: %lld reconstructions differ in the emulation", name,
              (long long)differ);
#endif
    CHECK_MSG(d_rel <= FR_GPTQ_TOL && d_out <= FR_GPTQ_TOL,
              "%s: GPU and CPU differ by %.2e (rel_err) / %.2e (out_rel_err)", name, d_rel,
              d_out);
    free(h);
    free(t.f32);
}

/* rht+gptq without a Hessian: both sides refuse with the same code. */
static void check_rht_gptq_fails(const fr_registry *reg)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, "rht+gptq-int4-g32-sym");
    CHECK(ref != NULL);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    float w[4 * 32], out[4 * 32];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)gpu_normal(&rng);
    frontier_call call;
    fr_call_init(&call, pool, 1, "rht", ref->cfg->name);
    int rc_cpu = q->quantize_cpu(ref->cfg, w, out, 4, 32, NULL, &call);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, sizeof w, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, sizeof out, &err));
    GPU_OK(fr_cuda_upload(w_dev, w, sizeof w, &err));
    fr_call_init(&call, pool, 1, "rht", ref->cfg->name);
    int rc_gpu = q->quantize_cuda(ref->cfg, w_dev, FRONTIER_DTYPE_F32, hat_dev, 4, 32, NULL, NULL,
                                  &call);
    CHECK_MSG(rc_cpu != FRONTIER_OK && rc_gpu == rc_cpu, "no H: cpu %d, gpu %d (%s)", rc_cpu,
              rc_gpu, call.error);
    printf("no H: cpu and gpu both fail (%d): %s\n", rc_gpu, call.error);
    fr_call_release(&call);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
}

#ifndef FRONTIER_EMULATED_CUDA
/* Device time of one quantize_cuda call of configuration `name` (the whole
 * call: the host's signs and uploads included), the median of 5 after a
 * warm-up; H (may be NULL) from host memory, as the executor passes it. */
static double time_quantize(const fr_registry *reg, const char *name, const void *w_dev,
                            float *hat_dev, int64_t rows, int64_t cols, const float *h)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return NAN;
    frontier_calib calib = {.cols = cols, .hessian = h};
    fr_cuda_timer *tm = NULL;
    GPU_OK(fr_cuda_timer_create(&tm, NULL, &err));
    double t[6];
    for (int k = 0; k < 6; k++) {
        frontier_call call;
        fr_call_init(&call, pool, 1, "timing", name);
        GPU_OK(fr_cuda_timer_start(tm, &err));
        GPU_OK(fr_quantizer_quantize_cuda(reg, ref, w_dev, FRONTIER_DTYPE_BF16, hat_dev, rows,
                                          cols, h ? &calib : NULL, "timing", NULL, &call, &err));
        GPU_OK(fr_cuda_timer_stop(tm, &t[k], &err));
        fr_call_release(&call);
    }
    fr_cuda_timer_free(tm);
    /* median of t[1..5] */
    for (int i = 1; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            if (t[j] < t[i]) {
                double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    return t[3] * 1e3;
}

/* Where the time goes on Llama-8B shapes (bf16 weights; H = 0.9^|i-j|, a
 * positive definite Kac-Murdock-Szego matrix, so no real statistics are
 * needed): the rotation alone, rht+ against its base, rht+gptq against gptq. */
static void report_timings(const fr_registry *reg)
{
    fr_error err;
    static const int64_t shapes[][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        uint16_t *w = malloc((size_t)n * sizeof *w);
        for (int64_t i = 0; i < n; i++)
            w[i] = gpu_to_bf16((float)(0.02 * gpu_normal(&rng)));
        void *w_dev = NULL;
        float *hat_dev = NULL, *signs_dev = NULL;
        float *signs = malloc((size_t)cols * sizeof *signs);
        fr_rht_signs(signs, cols, FR_RHT_SEED);
        GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * 2, &err));
        GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
        GPU_OK(fr_cuda_malloc((void **)&signs_dev, (size_t)cols * sizeof(float), &err));
        GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * 2, &err));
        GPU_OK(fr_cuda_upload(signs_dev, signs, (size_t)cols * sizeof(float), &err));
        fr_cuda_timer *tm = NULL;
        GPU_OK(fr_cuda_timer_create(&tm, NULL, &err));
        double rot = 0.0;
        GPU_OK(fr_cuda_rht_rows(w_dev, FRONTIER_DTYPE_BF16, hat_dev, rows, cols, signs_dev, 0,
                                NULL, &err));
        GPU_OK(fr_cuda_timer_start(tm, &err));
        for (int k = 0; k < 10; k++)
            GPU_OK(fr_cuda_rht_rows(w_dev, FRONTIER_DTYPE_BF16, hat_dev, rows, cols, signs_dev,
                                    0, NULL, &err));
        GPU_OK(fr_cuda_timer_stop(tm, &rot, &err));
        fr_cuda_timer_free(tm);
        rot = rot * 1e3 / 10.0;
        printf("timing %5lldx%-5lld bf16: rotation %.3f ms (%.0f GB/s read + written); "
               "int4-g128-sym %.3f ms, rht+int4-g128-sym %.3f ms\n",
               (long long)rows, (long long)cols, rot, (double)n * 6.0 / (rot * 1e-3) / 1e9,
               time_quantize(reg, "int4-g128-sym", w_dev, hat_dev, rows, cols, NULL),
               time_quantize(reg, "rht+int4-g128-sym", w_dev, hat_dev, rows, cols, NULL));
        if (cols == 4096) {
            float *h = malloc((size_t)(cols * cols) * sizeof *h);
            for (int64_t i = 0; i < cols; i++)
                for (int64_t j = 0; j < cols; j++)
                    h[i * cols + j] = (float)pow(0.9, (double)llabs(i - j));
            printf("timing %5lldx%-5lld bf16: gptq-int4-g128-sym %.2f ms, "
                   "rht+gptq-int4-g128-sym %.2f ms\n",
                   (long long)rows, (long long)cols,
                   time_quantize(reg, "gptq-int4-g128-sym", w_dev, hat_dev, rows, cols, h),
                   time_quantize(reg, "rht+gptq-int4-g128-sym", w_dev, hat_dev, rows, cols, h));
            free(h);
        }
        fr_cuda_free(w_dev);
        fr_cuda_free(hat_dev);
        fr_cuda_free(signs_dev);
        free(signs);
        free(w);
    }
}
#endif

int main(void)
{
    gpu_require_device();
    fr_error err;
    rng = gpu_seed();
    GPU_OK(fr_pool_create(0, &pool, &err));

    static const int64_t widths[] = {1, 2, 3, 63, 172, 4096, 8192, 8193, 14336, 16383};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++)
        for (int inverse = 0; inverse <= 1; inverse++)
            check_rotation(3, widths[k], FRONTIER_DTYPE_F32, inverse);
    check_rotation(5, 172, FRONTIER_DTYPE_BF16, 0);
    check_rotation(5, 300, FRONTIER_DTYPE_F16, 0);
    check_rotation(2, 14336, FRONTIER_DTYPE_BF16, 0);
#ifndef FRONTIER_EMULATED_CUDA
    /* more rows than the grid (16384 blocks): the grid-stride row loop */
    check_rotation(20000, 3, FRONTIER_DTYPE_F32, 0);
#endif
    printf("rotation: fr_cuda_rht_rows = fr_rht_row bit for bit on every width\n");

    fr_registry reg;
    GPU_OK(fr_registry_init(&reg, &err));
    static const struct {
        const char *name;
        int64_t rows, cols;
        int dtype, with_h;
    } d[] = {
        {"rht+int4-g128-sym", 7, 172, FRONTIER_DTYPE_F32, 0},
        {"rht+int4-g128-sym", 7, 172, FRONTIER_DTYPE_F32, 1},
        {"rht+int3-g32-asym", 33, 300, FRONTIER_DTYPE_BF16, 0},
        {"rht+int2-gC-sym", 9, 200, FRONTIER_DTYPE_F16, 0},
        {"rht+int8-tensor-asym", 6, 96, FRONTIER_DTYPE_F32, 1},
        {"rht+fp8-e4m3-channel", 12, 256, FRONTIER_DTYPE_BF16, 0},
        {"rht+fp8-e5m2-block128", 130, 257, FRONTIER_DTYPE_F32, 0},
        {"rht+nvfp4", 5, 4096, FRONTIER_DTYPE_BF16, 0},
        {"rht+mxfp4", 4, 14336, FRONTIER_DTYPE_BF16, 0},
        {"rht+mxint8", 3, 1000, FRONTIER_DTYPE_F16, 0},
        {"rht+nf4-g64", 17, 172, FRONTIER_DTYPE_F32, 1},
        {"rht+nf4-g64-dq", 64, 1000, FRONTIER_DTYPE_F32, 0},
    };
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        check_rht(&reg, d[k].name, d[k].rows, d[k].cols, d[k].dtype, d[k].with_h);

    static const struct {
        const char *name;
        int64_t rows, cols;
        int dead;
    } g[] = {
        {"rht+gptq-int4-g128-sym", 64, 172, 0},
        {"rht+gptq-int4-g128-sym", 100, 300, 1},
        {"rht+gptq-int3-g32-asym", 48, 256, 0},
        {"rht+gptq-int2-g64-sym", 40, 384, 0},
        {"rht+gptq-int4-g256-asym", 24, 640, 0},
        {"rht+gptq-int3-gC-asym", 33, 200, 0},
        {"rht+gptq-int4-g64-asym", 48, 192, 2},
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++)
        check_rht_gptq(&reg, g[k].name, g[k].rows, g[k].cols, g[k].dead);
    check_rht_gptq_fails(&reg);
#ifndef FRONTIER_EMULATED_CUDA
    report_timings(&reg);
#endif
    printf("rht+gptq GPU vs CPU: worst relative difference %.2e (rel_err), %.2e (out_rel_err), "
           "at most %lld reconstructions differ; tolerance %.0e\n",
           worst_rel, worst_out, (long long)worst_differ, FR_GPTQ_TOL);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_rht");
}
