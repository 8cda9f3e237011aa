/*
 * GPU benchmarks (docs/gpu.md, "Benchmarks"). Every time is the
 * median of repeated CUDA-event timings after warm-up runs.
 *
 *   bench_gpu kernels [--rows R] [--cols C] [--dtype bf16|f16|f32] [--reps N]
 *                     [--buffers B] [--json FILE]
 *     (1) device copy bandwidth (cudaMemcpy device to device, bytes read +
 *     written), then for every configuration with a kernel: the sweep of that
 *     configuration alone (statistics pre-pass + fused kernel + reduction),
 *     the fused kernel alone, and quantize (writing the float32
 *     reconstruction). Read throughput = tensor bytes / time, as a fraction
 *     of the copy bandwidth. B input buffers (different contents) rotate so
 *     that L2 (50 MB on an H200) holds none of them from the previous run.
 *
 *   bench_gpu fused [--rows R] [--cols C] [--tensor FILE] [--write-tensor FILE]
 *                   [--reps N] [--peer PEER.json] [--json FILE]
 *     (2) all configurations with a kernel and nominal bits 2..8, in one
 *     fused sweep of a bf16 tensor; rel_err of each; with --peer, the
 *     PyTorch script's timing and rel_err (bench/peers/torch_sweep.py) for
 *     the speedup and the agreement. --write-tensor saves the tensor (raw
 *     little-endian bf16, row-major) for the peer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kernels/kcommon.cuh"

extern "C" {
#include "core/registry.h"
#include "core/synthetic.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/builtins.h"
}

#define CU(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "bench_gpu: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
                    cudaGetErrorString(e_));                                                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define FR(expr)                                                                              \
    do {                                                                                      \
        fr_error e_;                                                                          \
        fr_error_clear(&e_);                                                                  \
        fr_status s_ = (expr);                                                                \
        (void)e_;                                                                             \
        if (s_ != FR_OK) {                                                                    \
            fprintf(stderr, "bench_gpu: %s failed at %s:%d\n", #expr, __FILE__, __LINE__);   \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

typedef struct opts {
    int64_t rows, cols;
    int dtype;      /* enum frontier_dtype */
    int fr_dtype;   /* enum fr_dtype, for the generator */
    int reps, warmup, buffers;
    const char *json, *tensor, *write_tensor, *peer;
} opts;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Times f(i) for warmup + reps runs on `stream`; returns the median seconds. */
template <typename F> static double time_median(cudaStream_t stream, const opts *o, F f)
{
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    double *t = (double *)calloc((size_t)o->reps, sizeof *t);
    for (int i = 0; i < o->warmup + o->reps; i++) {
        CU(cudaEventRecord(a, stream));
        f(i);
        CU(cudaEventRecord(b, stream));
        CU(cudaEventSynchronize(b));
        float ms = 0.0f;
        CU(cudaEventElapsedTime(&ms, a, b));
        if (i >= o->warmup)
            t[i - o->warmup] = ms * 1e-3;
    }
    double m = median(t, o->reps);
    free(t);
    CU(cudaEventDestroy(a));
    CU(cudaEventDestroy(b));
    return m;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_gpu kernels [--rows R] [--cols C] [--dtype bf16|f16|f32] [--reps N]\n"
            "                         [--buffers B] [--json FILE]\n"
            "       bench_gpu fused [--rows R] [--cols C] [--tensor FILE] [--write-tensor FILE]\n"
            "                       [--reps N] [--peer PEER.json] [--json FILE]\n");
    exit(2);
}

