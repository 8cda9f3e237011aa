/*
 * ggml- and imat-ggml- on the GPU against the CPU reference (docs/gpu.md,
 * "ggml- and imat-ggml- on the GPU"): every configuration of the ggml and
 * ggml_imat families, its quantize_cuda (kernels/ggml.cu) against its
 * quantize_cpu into NaN-poisoned outputs, on
 *
 * - f32, bf16 and f16 tensors of gpu_test.h's mix (zero rows and groups,
 *   negative-only rows, outliers, subnormals, repeats) whose rows are whole
 *   super-blocks, or end in a short block (cols not a multiple of 256 or
 *   32), or are shorter than one block;
 * - every row kind of tests/quantize/ggml_rows.h (the rows that take the
 *   searches' unusual branches: zero sub-blocks, constants, ties, ramps,
 *   scales from 1e-40 to 1e18, where fp16 steps overflow to Inf);
 * - an all-zero tensor;
 * - (ggml-mxfp4) blocks whose largest magnitude lies a few ulps below a
 *   power of two, where the shared exponent is floorf(log2f(amax)) and the
 *   device computes it otherwise (fr_ggml_floor_log2f);
 *
 * imat-ggml- with each source of its importance (act_sq_mean, the
 * Hessian's diagonal, act_abs_mean squared). Every w^ must be the CPU's bit
 * for bit (+0 and -0 equal, NaN equal to NaN: a decoded Inf step times a
 * zero code); the count of differing reconstructions is printed. A NaN or
 * Inf weight is refused by both with the same code and message, and so is
 * imat-ggml- without statistics. Without a device: exit 77; gpu_emu.ggml
 * runs the same cases in the CPU emulation (a few seconds).
 */
#include "gpu_quantize.h"

#include "frontier/exec/builtins.h"
#include "quantize/ggml_rows.h"

static fr_pool *pool;
static uint64_t rng;
static int64_t total_differ = 0, total_elems = 0, total_cases = 0;

/* A tensor of f32 values already given (the ggml rows, the mxfp4 blocks). */
static void tensor_of(gpu_tensor *t, const float *v, int64_t rows, int64_t cols)
{
    t->rows = rows;
    t->cols = cols;
    t->dtype = FRONTIER_DTYPE_F32;
    t->bytes = malloc((size_t)(rows * cols) * sizeof(float));
    t->f32 = malloc((size_t)(rows * cols) * sizeof(float));
    memcpy(t->bytes, v, (size_t)(rows * cols) * sizeof(float));
    memcpy(t->f32, v, (size_t)(rows * cols) * sizeof(float));
}

/* imat-ggml-'s statistics: 0 act_sq_mean, 1 a Hessian and act_abs_mean
 * (the Hessian's diagonal wins), 2 act_abs_mean only */
static void make_calib(frontier_calib *calib, int64_t cols, int kind, float **owned)
{
    memset(calib, 0, sizeof *calib);
    calib->cols = cols;
    if (kind == 1 && cols > 1024) /* a Hessian of 1024^2 floats says as much */
        kind = 2;
    float *v = malloc((size_t)(kind == 1 ? cols * cols + cols : cols) * sizeof *v);
    if (kind == 1) {
        for (int64_t i = 0; i < cols * cols + cols; i++)
            v[i] = (float)(0.01 * gpu_normal(&rng));
        for (int64_t j = 0; j < cols; j++)
            v[j * cols + j] = (float)exp(2.0 * gpu_normal(&rng)) * (j % 19 == 3 ? 0.0f : 1.0f);
        calib->hessian = v;
        calib->act_mean_abs = v + cols * cols;
    } else {
        fr_rows_importance(v, cols, (int)(fr_test_splitmix64(&rng) % 4), &rng);
        if (kind == 0)
            calib->act_mean_sq = v;
        else
            calib->act_mean_abs = v;
    }
    *owned = v;
}

