/*
 * The CUDA executor end to end against the CPU executor on the same plan:
 * a small synthetic model (bf16, f16 and f32 tensors generated on the
 * device), optionally a real checkpoint (its tensors staged from the mapped
 * file) and a CPU-only plugin (its configurations handed back to the CPU
 * executor). Every (tensor, configuration) must come back once, with the
 * CPU's status and sums within 1e-6 relative; the sink's norm and done
 * callbacks once per tensor; two GPU runs bitwise identical; and the same
 * again with a tiny staging cap, so that tensors stream in row chunks and
 * in two passes. The numeric flags (docs/dataset.md "Numeric flags") and
 * the scale quotients of the warning lines must equal the CPU's bit for bit,
 * every row examined.
 *
 * With FRONTIER_TEST_CUDA_PLUGIN=FILE.so (a built-in family built as a
 * plugin, which brings its own quantize_cuda / sweep_cuda), a registry of
 * that plugin alone runs the synthetic model through the executor's plugin
 * CUDA path, against the same plugin on the CPU.
 *
 * usage: test_gpu_executor [CHECKPOINT [PLUGIN.so]]
 */
#include "gpu_test.h"

#include "core/registry.h"
#include "frontier/exec/builtins.h"
#include "core/source.h"
#include "core/synthetic.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/executor.h"
#include "frontier/exec/metrics.h"

typedef struct collected {
    size_t n_items, max_configs;
    frontier_error_sums *sums; /* [item][config] */
    fr_status *status;
    int *seen;
    int *done, *norms, *skipped;
    double *norm;
    char (*device)[16]; /* [item][config] */
    uint32_t *flags;    /* [item][config]: numeric flags */
    double (*scale)[2]; /* [item][config]: the largest and smallest scale quotients */
} collected;

static void on_outcome(void *ctx, const fr_sweep_outcome *o)
{
    collected *c = ctx;
    size_t k = o->item * c->max_configs + o->config;
    c->seen[k]++;
    c->sums[k] = o->sums;
    c->status[k] = o->status;
    if (o->status != FR_OK)
        fprintf(stderr, "  outcome item %zu config %zu: %s\n", o->item, o->config, o->error);
    snprintf(c->device[k], sizeof c->device[k], "%s", o->device);
    c->flags[k] = o->flags;
    c->scale[k][0] = o->scale_largest;
    c->scale[k][1] = o->scale_smallest;
}

static void on_skipped(void *ctx, size_t item, fr_status st, const char *reason)
{
    collected *c = ctx;
    (void)st;
    fprintf(stderr, "  item %zu skipped: %s\n", item, reason);
    c->skipped[item]++;
}

static void on_done(void *ctx, size_t item, uint64_t bytes)
{
    collected *c = ctx;
    (void)bytes;
    c->done[item]++;
}

static void on_norm(void *ctx, size_t item, double sq_norm)
{
    collected *c = ctx;
    c->norms[item]++;
    c->norm[item] = sq_norm;
}

static void collected_init(collected *c, size_t n_items, size_t max_configs)
{
    memset(c, 0, sizeof *c);
    c->n_items = n_items;
    c->max_configs = max_configs;
    size_t n = n_items * max_configs;
    c->sums = calloc(n, sizeof *c->sums);
    c->status = calloc(n, sizeof *c->status);
    c->seen = calloc(n, sizeof *c->seen);
    c->done = calloc(n_items, sizeof *c->done);
    c->norms = calloc(n_items, sizeof *c->norms);
    c->skipped = calloc(n_items, sizeof *c->skipped);
    c->norm = calloc(n_items, sizeof *c->norm);
    c->device = calloc(n, sizeof *c->device);
    c->flags = calloc(n, sizeof *c->flags);
    c->scale = calloc(n, sizeof *c->scale);
    if (!c->flags || !c->scale || !c->device || !c->sums || !c->status || !c->seen || !c->done || !c->norms || !c->skipped || !c->norm) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
}