static void parse(int argc, char **argv, opts *o)
{
    o->rows = 4096;
    o->cols = 14336;
    o->dtype = FRONTIER_DTYPE_BF16;
    o->fr_dtype = FR_DTYPE_BF16;
    o->reps = 20;
    o->warmup = 3;
    o->buffers = 4;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--rows"))
            o->rows = atoll(v);
        else if (!strcmp(a, "--cols"))
            o->cols = atoll(v);
        else if (!strcmp(a, "--reps"))
            o->reps = atoi(v);
        else if (!strcmp(a, "--buffers"))
            o->buffers = atoi(v);
        else if (!strcmp(a, "--json"))
            o->json = v;
        else if (!strcmp(a, "--tensor"))
            o->tensor = v;
        else if (!strcmp(a, "--write-tensor"))
            o->write_tensor = v;
        else if (!strcmp(a, "--peer"))
            o->peer = v;
        else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "bf16")) {
                o->dtype = FRONTIER_DTYPE_BF16;
                o->fr_dtype = FR_DTYPE_BF16;
            } else if (!strcmp(v, "f16")) {
                o->dtype = FRONTIER_DTYPE_F16;
                o->fr_dtype = FR_DTYPE_F16;
            } else if (!strcmp(v, "f32")) {
                o->dtype = FRONTIER_DTYPE_F32;
                o->fr_dtype = FR_DTYPE_F32;
            } else {
                usage();
            }
        } else {
            usage();
        }
        i++;
    }
    if (o->rows < 1 || o->cols < 1 || o->reps < 1 || o->buffers < 1)
        usage();
}

typedef struct bench_cfg {
    const char *name;
    double nominal_bits;
    fr_kspec spec;
} bench_cfg;

/* Every registry configuration with a kernel and nominal bits in [lo, hi]. */
static bench_cfg *list_configs(const fr_registry *reg, double lo, double hi, int *n_out)
{
    bench_cfg *v = (bench_cfg *)calloc(reg->n_configs + 1, sizeof *v);
    int n = 0;
    for (size_t c = 0; c < reg->n_configs; c++) {
        const fr_config_ref *ref = &reg->configs[c];
        if (!fr_kspec_of_ref(reg, ref, &v[n].spec))
            continue;
        if (ref->cfg->nominal_bits < lo || ref->cfg->nominal_bits > hi)
            continue;
        v[n].name = ref->cfg->name;
        v[n].nominal_bits = ref->cfg->nominal_bits;
        n++;
    }
    *n_out = n;
    return v;
}

static void device_line(char *buf, size_t size)
{
    fr_error err;
    if (fr_cuda_device_describe(0, buf, size, &err) != FR_OK)
        snprintf(buf, size, "unknown");
}

/* ---- (1) ---- */

/* One timed sequence in the order it is measured and printed (setup, warm-up,
 * timed repetitions, checks, JSON); its length is that sequence's. */
