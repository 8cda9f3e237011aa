/*
 * A built-in family loaded as a plugin (tests/plugins/builtin_as_plugin.c):
 * it loads through the loader into a registry without built-ins, its every
 * configuration gives bit-identical results and sizes to the built-in one,
 * and loading it next to the built-ins is rejected as a duplicate.
 *
 *   test_builtin_plugin FAMILY PLUGIN.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"
#include "plugin_test.h"

/* Runs one configuration of reg; 0 on failure (reported). */
static int run(const fr_registry *reg, const char *config, fr_pool *pool, const float *w,
               float *w_hat, int64_t rows, int64_t cols, uint64_t *bits)
{
    const fr_config_ref *ref = fr_registry_find_config(reg, config);
    if (!ref) {
        fprintf(stderr, "no configuration '%s'\n", config);
        return 0;
    }
    fr_error err = {0};
    fr_status st = pt_run_config(reg, ref, pool, 7, "synthetic", w, w_hat, rows, cols, bits, &err);
    if (st != FR_OK)
        fprintf(stderr, "%s\n", err.msg);
    return st == FR_OK;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_builtin_plugin FAMILY PLUGIN.so\n");
        return 2;
    }
    const char *family = argv[1], *path = argv[2];
    fr_error err = {0};
    fr_pool *pool = NULL;
    if (fr_pool_create(2, &pool, &err) != FR_OK)
        return 1;

    fr_registry builtins, plugged;
    CHECK(fr_registry_init(&builtins, &err) == FR_OK);
    const fr_qentry *b = fr_registry_find_quantizer(&builtins, family);
    CHECK(b != NULL);

    /* through the loader, into a registry without built-ins */
    fr_registry_init_empty(&plugged);
    fr_status loaded = fr_registry_load_plugin(&plugged, path, &err);
    CHECK_MSG(loaded == FR_OK, "%s", err.msg);
    const fr_qentry *p = fr_registry_find_quantizer(&plugged, family);
    CHECK(p != NULL);
    if (b && p) {
        CHECK(p->dl != NULL && !strcmp(p->origin, path));
        CHECK(p->q != b->q); /* its own copy of the code, not the host's */
        CHECK(p->q->n_configs == b->q->n_configs);
        CHECK(p->q->flags == b->q->flags);
        CHECK(plugged.n_configs == p->q->n_configs);

        /* 3 rows of 200: a short last group for 16, 32, 64, 128-element groups */
        enum { ROWS = 3, COLS = 200 };
        static float w[ROWS * COLS], w_b[ROWS * COLS], w_p[ROWS * COLS];
        uint64_t state = 12345;
        for (int i = 0; i < ROWS * COLS; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            w[i] = (float)((int64_t)(state >> 40) - (1 << 23)) / (float)(1 << 21);
        }
        w[17] = 0.0f;
        for (size_t k = 0; k < b->q->n_configs && k < p->q->n_configs; k++) {
            const char *config = b->q->configs[k].name;
            CHECK(!strcmp(config, p->q->configs[k].name));
            uint64_t bits_b = 0, bits_p = 0;
            int ok_b = run(&builtins, config, pool, w, w_b, ROWS, COLS, &bits_b);
            int ok_p = run(&plugged, config, pool, w, w_p, ROWS, COLS, &bits_p);
            CHECK(ok_b && ok_p);
            CHECK(bits_b == bits_p);
            CHECK_MSG(memcmp(w_b, w_p, sizeof w_b) == 0,
                      "%s: plugin and built-in reconstructions differ", config);
            printf("%s: %llu bits, identical as built-in and as plugin\n", config,
                   (unsigned long long)bits_b);
        }
    }

    /* next to the built-ins it is a duplicate */
    CHECK(fr_registry_load_plugin(&builtins, path, &err) == FR_E_PLUGIN);
    char expected[8192];
    snprintf(expected, sizeof expected,
             "plugin '%s': quantizer '%s' is already registered (from builtin)", path, family);
    CHECK_STR(err.msg, expected);

    fr_registry_free(&plugged);
    fr_registry_free(&builtins);
    fr_pool_destroy(pool);
    if (!fr_test_failures)
        printf("test_builtin_plugin: '%s' loads as a plugin\n", family);
    return fr_test_finish("test_builtin_plugin");
}