static void collected_free(collected *c)
{
    free(c->sums);
    free(c->status);
    free(c->seen);
    free(c->done);
    free(c->norms);
    free(c->skipped);
    free(c->norm);
    free(c->device);
    free(c->flags);
    free(c->scale);
}

/* the CUDA executor's staging cap for the next run (0: its default), and
 * the totals of the last CUDA run (fr_executor_options.cuda_stats) */
static size_t cuda_buffer_bytes;
static fr_cuda_run_stats last_stats;

static void run(int gpu, const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                size_t max_configs, collected *out)
{
    fr_error err;
    fr_executor_options opt = {
        .threads = 0, .device = gpu ? 0 : -1, .seed = 7, .cuda_buffer_bytes = cuda_buffer_bytes,
        .cuda_stats = &last_stats};
    fr_sweep_sink sink = {.ctx = out, .outcome = on_outcome, .item_skipped = on_skipped,
                          .item_done = on_done, .item_norm = on_norm, .cancelled = NULL};
    collected_init(out, n_items, max_configs);
    fr_error_clear(&err);
    fr_status st = gpu ? fr_exec_cuda(reg, items, n_items, &opt, &sink, &err)
                       : fr_exec_cpu(reg, items, n_items, &opt, &sink, &err);
    CHECK_MSG(st == FR_OK, "%s executor failed: %s", gpu ? "cuda" : "cpu", err.msg);
    if (gpu) {
        const fr_cuda_run_stats s = last_stats;
        printf("  cuda: gpu %.4f s, h2d %.4f s (%llu bytes), %llu fused, %llu plugin, %llu cpu, "
               "%llu chunked tensors\n",
               s.gpu_s, s.h2d_s, (unsigned long long)s.h2d_bytes,
               (unsigned long long)s.fused_configs, (unsigned long long)s.plugin_configs,
               (unsigned long long)s.cpu_configs, (unsigned long long)s.chunked_tensors);
    }
}

static const fr_registry *the_registry;

/* A configuration without a kernel whose quantizer has its own CUDA path
 * usable without statistics (the built-in host family rht): the executor's
 * plugin path, on the GPU unless its tensor is streamed in row chunks
 * (that path needs the whole tensor). */
static int own_cuda_path(const fr_config_ref *ref)
{
    const frontier_quantizer *q = fr_config_quantizer(the_registry, ref);
    return fr_quantizer_has_cuda(q) &&
           !(q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS));
}

/* all_gpu: every row must come from the GPU (a plugin with CUDA functions);
 * chunked: a run under a small staging cap */
