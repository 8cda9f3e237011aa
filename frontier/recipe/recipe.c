/*
 * The recipe JSON (frontier/recipe/recipe.h): its one reader and its one
 * writer.
 */
#include "frontier/recipe/recipe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "frontier/dataset/keep_rows.h"
#include "frontier/dataset/output_file.h"
#include "quantizers/families.h" /* fr_builtin_ggml_type: the family table's GGML types */

/* ---- reading ---- */

void fr_recipe_free(fr_recipe *r)
{
    free(r->tensors);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

/* The whole file (malloc'd, *len bytes; NULL and *len 0 when empty). */
static fr_status read_file(const char *path, char **out, size_t *out_len, fr_error *err)
{
    char why[128];
    FILE *f = fopen(path, "rb");
    if (!f)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                       fr_errno_text(errno, why, sizeof why));
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *bigger = realloc(text, cap);
            if (!bigger) {
                free(text);
                fclose(f);
                return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
            }
            text = bigger;
        }
        memcpy(text + len, chunk, got);
        len += got;
    }
    fclose(f);
    *out = text;
    *out_len = len;
    return FR_OK;
}

static int by_name(const void *a, const void *b)
{
    const fr_recipe_tensor *x = *(const fr_recipe_tensor *const *)a;
    const fr_recipe_tensor *y = *(const fr_recipe_tensor *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

/* Each map entry's rel_err from the "tensors" report: the last item of
 * that name with a number wins, as the entries are matched by name. */
static fr_status attach_errors(fr_recipe *r, const cJSON *tensors, const char *path, fr_error *err)
{
    if (!cJSON_IsArray(tensors) || r->n_tensors == 0)
        return FR_OK;
    fr_recipe_tensor **sorted = malloc(r->n_tensors * sizeof *sorted);
    if (!sorted)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    for (size_t i = 0; i < r->n_tensors; i++)
        sorted[i] = &r->tensors[i];
    qsort(sorted, r->n_tensors, sizeof *sorted, by_name);
    const cJSON *item;
    cJSON_ArrayForEach(item, tensors)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *rel = cJSON_GetObjectItemCaseSensitive(item, "rel_err");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(rel))
            continue;
        size_t lo = 0, hi = r->n_tensors; /* the first entry named name */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(sorted[mid]->name, name->valuestring) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < r->n_tensors && !strcmp(sorted[lo]->name, name->valuestring); lo++)
            sorted[lo]->error = rel->valuedouble;
    }
    free(sorted);
    return FR_OK;
}

fr_status fr_recipe_read(const char *path, unsigned flags, fr_recipe *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    fr_status st = read_file(path, &text, &len, err);
    if (st != FR_OK)
        return st;
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "recipe");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsObject(map) ||
        (!(flags & FR_RECIPE_UNTAGGED) &&
         (!cJSON_IsString(format) || strcmp(format->valuestring, "frontier-recipe")))) {
        cJSON_Delete(root);
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': not a recipe (a JSON object with \"format\": "
                       "\"frontier-recipe\" and a \"recipe\" map, as 'frontier allocate -o' writes)",
                       path);
    }
    out->json = root;
    out->error_name = "rel_err";
    const cJSON *bpw = cJSON_GetObjectItemCaseSensitive(root, "bits_per_weight");
    out->bits_per_weight = cJSON_IsNumber(bpw) ? bpw->valuedouble : NAN;
    const cJSON *objective = cJSON_GetObjectItemCaseSensitive(root, "objective");
    out->objective = cJSON_IsString(objective) ? objective->valuestring : NULL;
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(root, "predicted_kl");
    out->predicted_kl = cJSON_IsNumber(pk) ? pk->valuedouble : NAN;
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (!(out->tensors = calloc(n ? n : 1, sizeof *out->tensors))) {
        fr_recipe_free(out);
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, map)
    {
        fr_recipe_tensor *t = &out->tensors[out->n_tensors++];
        t->name = entry->string;
        t->config = cJSON_IsString(entry) ? entry->valuestring : NULL;
        t->error = NAN;
    }
    if ((st = attach_errors(out, cJSON_GetObjectItemCaseSensitive(root, "tensors"), path, err)) !=
        FR_OK)
        fr_recipe_free(out);
    return st;
}

/* ---- writing ---- */

/* A number printed so that it reads back as the same double (%.17g: cJSON's
 * own printing keeps 15 digits when they compare equal within its epsilon,
 * and the recipe's rel_err is checked bit for bit by frontier quantize),
 * null when not finite. */
static cJSON *json_number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return cJSON_CreateRaw(buf);
}

