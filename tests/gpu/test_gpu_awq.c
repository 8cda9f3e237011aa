/*
 * AWQ on the GPU (kernels/awq.cu) against the CPU reference
 * (quantizers/awq.c; docs/gpu.md, "AWQ on the GPU"), on random shapes with
 * the parity test's adversarial weights (zero rows and groups,
 * negative-only rows, outliers, subnormals) in f32, bf16 and f16, groups
 * 32..256 and gC (also past the 256 columns that fit shared memory), dead
 * input channels, mean x^2 in place of mean |x|:
 *  - the 20 output errors of the exponents within FR_AWQ_ERR_TOL relative
 *    (cuBLAS sums in another order than OpenBLAS);
 *  - where both chose the same exponent, every reconstruction bit for bit
 *    (the scaled rounding and the clipping search are the CPU's operations
 *    in the CPU's order);
 *  - where the choices differ, the two exponents' CPU errors within
 *    FR_AWQ_ERR_TOL of each other (a flip between errors equal to rounding)
 *    and rel_err / out_rel_err within FR_AWQ_FLIP_TOL; the flips counted;
 *  - the descriptor's quantize_cuda through the registry: the same bits as
 *    fr_cuda_awq; non-finite weights and missing statistics: the CPU's
 *    error code and message.
 * In the CPU emulation (gpu_emu.awq) the output errors are OpenBLAS's in the
 * CPU's chunks, so there the errors and every choice must be the CPU's bits
 * (FR_AWQ_EXACT). Prints the worst differences and the flips. Without a
 * device: exit 77. With a model and its calibration file as arguments
 * (data/stories260K), every tensor with statistics under four awq
 * configurations the same way, with the least margin between the CPU's
 * best and next exponent printed.
 */
#include "gpu_test.h"

#include "core/calib.h"
#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/exec/metrics.h"
#include "kernels/awq.h"
#include "frontier/exec/builtins.h"
#include "quantizers/wrap.h"

#define FR_AWQ_ERR_TOL 1e-5
#define FR_AWQ_FLIP_TOL 1e-2

static fr_pool *pool;
static uint64_t rng;
static double worst_err = 0.0, worst_rel = 0.0, worst_out = 0.0;
static double least_margin_random = INFINITY;
static int n_cases = 0, n_flips = 0;

/* H = X^T X / T and mean |x| (or mean x^2) of T correlated tokens whose
 * channels have scales over two decades; `dead` channels are all zero
 * (H_jj = 0, m_j = 0). */
static void make_calib(int64_t n, int64_t tokens, int dead, float *h, float *mean_abs,
                       float *mean_sq)
{
    double *x = malloc((size_t)(tokens * n) * sizeof *x);
    double *scale = malloc((size_t)n * sizeof *scale);
    CHECK(x && scale);
    if (!x || !scale)
        exit(1);
    for (int64_t j = 0; j < n; j++)
        scale[j] = exp(1.2 * gpu_normal(&rng)) * (j % 19 == 0 ? 8.0 : 1.0);
    for (int64_t t = 0; t < tokens; t++) {
        double a = gpu_normal(&rng);
        for (int64_t j = 0; j < n; j++) {
            a = 0.7 * a + 0.7 * gpu_normal(&rng);
            x[t * n + j] = (dead && j % 11 == 4) ? 0.0 : a * scale[j];
        }
    }
    for (int64_t j = 0; j < n; j++) {
        double sa = 0.0, sq = 0.0;
        for (int64_t t = 0; t < tokens; t++) {
            sa += fabs(x[t * n + j]);
            sq += x[t * n + j] * x[t * n + j];
        }
        if (mean_abs)
            mean_abs[j] = (float)(sa / (double)tokens);
        if (mean_sq)
            mean_sq[j] = (float)(sq / (double)tokens);
    }
    gpu_gram(x, tokens, n, h);
    free(x);
    free(scale);
}

