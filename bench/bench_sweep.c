/*
 * CPU sweep benchmark: the whole `frontier sweep` engine (load, every
 * data-free configuration, metrics, dataset commits) over
 *   1. data/stories260K (a real checkpoint, 36 quantizable tensors), and
 *   2. one synthetic gaussian 4096x4096 float32 tensor.
 * Each case runs in a child process so its peak RSS (getrusage via wait4)
 * is its own. Prints a table and writes JSON.
 *
 *   bench_sweep [--threads N] [--quick] [--data DIR] [--json FILE]
 *
 * --quick uses a 1024x1024 synthetic tensor instead (for a smoke run).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"
#include "core/source.h"
#include "core/synthetic.h"
#include "frontier/sweep/sweep.h"

#ifndef FRONTIER_DATA_DIR
#define FRONTIER_DATA_DIR "data"
#endif

typedef struct bench_case {
    const char *name;
    const char *model;     /* a path, or NULL */
    const char *synthetic; /* a spec, or NULL */
} bench_case;

/* What a child reports back through its pipe. */
typedef struct bench_result {
    int status;
    size_t tensors, configs, rows;
    double seconds;
    uint64_t bytes;
    char error[FR_ERROR_MSG_MAX];
} bench_result;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs one case in this (child) process. */
static bench_result run_case(const bench_case *c, int threads, const char *output)
{
    bench_result r = {0};
    fr_error err = {0};
    fr_registry reg;
    fr_source *src = NULL;
    fr_sweep *sw = NULL;
    fr_status st = fr_registry_init(&reg, &err);
    if (st != FR_OK)
        goto done_noreg;
    st = fr_registry_discover(&reg, NULL, 0, &err);
    if (st != FR_OK)
        goto done;
    st = c->model ? fr_source_open(c->model, &src, &err)
                  : fr_synthetic_open(c->synthetic, 0, &src, &err);
    if (st != FR_OK)
        goto done;
    /* the data-free kernel families, as the figures in docs/benchmarks.md */
    fr_sweep_options opt = {.output = output, .threads = threads, .quiet = 1, .device = "cpu",
                            .quantizers = "int,fp8,nvfp4,mx,nf4",
                            .command_line = "bench_sweep"};
    double t0 = now_seconds();
    if ((st = fr_sweep_create(&reg, &opt, &sw, &err)) != FR_OK ||
        (st = fr_sweep_add_source(sw, src, &err)) != FR_OK ||
        (st = fr_sweep_execute(sw, &err)) != FR_OK)
        goto done;
    r.seconds = now_seconds() - t0;
    const fr_sweep_stats *s = fr_sweep_get_stats(sw);
    r.tensors = s->n_items;
    r.configs = s->n_configs;
    r.rows = s->n_rows_new;
    r.bytes = s->bytes;
done:
    fr_sweep_destroy(sw);
    fr_source_close(src);
    fr_registry_free(&reg);
done_noreg:
    r.status = st;
    if (st != FR_OK)
        snprintf(r.error, sizeof r.error, "%s", err.msg);
    return r;
}

static int run_in_child(const bench_case *c, int threads, const char *dir, bench_result *r,
                        double *peak_rss_mib)
{
    int fds[2];
    char output[512];
    snprintf(output, sizeof output, "%s/bench-%d.h5", dir, (int)getpid());
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        snprintf(output, sizeof output, "%s/bench-%d.h5", dir, (int)getpid());
        bench_result res = run_case(c, threads, output);
        unlink(output);
        ssize_t w = write(fds[1], &res, sizeof res);
        _exit(w == (ssize_t)sizeof res ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], r, sizeof *r);
    close(fds[0]);
    int wstatus = 0;
    struct rusage ru;
    if (wait4(pid, &wstatus, 0, &ru) < 0 || got != (ssize_t)sizeof *r)
        return -1;
    *peak_rss_mib = (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int threads = 0, quick = 0;
    const char *json = NULL, *data = FRONTIER_DATA_DIR;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else {
            fprintf(stderr, "usage: bench_sweep [--threads N] [--quick] [--data DIR] [--json FILE]\n");
            return 2;
        }
    }
    if (threads <= 0)
        threads = fr_cpu_count();
    fr_log_set_level(FRONTIER_LOG_WARN);
    char model[1024];
    snprintf(model, sizeof model, "%s/stories260K", data);
    bench_case cases[] = {
        {"stories260K", model, NULL},
        {quick ? "synthetic gaussian 1024x1024" : "synthetic gaussian 4096x4096", NULL,
         quick ? "gaussian:1024x1024" : "gaussian:4096x4096"},
    };
    size_t n_cases = sizeof cases / sizeof cases[0];
    char dir[] = "/tmp/frontier-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    bench_result results[2];
    double rss[2];
    int rc = 0;
    printf("CPU sweep, %d threads, every data-free configuration\n\n", threads);
    printf("%-30s %8s %8s %7s %9s %12s %14s %10s\n", "case", "tensors", "configs", "rows",
           "wall s", "weights GB/s", "quantized GB/s", "peak RSS");
    for (size_t i = 0; i < n_cases; i++) {
        if (run_in_child(&cases[i], threads, dir, &results[i], &rss[i]) != 0 ||
            results[i].status != FR_OK) {
            fprintf(stderr, "bench_sweep: case '%s' failed: %s\n", cases[i].name,
                    results[i].error[0] ? results[i].error : "child process failed");
            rc = 1;
            continue;
        }
        const bench_result *r = &results[i];
        /* weights GB/s: stored bytes of the tensors swept per second; quantized
         * GB/s: the same times the configurations (every one reads them) */
        printf("%-30s %8zu %8zu %7zu %9.3f %12.4f %14.3f %6.0f MiB\n", cases[i].name, r->tensors,
               r->configs, r->rows, r->seconds, (double)r->bytes / r->seconds / 1e9,
               (double)r->bytes * (double)r->configs / r->seconds / 1e9, rss[i]);
    }
    rmdir(dir);
    if (json && rc == 0) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "bench_sweep: cannot write '%s': %s\n", json, strerror(errno));
            return 1;
        }
        char date[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(f, "{\n  \"benchmark\": \"cpu sweep\",\n  \"date\": \"%s\",\n  \"threads\": %d,\n  \"cases\": [\n",
                date, threads);
        for (size_t i = 0; i < n_cases; i++) {
            const bench_result *r = &results[i];
            fprintf(f,
                    "    {\"name\": \"%s\", \"tensors\": %zu, \"configs\": %zu, \"rows\": %zu, "
                    "\"seconds\": %.6f, \"weight_bytes\": %llu, \"weights_gb_per_s\": %.6f, "
                    "\"quantized_gb_per_s\": %.6f, \"peak_rss_mib\": %.1f}%s\n",
                    cases[i].name, r->tensors, r->configs, r->rows, r->seconds,
                    (unsigned long long)r->bytes, (double)r->bytes / r->seconds / 1e9,
                    (double)r->bytes * (double)r->configs / r->seconds / 1e9, rss[i],
                    i + 1 < n_cases ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0)
            rc = 1;
    }
    return rc;
}
