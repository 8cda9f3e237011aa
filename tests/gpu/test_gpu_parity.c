/*
 * GPU parity: every built-in data-free configuration, on shapes
 * with short last groups, odd sizes, single rows and partial 128 x 128
 * tiles, in f32, f16 and bf16, on fresh random inputs each run:
 *
 *  - quantize_cuda's reconstruction equals quantize_cpu's bit for bit
 *    (+0 and -0 alike), every element written (outputs are NaN-poisoned
 *    before each launch);
 *  - the device error sums of that reconstruction equal the CPU's
 *    (frontier/exec/metrics.c) bit for bit;
 *  - the fused sweep of all configurations at once, and each family's
 *    sweep_cuda, agree with the CPU's sums to 1e-6 relative, and so do
 *    rel_err and cosine;
 *  - non-finite weights are counted.
 */
#include "gpu_test.h"

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/builtins.h"

#define TOL 1e-6

static fr_pool *pool;
static uint64_t run_seed;
static long n_compared_elements, n_compared_configs;

static void compare_sums(const char *what, const char *cfg, const char *where,
                         const frontier_error_sums *gpu, const frontier_error_sums *cpu,
                         double tol)
{
    CHECK_MSG(gpu_close(gpu->sq_err, cpu->sq_err, tol) && gpu_close(gpu->sq_ref, cpu->sq_ref, tol) &&
                  gpu_close(gpu->sq_hat, cpu->sq_hat, tol) && gpu_close(gpu->dot, cpu->dot, tol) &&
                  gpu_close(gpu->max_abs_err, cpu->max_abs_err, tol),
              "%s %s %s: sums differ: sq_err %.17g/%.17g sq_ref %.17g/%.17g sq_hat %.17g/%.17g "
              "dot %.17g/%.17g max %.17g/%.17g",
              what, cfg, where, gpu->sq_err, cpu->sq_err, gpu->sq_ref, cpu->sq_ref, gpu->sq_hat,
              cpu->sq_hat, gpu->dot, cpu->dot, gpu->max_abs_err, cpu->max_abs_err);
    fr_metrics mg, mc;
    fr_metrics_from_sums(gpu, &mg);
    fr_metrics_from_sums(cpu, &mc);
    CHECK_MSG((isinf(mg.rel_err) && isinf(mc.rel_err)) || gpu_close(mg.rel_err, mc.rel_err, tol),
              "%s %s %s: rel_err %.17g vs cpu %.17g", what, cfg, where, mg.rel_err, mc.rel_err);
    CHECK_MSG(fabs(mg.cosine - mc.cosine) <= tol, "%s %s %s: cosine %.17g vs cpu %.17g", what, cfg,
              where, mg.cosine, mc.cosine);
}

/* The device buffers and host scratch of one tensor's comparisons. */
typedef struct parity_bufs {
    void *w_dev;
    float *hat_dev, *hat_cpu, *hat_gpu;
    frontier_error_sums *cpu, *fused, *family_sums;
    const frontier_config **family_cfgs;
    size_t *family_idx;
} parity_bufs;

/* One configuration: quantize_cpu (the reference, its sums into *cpu), then
 * the kernel into a poisoned output, equal bit for bit; then the device
 * reduction of that same reconstruction, equal to the CPU's bits. */
static void check_config(const fr_registry *reg, const fr_config_ref *ref, const gpu_tensor *t,
                         const char *where, const parity_bufs *b, frontier_error_sums *cpu)
{
    fr_error err;
    const int64_t n = t->rows * t->cols;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    const char *name = ref->cfg->name;
    frontier_call call;

    fr_call_init(&call, pool, run_seed, "parity", name);
    call.quantizer = q->name;
    int rc = q->quantize_cpu(ref->cfg, t->f32, b->hat_cpu, t->rows, t->cols, NULL, &call);
    CHECK_MSG(rc == FRONTIER_OK, "%s %s: quantize_cpu failed: %s", name, where, call.error);
    fr_call_release(&call);
    GPU_OK(fr_error_sums_accumulate(t->f32, b->hat_cpu, n, pool, cpu, &err));

    GPU_OK(fr_cuda_fill32(b->hat_dev, GPU_POISON, (size_t)n, NULL, &err));
    GPU_OK(fr_cuda_quantize(reg, ref, b->w_dev, t->dtype, b->hat_dev, t->rows, t->cols, NULL,
                            &err));
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(b->hat_gpu, b->hat_dev, (size_t)n * sizeof(float), &err));
    const float *hat_cpu = b->hat_cpu, *hat_gpu = b->hat_gpu;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        if (!gpu_same_value(hat_gpu[i], hat_cpu[i])) {
            if (first < 0)
                first = i;
            bad++;
        }
    }
    if (first >= 0) {
        int64_t r = first / t->cols, col = first % t->cols;
        CHECK_MSG(0,
                  "%s %s: %lld of %lld reconstructions differ; first at row %lld col %lld: "
                  "w %.9g (0x%08x) cpu %.9g (0x%08x) gpu %.9g (0x%08x)%s",
                  name, where, (long long)bad, (long long)n, (long long)r, (long long)col,
                  t->f32[first], fr_f32_to_bits(t->f32[first]), hat_cpu[first],
                  fr_f32_to_bits(hat_cpu[first]), hat_gpu[first], fr_f32_to_bits(hat_gpu[first]),
                  fr_f32_to_bits(hat_gpu[first]) == GPU_POISON ? " (never written)" : "");
    }
    n_compared_elements += n;
    n_compared_configs++;

    frontier_error_sums unfused;
    GPU_OK(fr_cuda_error_sums(b->w_dev, t->dtype, b->hat_dev, n, &unfused, NULL, &err));
    compare_sums("unfused", name, where, &unfused, cpu, first < 0 ? 0.0 : TOL);
}