/* rel_err and out_rel_err of w^ against w (the CPU's metrics). */
static void metrics(const float *w, const float *w_hat, int64_t rows, int64_t cols, const float *h,
                    double *rel, double *orel)
{
    fr_error err;
    frontier_error_sums s;
    double ref_t, out_t;
    fr_error_sums_init(&s);
    GPU_OK(fr_error_sums_accumulate(w, w_hat, rows * cols, pool, &s, &err));
    GPU_OK(fr_output_error_term(w, NULL, rows, cols, h, pool, &ref_t, &err));
    GPU_OK(fr_output_error_term(w, w_hat, rows, cols, h, pool, &out_t, &err));
    *rel = sqrt(s.sq_err / s.sq_ref);
    *orel = sqrt(out_t / ref_t);
}

/* The relative gap between the least and the second least of the CPU's 20
 * exponent errors: how close a choice is to flipping. */
static double choice_margin(const fr_awq_choice *c)
{
    double best = INFINITY, second = INFINITY;
    for (int k = 0; k < FR_AWQ_GRID; k++) {
        if (c->err[k] < best) {
            second = best;
            best = c->err[k];
        } else if (c->err[k] < second && c->err[k] != best) {
            second = c->err[k];
        }
    }
    return (second - best) / best;
}

static void check_awq(const fr_registry *reg, const char *name, int64_t rows, int64_t cols,
                      int dtype, int dead, int sq_only, int plain)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    CHECK_MSG(fr_quantizer_has_cuda(q), "%s: awq has no quantize_cuda", name);
    const int64_t n = rows * cols;
    gpu_tensor t;
    gpu_tensor_random(&t, rows, cols, dtype, &rng, 0);
    if (plain) /* a layer's weights: Gaussian with a few outliers */
        for (int64_t i = 0; i < n; i++)
            gpu_tensor_store(&t, i, (float)(0.02 * gpu_normal(&rng) * (i % 97 == 3 ? 6.0 : 1.0)));
    float *h = malloc((size_t)(cols * cols) * sizeof *h), *ma = malloc((size_t)cols * sizeof *ma),
          *msq = malloc((size_t)cols * sizeof *msq);
    float *cpu = malloc((size_t)n * sizeof *cpu), *gpu = malloc((size_t)n * sizeof *gpu),
          *gpu2 = malloc((size_t)n * sizeof *gpu2);
    make_calib(cols, cols + cols / 2, dead, h, ma, msq);
    frontier_calib calib = {.cols = cols, .hessian = h, .act_mean_abs = sq_only ? NULL : ma,
                            .act_mean_sq = msq};
    const fr_int_params *ip = fr_wrap_int_base(ref->cfg->impl);

    fr_awq_choice cc, gc;
    frontier_call call;
    fr_call_init(&call, pool, 1, "awq", name);
    call.quantizer = q->name;
    int rc = fr_awq_quantize_choice(ref->cfg, t.f32, cpu, rows, cols, &calib, &call, &cc);
    CHECK_MSG(rc == FRONTIER_OK, "%s: quantize_cpu: %s", name, call.error);
    fr_call_release(&call);

    void *w_dev = NULL;
    float *hat_dev = NULL;
    const size_t wbytes = (size_t)n * gpu_dtype_size(dtype);
    GPU_OK(fr_cuda_malloc(&w_dev, wbytes, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, t.bytes, wbytes, &err));
    GPU_OK(fr_cuda_fill32(hat_dev, GPU_POISON, (size_t)n, NULL, &err));
    GPU_OK(fr_cuda_awq(w_dev, dtype, hat_dev, rows, cols, &calib, ip, NULL, &gc, &err));
    GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
    /* the descriptor's quantize_cuda through the registry's checked call */
    GPU_OK(fr_cuda_fill32(hat_dev, GPU_POISON, (size_t)n, NULL, &err));
    fr_call_init(&call, pool, 1, "awq", name);
    call.quantizer = q->name;
    GPU_OK(fr_quantizer_quantize_cuda(reg, ref, w_dev, dtype, hat_dev, rows, cols, &calib, "awq",
                                      NULL, &call, &err));
    fr_call_release(&call);
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(gpu2, hat_dev, (size_t)n * sizeof(float), &err));

    double werr = 0.0;
    for (int k = 0; k < FR_AWQ_GRID; k++) {
        double d = fabs(gc.err[k] - cc.err[k]) / fmax(fabs(cc.err[k]), 1e-300);
        werr = fmax(werr, d);
#ifdef FRONTIER_EMULATED_CUDA
        CHECK_MSG(gc.err[k] == cc.err[k], "%s: exponent %d: error %.17g on the device, %.17g on "
                  "the cpu (the emulation sums as the cpu does)", name, k, gc.err[k], cc.err[k]);
#endif
    }
    worst_err = fmax(worst_err, werr);
    CHECK_MSG(werr <= FR_AWQ_ERR_TOL, "%s: the exponents' output errors differ by %.2e", name, werr);
    int64_t differ = 0, differ2 = 0, nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        differ += !gpu_same_value(cpu[i], gpu[i]);
        differ2 += fr_f32_to_bits(gpu[i]) != fr_f32_to_bits(gpu2[i]);
        nonfinite += !isfinite(gpu[i]);
    }
    CHECK_MSG(nonfinite == 0, "%s: %lld reconstructions not finite or not written", name,
              (long long)nonfinite);
    CHECK_MSG(differ2 == 0, "%s: quantize_cuda and fr_cuda_awq differ in %lld values", name,
              (long long)differ2);
    double rel_c, orel_c, rel_g, orel_g;
    metrics(t.f32, cpu, rows, cols, h, &rel_c, &orel_c);
    metrics(t.f32, gpu, rows, cols, h, &rel_g, &orel_g);
    double d_rel = fabs(rel_g - rel_c) / rel_c, d_out = fabs(orel_g - orel_c) / orel_c;
    worst_rel = fmax(worst_rel, d_rel);
    worst_out = fmax(worst_out, d_out);
    least_margin_random = fmin(least_margin_random, choice_margin(&cc));
    n_cases++;
    if (gc.alpha == cc.alpha) {
        CHECK_MSG(differ == 0, "%s: same exponent %d, yet %lld of %lld w^ differ", name, cc.alpha,
                  (long long)differ, (long long)n);
    } else {
        n_flips++;
#ifdef FRONTIER_EMULATED_CUDA
        CHECK_MSG(0, "%s: exponent %d on the device, %d on the cpu", name, gc.alpha, cc.alpha);
#endif
        double gap = fabs(cc.err[gc.alpha] - cc.err[cc.alpha]) / cc.err[cc.alpha];
        CHECK_MSG(gap <= FR_AWQ_ERR_TOL, "%s: exponent %d on the device, %d on the cpu, whose "
                  "errors differ by %.2e", name, gc.alpha, cc.alpha, gap);
        CHECK_MSG(d_rel <= FR_AWQ_FLIP_TOL && d_out <= FR_AWQ_FLIP_TOL,
                  "%s: after a flip rel_err differs by %.2e, out_rel_err by %.2e", name, d_rel,
                  d_out);
    }
    printf("%-22s %4lldx%-4lld %-4s%s%s%s: exponent %2d / %2d, errors %.1e, rel_err %.6g / %.6g, "
           "out_rel_err %.6g / %.6g, %lld of %lld w^ differ\n",
           name, (long long)rows, (long long)cols, gpu_dtype_name(dtype), dead ? " dead" : "",
           sq_only ? " msq" : "", plain ? " gauss" : "", cc.alpha, gc.alpha, werr, rel_c, rel_g, orel_c, orel_g,
           (long long)differ, (long long)n);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    gpu_tensor_free(&t);
    free(h);
    free(ma);
    free(msq);
    free(cpu);
    free(gpu);
    free(gpu2);
}