static int same_or_nan(float a, float b)
{
    return gpu_same_value(a, b) || (a != a && b != b);
}

/* quantize_cpu and quantize_cuda of one configuration on t: every w^ equal. */
static void compare(const fr_registry *reg, const fr_config_ref *ref, const gpu_tensor *t,
                    int calib_kind, const char *what)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    const char *name = ref->cfg->name;
    const int64_t rows = t->rows, cols = t->cols, n = rows * cols;
    float *cpu = malloc((size_t)n * sizeof *cpu), *gpu = malloc((size_t)n * sizeof *gpu);
    frontier_calib calib;
    float *owned = NULL;
    const int weighted = (q->flags & FRONTIER_Q_NEEDS_ACT_STATS) != 0;
    if (weighted)
        make_calib(&calib, cols, calib_kind, &owned);
    gpu_quantize_both(reg, ref, t, weighted ? &calib : NULL, pool, cpu, gpu);
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!same_or_nan(cpu[i], gpu[i]) || fr_f32_to_bits(gpu[i]) == GPU_POISON) {
            if (first < 0)
                first = i;
            differ++;
        }
    total_differ += differ;
    total_elems += n;
    total_cases++;
    printf("%-18s %5lldx%-5lld %-4s %-13s: %lld of %lld w^ differ\n", name, (long long)rows,
               (long long)cols, gpu_dtype_name(t->dtype), what, (long long)differ, (long long)n);
    CHECK_MSG(differ == 0, "%s %lldx%lld %s %s: %lld w^ differ from the CPU's (first at row %lld, "
              "column %lld: cpu %a, gpu %a)", name, (long long)rows, (long long)cols,
              gpu_dtype_name(t->dtype), what, (long long)differ,
              (long long)(first >= 0 ? first / cols : -1), (long long)(first >= 0 ? first % cols : -1),
              first >= 0 ? cpu[first] : 0.0, first >= 0 ? gpu[first] : 0.0);
    free(cpu);
    free(gpu);
    free(owned);
}

/* Rows of every ggml_rows.h kind (cols columns each). */
static void rows_tensor(gpu_tensor *t, int64_t cols)
{
    float *v = malloc((size_t)(FR_ROWS_KINDS * cols) * sizeof *v);
    for (int k = 0; k < FR_ROWS_KINDS; k++)
        fr_rows_fill(v + k * cols, cols, k, &rng);
    tensor_of(t, v, FR_ROWS_KINDS, cols);
    free(v);
}

/* MXFP4 blocks (one row of 32 each) whose largest magnitude is k ulps
 * below 2^e, for e in [-40, 40] and k in [0, 16): the exponent's floor is
 * taken just there. */
static void mxfp4_tensor(gpu_tensor *t)
{
    enum { E_LO = -40, E_HI = 40, KS = 16 };
    const int64_t rows = (E_HI - E_LO + 1) * KS;
    float *v = malloc((size_t)(rows * 32) * sizeof *v);
    for (int e = E_LO; e <= E_HI; e++)
        for (int k = 0; k < KS; k++) {
            float amax = fr_bits_to_f32(fr_f32_to_bits(ldexpf(1.0f, e)) - (uint32_t)k);
            float *x = v + ((int64_t)(e - E_LO) * KS + k) * 32;
            for (int j = 0; j < 32; j++)
                x[j] = amax * (float)(0.99 * (2.0 * fr_test_uniform_open(&rng) - 1.0));
            x[(e + k) & 31] = (k % 2 ? -amax : amax);
        }
    tensor_of(t, v, rows, 32);
    free(v);
}

/* Refusals: a non-finite weight (both say where, same code), imat-ggml-
 * without statistics. */
