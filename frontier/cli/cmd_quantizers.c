/*
 * frontier quantizers [--json] [--plugin FILE]...: every registered quantizer
 * (built-in and plugins), where it came from, its flags and its
 * configurations (with --json, each configuration's traits too). The
 * listing is what a sweep would see with the same --plugin options and
 * environment.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: frontier quantizers [--json] [--plugin FILE]...\n"
            "\n"
            "Lists every registered quantizer: its version, where it came from (builtin or\n"
            "the plugin's path), its flags (needs-hessian, needs-act-stats, cuda,\n"
            "deterministic), its description, and every configuration with its nominal\n"
            "bits and parameters (--json: also its traits: row blocks, checkpoint\n"
            "storage, GGUF type, fused groups).\n"
            "\n"
            "options:\n"
            "  --json          one JSON document on standard output instead of the table\n"
            "  --plugin FILE   load the quantizer plugin FILE (repeatable); a plugin that\n"
            "                  cannot be loaded is an error (exit 6)\n"
            "  -h, --help      this text\n"
            "\n"
            "plugins are also found on FRONTIER_PLUGIN_PATH (colon-separated files and\n"
            "folders; folders are scanned for *.so) and in the installed folder\n"
            "  %s\n"
            "FRONTIER_PLUGIN_PATH=none disables both; plugins found there that fail to\n"
            "load are reported and skipped. See docs/plugins.md.\n",
            fr_registry_plugin_dir());
}

static void print_table(const fr_registry *reg)
{
    int width = 6; /* strlen("config") */
    for (size_t i = 0; i < reg->n_configs; i++) {
        int len = (int)strlen(reg->configs[i].cfg->name);
        if (len > width)
            width = len;
    }
    size_t c = 0;
    for (size_t e = 0; e < reg->n_entries; e++) {
        const fr_qentry *entry = &reg->entries[e];
        const frontier_quantizer *q = entry->q;
        char flags[128];
        fr_quantizer_flag_names(q->flags, flags, sizeof flags);
        printf("%s%s %s (%s)%s%s%s\n", e ? "\n" : "", q->name, q->version,
               entry->origin, flags[0] ? " [" : "", flags, flags[0] ? "]" : "");
        printf("  %s\n", q->description);
        for (size_t k = 0; k < q->n_configs; k++, c++) {
            const frontier_config *cfg = &q->configs[k];
            printf("  %-*s  %5g  %s\n", width, cfg->name, cfg->nominal_bits, cfg->params_json);
        }
    }
    if (reg->n_entries)
        printf("\n");
    printf("%zu quantizer%s, %zu configuration%s\n", reg->n_entries,
           reg->n_entries == 1 ? "" : "s", c, c == 1 ? "" : "s");
}

/* A string member, or null for NULL. */
static int add_text(cJSON *o, const char *key, const char *s)
{
    return s ? cJSON_AddStringToObject(o, key, s) != NULL : cJSON_AddNullToObject(o, key) != NULL;
}

/* What the host knows of a configuration (frontier_config_traits): every
 * member always, so scripts need not guess defaults. NULL when out of
 * memory. */