/* A NaN weight, statistics without activations, an H that makes every
 * output error non-finite: the CPU's code and message. */
static void check_awq_fails(const fr_registry *reg)
{
    fr_error err;
    const int64_t rows = 5, cols = 64, n = rows * cols;
    const fr_config_ref *ref = fr_registry_find_config(reg, "awq-int4-g32-sym");
    CHECK(ref != NULL);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    float w[5 * 64], out[5 * 64], h[64 * 64], ma[64];
    make_calib(cols, 2 * cols, 0, h, ma, NULL);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)gpu_normal(&rng);
    w[3 * cols + 17] = NAN;
    w[4 * cols + 2] = INFINITY;
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, sizeof w, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, sizeof out, &err));
    GPU_OK(fr_cuda_upload(w_dev, w, sizeof w, &err));
    static const char *what[] = {"non-finite", "no activations", "H with an Inf"};
    for (int variant = 0; variant < 3; variant++) {
        frontier_calib calib = {.cols = cols, .hessian = h,
                                .act_mean_abs = variant == 1 ? NULL : ma};
        if (variant == 1) {
            w[3 * cols + 17] = 0.5f;
            w[4 * cols + 2] = 0.25f;
            GPU_OK(fr_cuda_upload(w_dev, w, sizeof w, &err));
        }
        if (variant == 2) /* no exponent has a finite output error */
            h[5 * cols + 5] = INFINITY;
        frontier_call call;
        char cpu_msg[sizeof call.error];
        fr_call_init(&call, pool, 1, "awq", ref->cfg->name);
        int rc_cpu = q->quantize_cpu(ref->cfg, w, out, rows, cols, &calib, &call);
        snprintf(cpu_msg, sizeof cpu_msg, "%s", call.error);
        fr_call_release(&call);
        fr_call_init(&call, pool, 1, "awq", ref->cfg->name);
        int rc_gpu = q->quantize_cuda(ref->cfg, w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols,
                                      &calib, NULL, &call);
        CHECK_MSG(rc_cpu != FRONTIER_OK && rc_gpu == rc_cpu && !strcmp(cpu_msg, call.error),
                  "%s: cpu %d (%s), gpu %d (%s)", what[variant], rc_cpu, cpu_msg, rc_gpu,
                  call.error);
        printf("%s: cpu and gpu both fail (%d): %s\n", what[variant], rc_gpu, call.error);
        fr_call_release(&call);
    }
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
}

