/*
 * CPU throughput of every built-in quantizer configuration: quantize-
 * dequantize of a seeded gaussian bf16 tensor (4096 x 4096 by default),
 * with 1 thread and with all threads. Throughput is bytes of bf16 input per
 * second (2 bytes per weight), the unit a sweep over a bf16 checkpoint
 * reads; the bf16 -> float32 conversion is done once beforehand, as the
 * sweep does once per tensor, and is not timed.
 *
 *   bench_quantizers [--quick] [--rows R] [--cols C] [--threads N]
 *                    [--repeat K] [--filter SUBSTR] [--json FILE]
 *
 * --quick measures one configuration per family (and a few int ones);
 * --repeat K keeps the fastest of K runs; --threads N is the "all threads"
 * count (default: every online CPU).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/call.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "quantizers/builtin.h"

static const char *quick_set[] = {
    "int4-g128-sym", "int4-g128-asym", "int8-gC-sym", "int4-tensor-asym", "fp8-e4m3-tensor",
    "fp8-e4m3-channel", "fp8-e4m3-block128", "nvfp4", "mxfp8-e4m3", "mxfp6-e2m3", "mxfp4",
    "mxint8", "nf4-g64", "nf4-g64-dq",
};

typedef struct result {
    const char *name;
    double seconds_1, seconds_n;
} result;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64 + Box-Muller, then round to bf16 (nearest even) */
static uint16_t f32_to_bf16(float f)
{
    uint32_t u = fr_f32_to_bits(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void gaussian_bf16(uint16_t *x, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = ((double)(next_u64(&seed) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = ((double)(next_u64(&seed) >> 11) + 0.5) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
        x[i] = f32_to_bf16((float)(0.02 * r * cos(t)));
        if (i + 1 < n)
            x[i + 1] = f32_to_bf16((float)(0.02 * r * sin(t)));
    }
}

static int selected(const char *name, int quick, const char *filter)
{
    if (filter && !strstr(name, filter))
        return 0;
    if (!quick)
        return 1;
    for (size_t i = 0; i < sizeof quick_set / sizeof quick_set[0]; i++)
        if (!strcmp(quick_set[i], name))
            return 1;
    return 0;
}

/* fastest of `repeat` runs, or a negative value on failure */
static double time_config(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                          float *w_hat, int64_t rows, int64_t cols, fr_pool *pool, int repeat)
{
    double best = INFINITY;
    for (int r = 0; r < repeat; r++) {
        frontier_call call;
        fr_call_init(&call, pool, 1, "bench", cfg->name);
        /* nvfp4-fused: the whole tensor stands for its fused group */
        call.has_group_amax = 1;
        call.group_amax = 0.0f;
        for (int64_t i = 0; i < rows * cols; i++)
            call.group_amax = fabsf(w[i]) > call.group_amax ? fabsf(w[i]) : call.group_amax;
        double t0 = now();
        int rc = q->quantize_cpu(cfg, w, w_hat, rows, cols, NULL, &call);
        double t = now() - t0;
        if (rc != FRONTIER_OK) {
            fprintf(stderr, "bench_quantizers: %s: %s\n", cfg->name, call.error);
            fr_call_release(&call);
            return -1.0;
        }
        fr_call_release(&call);
        best = t < best ? t : best;
    }
    return best;
}

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *colon = strchr(line, ':');
            if (colon) {
                snprintf(out, size, "%s", colon + 2);
                out[strcspn(out, "\n")] = 0;
            }
            break;
        }
    }
    fclose(f);
}

/* 1-minute load average: on a shared machine, context for the figures */
static double load_1min(void)
{
    double load[1];
    return getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

static int write_json(const char *path, const result *res, size_t n_res, int64_t rows,
                      int64_t cols, int threads, int repeat, double load_start, double load_end)
{
    char model[256], date[32], host[256] = "unknown";
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    cpu_model(model, sizeof model);
    gethostname(host, sizeof host - 1);
    double bytes = 2.0 * (double)rows * (double)cols;
    cJSON *root = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "benchmark", "bench_quantizers");
    cJSON_AddStringToObject(root, "frontier_version", FRONTIER_VERSION);
    cJSON_AddStringToObject(root, "date", date);
    cJSON_AddStringToObject(root, "cpu", model);
    cJSON_AddNumberToObject(root, "online_cpus", fr_cpu_count());
    cJSON_AddNumberToObject(root, "rows", (double)rows);
    cJSON_AddNumberToObject(root, "cols", (double)cols);
    cJSON_AddStringToObject(root, "input_dtype", "BF16");
    cJSON_AddNumberToObject(root, "threads", threads);
    cJSON_AddNumberToObject(root, "repeat", repeat);
    cJSON_AddNumberToObject(root, "load_1min_start", load_start);
    cJSON_AddNumberToObject(root, "load_1min_end", load_end);
    cJSON_AddItemToObject(root, "results", results);
    for (size_t i = 0; i < n_res; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "config", res[i].name);
        cJSON_AddNumberToObject(r, "seconds_1_thread", res[i].seconds_1);
        cJSON_AddNumberToObject(r, "gb_per_s_1_thread", bytes / res[i].seconds_1 / 1e9);
        cJSON_AddNumberToObject(r, "seconds_all_threads", res[i].seconds_n);
        cJSON_AddNumberToObject(r, "gb_per_s_all_threads", bytes / res[i].seconds_n / 1e9);
        cJSON_AddItemToArray(results, r);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "bench_quantizers: cannot write '%s': %s\n", path, strerror(errno));
    free(text);
    return ok;
}

