/*
 * frontier inspect MODEL [--summary] [--json]: what a checkpoint holds,
 * before any sweep. One row per tensor (name, class, dtype, stored bits per
 * weight, shape, numel;
 * the tensors frontier will not quantize say why), totals per class and per
 * dtype, the source's metadata, and the parameter count. --summary prints
 * the totals only; --json prints everything as one JSON document.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "core/source.h"
#include "frontier/model/block_source.h"

#define NAME_COLUMN_MAX 64  /* longer names overflow their column rather than widen it */
#define META_VALUE_MAX 100  /* metadata values longer than this are cut in the text view */

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier inspect MODEL [--summary] [--json]\n"
            "\n"
            "Lists the tensors of a checkpoint: name, class, dtype (the stored format),\n"
            "bits the file stores per weight (scales included), shape and element count;\n"
            "totals per class and per dtype; the source's metadata; and the total\n"
            "parameter count. A GGUF tensor in a ggml block type frontier decodes (Q4_0,\n"
            "Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, Q2_K..Q6_K, IQ4_NL, IQ4_XS) is one weight,\n"
            "its dequantized values (docs/quantized-sources.md); so is a compressed-tensors\n"
            "weight (nvfp4-pack-quantized, mxfp4-pack-quantized, pack-quantized,\n"
            "float-quantized: its weight_packed, weight_scale, ... folded into one row,\n"
            "bits counting them all). Tensors frontier does not quantize (integer\n"
            "dtypes, other ggml types) are listed with the reason.\n"
            "\n"
            "MODEL is a .safetensors file, a Hugging Face folder (model.safetensors or a\n"
            "sharded model.safetensors.index.json, with its config.json), a .gguf file\n"
            "(v2/v3) or an .onnx file (initializers, Constant nodes, external data).\n"
            "\n"
            "options:\n"
            "  --summary   the totals per class and per dtype only (no metadata, no\n"
            "              row per tensor)\n"
            "  --json      print one JSON document instead of the table (everything)\n"
            "  -h, --help  show this help\n"
            "\n"
            "exit codes: 0 ok, 2 usage, 3 file missing or unreadable, 4 malformed file\n"
            "(docs/exit-codes.md)\n");
}

/* Bits the file stores per weight: "16", "5", "8.5", "3.4375"; "-" when unknown. */
static const char *bits_text(const fr_tensor *t, char *buf, size_t len)
{
    uint64_t bits = fr_tensor_stored_bits(t);
    if (!bits || t->numel <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.6g", (double)bits / (double)t->numel);
    return buf;
}

/* 260032 -> "260,032" */
static const char *with_commas(int64_t v, char *buf, size_t len)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRId64, v < 0 ? -v : v);
    size_t o = 0;
    if (v < 0 && o + 1 < len)
        buf[o++] = '-';
    for (int i = 0; i < n && o + 1 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0 && o + 1 < len)
            buf[o++] = ',';
        if (o + 1 < len)
            buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *shape_text(const fr_tensor *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
    return buf;
}

struct total {
    const char *key;
    int64_t tensors, params;
};

/* Totals per dtype in order of first appearance (few distinct dtypes). */
static struct total *add_total(struct total *totals, size_t *n, const char *key, int64_t numel)
{
    for (size_t i = 0; i < *n; i++) {
        if (!strcmp(totals[i].key, key)) {
            totals[i].tensors++;
            totals[i].params += numel;
            return totals;
        }
    }
    totals[*n].key = key;
    totals[*n].tensors = 1;
    totals[*n].params = numel;
    (*n)++;
    return totals;
}

/* ---- text ---- */

static void print_meta_value(const char *key, const cJSON *item)
{
    char *text = NULL;
    const char *shown;
    if (cJSON_IsString(item)) {
        int plain = 1;
        for (const char *p = item->valuestring; *p; p++)
            if ((unsigned char)*p < 0x20)
                plain = 0;
        shown = plain ? item->valuestring : (text = cJSON_PrintUnformatted(item));
    } else {
        shown = text = cJSON_PrintUnformatted(item);
    }
    if (!shown)
        shown = "?";
    size_t len = strlen(shown);
    if (len > META_VALUE_MAX)
        printf("  %s: %.*s... (%zu bytes)\n", key, META_VALUE_MAX, shown, len);
    else
        printf("  %s: %s\n", key, shown);
    free(text);
}

static void print_metadata(const cJSON *obj, const char *prefix)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        size_t len = strlen(prefix) + strlen(item->string) + 2;
        char *key = malloc(len);
        if (!key)
            return;
        snprintf(key, len, "%s%s%s", prefix, *prefix ? "." : "", item->string);
        /* objects that summarise an array or string stay one line */
        if (cJSON_IsObject(item) && !cJSON_HasObjectItem(item, "length") && cJSON_GetArraySize(item) > 0)
            print_metadata(item, key);
        else
            print_meta_value(key, item);
        free(key);
    }
}