/*
 * Every 2-D tensor of a model with statistics in a calibration file
 * (data/stories260K and its calib.safetensors), under the listed awq
 * configurations: the CPU's and the device's exponent, the same bits where
 * they agree, flips counted; the least margin between the CPU's best and
 * second best exponent printed (what a flip would have to overcome).
 */
static void check_model(const fr_registry *reg, const char *model, const char *calib_path)
{
    static const char *names[] = {"awq-int4-g32-sym", "awq-int3-g64-asym", "awq-int4-g128-asym",
                                  "awq-int2-gC-sym"};
    fr_error err;
    fr_source *src = NULL;
    fr_calib_file *cf = NULL;
    GPU_OK(fr_source_open(model, &src, &err));
    GPU_OK(fr_calib_open(calib_path, &cf, &err));
    int pairs = 0, flips = 0, equal_ties = 0;
    double least_margin = INFINITY, model_err = 0.0;
    for (size_t t = 0; t < src->n_tensors; t++) {
        const fr_tensor *tensor = &src->tensors[t];
        if (tensor->ndim != 2 || tensor->skip_reason)
            continue;
        int64_t rows, cols;
        fr_tensor_matrix(tensor, &rows, &cols);
        fr_calib_stats st;
        GPU_OK(fr_calib_lookup(cf, tensor->name, cols, &st, &err));
        if (!st.found || !fr_awq_calib_ok(&st.calib, cols))
            continue;
        const int64_t n = rows * cols;
        float *w = malloc((size_t)n * sizeof *w), *cpu = malloc((size_t)n * sizeof *cpu),
              *gpu = malloc((size_t)n * sizeof *gpu);
        GPU_OK(fr_tensor_load_f32(src, tensor, w, &err));
        void *w_dev = NULL;
        float *hat_dev = NULL;
        GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * sizeof(float), &err));
        GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
        GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * sizeof(float), &err));
        for (size_t c = 0; c < sizeof names / sizeof names[0]; c++) {
            const fr_config_ref *ref = fr_registry_find_config(reg, names[c]);
            CHECK(ref != NULL);
            if (!ref)
                continue;
            const frontier_quantizer *q = fr_config_quantizer(reg, ref);
            fr_awq_choice cc, gc;
            frontier_call call;
            fr_call_init(&call, pool, 1, tensor->name, names[c]);
            call.quantizer = q->name;
            int rc = fr_awq_quantize_choice(ref->cfg, w, cpu, rows, cols, &st.calib, &call, &cc);
            CHECK_MSG(rc == FRONTIER_OK, "%s %s: quantize_cpu: %s", tensor->name, names[c],
                      call.error);
            fr_call_release(&call);
            GPU_OK(fr_cuda_awq(w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols, &st.calib,
                               fr_wrap_int_base(ref->cfg->impl), NULL, &gc, &err));
            GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
            int64_t differ = 0;
            for (int64_t i = 0; i < n; i++)
                differ += !gpu_same_value(cpu[i], gpu[i]);
            for (int k = 0; k < FR_AWQ_GRID; k++)
                model_err = fmax(model_err, fabs(gc.err[k] - cc.err[k]) / cc.err[k]);
            double margin = choice_margin(&cc);
            least_margin = fmin(least_margin, margin);
            for (int k = 0; k < FR_AWQ_GRID; k++)
                equal_ties += k != cc.alpha && cc.err[k] == cc.err[cc.alpha];
            pairs++;
            if (gc.alpha != cc.alpha) {
                flips++;
                printf("flip: %s %s: exponent %d on the cpu, %d on the device (margin %.2e)\n",
                       tensor->name, names[c], cc.alpha, gc.alpha, margin);
#ifdef FRONTIER_EMULATED_CUDA
                CHECK_MSG(0, "%s %s: the emulation chose another exponent", tensor->name,
                          names[c]);
#endif
            } else {
                CHECK_MSG(differ == 0, "%s %s: same exponent %d, %lld w^ differ", tensor->name,
                          names[c], cc.alpha, (long long)differ);
            }
        }
        fr_cuda_free(w_dev);
        fr_cuda_free(hat_dev);
        free(w);
        free(cpu);
        free(gpu);
        fr_tensor_release(src, tensor);
        fr_calib_release(cf, &st);
    }
    CHECK_MSG(pairs > 0, "no tensor of %s has awq's statistics in %s", model, calib_path);
    printf("%s: %d (tensor, configuration) pairs, %d exponent choices differ; exponent errors "
           "within %.2e; least margin between the best and the next exponent %.2e (%d exact "
           "ties with the best)\n",
           model, pairs, flips, model_err, least_margin, equal_ties);
    fr_calib_close(cf);
    fr_source_close(src);
}

