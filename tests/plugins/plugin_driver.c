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

int main(int argc, char **argv)
{
    int builtins = 1, discover = 0;
    const char **plugins = calloc((size_t)argc, sizeof *plugins);
    size_t n_plugins = 0;
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_pool *pool = NULL;
    float *w = NULL, *w_hat = NULL;
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
        else {
            st = usage();
            goto cleanup;
        }
    }
    if (i >= argc) {
        st = usage();
        goto cleanup;
    }

    if (builtins && (st = fr_registry_init(&reg, &err)) != FR_OK)
        goto fail;
    if (discover)
        st = fr_registry_discover(&reg, plugins, n_plugins, &err);
    else
        st = fr_registry_discover_from(&reg, plugins, n_plugins, NULL, NULL, &err);
    if (st != FR_OK)
        goto fail;
    if ((st = fr_pool_create(2, &pool, &err)) != FR_OK)
        goto fail;

    const char *command = argv[i++];
    if (!strcmp(command, "list") && i == argc) {
        for (size_t e = 0; e < reg.n_entries; e++) {
            printf("quantizer %s %s\n", reg.entries[e].q->name, reg.entries[e].origin);
            for (size_t k = 0; k < reg.entries[e].q->n_configs; k++)
                printf("config %s\n", reg.entries[e].q->configs[k].name);
        }
    } else if (!strcmp(command, "run") && i + 5 == argc) {
        int64_t rows, cols;
        const fr_config_ref *ref = fr_registry_find_config(&reg, argv[i]);
        if (!ref) {
            st = fr_fail(&err, FR_E_USAGE, "no configuration named '%s'", argv[i]);
            goto fail;
        }
        if (!parse_dim(argv[i + 1], &rows) || !parse_dim(argv[i + 2], &cols)) {
            st = usage();
            goto cleanup;
        }
        size_t n = (size_t)(rows * cols);
        w = malloc(n * sizeof *w);
        w_hat = malloc(n * sizeof *w_hat);
        if (!w || !w_hat) {
            st = fr_fail(&err, FR_E_NOMEM, "out of memory");
            goto fail;
        }
        uint64_t bits = 0;
        if ((st = read_matrix(argv[i + 3], w, n, &err)) != FR_OK ||
            (st = pt_run_config(&reg, ref, pool, DRIVER_SEED, DRIVER_TENSOR, w, w_hat, rows, cols,
                                &bits, &err)) != FR_OK ||
            (st = write_matrix(argv[i + 4], w_hat, n, &err)) != FR_OK)
            goto fail;
        printf("total_bits %llu\n", (unsigned long long)bits);
    } else if (!strcmp(command, "run-all") && i + 2 == argc) {
        int64_t rows, cols;
        if (!parse_dim(argv[i], &rows) || !parse_dim(argv[i + 1], &cols)) {
            st = usage();
            goto cleanup;
        }
        size_t n = (size_t)(rows * cols);
        w = malloc(n * sizeof *w);
        w_hat = malloc(n * sizeof *w_hat);
        if (!w || !w_hat) {
            st = fr_fail(&err, FR_E_NOMEM, "out of memory");
            goto fail;
        }
        uint64_t state = DRIVER_SEED;
        for (size_t k = 0; k < n; k++) {
            /* splitmix64 -> uniform in [-1, 1): values exact in float32 */
            uint64_t z = (state += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            z ^= z >> 31;
            w[k] = (float)((int64_t)(z >> 40) - (1 << 23)) / (float)(1 << 23);
        }
        size_t failures = 0;
        for (size_t c = 0; c < reg.n_configs; c++) {
            uint64_t bits = 0;
            fr_error one = {0};
            if (pt_run_config(&reg, &reg.configs[c], pool, DRIVER_SEED, DRIVER_TENSOR, w, w_hat,
                              rows, cols, &bits, &one) != FR_OK) {
                /* reported, and the run goes on with the other configurations */
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
            printf("ok %s %llu %.9g\n", reg.configs[c].cfg->name, (unsigned long long)bits,
                   sqrt(sq_err / sq_ref));
        }
        if (failures)
            st = FR_E_FAIL;
    } else {
        st = usage();
    }
    goto cleanup;

fail:
    fr_error_log("%s", err.msg);
cleanup:
    free(w);
    free(w_hat);
    fr_pool_destroy(pool);
    fr_registry_free(&reg);
    free(plugins);
    return st;
}