static cJSON *traits_json(const frontier_config_traits *t)
{
    static const char *const scopes[] = {"tensor", "channel", "block128"};
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddNumberToObject(o, "row_multiple", (double)t->row_multiple) &&
             cJSON_AddBoolToObject(o, "needs_range", t->needs_range) &&
             add_text(o, "whole_tensor_reason", t->whole_tensor_reason) &&
             add_text(o, "storage", fr_storage_name(t->storage)) &&
             cJSON_AddNumberToObject(o, "storage_bits", t->storage_bits) &&
             cJSON_AddNumberToObject(o, "storage_group_size", t->storage_group_size) &&
             cJSON_AddBoolToObject(o, "storage_symmetric", t->storage_symmetric) &&
             add_text(o, "storage_fp8_scope",
                      t->storage == FRONTIER_STORAGE_FP8 ? scopes[t->storage_fp8_scope] : NULL) &&
             cJSON_AddBoolToObject(o, "storage_scales", t->storage_scales != NULL) &&
             add_text(o, "gguf_type", t->gguf_type) &&
             cJSON_AddBoolToObject(o, "gguf_importance", t->gguf_importance != NULL) &&
             cJSON_AddBoolToObject(o, "needs_group_amax", t->needs_group_amax) &&
             add_text(o, "fused_companion_of", t->fused_companion_of);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The JSON document; NULL when out of memory. */
static cJSON *registry_json(const fr_registry *reg)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON *quantizers = NULL;
    if (!cJSON_AddStringToObject(root, "frontier_version", FRONTIER_VERSION) ||
        !cJSON_AddNumberToObject(root, "abi_version", FRONTIER_PLUGIN_ABI_VERSION) ||
        !cJSON_AddNumberToObject(root, "n_quantizers", (double)reg->n_entries) ||
        !cJSON_AddNumberToObject(root, "n_configs", (double)reg->n_configs) ||
        !(quantizers = cJSON_AddArrayToObject(root, "quantizers")))
        goto fail;
    size_t c = 0;
    for (size_t e = 0; e < reg->n_entries; e++) {
        const frontier_quantizer *q = reg->entries[e].q;
        cJSON *jq = cJSON_CreateObject();
        if (!jq || !cJSON_AddItemToArray(quantizers, jq)) {
            cJSON_Delete(jq);
            goto fail;
        }
        cJSON *flags = NULL, *configs = NULL;
        if (!cJSON_AddStringToObject(jq, "name", q->name) ||
            !cJSON_AddStringToObject(jq, "version", q->version) ||
            !cJSON_AddStringToObject(jq, "origin", reg->entries[e].origin) ||
            !cJSON_AddStringToObject(jq, "description", q->description) ||
            !(flags = cJSON_AddArrayToObject(jq, "flags")) ||
            !(configs = cJSON_AddArrayToObject(jq, "configs")))
            goto fail;
        for (int b = 0; b < 64; b++) {
            const char *flag = fr_quantizer_flag_name(UINT64_C(1) << b);
            if (!(q->flags & (UINT64_C(1) << b)) || !flag)
                continue;
            cJSON *name = cJSON_CreateString(flag);
            if (!name || !cJSON_AddItemToArray(flags, name)) {
                cJSON_Delete(name);
                goto fail;
            }
        }
        for (size_t k = 0; k < q->n_configs; k++) {
            const frontier_config *cfg = &q->configs[k];
            const fr_config_ref *ref = &reg->configs[c++]; /* registration order */
            cJSON *jc = cJSON_CreateObject();
            if (!jc || !cJSON_AddItemToArray(configs, jc)) {
                cJSON_Delete(jc);
                goto fail;
            }
            /* validated as a JSON object at registration: NULL here is memory */
            cJSON *params = cJSON_Parse(cfg->params_json);
            if (!cJSON_AddStringToObject(jc, "name", cfg->name) ||
                !cJSON_AddNumberToObject(jc, "nominal_bits", cfg->nominal_bits) || !params ||
                !cJSON_AddItemToObject(jc, "params", params)) {
                cJSON_Delete(params);
                goto fail;
            }
            cJSON *traits = traits_json(fr_config_traits_of(ref));
            if (!traits || !cJSON_AddItemToObject(jc, "traits", traits)) {
                cJSON_Delete(traits);
                goto fail;
            }
        }
    }
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

int cmd_quantizers(int argc, char **argv)
{
    int json = 0;
    const char **plugins = NULL;
    size_t n_plugins = 0;
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_error err = {0};
    fr_status st = FR_OK;

    plugins = calloc((size_t)argc, sizeof *plugins);
    if (!plugins) {
        fr_error_log("out of memory");
        return FR_E_NOMEM;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_usage(stdout);
            goto cleanup;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--plugin")) {
            if (i + 1 >= argc) {
                st = cli_usage_error(argv[0], "option '--plugin' needs a file");
                goto cleanup;
            }
            plugins[n_plugins++] = argv[++i];
        } else if (!strncmp(a, "--plugin=", 9)) {
            if (!a[9]) {
                st = cli_usage_error(argv[0], "option '--plugin' needs a file");
                goto cleanup;
            }
            plugins[n_plugins++] = a + 9;
        } else if (a[0] == '-') {
            st = cli_usage_error(argv[0], "unknown option '%s'", a);
            goto cleanup;
        } else {
            st = cli_usage_error(argv[0], "unexpected argument '%s'", a);
            goto cleanup;
        }
    }

    st = fr_registry_init(&reg, &err);
    if (st == FR_OK)
        st = fr_registry_discover(&reg, plugins, n_plugins, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        goto cleanup;
    }

    if (json) {
        cJSON *doc = registry_json(&reg);
        char *text = doc ? cJSON_Print(doc) : NULL;
        cJSON_Delete(doc);
        if (!text) {
            fr_error_log("out of memory writing the quantizer list");
            st = FR_E_NOMEM;
            goto cleanup;
        }
        puts(text);
        cJSON_free(text);
    } else {
        print_table(&reg);
    }

cleanup:
    fr_registry_free(&reg);
    free(plugins);
    return st;
}