#ifndef FRONTIER_EMULATED_CUDA
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The whole call on a layer-sized tensor (H uploaded from the host, the
 * 20 output errors, the search): the GPU's median of 3 after a warm-up,
 * the CPU reference once; the two choices printed. H from 64 tokens (rank
 * 64: awq needs no positive definite H) keeps the test's own set-up short. */
static void time_awq(const fr_registry *reg, const char *name, int64_t rows, int64_t cols)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK(ref != NULL);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    const int64_t n = rows * cols;
    float *w = malloc((size_t)n * sizeof *w), *cpu = malloc((size_t)n * sizeof *cpu),
          *gpu = malloc((size_t)n * sizeof *gpu);
    float *h = malloc((size_t)(cols * cols) * sizeof *h), *ma = malloc((size_t)cols * sizeof *ma);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(0.02 * gpu_normal(&rng) * (i % 97 == 3 ? 6.0 : 1.0));
    make_calib(cols, 64, 0, h, ma, NULL);
    frontier_calib calib = {.cols = cols, .hessian = h, .act_mean_abs = ma};
    const fr_int_params *ip = fr_wrap_int_base(ref->cfg->impl);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * sizeof(float), &err));
    fr_awq_choice gc, cc;
    double t[4];
    for (int r = 0; r < 4; r++) {
        double t0 = now_s();
        GPU_OK(fr_cuda_awq(w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols, &calib, ip, NULL, &gc,
                           &err));
        t[r] = now_s() - t0;
    }
    qsort(t + 1, 3, sizeof t[0], cmp_double);
    GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
    frontier_call call;
    fr_call_init(&call, pool, 1, "awq", name);
    call.quantizer = q->name;
    double t0 = now_s();
    int rc = fr_awq_quantize_choice(ref->cfg, w, cpu, rows, cols, &calib, &call, &cc);
    double t_cpu = now_s() - t0;
    CHECK_MSG(rc == FRONTIER_OK, "%s: quantize_cpu: %s", name, call.error);
    fr_call_release(&call);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
        differ += !gpu_same_value(cpu[i], gpu[i]);
    CHECK_MSG(gc.alpha != cc.alpha || differ == 0, "%s %lldx%lld: same exponent, %lld w^ differ",
              name, (long long)rows, (long long)cols, (long long)differ);
    printf("time %s %lldx%lld: gpu %.1f ms (median of 3, the whole call), cpu %.1f ms (%d "
           "threads); exponent %d / %d, %lld of %lld w^ differ\n",
           name, (long long)rows, (long long)cols, 1e3 * t[2], 1e3 * t_cpu, fr_pool_threads(pool),
           cc.alpha, gc.alpha, (long long)differ, (long long)n);
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    free(w);
    free(cpu);
    free(gpu);
    free(h);
    free(ma);
}
#endif