/* Each quantizer's own sweep_cuda, with that quantizer's configurations
 * (the registry's entries, so a new family is compared without a line here). */
static void check_family_sweeps(const fr_registry *reg, const fr_config_ref *const *refs,
                                size_t n_refs, const gpu_tensor *t, const char *where,
                                const parity_bufs *b)
{
    for (size_t e = 0; e < reg->n_entries; e++) {
        const frontier_quantizer *q = reg->entries[e].q;
        size_t m = 0;
        for (size_t c = 0; c < n_refs; c++) {
            if (refs[c]->quantizer == e) {
                b->family_idx[m] = c;
                b->family_cfgs[m++] = refs[c]->cfg;
            }
        }
        if (!m)
            continue;
        if (!(q->quantize_cuda && q->sweep_cuda && (q->flags & FRONTIER_Q_HAS_CUDA))) {
            CHECK_MSG(0, "quantizer '%s' does not offer its kernels "
                         "(quantize_cuda/sweep_cuda/flags)", q->name);
            continue;
        }
        frontier_call call;
        fr_call_init(&call, pool, run_seed, "parity", q->name);
        int rc = q->sweep_cuda(b->family_cfgs, m, b->w_dev, t->dtype, t->rows, t->cols, NULL,
                               b->family_sums, NULL, &call);
        CHECK_MSG(rc == FRONTIER_OK, "%s sweep_cuda %s failed: %s", q->name, where, call.error);
        fr_call_release(&call);
        for (size_t k = 0; k < m; k++)
            compare_sums("family sweep", b->family_cfgs[k]->name, where, &b->family_sums[k],
                         &b->cpu[b->family_idx[k]], TOL);
    }
}