static int bench_kernels(const opts *o)
{
    fr_registry reg;
    fr_error err;
    FR(fr_registry_init(&reg, &err));
    int n_cfg = 0;
    bench_cfg *cfgs = list_configs(&reg, 0.0, 1e9, &n_cfg);
    const size_t es = fr_kdtype_size(o->dtype);
    const size_t numel = (size_t)(o->rows * o->cols), bytes = numel * es;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void **buf = (void **)calloc((size_t)o->buffers, sizeof *buf);
    fr_kwork *work = (fr_kwork *)calloc((size_t)o->buffers, sizeof *work);
    void *dst = NULL;
    float *w_hat = NULL;
    for (int b = 0; b < o->buffers; b++) {
        CU(cudaMalloc(&buf[b], bytes));
        FR(fr_cuda_synthetic(FR_SYN_GAUSSIAN, o->fr_dtype, 1234, (uint64_t)b, 0, (int64_t)numel,
                             buf[b], s, &err));
        fr_kwork_init(&work[b], s);
    }
    CU(cudaMalloc(&dst, bytes));
    CU(cudaMalloc((void **)&w_hat, numel * sizeof(float)));
    CU(cudaStreamSynchronize(s));

    const double t_copy = time_median(s, o, [&](int i) {
        CU(cudaMemcpyAsync(dst, buf[i % o->buffers], bytes, cudaMemcpyDeviceToDevice, s));
    });
    const double copy_bw = 2.0 * (double)bytes / t_copy;
    char dev[256];
    device_line(dev, sizeof dev);
    printf("device: %s\n", dev);
    printf("tensor %lld x %lld %s (%.1f MB), %d rotating buffers, median of %d after %d warm-up\n",
           (long long)o->rows, (long long)o->cols,
           o->dtype == FRONTIER_DTYPE_BF16 ? "bf16" : o->dtype == FRONTIER_DTYPE_F16 ? "f16" : "f32",
           bytes / 1e6, o->buffers, o->reps, o->warmup);
    printf("device copy: %.3f ms, %.1f GB/s (read + write)\n\n", t_copy * 1e3, copy_bw / 1e9);
    printf("%-20s %10s %10s %9s %10s %9s %10s %9s\n", "configuration", "sweep ms", "read GB/s",
           "of copy", "kernel ms", "of copy", "quant ms", "of copy");

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "kernels");
    cJSON_AddStringToObject(root, "device", dev);
    cJSON_AddNumberToObject(root, "rows", (double)o->rows);
    cJSON_AddNumberToObject(root, "cols", (double)o->cols);
    cJSON_AddNumberToObject(root, "dtype_bytes", (double)es);
    cJSON_AddNumberToObject(root, "reps", o->reps);
    cJSON_AddNumberToObject(root, "buffers", o->buffers);
    cJSON_AddNumberToObject(root, "copy_seconds", t_copy);
    cJSON_AddNumberToObject(root, "copy_bytes_per_s", copy_bw);
    cJSON *arr = cJSON_AddArrayToObject(root, "configs");
    int below = 0;
    double worst = 1e9;
    for (int c = 0; c < n_cfg; c++) {
        const fr_kspec *spec = &cfgs[c].spec;
        const fr_kneeds needs = fr_kneeds_of(spec, 1);
        for (int b = 0; b < o->buffers; b++) {
            fr_kview v = {buf[b], o->dtype, o->rows, o->cols, 0, o->rows};
            FR(fr_kwork_reserve(&work[b], &needs, o->rows, o->cols, &err));
            FR(fr_kstats_chunk(&work[b], &needs, &v, &err));
            FR(fr_kstats_finish(&work[b], &needs, o->rows, o->cols, &err));
        }
        CU(cudaStreamSynchronize(s));
        /* statistics + fused kernel + reduction: what a one-configuration sweep costs */
        const double t_sweep = time_median(s, o, [&](int i) {
            int b = i % o->buffers;
            fr_kview v = {buf[b], o->dtype, o->rows, o->cols, 0, o->rows};
            FR(fr_kstats_chunk(&work[b], &needs, &v, &err));
            FR(fr_kstats_finish(&work[b], &needs, o->rows, o->cols, &err));
            FR(fr_kfused(&work[b], spec, 1, &v, NULL, &err));
        });
        /* the fused kernel and its reduction alone (statistics already there) */
        const double t_kernel = time_median(s, o, [&](int i) {
            int b = i % o->buffers;
            fr_kview v = {buf[b], o->dtype, o->rows, o->cols, 0, o->rows};
            FR(fr_kfused(&work[b], spec, 1, &v, NULL, &err));
        });
        /* quantize: the reconstruction written as float32 */
        const double t_quant = time_median(s, o, [&](int i) {
            int b = i % o->buffers;
            fr_kview v = {buf[b], o->dtype, o->rows, o->cols, 0, o->rows};
            FR(fr_kfused(&work[b], spec, 1, &v, w_hat, &err));
        });
        const double f_sweep = (double)bytes / t_sweep / copy_bw;
        const double f_kernel = (double)bytes / t_kernel / copy_bw;
        const double f_quant = (double)(bytes + numel * 4) / t_quant / copy_bw;
        printf("%-20s %10.3f %10.1f %8.1f%% %10.3f %8.1f%% %10.3f %8.1f%%\n", cfgs[c].name,
               t_sweep * 1e3, (double)bytes / t_sweep / 1e9, 100.0 * f_sweep, t_kernel * 1e3,
               100.0 * f_kernel, t_quant * 1e3, 100.0 * f_quant);
        below += f_sweep < 0.8;
        worst = f_sweep < worst ? f_sweep : worst;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", cfgs[c].name);
        cJSON_AddNumberToObject(j, "sweep_seconds", t_sweep);
        cJSON_AddNumberToObject(j, "kernel_seconds", t_kernel);
        cJSON_AddNumberToObject(j, "quantize_seconds", t_quant);
        cJSON_AddNumberToObject(j, "sweep_fraction_of_copy", f_sweep);
        cJSON_AddNumberToObject(j, "kernel_fraction_of_copy", f_kernel);
        cJSON_AddNumberToObject(j, "quantize_fraction_of_copy", f_quant);
        cJSON_AddItemToArray(arr, j);
    }
    printf("\n%d of %d configurations below 80%% of the copy bandwidth (sweep incl. pre-pass); "
           "worst %.1f%%\n", below, n_cfg, 100.0 * worst);
    cJSON_AddNumberToObject(root, "configs_below_80_percent", below);
    cJSON_AddNumberToObject(root, "worst_fraction", worst);
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        char *text = cJSON_Print(root);
        if (f && text) {
            fputs(text, f);
            fputc('\n', f);
        }
        if (f)
            fclose(f);
        free(text);
    }
    cJSON_Delete(root);
    for (int b = 0; b < o->buffers; b++) {
        fr_kwork_free(&work[b]);
        CU(cudaFree(buf[b]));
    }
    CU(cudaStreamSynchronize(s));
    CU(cudaFree(dst));
    CU(cudaFree(w_hat));
    CU(cudaStreamDestroy(s));
    free(buf);
    free(work);
    free(cfgs);
    fr_registry_free(&reg);
    return 0;
}