int main(int argc, char **argv)
{
    int quick = 0, threads = 0, repeat = 1, status = 1;
    long long rows = 4096, cols = 4096;
    const char *json = NULL, *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc)
            cols = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_quantizers [--quick] [--rows R] [--cols C] "
                            "[--threads N] [--repeat K] [--filter SUBSTR] [--json FILE]\n");
            return 2;
        }
    }
    if (rows < 1 || cols < 1 || rows > (1ll << 31) / cols || repeat < 1) {
        fprintf(stderr, "bench_quantizers: bad shape or repeat count\n");
        return 2;
    }
    if (threads <= 0)
        threads = fr_cpu_count();
    int64_t n = (int64_t)rows * cols;
    uint16_t *bf16 = malloc((size_t)n * sizeof *bf16);
    float *w = malloc((size_t)n * sizeof *w), *w_hat = malloc((size_t)n * sizeof *w_hat);
    result *res = calloc(256, sizeof *res);
    size_t n_res = 0;
    fr_pool *pool1 = NULL, *pool_n = NULL;
    fr_error err;
    if (!bf16 || !w || !w_hat || !res) {
        fprintf(stderr, "bench_quantizers: out of memory\n");
        goto done;
    }
    if (fr_pool_create(1, &pool1, &err) != FR_OK || fr_pool_create(threads, &pool_n, &err) != FR_OK) {
        fprintf(stderr, "bench_quantizers: %s\n", err.msg);
        goto done;
    }
    gaussian_bf16(bf16, n, 20240601);
    memset(w_hat, 0, (size_t)n * sizeof *w_hat); /* fault the pages in before timing */
    for (int64_t i = 0; i < n; i++)
        w[i] = fr_bf16_to_f32(bf16[i]);

    double bytes = 2.0 * (double)n, load_start = load_1min();
    printf("bench_quantizers: %lld x %lld bf16 (%.1f MB), 1 and %d threads, best of %d, "
           "load %.2f\n",
           rows, cols, bytes / 1e6, threads, repeat, load_start);
    printf("%-20s %10s %10s %10s %10s %8s\n", "config", "ms(1)", "GB/s(1)", "ms(N)", "GB/s(N)",
           "speedup");
    for (size_t e = 0; e < fr_n_builtin_entries; e++) {
        const frontier_quantizer *q = fr_builtin_entries[e](fr_host_api());
        for (size_t c = 0; q && c < q->n_configs && n_res < 256; c++) {
            const frontier_config *cfg = &q->configs[c];
            if (!selected(cfg->name, quick, filter))
                continue;
            double t1 = time_config(q, cfg, w, w_hat, rows, cols, pool1, repeat);
            double tn = time_config(q, cfg, w, w_hat, rows, cols, pool_n, repeat);
            if (t1 < 0 || tn < 0)
                goto done;
            res[n_res++] = (result){cfg->name, t1, tn};
            printf("%-20s %10.1f %10.3f %10.1f %10.3f %8.2f\n", cfg->name, t1 * 1e3,
                   bytes / t1 / 1e9, tn * 1e3, bytes / tn / 1e9, t1 / tn);
            fflush(stdout);
        }
    }
    double load_end = load_1min();
    printf("load average at the end: %.2f\n", load_end);
    if (json && !write_json(json, res, n_res, rows, cols, threads, repeat, load_start, load_end))
        goto done;
    status = 0;
done:
    fr_pool_destroy(pool1);
    fr_pool_destroy(pool_n);
    free(bf16);
    free(w);
    free(w_hat);
    free(res);
    return status;
}