static void print_text(const fr_source *src, const struct total *by_class, const struct total *by_dtype,
                       size_t n_dtypes, int summary)
{
    char a[32], b[32], shape[160];
    uint64_t bytes = 0;
    for (size_t i = 0; i < src->n_files; i++)
        bytes += src->files[i].size;
    printf("%s: %s, %zu file%s, %s bytes\n", src->path, fr_source_kind_name(src->kind), src->n_files,
           src->n_files == 1 ? "" : "s", with_commas((int64_t)bytes, a, sizeof a));
    if (!summary && cJSON_GetArraySize(src->metadata) > 0) {
        printf("\nmetadata:\n");
        print_metadata(src->metadata, "");
    }

    int name_w = 4, dtype_w = 5, shape_w = 5;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        int n = (int)strlen(t->name);
        if (n > name_w)
            name_w = n > NAME_COLUMN_MAX ? NAME_COLUMN_MAX : n;
        n = (int)strlen(t->dtype_name);
        if (n > dtype_w)
            dtype_w = n;
        n = (int)strlen(shape_text(t, shape, sizeof shape));
        if (n > shape_w)
            shape_w = n;
    }
    if (!summary)
        printf("\n%-*s  %-8s  %-*s  %6s  %-*s  %13s\n", name_w, "name", "class", dtype_w, "dtype",
               "bits", shape_w, "shape", "numel");
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        if (summary)
            break;
        printf("%-*s  %-8s  %-*s  %6s  %-*s  %13s", name_w, t->name, fr_class_name(t->cls), dtype_w,
               t->dtype_name, bits_text(t, b, sizeof b), shape_w,
               shape_text(t, shape, sizeof shape), with_commas(t->numel, a, sizeof a));
        if (t->skip_reason)
            printf("  (skipped: %s)", t->skip_reason);
        printf("\n");
    }

    printf("\n%-16s %8s %16s\n", "class", "tensors", "params");
    for (int c = 0; c < FR_CLASS_COUNT; c++)
        if (by_class[c].tensors)
            printf("%-16s %8" PRId64 " %16s\n", by_class[c].key, by_class[c].tensors,
                   with_commas(by_class[c].params, a, sizeof a));
    printf("\n%-16s %8s %16s\n", "dtype", "tensors", "params");
    for (size_t i = 0; i < n_dtypes; i++)
        printf("%-16s %8" PRId64 " %16s\n", by_dtype[i].key, by_dtype[i].tensors,
               with_commas(by_dtype[i].params, a, sizeof a));

    int64_t skipped = 0, skipped_params = 0;
    for (size_t i = 0; i < src->n_tensors; i++)
        if (src->tensors[i].skip_reason) {
            skipped++;
            skipped_params += src->tensors[i].numel;
        }
    printf("\n%zu tensors, %s parameters", src->n_tensors, with_commas(fr_source_numel(src), a, sizeof a));
    if (skipped)
        printf(" (%" PRId64 " tensors, %s parameters listed but not quantizable)", skipped,
               with_commas(skipped_params, b, sizeof b));
    printf("\n");
}

/* ---- JSON ---- */

static cJSON *totals_json(const struct total *totals, size_t n)
{
    cJSON *obj = cJSON_CreateObject();
    for (size_t i = 0; obj && i < n; i++) {
        if (!totals[i].tensors)
            continue;
        cJSON *entry = cJSON_AddObjectToObject(obj, totals[i].key);
        if (!entry || !cJSON_AddNumberToObject(entry, "tensors", (double)totals[i].tensors) ||
            !cJSON_AddNumberToObject(entry, "params", (double)totals[i].params)) {
            cJSON_Delete(obj);
            return NULL;
        }
    }
    return obj;
}