static void compare(const char *what, const fr_sweep_item *items, const collected *gpu,
                    const collected *cpu, double tol, int all_gpu, int chunked)
{
    for (size_t i = 0; i < gpu->n_items; i++) {
        CHECK_MSG(gpu->done[i] == 1, "%s: item %zu done %d times", what, i, gpu->done[i]);
        CHECK_MSG(gpu->norms[i] == 1, "%s: item %zu norm reported %d times", what, i, gpu->norms[i]);
        CHECK_MSG(gpu->skipped[i] == cpu->skipped[i], "%s: item %zu skipped %d vs cpu %d", what, i,
                  gpu->skipped[i], cpu->skipped[i]);
        CHECK_MSG(gpu_close(gpu->norm[i], cpu->norm[i], tol), "%s: item %zu norm %.17g vs %.17g",
                  what, i, gpu->norm[i], cpu->norm[i]);
        for (size_t c = 0; c < items[i].n_configs; c++) {
            size_t k = i * gpu->max_configs + c;
            const char *name = items[i].configs[c]->cfg->name;
            CHECK_MSG(gpu->seen[k] == 1, "%s: %s on '%s' reported %d times", what, name,
                      items[i].tensor->name, gpu->seen[k]);
            /* built-ins with a kernel run on the GPU, and so do quantizers with
             * their own CUDA path (on a chunked tensor: the CPU); the rest on
             * the CPU */
            const int own = own_cuda_path(items[i].configs[c]);
            const char *want =
                all_gpu || own || fr_cuda_has_kernel(the_registry, items[i].configs[c]) ? "cuda:0"
                                                                                       : "cpu";
            CHECK_MSG(!strcmp(gpu->device[k], want) ||
                          (own && chunked && !strcmp(gpu->device[k], "cpu")),
                      "%s: %s on '%s' ran on '%s', not '%s'", what, name, items[i].tensor->name,
                      gpu->device[k], want);
            CHECK_MSG(gpu->status[k] == cpu->status[k], "%s: %s on '%s' status %d vs cpu %d",
                      what, name, items[i].tensor->name, gpu->status[k], cpu->status[k]);
            const frontier_error_sums *g = &gpu->sums[k], *h = &cpu->sums[k];
            CHECK_MSG(gpu_close(g->sq_err, h->sq_err, tol) && gpu_close(g->sq_ref, h->sq_ref, tol) &&
                          gpu_close(g->sq_hat, h->sq_hat, tol) && gpu_close(g->dot, h->dot, tol) &&
                          gpu_close(g->max_abs_err, h->max_abs_err, tol),
                      "%s: %s on '%s': sq_err %.17g/%.17g sq_hat %.17g/%.17g dot %.17g/%.17g "
                      "max %.17g/%.17g",
                      what, name, items[i].tensor->name, g->sq_err, h->sq_err, g->sq_hat, h->sq_hat,
                      g->dot, h->dot, g->max_abs_err, h->max_abs_err);
            /* the numeric flags and quotients, bit for bit (NaN: no quotient) */
            if (gpu->status[k] == FR_OK) {
                CHECK_MSG(gpu->flags[k] == cpu->flags[k] && (gpu->flags[k] & 1u),
                          "%s: %s on '%s': flags %#x on %s, %#x on the cpu", what, name,
                          items[i].tensor->name, (unsigned)gpu->flags[k], gpu->device[k],
                          (unsigned)cpu->flags[k]);
                CHECK_MSG(!memcmp(gpu->scale[k], cpu->scale[k], sizeof gpu->scale[k]),
                          "%s: %s on '%s': scale quotients %.9g / %.9g on %s, %.9g / %.9g on "
                          "the cpu",
                          what, name, items[i].tensor->name, gpu->scale[k][0], gpu->scale[k][1],
                          gpu->device[k], cpu->scale[k][0], cpu->scale[k][1]);
            }
        }
    }
}

static size_t add_items(fr_sweep_item *items, size_t n, const fr_source *src,
                        const fr_config_ref *const *cfgs, size_t n_cfgs, size_t max_items)
{
    for (size_t t = 0; t < src->n_tensors && n < max_items; t++) {
        const fr_tensor *tensor = &src->tensors[t];
        if (tensor->skip_reason || !fr_dtype_is_float(tensor->dtype))
            continue;
        fr_sweep_item *it = &items[n++];
        memset(it, 0, sizeof *it);
        it->src = src;
        it->tensor = tensor;
        fr_tensor_matrix(tensor, &it->rows, &it->cols);
        it->n_configs = n_cfgs;
        it->configs = cfgs;
    }
    return n;
}