static void check_tensor(const fr_registry *reg, const fr_config_ref *const *refs, size_t n_refs,
                         const gpu_tensor *t)
{
    fr_error err;
    const int64_t n = t->rows * t->cols;
    char where[96];
    snprintf(where, sizeof where, "[%lldx%lld %s]", (long long)t->rows, (long long)t->cols,
             gpu_dtype_name(t->dtype));
    parity_bufs b = {
        .hat_cpu = malloc((size_t)n * sizeof(float)),
        .hat_gpu = malloc((size_t)n * sizeof(float)),
        .cpu = calloc(n_refs, sizeof *b.cpu),
        .fused = calloc(n_refs, sizeof *b.fused),
        .family_sums = calloc(n_refs, sizeof *b.family_sums),
        .family_cfgs = calloc(n_refs, sizeof *b.family_cfgs),
        .family_idx = calloc(n_refs, sizeof *b.family_idx),
    };
    if (!b.hat_cpu || !b.hat_gpu || !b.cpu || !b.fused || !b.family_cfgs || !b.family_idx ||
        !b.family_sums) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
    GPU_OK(fr_cuda_malloc(&b.w_dev, (size_t)n * gpu_dtype_size(t->dtype), &err));
    GPU_OK(fr_cuda_malloc((void **)&b.hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(b.w_dev, t->bytes, (size_t)n * gpu_dtype_size(t->dtype), &err));

    for (size_t c = 0; c < n_refs; c++)
        check_config(reg, refs[c], t, where, &b, &b.cpu[c]);

    /* every configuration in one fused sweep */
    double sq_norm = 0.0;
    int64_t nonfinite = -1;
    GPU_OK(fr_cuda_sweep(reg, refs, n_refs, b.w_dev, t->dtype, t->rows, t->cols, b.fused,
                         &sq_norm, &nonfinite, NULL, &err));
    CHECK_MSG(nonfinite == 0, "fused %s: %lld non-finite weights reported", where,
              (long long)nonfinite);
    for (size_t c = 0; c < n_refs; c++)
        compare_sums("fused", refs[c]->cfg->name, where, &b.fused[c], &b.cpu[c], TOL);

    check_family_sweeps(reg, refs, n_refs, t, where, &b);

    fr_cuda_free(b.w_dev);
    fr_cuda_free(b.hat_dev);
    free(b.hat_cpu);
    free(b.hat_gpu);
    free(b.cpu);
    free(b.fused);
    free(b.family_cfgs);
    free(b.family_idx);
    free(b.family_sums);
}

/* A NaN and an Inf are counted and the fused kernel says where. */
static void check_nonfinite(const fr_registry *reg, const fr_config_ref *const *refs, size_t n_refs)
{
    fr_error err;
    const int64_t rows = 5, cols = 300, n = rows * cols;
    float *w = calloc((size_t)n, sizeof *w);
    frontier_error_sums *sums = calloc(n_refs, sizeof *sums);
    void *w_dev = NULL;
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(i % 7) - 3.0f;
    w[777] = fr_bits_to_f32(0x7fc00000u);
    w[1201] = fr_bits_to_f32(0xff800000u);
    GPU_OK(fr_cuda_malloc(&w_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, w, (size_t)n * sizeof(float), &err));
    int64_t nonfinite = 0;
    double sq = 0.0;
    GPU_OK(fr_cuda_sweep(reg, refs, n_refs, w_dev, FRONTIER_DTYPE_F32, rows, cols, sums, &sq,
                         &nonfinite, NULL, &err));
    CHECK_MSG(nonfinite == 2, "non-finite weights: counted %lld, expected 2", (long long)nonfinite);
    fr_cuda_free(w_dev);
    free(w);
    free(sums);
}

int main(void)
{
    fr_error err;
    fr_registry reg;
    gpu_require_device();
    run_seed = gpu_seed();
    uint64_t rng = run_seed;
    GPU_OK(fr_pool_create(0, &pool, &err));
    GPU_OK(fr_registry_init(&reg, &err));

    /* every configuration of a kernel family (quantizers/families.h,
     * FR_BUILTIN_FAMILIES) must have a kernel; the host families run on the CPU */
    const fr_config_ref **refs = calloc(reg.n_configs ? reg.n_configs : 1, sizeof *refs);
    size_t n_refs = 0, n_builtin = 0;
    for (size_t c = 0; c < reg.n_configs; c++) {
        const fr_config_ref *ref = &reg.configs[c];
        const frontier_quantizer *q = fr_config_quantizer(&reg, ref);
        int family = reg.entries[ref->quantizer].family;
        int builtin_data_free =
            !strcmp(fr_config_origin(&reg, ref), FR_ORIGIN_BUILTIN) && family >= 0 &&
            family < FR_KERNEL_FAMILY_COUNT &&
            !(q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS));
        n_builtin += builtin_data_free;
        if (fr_cuda_has_kernel(&reg, ref))
            refs[n_refs++] = ref;
        else
            CHECK_MSG(!builtin_data_free, "built-in configuration '%s' has no kernel",
                      ref->cfg->name);
    }
    printf("%zu configurations with kernels (%zu built-in data-free configurations)\n", n_refs,
           n_builtin);
    CHECK_MSG(n_builtin > 0, "no built-in data-free configuration registered");

    static const int64_t shapes[][2] = {
        {1, 1},    {1, 37},    {1, 4096}, {3, 7},     {17, 33},   {129, 257},
        {128, 128}, {257, 129}, {130, 300}, {64, 1000}, {1, 70000}, {256, 1024},
    };
    /* FRONTIER_GPU_TEST_QUICK: the shapes that still cover short groups,
     * odd sizes, a single row and partial tiles (the CPU emulation of the
     * kernels runs these) */
    static const int64_t quick_shapes[][2] = {{1, 37}, {3, 7}, {17, 33}, {129, 257}};
    static const int dtypes[] = {FRONTIER_DTYPE_F32, FRONTIER_DTYPE_F16, FRONTIER_DTYPE_BF16};
    const char *quick_env = getenv("FRONTIER_GPU_TEST_QUICK");
    const int quick = quick_env && *quick_env && strcmp(quick_env, "0") != 0;
    const size_t n_shapes = quick ? sizeof quick_shapes / sizeof quick_shapes[0]
                                  : sizeof shapes / sizeof shapes[0];
    for (size_t s = 0; s < n_shapes; s++) {
        for (size_t d = 0; d < 3; d++) {
            gpu_tensor t;
            const int64_t *shape = quick ? quick_shapes[s] : shapes[s];
            gpu_tensor_random(&t, shape[0], shape[1], dtypes[d], &rng, 0);
            check_tensor(&reg, refs, n_refs, &t);
            gpu_tensor_free(&t);
        }
    }
    /* all zero: scales 0, nvfp4 global scale 1, nf4-dq mean 0 */
    gpu_tensor z;
    gpu_tensor_random(&z, 4, 200, FRONTIER_DTYPE_BF16, &rng, 1);
    check_tensor(&reg, refs, n_refs, &z);
    gpu_tensor_free(&z);
    check_nonfinite(&reg, refs, n_refs);

    printf("%ld (configuration, tensor) pairs, %ld elements compared\n", n_compared_configs,
           n_compared_elements);
    free(refs);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return fr_test_finish("test_gpu_parity");
}