/* ---- (2) ---- */

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = (char *)malloc((size_t)n + 1);
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!text)
        return NULL;
    text[got] = '\0';
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* One timed sequence in the order it is measured and printed (setup, warm-up,
 * timed repetitions, checks, JSON); its length is that sequence's. */
static int bench_fused(opts *o)
{
    fr_registry reg;
    fr_error err;
    o->dtype = FRONTIER_DTYPE_BF16;
    FR(fr_registry_init(&reg, &err));
    int n_cfg = 0;
    bench_cfg *cfgs = list_configs(&reg, 2.0, 8.0, &n_cfg);
    const size_t numel = (size_t)(o->rows * o->cols), bytes = numel * 2;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *w = NULL;
    CU(cudaMalloc(&w, bytes));
    if (o->tensor) {
        FILE *f = fopen(o->tensor, "rb");
        void *host = malloc(bytes);
        if (!f || !host || fread(host, 1, bytes, f) != bytes) {
            fprintf(stderr, "bench_gpu: cannot read %zu bytes of bf16 from '%s'\n", bytes, o->tensor);
            return 1;
        }
        fclose(f);
        CU(cudaMemcpy(w, host, bytes, cudaMemcpyHostToDevice));
        free(host);
    } else {
        /* heavy-tailed like trained weights: Student's t with 3 degrees of freedom */
        FR(fr_cuda_synthetic(FR_SYN_STUDENT_T3, FR_DTYPE_BF16, 1234, 0, 0, (int64_t)numel, w, s, &err));
        CU(cudaStreamSynchronize(s));
    }
    if (o->write_tensor) {
        void *host = malloc(bytes);
        CU(cudaMemcpy(host, w, bytes, cudaMemcpyDeviceToHost));
        FILE *f = fopen(o->write_tensor, "wb");
        if (!f || fwrite(host, 1, bytes, f) != bytes) {
            fprintf(stderr, "bench_gpu: cannot write '%s'\n", o->write_tensor);
            return 1;
        }
        fclose(f);
        free(host);
        printf("wrote %lld x %lld bf16 to %s\n", (long long)o->rows, (long long)o->cols,
               o->write_tensor);
    }

    fr_kspec *specs = (fr_kspec *)calloc((size_t)n_cfg, sizeof *specs);
    for (int c = 0; c < n_cfg; c++)
        specs[c] = cfgs[c].spec;
    const fr_kneeds needs = fr_kneeds_of(specs, (size_t)n_cfg);
    fr_kwork work;
    fr_kwork_init(&work, s);
    FR(fr_kwork_reserve(&work, &needs, o->rows, o->cols, &err));
    fr_kpart *host = NULL;
    const int batches = (n_cfg + FR_K_MAX_SPECS - 1) / FR_K_MAX_SPECS;
    CU(cudaHostAlloc((void **)&host, (size_t)batches * (FR_K_MAX_SPECS + 1) * sizeof *host,
                     cudaHostAllocDefault));
    fr_kview v = {w, FRONTIER_DTYPE_BF16, o->rows, o->cols, 0, o->rows};
    auto sweep = [&](int) {
        FR(fr_kstats_chunk(&work, &needs, &v, &err));
        FR(fr_kstats_finish(&work, &needs, o->rows, o->cols, &err));
        for (int b = 0; b < batches; b++) {
            int n = n_cfg - b * FR_K_MAX_SPECS < FR_K_MAX_SPECS ? n_cfg - b * FR_K_MAX_SPECS : FR_K_MAX_SPECS;
            FR(fr_kfused(&work, specs + b * FR_K_MAX_SPECS, n, &v, NULL, &err));
            CU(cudaMemcpyAsync(host + b * (FR_K_MAX_SPECS + 1), work.results.p,
                               (size_t)(n + 1) * sizeof *host, cudaMemcpyDeviceToHost, s));
        }
    };
    const double t_sweep = time_median(s, o, sweep);
    const double t_stats = time_median(s, o, [&](int) {
        FR(fr_kstats_chunk(&work, &needs, &v, &err));
        FR(fr_kstats_finish(&work, &needs, o->rows, o->cols, &err));
    });
    CU(cudaStreamSynchronize(s));

    char dev[256];
    device_line(dev, sizeof dev);
    cJSON *peer = o->peer ? read_json(o->peer) : NULL;
    if (o->peer && !peer)
        fprintf(stderr, "bench_gpu: cannot read the peer's results '%s'\n", o->peer);
    cJSON *peer_cfgs = peer ? cJSON_GetObjectItem(peer, "configs") : NULL;
    cJSON *peer_total = peer ? cJSON_GetObjectItem(peer, "total_seconds") : NULL;

    printf("device: %s\n", dev);
    printf("fused sweep of %d configurations (nominal bits 2..8) on %lld x %lld bf16, median of %d\n",
           n_cfg, (long long)o->rows, (long long)o->cols, o->reps);
    printf("  sweep %.3f ms (statistics pre-pass %.3f ms), %.1f GB/s of tensor, %.2f G element-configurations/s\n\n",
           t_sweep * 1e3, t_stats * 1e3, (double)bytes / t_sweep / 1e9,
           (double)numel * n_cfg / t_sweep / 1e9);
    printf("%-20s %14s %14s %12s\n", "configuration", "rel_err", "peer rel_err", "rel diff");

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "fused");
    cJSON_AddStringToObject(root, "device", dev);
    cJSON_AddNumberToObject(root, "rows", (double)o->rows);
    cJSON_AddNumberToObject(root, "cols", (double)o->cols);
    cJSON_AddNumberToObject(root, "n_configs", n_cfg);
    cJSON_AddNumberToObject(root, "sweep_seconds", t_sweep);
    cJSON_AddNumberToObject(root, "stats_seconds", t_stats);
    cJSON *jc = cJSON_AddObjectToObject(root, "configs");
    double worst = 0.0;
    int mismatched = 0, compared = 0;
    for (int c = 0; c < n_cfg; c++) {
        const int b = c / FR_K_MAX_SPECS, k = c % FR_K_MAX_SPECS;
        const int nb = n_cfg - b * FR_K_MAX_SPECS < FR_K_MAX_SPECS ? n_cfg - b * FR_K_MAX_SPECS : FR_K_MAX_SPECS;
        const fr_kpart *p = &host[b * (FR_K_MAX_SPECS + 1) + k];
        const fr_kpart *extra = &host[b * (FR_K_MAX_SPECS + 1) + nb];
        frontier_error_sums sums = {p->sq_err, extra->sq_err, p->sq_hat, p->dot, p->max_abs};
        fr_metrics m;
        fr_metrics_from_sums(&sums, &m);
        cJSON *one = cJSON_AddObjectToObject(jc, cfgs[c].name);
        cJSON_AddNumberToObject(one, "rel_err", m.rel_err);
        cJSON_AddNumberToObject(one, "nominal_bits", cfgs[c].nominal_bits);
        cJSON *pr = peer_cfgs ? cJSON_GetObjectItem(peer_cfgs, cfgs[c].name) : NULL;
        if (pr && cJSON_IsObject(pr))
            pr = cJSON_GetObjectItem(pr, "rel_err");
        if (pr && cJSON_IsNumber(pr)) {
            double d = fabs(m.rel_err - pr->valuedouble) / fmax(fabs(m.rel_err), 1e-300);
            worst = d > worst ? d : worst;
            mismatched += d > 1e-4;
            compared++;
            cJSON_AddNumberToObject(one, "peer_rel_err", pr->valuedouble);
            printf("%-20s %14.8g %14.8g %12.2e%s\n", cfgs[c].name, m.rel_err, pr->valuedouble, d,
                   d > 1e-4 ? "  MISMATCH" : "");
        } else {
            printf("%-20s %14.8g %14s %12s\n", cfgs[c].name, m.rel_err, "-", "-");
        }
    }
    if (peer) {
        double tp = peer_total && cJSON_IsNumber(peer_total) ? peer_total->valuedouble : NAN;
        printf("\npeer (PyTorch eager): %.3f s for %d configurations; frontier fused: %.3f ms; "
               "speedup %.1fx (target >= 100x)\n",
               tp, compared, t_sweep * 1e3, tp / t_sweep);
        printf("rel_err agreement: %d of %d compared within 1e-4 relative, worst %.2e\n",
               compared - mismatched, compared, worst);
        cJSON_AddNumberToObject(root, "peer_seconds", tp);
        cJSON_AddNumberToObject(root, "speedup", tp / t_sweep);
        cJSON_AddNumberToObject(root, "compared", compared);
        cJSON_AddNumberToObject(root, "mismatched", mismatched);
        cJSON_AddNumberToObject(root, "worst_rel_diff", worst);
    }
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        char *text = cJSON_Print(root);
        if (f && text) {
            fputs(text, f);
            fputc('\n', f);
        }
        if (f)
            fclose(f);
        free(text);
    }
    cJSON_Delete(root);
    cJSON_Delete(peer);
    fr_kwork_free(&work);
    CU(cudaStreamSynchronize(s));
    CU(cudaFreeHost(host));
    CU(cudaFree(w));
    CU(cudaStreamDestroy(s));
    free(specs);
    free(cfgs);
    fr_registry_free(&reg);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    if (argc < 2)
        usage();
    if (fr_cuda_device_count() <= 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    CU(cudaSetDevice(0));
    parse(argc, argv, &o);
    if (!strcmp(argv[1], "kernels"))
        return bench_kernels(&o);
    if (!strcmp(argv[1], "fused"))
        return bench_fused(&o);
    usage();
    return 2;
}