int main(int argc, char **argv)
{
    fr_error err;
    fr_registry reg;
    fr_source *syn = NULL, *real = NULL;
    gpu_require_device();
    uint64_t seed = gpu_seed();
    GPU_OK(fr_registry_init(&reg, &err));
    the_registry = &reg;
    if (argc > 2)
        GPU_OK(fr_registry_load_plugin(&reg, argv[2], &err));

    const fr_config_ref **cfgs = calloc(reg.n_configs, sizeof *cfgs);
    size_t n_cfgs = 0;
    size_t n_own = 0;
    for (size_t c = 0; c < reg.n_configs; c++) {
#ifdef FRONTIER_EMULATED_CUDA
        /* the emulation runs a quantizer's own CUDA path one configuration
         * at a time (rht+: 99): every 30th of them, so the test keeps
         * within its time (gpu_emu.rht checks every family bit for bit) */
        if (!fr_cuda_has_kernel(&reg, &reg.configs[c]) && own_cuda_path(&reg.configs[c]) &&
            n_own++ % 30 != 0)
            continue;
#endif
        cfgs[n_cfgs++] = &reg.configs[c];
    }
    (void)n_own;
    printf("%zu configurations (%s)\n", n_cfgs, argc > 2 ? argv[2] : "built-in only");

    /* odd shapes, every storage dtype, a 1-D tensor, a tensor over one unit wide */
    GPU_OK(fr_synthetic_open("gaussian:300x1000:bf16,student-t3:129x257:f16,outliers:4096:f32,"
                             "laplace:256x384:bf16*2,gaussian:3x5x7:f32,outliers:640x96:bf16",
                             seed, &syn, &err));
    fr_sweep_item items[256];
    size_t n_items = add_items(items, 0, syn, cfgs, n_cfgs, 256);
    if (argc > 1) {
        GPU_OK(fr_source_open(argv[1], &real, &err));
        n_items = add_items(items, n_items, real, cfgs, n_cfgs, 256);
    }
    printf("%zu tensors\n", n_items);

    collected cpu, gpu, again, chunked;
    run(0, &reg, items, n_items, n_cfgs, &cpu);
    run(1, &reg, items, n_items, n_cfgs, &gpu);
    compare("cuda vs cpu", items, &gpu, &cpu, 1e-6, 0, 0);

    run(1, &reg, items, n_items, n_cfgs, &again);
    compare("cuda run to run", items, &again, &gpu, 0.0, 0, 0);

    /* a 64 KiB cap: the 300x1000 bf16 tensor and the others stream in row
     * chunks, two passes when a configuration needs whole-tensor statistics */
    cuda_buffer_bytes = 64 << 10;
    run(1, &reg, items, n_items, n_cfgs, &chunked);
    cuda_buffer_bytes = 0;
    const fr_cuda_run_stats s = last_stats;
    CHECK_MSG(s.chunked_tensors > 0, "the 64 KiB cap chunked no tensor");
    compare("cuda chunked vs cpu", items, &chunked, &cpu, 1e-6, 0, 1);

    collected_free(&cpu);
    collected_free(&gpu);
    collected_free(&again);
    collected_free(&chunked);

    const char *cuda_plugin = getenv("FRONTIER_TEST_CUDA_PLUGIN");
    if (cuda_plugin && *cuda_plugin) {
        fr_registry preg;
        fr_registry_init_empty(&preg);
        the_registry = &preg;
        GPU_OK(fr_registry_load_plugin(&preg, cuda_plugin, &err));
        const fr_config_ref **pcfgs = calloc(preg.n_configs, sizeof *pcfgs);
        for (size_t c = 0; c < preg.n_configs; c++)
            pcfgs[c] = &preg.configs[c];
        fr_sweep_item pitems[64];
        size_t n_pitems = add_items(pitems, 0, syn, pcfgs, preg.n_configs, 64);
        printf("plugin %s: %zu configurations on %zu tensors\n", cuda_plugin, preg.n_configs,
               n_pitems);
        collected pc, pg;
        run(0, &preg, pitems, n_pitems, preg.n_configs, &pc);
        run(1, &preg, pitems, n_pitems, preg.n_configs, &pg);
        const fr_cuda_run_stats ps = last_stats;
        CHECK_MSG(ps.plugin_configs == (uint64_t)(n_pitems * preg.n_configs),
                  "plugin path: %llu (tensor, config) pairs through the plugin's CUDA functions",
                  (unsigned long long)ps.plugin_configs);
        compare("plugin cuda vs cpu", pitems, &pg, &pc, 1e-6, 1, 0);
        collected_free(&pc);
        collected_free(&pg);
        free(pcfgs);
        fr_registry_free(&preg);
    }
    free(cfgs);
    fr_synthetic_close(syn);
    if (real)
        fr_source_close(real);
    fr_registry_free(&reg);
    return fr_test_finish("test_gpu_executor");
}