static fr_status write_text_file(const char *path, const char *text, fr_error *err)
{
    FILE *f;
    fr_status st = fr_output_open(path, &f, err);
    if (st != FR_OK)
        return st;
    fputs(text, f);
    return fr_output_close(f, path, err);
}

fr_status fr_recipe_write(const fr_recipe *r, const char *path, fr_error *err)
{
    fr_status st = FR_OK;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *recipe = cJSON_CreateObject();
    cJSON *tensors = cJSON_CreateArray();
    if (!root || !recipe || !tensors) {
        cJSON_Delete(recipe);
        cJSON_Delete(tensors);
        goto nomem;
    }
    cJSON_AddItemToObject(root, "recipe", recipe);
    cJSON_AddItemToObject(root, "tensors", tensors);
    cJSON_AddStringToObject(root, "format", "frontier-recipe");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "dataset", r->dataset ? r->dataset : "");
    if (r->llama_mix)
        cJSON_AddStringToObject(root, "llama_mix", r->llama_mix);
    cJSON_AddStringToObject(root, "metric", r->metric);
    if (r->objective) {
        cJSON_AddStringToObject(root, "objective", r->objective);
        cJSON_AddItemToObject(root, "sensitivity_source",
                              r->sensitivity_source ? cJSON_CreateString(r->sensitivity_source)
                                                    : cJSON_CreateNull());
        if (!strcmp(r->objective, "sensitivity")) {
            cJSON_AddItemToObject(root, "default_sensitivity", json_number(r->default_sensitivity));
            cJSON_AddItemToObject(root, "predicted_kl", json_number(r->predicted_kl));
        }
    }
    cJSON_AddItemToObject(root, "budget_bits_per_weight", json_number(r->budget_bits_per_weight));
    cJSON_AddNumberToObject(root, "capacity_bits", (double)r->capacity_bits);
    cJSON_AddNumberToObject(root, "total_bits", (double)r->total_bits);
    cJSON_AddNumberToObject(root, "numel", (double)r->numel);
    cJSON_AddItemToObject(root, "bits_per_weight", json_number(r->bits_per_weight));
    cJSON_AddItemToObject(root, r->metric, json_number(r->value));
    if (r->has_rel_err)
        cJSON_AddItemToObject(root, "rel_err", json_number(r->rel_err));
    cJSON_AddItemToObject(root, "err_sum", json_number(r->err_sum));
    cJSON_AddItemToObject(root, "norm_sum", json_number(r->norm_sum));
    cJSON_AddItemToObject(root, "lower_bound", json_number(r->lower_bound));
    cJSON_AddBoolToObject(root, "optimal", r->optimal);
    cJSON_AddNumberToObject(root, "search_states", (double)r->search_states);
    cJSON_AddNumberToObject(root, "n_tensors", (double)r->n_tensors);
    for (size_t i = 0; i < r->n_tensors; i++) {
        const fr_recipe_tensor *t = &r->tensors[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto nomem;
        cJSON_AddItemToArray(tensors, o);
        cJSON_AddStringToObject(recipe, t->name, t->config);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "class", t->cls);
        cJSON_AddStringToObject(o, "config", t->config);
        cJSON_AddStringToObject(o, "family", t->family);
        /* a llama-quantize mix's type, else a kept tensor's source type, else
         * the family table's */
        char kept[32];
        const char *ggml = t->llama_type ? t->llama_type
                           : fr_dataset_is_keep(t->config)
                               ? fr_dataset_keep_type(t->source_format, kept, sizeof kept)
                               : fr_builtin_ggml_type(t->config);
        cJSON_AddItemToObject(o, "llama_cpp_type", ggml ? cJSON_CreateString(ggml) : cJSON_CreateNull());
        cJSON_AddNumberToObject(o, "numel", (double)t->numel);
        cJSON_AddNumberToObject(o, "total_bits", (double)t->total_bits);
        cJSON_AddItemToObject(o, "bits_per_weight",
                              json_number((double)t->total_bits / (double)t->numel));
        cJSON_AddItemToObject(o, r->error_name, json_number(t->error));
        cJSON_AddItemToObject(o, "err_term", json_number(t->err_term));
        cJSON_AddBoolToObject(o, "fixed", t->fixed);
    }
    text = cJSON_Print(root);
    if (!text)
        goto nomem;
    size_t len = strlen(text);
    char *with_nl = realloc(text, len + 2);
    if (!with_nl)
        goto nomem;
    text = with_nl;
    text[len] = '\n';
    text[len + 1] = '\0';
    st = write_text_file(path, text, err);
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
done:
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}