static cJSON *build_json(const fr_source *src, const struct total *by_class, const struct total *by_dtype,
                         size_t n_dtypes)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *source = cJSON_AddObjectToObject(doc, "source");
    cJSON *files = source ? cJSON_AddArrayToObject(source, "files") : NULL;
    if (!files || !cJSON_AddStringToObject(source, "path", src->path) ||
        !cJSON_AddStringToObject(source, "kind", fr_source_kind_name(src->kind)))
        goto fail;
    uint64_t bytes = 0;
    for (size_t i = 0; i < src->n_files; i++) {
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f)) {
            cJSON_Delete(f);
            goto fail;
        }
        if (!cJSON_AddStringToObject(f, "path", src->files[i].path) ||
            !cJSON_AddNumberToObject(f, "size", (double)src->files[i].size))
            goto fail;
        bytes += src->files[i].size;
    }
    if (!cJSON_AddNumberToObject(source, "bytes", (double)bytes))
        goto fail;
    cJSON *meta = cJSON_Duplicate(src->metadata, 1);
    if (!meta || !cJSON_AddItemToObject(doc, "metadata", meta)) {
        cJSON_Delete(meta);
        goto fail;
    }
    cJSON *tensors = cJSON_AddArrayToObject(doc, "tensors");
    if (!tensors)
        goto fail;
    int64_t skipped = 0, skipped_params = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        cJSON *row = cJSON_CreateObject();
        if (!row || !cJSON_AddItemToArray(tensors, row)) {
            cJSON_Delete(row);
            goto fail;
        }
        cJSON *shape = cJSON_AddArrayToObject(row, "shape");
        if (!cJSON_AddStringToObject(row, "name", t->name) ||
            !cJSON_AddStringToObject(row, "class", fr_class_name(t->cls)) ||
            !cJSON_AddStringToObject(row, "dtype", t->dtype_name) || !shape ||
            !cJSON_AddNumberToObject(row, "numel", (double)t->numel))
            goto fail;
        /* what the file stores: bits (scales included) and per weight */
        uint64_t bits = fr_tensor_stored_bits(t);
        if (!cJSON_AddStringToObject(row, "source_format", fr_tensor_source_format(t)) ||
            !cJSON_AddNumberToObject(row, "stored_bits", (double)bits) ||
            !cJSON_AddItemToObject(row, "bits_per_weight",
                                   bits && t->numel > 0
                                       ? cJSON_CreateNumber((double)bits / (double)t->numel)
                                       : cJSON_CreateNull()))
            goto fail;
        for (int d = 0; d < t->ndim; d++) {
            cJSON *dim = cJSON_CreateNumber((double)t->shape[d]);
            if (!dim || !cJSON_AddItemToArray(shape, dim)) {
                cJSON_Delete(dim);
                goto fail;
            }
        }
        if (src->n_files > 1 && !cJSON_AddStringToObject(row, "file", src->files[t->file].path))
            goto fail;
        if (t->skip_reason) {
            skipped++;
            skipped_params += t->numel;
            if (!cJSON_AddStringToObject(row, "skip_reason", t->skip_reason))
                goto fail;
        }
    }
    cJSON *classes = totals_json(by_class, FR_CLASS_COUNT);
    if (!classes || !cJSON_AddItemToObject(doc, "by_class", classes)) {
        cJSON_Delete(classes);
        goto fail;
    }
    cJSON *dtypes = totals_json(by_dtype, n_dtypes);
    if (!dtypes || !cJSON_AddItemToObject(doc, "by_dtype", dtypes)) {
        cJSON_Delete(dtypes);
        goto fail;
    }
    if (!cJSON_AddNumberToObject(doc, "n_tensors", (double)src->n_tensors) ||
        !cJSON_AddNumberToObject(doc, "n_params", (double)fr_source_numel(src)) ||
        !cJSON_AddNumberToObject(doc, "n_skipped", (double)skipped) ||
        !cJSON_AddNumberToObject(doc, "skipped_params", (double)skipped_params))
        goto fail;
    return doc;
fail:
    cJSON_Delete(doc);
    return NULL;
}

int cmd_inspect(int argc, char **argv)
{
    const char *model = NULL;
    int json = 0, summary = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            print_help(stdout);
            return FR_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--summary")) {
            summary = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0' && strcmp(argv[i], "--") != 0) {
            return cli_usage_error(argv[0], "unknown option '%s'", argv[i]);
        } else {
            if (!strcmp(argv[i], "--") && i + 1 < argc)
                i++;
            if (model)
                return cli_usage_error(argv[0], "one MODEL at a time ('%s' and '%s')", model, argv[i]);
            model = argv[i];
        }
    }
    if (!model)
        return cli_usage_error(argv[0], "missing MODEL");

    fr_error err;
    fr_error_clear(&err);
    fr_source *src = NULL;
    fr_status st = fr_block_source_open(model, &src, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }

    struct total by_class[FR_CLASS_COUNT];
    for (int c = 0; c < FR_CLASS_COUNT; c++)
        by_class[c] = (struct total){fr_class_name((fr_tensor_class)c), 0, 0};
    struct total *by_dtype = calloc(src->n_tensors ? src->n_tensors : 1, sizeof *by_dtype);
    size_t n_dtypes = 0;
    if (!by_dtype) {
        fr_error_log("out of memory listing '%s'", model);
        fr_source_close(src);
        return FR_E_NOMEM;
    }
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        by_class[t->cls].tensors++;
        by_class[t->cls].params += t->numel;
        add_total(by_dtype, &n_dtypes, t->dtype_name, t->numel);
    }

    if (json) {
        cJSON *doc = build_json(src, by_class, by_dtype, n_dtypes);
        char *text = doc ? cJSON_Print(doc) : NULL;
        if (!text) {
            fr_error_log("out of memory listing '%s'", model);
            st = FR_E_NOMEM;
        } else {
            printf("%s\n", text);
        }
        free(text);
        cJSON_Delete(doc);
    } else {
        print_text(src, by_class, by_dtype, n_dtypes, summary);
    }
    free(by_dtype);
    fr_source_close(src);
    return st;
}
