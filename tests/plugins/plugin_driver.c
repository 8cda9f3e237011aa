/*
 * A small host for the plugin tests: builds a registry (with or without the
 * built-ins), loads plugins, and calls quantizers through the checked calls
 * and the host services exactly as the sweep does, without HDF5 or models.
 *
 *   plugin_driver [--no-builtins] [--discover] [--plugin FILE]... list
 *   plugin_driver ... run CONFIG ROWS COLS IN.f32 OUT.f32
 *       quantizes the float32 matrix in IN.f32, writes w_hat to OUT.f32 and
 *       prints "total_bits N"
 *   plugin_driver ... run-all ROWS COLS
 *       every configuration on a seeded synthetic tensor named
 *       "blk.0.attn_q.weight"; prints "ok CONFIG TOTAL_BITS REL_ERR" per
 *       configuration, reports failures and goes on; exit 1 when any failed
 *
 * --discover adds FRONTIER_PLUGIN_PATH and the installed folder; without it
 * only the --plugin files are loaded. Exit codes are enum fr_status.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"
#include "plugin_test.h"

#define DRIVER_SEED 20240611u
#define DRIVER_TENSOR "blk.0.attn_q.weight"

static int usage(void)
{
    fprintf(stderr, "usage: plugin_driver [--no-builtins] [--discover] [--plugin FILE]... "
                    "list | run CONFIG ROWS COLS IN OUT | run-all ROWS COLS\n");
    return FR_E_USAGE;
}

static int parse_dim(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v <= 0 || v > (1ll << 24))
        return 0;
    *out = v;
    return 1;
}

static fr_status read_matrix(const char *path, float *w, size_t n, fr_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fr_fail(err, FR_E_IO, "cannot open '%s'", path);
    size_t got = fread(w, sizeof *w, n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra)
        return fr_fail(err, FR_E_FORMAT, "'%s' does not hold exactly %zu float32 values", path, n);
    return FR_OK;
}

static fr_status write_matrix(const char *path, const float *w, size_t n, fr_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return fr_fail(err, FR_E_OUTPUT, "cannot create '%s'", path);
    size_t put = fwrite(w, sizeof *w, n, f);
    if (fclose(f) != 0 || put != n)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s'", path);
    return FR_OK;
}

static void list(const fr_registry *reg)
{
    for (size_t e = 0; e < reg->n_entries; e++) {
        printf("quantizer %s %s\n", reg->entries[e].q->name, reg->entries[e].origin);
        for (size_t k = 0; k < reg->entries[e].q->n_configs; k++)
            printf("config %s\n", reg->entries[e].q->configs[k].name);
    }
}

/* The two ROWS x COLS float32 buffers of run and run-all (freed by the caller). */
static fr_status alloc_matrices(const char *rows_arg, const char *cols_arg, int64_t *rows,
                                int64_t *cols, float **w, float **w_hat, fr_error *err)
{
    if (!parse_dim(rows_arg, rows) || !parse_dim(cols_arg, cols))
        return usage();
    size_t n = (size_t)(*rows * *cols);
    *w = malloc(n * sizeof **w);
    *w_hat = malloc(n * sizeof **w_hat);
    if (!*w || !*w_hat)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    return FR_OK;
}

/* run CONFIG ROWS COLS IN OUT */
static fr_status run(const fr_registry *reg, fr_pool *pool, char **args, fr_error *err)
{
    int64_t rows, cols;
    float *w = NULL, *w_hat = NULL;
    uint64_t bits = 0;
    fr_status st;
    const fr_config_ref *ref = fr_registry_find_config(reg, args[0]);
    if (!ref)
        return fr_fail(err, FR_E_USAGE, "no configuration named '%s'", args[0]);
    if ((st = alloc_matrices(args[1], args[2], &rows, &cols, &w, &w_hat, err)) == FR_OK &&
        (st = read_matrix(args[3], w, (size_t)(rows * cols), err)) == FR_OK &&
        (st = pt_run_config(reg, ref, pool, DRIVER_SEED, DRIVER_TENSOR, w, w_hat, rows, cols,
                            &bits, err)) == FR_OK &&
        (st = write_matrix(args[4], w_hat, (size_t)(rows * cols), err)) == FR_OK)
        printf("total_bits %llu\n", (unsigned long long)bits);
    free(w);
    free(w_hat);
    return st;
}

