/*
 * mse-, imat- and hqq- on the GPU against the CPU reference (docs/gpu.md,
 * "mse-, imat- and hqq- on the GPU"): each family's quantize_cuda
 * (kernels/clipsearch.cu, kernels/hqq.cu) against its quantize_cpu into
 * NaN-poisoned outputs, on f32, bf16 and f16 tensors of gpu_test.h's mix
 * (zero rows and groups, negative-only rows, outliers, subnormals,
 * repeats), shapes with a partial last group, sym and asym, g32..g256 and
 * gC; imat with each source of its column weights (act_sq_mean, the
 * Hessian's diagonal, act_abs_mean squared). Every w^ must be the CPU's bit
 * for bit (+0 and -0 equal); the count of differing reconstructions and the
 * worst relative rel_err difference are printed. A NaN or an Inf weight is
 * refused by both with the same code and the same message; imat without
 * statistics likewise. Without a device: exit 77; gpu_emu.clip runs the
 * kernels in the CPU emulation (where the device's pow is the host's, so
 * only the device run shows CUDA's pow: docs/gpu.md).
 */
#include "gpu_quantize.h"

#include <time.h>

#include "frontier/exec/metrics.h"
#include "frontier/exec/builtins.h"
#include "quantizers/hqq.h"
#include "kernels/clipsearch.h"

static fr_pool *pool;
static uint64_t rng;
static int64_t total_differ = 0, total_elems = 0;
static double worst_rel = 0.0;

/* which statistics imat gets: 0 act_sq_mean, 1 a Hessian and act_abs_mean
 * (the Hessian's diagonal wins), 2 act_abs_mean only */
static void make_calib(frontier_calib *calib, int64_t cols, int kind, float **owned)
{
    memset(calib, 0, sizeof *calib);
    calib->cols = cols;
    float *v = malloc((size_t)(kind == 1 ? cols * cols + cols : cols) * sizeof *v);
    if (kind == 1) {
        for (int64_t i = 0; i < cols * cols + cols; i++)
            v[i] = (float)(0.01 * gpu_normal(&rng));
        for (int64_t j = 0; j < cols; j++)
            v[j * cols + j] = (float)exp(2.0 * gpu_normal(&rng));
        calib->hessian = v;
        calib->act_mean_abs = v + cols * cols;
    } else {
        for (int64_t j = 0; j < cols; j++)
            v[j] = (float)exp(2.0 * gpu_normal(&rng)) * (j % 23 == 4 ? 0.0f : 1.0f);
        if (kind == 0)
            calib->act_mean_sq = v;
        else
            calib->act_mean_abs = v;
    }
    *owned = v;
}

static void check_one(const fr_registry *reg, const char *name, int64_t rows, int64_t cols,
                      int dtype, int calib_kind)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    CHECK_MSG(fr_quantizer_has_cuda(q), "%s: %s has no quantize_cuda", name, q->name);
    const int64_t n = rows * cols;
    gpu_tensor t;
    gpu_tensor_random(&t, rows, cols, dtype, &rng, 0);
    float *cpu = malloc((size_t)n * sizeof *cpu), *gpu = malloc((size_t)n * sizeof *gpu);
    frontier_calib calib;
    float *owned = NULL;
    make_calib(&calib, cols, calib_kind, &owned);
    gpu_quantize_both(reg, ref, &t, &calib, pool, cpu, gpu);
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!gpu_same_value(cpu[i], gpu[i])) {
            if (first < 0)
                first = i;
            differ++;
        }
    frontier_error_sums sc, sg;
    fr_error_sums_init(&sc);
    fr_error_sums_init(&sg);
    GPU_OK(fr_error_sums_accumulate(t.f32, cpu, n, pool, &sc, &err));
    GPU_OK(fr_error_sums_accumulate(t.f32, gpu, n, pool, &sg, &err));
    double rel_c = sc.sq_ref > 0 ? sqrt(sc.sq_err / sc.sq_ref) : 0.0;
    double rel_g = sg.sq_ref > 0 ? sqrt(sg.sq_err / sg.sq_ref) : 0.0;
    double d_rel = rel_c > 0 ? fabs(rel_g - rel_c) / rel_c : fabs(rel_g);
    if (!(d_rel <= worst_rel))
        worst_rel = d_rel;
    total_differ += differ;
    total_elems += n;
    static const char *kinds[] = {"act_sq_mean", "hessian", "act_abs_mean"};
    printf("%-22s %4lldx%-5lld %-4s%s%s: rel_err %.9g / %.9g, %lld of %lld w^ differ\n", name,
           (long long)rows, (long long)cols, gpu_dtype_name(dtype),
           !strncmp(name, "imat-", 5) ? " " : "", !strncmp(name, "imat-", 5) ? kinds[calib_kind] : "",
           rel_c, rel_g, (long long)differ, (long long)n);
    CHECK_MSG(differ == 0, "%s %lldx%lld %s: %lld w^ differ from the CPU's (first at %lld: cpu %a, "
              "gpu %a)", name, (long long)rows, (long long)cols, gpu_dtype_name(dtype),
              (long long)differ, (long long)first, first >= 0 ? cpu[first] : 0.0,
              first >= 0 ? gpu[first] : 0.0);
    gpu_tensor_free(&t);
    free(cpu);
    free(gpu);
    free(owned);
}

/* Refusals: a non-finite weight (both say where, same code) and imat
 * without statistics. */