static void check_refusal(const fr_registry *reg, const char *name, int nonfinite)
{
    enum { ROWS = 5, COLS = 300 };
    static float w[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        w[i] = (float)gpu_normal(&rng);
    if (nonfinite) {
        w[4 * COLS + 2] = NAN; /* a later row: the first in element order is named */
        w[3 * COLS + 271] = nonfinite == 1 ? NAN : -INFINITY;
    }
    float act[COLS];
    for (int j = 0; j < COLS; j++)
        act[j] = 1.0f + (float)j;
    frontier_calib calib = {.cols = COLS, .act_mean_sq = act};
    frontier_calib empty = {.cols = COLS};
    gpu_check_refusal(reg, name, w, ROWS, COLS, nonfinite ? &calib : &empty, pool);
}

/* Every case of one configuration. */
static void check_config(const fr_registry *reg, const fr_config_ref *ref)
{
    static const struct {
        int64_t rows, cols;
    } shapes[] = {{3, 4096}, {7, 300}, {5, 37}, {2, 1000}, {4, 16}, {1, 512}, {65, 256},
                  {3, 160}}; /* 160: the super-block types fall back to a legacy type */
    static const int dtypes[] = {FRONTIER_DTYPE_F32, FRONTIER_DTYPE_BF16, FRONTIER_DTYPE_F16};
    int calib_kind = 0;
    gpu_tensor t;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++) {
            gpu_tensor_random(&t, shapes[s].rows, shapes[s].cols, dtypes[d], &rng, 0);
            compare(reg, ref, &t, calib_kind++ % 3, "random");
            gpu_tensor_free(&t);
        }
    rows_tensor(&t, 512);
    compare(reg, ref, &t, calib_kind++ % 3, "ggml rows");
    gpu_tensor_free(&t);
    rows_tensor(&t, 300);
    compare(reg, ref, &t, calib_kind++ % 3, "ggml rows");
    gpu_tensor_free(&t);
    rows_tensor(&t, 160);
    compare(reg, ref, &t, calib_kind++ % 3, "ggml rows");
    gpu_tensor_free(&t);
    gpu_tensor_random(&t, 4, 600, FRONTIER_DTYPE_BF16, &rng, 1);
    compare(reg, ref, &t, calib_kind++ % 3, "all zero");
    gpu_tensor_free(&t);
    if (!strcmp(ref->cfg->name, "ggml-mxfp4")) {
        mxfp4_tensor(&t);
        compare(reg, ref, &t, 0, "amax < 2^e");
        gpu_tensor_free(&t);
    }
}

int main(void)
{
    gpu_require_device();
    fr_error err;
    rng = gpu_seed();
    GPU_OK(fr_pool_create(0, &pool, &err));
    fr_registry reg;
    GPU_OK(fr_registry_init(&reg, &err));
    int n_ggml = 0, n_imat = 0;
    for (size_t c = 0; c < reg.n_configs; c++) {
        const frontier_quantizer *q = fr_config_quantizer(&reg, &reg.configs[c]);
        const int imat = !strcmp(q->name, "ggml_imat");
        if (strcmp(q->name, "ggml") && !imat)
            continue;
        CHECK_MSG(fr_quantizer_has_cuda(q), "%s: %s has no quantize_cuda", reg.configs[c].cfg->name,
                  q->name);
        check_config(&reg, &reg.configs[c]);
        n_ggml += !imat;
        n_imat += imat;
    }
    CHECK_MSG(n_ggml == 13 && n_imat == 7, "%d ggml and %d imat-ggml configurations (13 and 7)",
              n_ggml, n_imat);
    check_refusal(&reg, "ggml-q4_k", 1);
    check_refusal(&reg, "ggml-q8_0", 2);
    check_refusal(&reg, "imat-ggml-iq4_xs", 1);
    check_refusal(&reg, "imat-ggml-q3_k", 0);
    printf("ggml/imat-ggml GPU vs CPU: %d + %d configurations, %lld cases, %lld of %lld "
           "reconstructions differ (required: 0)\n",
           n_ggml, n_imat, (long long)total_cases, (long long)total_differ,
           (long long)total_elems);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_ggml");
}