int main(int argc, char **argv)
{
    gpu_require_device();
    fr_error err;
    rng = gpu_seed();
    GPU_OK(fr_pool_create(0, &pool, &err));
    fr_registry reg;
    GPU_OK(fr_registry_init(&reg, &err));
    static const struct {
        const char *name;
        int64_t rows, cols;
        int dtype, dead, sq_only, plain;
    } c[] = {
        {"awq-int4-g32-sym", 64, 96, FRONTIER_DTYPE_F32, 0, 0, 0},
        {"awq-int4-g32-sym", 64, 96, FRONTIER_DTYPE_F32, 0, 0, 1},
        {"awq-int3-g64-asym", 48, 200, FRONTIER_DTYPE_BF16, 1, 0, 0},
        {"awq-int3-g64-asym", 48, 200, FRONTIER_DTYPE_BF16, 1, 0, 1},
        {"awq-int2-gC-sym", 24, 300, FRONTIER_DTYPE_F16, 0, 0, 1},
        {"awq-int4-g128-asym", 70, 256, FRONTIER_DTYPE_F32, 0, 1, 0},
        {"awq-int4-g128-sym", 70, 256, FRONTIER_DTYPE_F16, 0, 1, 1},
        {"awq-int8-g256-sym", 20, 512, FRONTIER_DTYPE_BF16, 1, 0, 1},
        {"awq-int3-gC-asym", 33, 64, FRONTIER_DTYPE_F32, 1, 1, 0},
        {"awq-int2-g32-asym", 130, 160, FRONTIER_DTYPE_F32, 0, 0, 1},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++)
        check_awq(&reg, c[k].name, c[k].rows, c[k].cols, c[k].dtype, c[k].dead, c[k].sq_only,
                  c[k].plain);
    check_awq_fails(&reg);
    if (argc == 3)
        check_model(&reg, argv[1], argv[2]);
#ifndef FRONTIER_EMULATED_CUDA
    time_awq(&reg, "awq-int4-g128-sym", 4096, 4096);
#endif
    printf("AWQ GPU vs CPU: %d cases, %d exponent choices differ; worst relative difference "
           "%.2e (exponent errors), %.2e (rel_err), %.2e (out_rel_err); least margin between "
           "the best and the next exponent %.2e\n",
           n_cases, n_flips, worst_err, worst_rel, worst_out, least_margin_random);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_awq");
}