static void check_refusal(const fr_registry *reg, const char *name, int nonfinite)
{
    enum { ROWS = 5, COLS = 70 };
    float w[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        w[i] = (float)gpu_normal(&rng);
    if (nonfinite) {
        w[3 * COLS + 41] = nonfinite == 1 ? NAN : -INFINITY;
        w[4 * COLS + 2] = NAN;
    }
    float act[COLS];
    for (int j = 0; j < COLS; j++)
        act[j] = 1.0f;
    frontier_calib calib = {.cols = COLS, .act_mean_sq = act};
    frontier_calib empty = {.cols = COLS};
    gpu_check_refusal(reg, name, w, ROWS, COLS, nonfinite ? &calib : &empty, pool);
}

/* fr_hqq_pow on the device against the host: every float input of the
 * shrink (b = |e| + 1e-8 >= 1e-8f, up to FLT_MAX), compared through
 * digests of 4096 inputs each; FRONTIER_GPU_TEST_QUICK (the emulation):
 * three spans of 2^16 inputs (near 1e-8, 1 and 1e4). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct pow_job {
    uint32_t first;
    uint64_t count;
    uint64_t *digest;
} pow_job;

static void pow_range(void *arg, int64_t begin, int64_t end)
{
    pow_job *job = arg;
    for (int64_t k = begin; k < end; k++) {
        uint64_t sum = 0;
        for (uint64_t i = (uint64_t)k * FR_HQQ_DIGEST_SPAN;
             i < (uint64_t)(k + 1) * FR_HQQ_DIGEST_SPAN && i < job->count; i++) {
            uint32_t u = (uint32_t)(job->first + i);
            sum += fr_hqq_pow_mix(u, fr_f32_to_bits(fr_hqq_pow(fr_bits_to_f32(u))));
        }
        job->digest[k] = sum;
    }
}

static void check_pow(void)
{
    fr_error err;
    const char *quick = getenv("FRONTIER_GPU_TEST_QUICK");
    uint32_t lo = fr_f32_to_bits(0.0f + 1e-8f), hi = fr_f32_to_bits(3.40282347e38f);
    uint32_t spans[3][2] = {{lo, 1u << 16}, {fr_f32_to_bits(1.0f) - (1u << 15), 1u << 16},
                            {fr_f32_to_bits(1e4f), 1u << 16}};
    int n_spans = 3;
    if (!(quick && *quick && strcmp(quick, "0"))) {
        spans[0][0] = lo;
        spans[0][1] = hi - lo + 1;
        n_spans = 1;
    }
    uint64_t inputs = 0, bad = 0, blocks = 0;
    double t0 = now_s();
    for (int sp = 0; sp < n_spans; sp++) {
        uint64_t count = spans[sp][1];
        uint64_t n = (count + FR_HQQ_DIGEST_SPAN - 1) / FR_HQQ_DIGEST_SPAN;
        uint64_t *dev = malloc((size_t)n * sizeof *dev), *host = malloc((size_t)n * sizeof *host);
        GPU_OK(fr_cuda_hqq_pow_digest(spans[sp][0], count, dev, &err));
        pow_job job = {spans[sp][0], count, host};
        fr_parallel_for(pool, (int64_t)n, 16, pow_range, &job);
        for (uint64_t k = 0; k < n; k++)
            if (dev[k] != host[k]) {
                if (bad < 5)
                    printf("fr_hqq_pow: device and host differ in inputs 0x%08llx..+%d\n",
                           (unsigned long long)(spans[sp][0] + k * FR_HQQ_DIGEST_SPAN),
                           FR_HQQ_DIGEST_SPAN);
                bad++;
            }
        inputs += count;
        blocks += n;
        free(dev);
        free(host);
    }
    printf("fr_hqq_pow: %llu float inputs%s, %llu of %llu digests of %d inputs differ between "
           "device and host (%.1f s)\n",
           (unsigned long long)inputs, n_spans == 1 ? " (every float in [1e-8, FLT_MAX])" : "",
           (unsigned long long)bad, (unsigned long long)blocks, FR_HQQ_DIGEST_SPAN,
           now_s() - t0);
    CHECK_MSG(bad == 0, "fr_hqq_pow: %llu digests differ", (unsigned long long)bad);
}

int main(void)
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
        int calib;
    } c[] = {
        {"mse-int4-g128-sym", 40, 300, 0},  {"mse-int3-g32-asym", 37, 100, 0},
        {"mse-int2-gC-sym", 24, 250, 0},    {"mse-int8-g256-asym", 9, 600, 0},
        {"mse-int2-g64-asym", 33, 130, 0},  {"imat-int4-g128-sym", 40, 300, 0},
        {"imat-int3-g32-asym", 37, 100, 1}, {"imat-int2-gC-asym", 24, 250, 2},
        {"imat-int2-g64-sym", 33, 130, 1},  {"hqq-int2-g32-asym", 37, 100, 0},
        {"hqq-int3-g64-asym", 33, 130, 0},  {"hqq-int4-g128-asym", 40, 300, 0},
        {"hqq-int2-gC-asym", 24, 250, 0},   {"hqq-int8-g256-asym", 9, 600, 0},
    };
    static const int dtypes[] = {FRONTIER_DTYPE_F32, FRONTIER_DTYPE_BF16, FRONTIER_DTYPE_F16};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++)
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            check_one(&reg, c[k].name, c[k].rows, c[k].cols, dtypes[d], c[k].calib);
    check_refusal(&reg, "mse-int4-g32-sym", 1);
    check_refusal(&reg, "imat-int3-g64-asym", 2);
    check_refusal(&reg, "hqq-int2-g32-asym", 1);
    check_refusal(&reg, "imat-int4-g128-sym", 0);
    check_pow();
    printf("mse/imat/hqq GPU vs CPU: %lld of %lld reconstructions differ, worst relative "
           "rel_err difference %.2e (required: 0)\n",
           (long long)total_differ, (long long)total_elems, worst_rel);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_clip");
}