/* run-all ROWS COLS: a failed configuration is reported and the run goes
 * on; FR_E_FAIL when any failed. */
static fr_status run_all(const fr_registry *reg, fr_pool *pool, char **args, fr_error *err)
{
    int64_t rows, cols;
    float *w = NULL, *w_hat = NULL;
    fr_status st = alloc_matrices(args[0], args[1], &rows, &cols, &w, &w_hat, err);
    size_t n = st == FR_OK ? (size_t)(rows * cols) : 0, failures = 0;
    uint64_t state = DRIVER_SEED;
    for (size_t k = 0; k < n; k++) {
        /* uniform in [-1, 1): values exact in float32 */
        uint64_t z = fr_test_splitmix64(&state);
        w[k] = (float)((int64_t)(z >> 40) - (1 << 23)) / (float)(1 << 23);
    }
    for (size_t c = 0; st == FR_OK && c < reg->n_configs; c++) {
        uint64_t bits = 0;
        fr_error one = {0};
        if (pt_run_config(reg, &reg->configs[c], pool, DRIVER_SEED, DRIVER_TENSOR, w, w_hat, rows,
                          cols, &bits, &one) != FR_OK) {
            fr_error_log("%s", one.msg);
            failures++;
            continue;
        }
        double sq_err = 0.0, sq_ref = 0.0;
        for (size_t k = 0; k < n; k++) {
            double d = (double)w[k] - (double)w_hat[k];
            sq_err += d * d;
            sq_ref += (double)w[k] * (double)w[k];
        }
        printf("ok %s %llu %.9g\n", reg->configs[c].cfg->name, (unsigned long long)bits,
               sqrt(sq_err / sq_ref));
    }
    free(w);
    free(w_hat);
    return st == FR_OK && failures ? FR_E_FAIL : st;
}

/* The registry the options ask for: the built-ins unless --no-builtins, the
 * --plugin files, and with --discover the plugin path and installed folder. */
static fr_status build_registry(fr_registry *reg, int builtins, int discover,
                                const char **plugins, size_t n_plugins, fr_error *err)
{
    fr_status st;
    if (builtins && (st = fr_registry_init(reg, err)) != FR_OK)
        return st;
    if (discover)
        return fr_registry_discover(reg, plugins, n_plugins, err);
    return fr_registry_discover_from(reg, plugins, n_plugins, NULL, NULL, err);
}

int main(int argc, char **argv)
{
    int builtins = 1, discover = 0;
    const char **plugins = calloc((size_t)argc, sizeof *plugins);
    size_t n_plugins = 0;
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_pool *pool = NULL;
    fr_error err = {0};
    fr_status st = FR_OK;
    int i = 1;
    if (!plugins)
        return FR_E_NOMEM;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--no-builtins"))
            builtins = 0;
        else if (!strcmp(argv[i], "--discover"))
            discover = 1;
        else if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugins[n_plugins++] = argv[++i];
        else
            break;
    }
    if (i >= argc || argv[i][0] == '-') {
        st = usage();
        goto cleanup;
    }
    if ((st = build_registry(&reg, builtins, discover, plugins, n_plugins, &err)) != FR_OK ||
        (st = fr_pool_create(2, &pool, &err)) != FR_OK) {
        fr_error_log("%s", err.msg);
        goto cleanup;
    }
    fr_error_clear(&err);
    const char *command = argv[i++];
    if (!strcmp(command, "list") && i == argc)
        list(&reg);
    else if (!strcmp(command, "run") && i + 5 == argc)
        st = run(&reg, pool, argv + i, &err);
    else if (!strcmp(command, "run-all") && i + 2 == argc)
        st = run_all(&reg, pool, argv + i, &err);
    else
        st = usage();
    /* a usage error has been printed; a failed configuration of run-all too */
    if (st != FR_OK && err.msg[0])
        fr_error_log("%s", err.msg);

cleanup:
    fr_pool_destroy(pool);
    fr_registry_free(&reg);
    free(plugins);
    return st;
}
