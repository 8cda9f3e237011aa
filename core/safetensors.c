/*
 * safetensors (https://github.com/huggingface/safetensors, "Format"):
 *   8 bytes  little-endian u64 N, the header length
 *   N bytes  a UTF-8 JSON object: tensor name -> {"dtype", "shape",
 *            "data_offsets": [begin, end]} (offsets relative to the data
 *            section), plus an optional "__metadata__" string map;
 *            may be padded with spaces
 *   rest     the data section, tensors packed little-endian, C order
 * and the sharded Hugging Face layout: model.safetensors.index.json with
 * "weight_map": tensor name -> shard file, beside the shards.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"
#include "source.h"

/* Every dtype the format names (safetensors Dtype enum), how many bits an
 * element takes, and why frontier does not quantize the ones it lists. */
static const struct st_dtype {
    const char *name;
    fr_dtype dtype;
    unsigned bits;
    const char *skip_reason;
} st_dtypes[] = {
    {"F64", FR_DTYPE_F64, 64, NULL},
    {"F32", FR_DTYPE_F32, 32, NULL},
    {"F16", FR_DTYPE_F16, 16, NULL},
    {"BF16", FR_DTYPE_BF16, 16, NULL},
    {"F8_E4M3", FR_DTYPE_F8_E4M3, 8, NULL},
    {"F8_E4M3FN", FR_DTYPE_F8_E4M3, 8, NULL}, /* the name torch and ml_dtypes use */
    {"F8_E5M2", FR_DTYPE_F8_E5M2, 8, NULL},
    {"I64", FR_DTYPE_I64, 64, "integer dtype"},
    {"U64", FR_DTYPE_U64, 64, "integer dtype"},
    {"I32", FR_DTYPE_I32, 32, "integer dtype"},
    {"U32", FR_DTYPE_U32, 32, "integer dtype"},
    {"I16", FR_DTYPE_I16, 16, "integer dtype"},
    {"U16", FR_DTYPE_U16, 16, "integer dtype"},
    {"I8", FR_DTYPE_I8, 8, "integer dtype"},
    {"U8", FR_DTYPE_U8, 8, "integer dtype"},
    {"BOOL", FR_DTYPE_BOOL, 8, "boolean dtype"},
    {"F8_E8M0", FR_DTYPE_QUANT, 8, "scale dtype (E8M0) is not read"},
    {"F6_E2M3", FR_DTYPE_QUANT, 6, "packed sub-byte dtype is not read"},
    {"F6_E3M2", FR_DTYPE_QUANT, 6, "packed sub-byte dtype is not read"},
    {"F4", FR_DTYPE_QUANT, 4, "packed sub-byte dtype is not read"},
    {"C64", FR_DTYPE_QUANT, 64, "complex dtype"},
};

static const struct st_dtype *find_dtype(const char *name)
{
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (!strcmp(st_dtypes[i].name, name))
            return &st_dtypes[i];
    return NULL;
}

int fr_safetensors_sniff(const uint8_t *p, uint64_t size)
{
    if (size < 10)
        return 0;
    uint64_t n = fr_le64(p);
    return n >= 2 && n <= FR_SAFETENSORS_MAX_HEADER && p[8] == '{';
}

/* A JSON number that is a whole number in [0, 2^53): beyond that a double
 * cannot say which integer the file meant. */
static int json_uint(const cJSON *item, int64_t *out)
{
    if (!cJSON_IsNumber(item))
        return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d < 9007199254740992.0) || d != (double)(int64_t)d)
        return 0;
    *out = (int64_t)d;
    return 1;
}

struct span {
    uint64_t begin, end;
    size_t tensor;
};

static int by_begin(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static fr_status read_entry(fr_source *src, size_t file, const cJSON *entry, uint64_t data_start,
                            uint64_t data_size, fr_error *err)
{
    const char *path = src->files[file].path;
    const char *name = entry->string;
    char shape_text[256];
    if (!cJSON_IsObject(entry))
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': entry is not a JSON object",
                       path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsString(dtype))
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': \"dtype\" is missing or not a string",
                       path, name);
    const struct st_dtype *dt = find_dtype(dtype->valuestring);
    if (!dt)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': unknown dtype '%.24s'", path,
                       name, dtype->valuestring);
    if (!cJSON_IsArray(shape))
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': \"shape\" is missing or not an array",
                       path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > FR_MAX_DIMS)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': rank %d exceeds the supported %d",
                       path, name, ndim, FR_MAX_DIMS);
    int64_t dims[FR_MAX_DIMS];
    int k = 0;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape)
    {
        if (cJSON_IsNumber(dim) && dim->valuedouble < 0)
            return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': negative dimension %g",
                           path, name, dim->valuedouble);
        if (!json_uint(dim, &dims[k]))
            return fr_fail(err, FR_E_FORMAT,
                           "cannot read '%s': tensor '%s': dimension %d is not an integer below 2^53",
                           path, name, k);
        k++;
    }
    int64_t numel;
    if (fr_shape_numel(dims, ndim, &numel) != 0)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': shape %s has more than 2^63 elements", path,
                       name, fr_shape_text(dims, ndim, shape_text, sizeof shape_text));
    int64_t begin, end;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), &begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), &end))
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': \"data_offsets\" is not two non-negative integers",
                       path, name);
    if (begin > end)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s': data_offsets [%lld, %lld] end before they begin",
                       path, name, (long long)begin, (long long)end);
    if ((uint64_t)end > data_size)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': data_offsets [%lld, %lld] outside the %llu-byte data section",
                       path, name, (long long)begin, (long long)end, (unsigned long long)data_size);
    /* sub-byte dtypes pack elements; the last byte may be partly used */
    uint64_t bits, need;
    if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)dt->bits, &bits))
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': shape %s x %s overflows 64 bits of bytes", path,
                       name, fr_shape_text(dims, ndim, shape_text, sizeof shape_text), dt->name);
    need = bits / 8 + (bits % 8 != 0);
    if ((uint64_t)(end - begin) != need)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, shape %s x %s needs %llu",
                       path, name, (long long)begin, (long long)end, (long long)(end - begin),
                       fr_shape_text(dims, ndim, shape_text, sizeof shape_text), dt->name,
                       (unsigned long long)need);
    fr_tensor *t;
    fr_status st = fr_source_push_tensor(src, name, strlen(name), &t, err);
    if (st != FR_OK)
        return st;
    t->dtype = dt->dtype;
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dt->name);
    t->ndim = ndim;
    memcpy(t->shape, dims, (size_t)ndim * sizeof dims[0]);
    t->numel = numel;
    t->file = (int)file;
    t->offset = data_start + (uint64_t)begin;
    t->nbytes = need;
    t->encoding = FR_ENC_RAW;
    t->skip_reason = dt->skip_reason;
    return FR_OK;
}

fr_status fr_safetensors_read(fr_source *src, size_t file, fr_error *err)
{
    const fr_mapped_file *f = &src->files[file];
    const char *path = f->path;
    fr_status st = FR_OK;
    cJSON *root = NULL;
    struct span *spans = NULL;
    size_t first = src->n_tensors;
    if (f->size == 0)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': empty file", path);
    if (f->size < 8)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': %llu bytes, shorter than the 8-byte header length", path,
                       (unsigned long long)f->size);
    uint64_t n = fr_le64(f->base);
    if (n > f->size - 8)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': header length %llu exceeds the file size %llu", path,
                       (unsigned long long)n, (unsigned long long)f->size);
    if (n > FR_SAFETENSORS_MAX_HEADER)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot read '%s': header length %llu exceeds the format's limit of %llu bytes",
                       path, (unsigned long long)n, FR_SAFETENSORS_MAX_HEADER);
    const char *header = (const char *)f->base + 8;
    const char *parse_end = NULL;
    root = cJSON_ParseWithLengthOpts(header, (size_t)n, &parse_end, 0);
    if (!root) {
        long at = parse_end ? (long)(parse_end - header) : 0;
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': header is not valid JSON (near byte %ld)",
                       path, 8 + at);
    }
    for (const char *q = parse_end; q && q < header + n; q++) {
        /* the writer pads the header with spaces to align the data */
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            st = fr_fail(err, FR_E_FORMAT,
                         "cannot read '%s': header has bytes after its JSON object (byte %ld)", path,
                         (long)(8 + (q - header)));
            goto done;
        }
    }
    if (!cJSON_IsObject(root)) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': header is not a JSON object", path);
        goto done;
    }
    uint64_t data_start = 8 + n, data_size = f->size - data_start;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, root)
    {
        if (!strcmp(entry->string, "__metadata__")) {
            if (!cJSON_IsObject(entry)) {
                st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': \"__metadata__\" is not a JSON object",
                             path);
                goto done;
            }
            /* a sharded folder keeps the first shard's */
            if (!cJSON_GetObjectItemCaseSensitive(src->metadata, "__metadata__")) {
                cJSON *copy = cJSON_Duplicate(entry, 1);
                if (!copy || !cJSON_AddItemToObject(src->metadata, "__metadata__", copy)) {
                    cJSON_Delete(copy);
                    st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
                    goto done;
                }
            }
            continue;
        }
        st = read_entry(src, file, entry, data_start, data_size, err);
        if (st != FR_OK)
            goto done;
    }
    /* no two tensors may share bytes (the crate's own validation does the same) */
    size_t count = src->n_tensors - first;
    if (count > 1) {
        spans = malloc(count * sizeof *spans);
        if (!spans) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
            goto done;
        }
        size_t m = 0;
        for (size_t i = first; i < src->n_tensors; i++) {
            const fr_tensor *t = &src->tensors[i];
            if (t->nbytes == 0)
                continue;
            spans[m].begin = t->offset;
            spans[m].end = t->offset + t->nbytes;
            spans[m].tensor = i;
            m++;
        }
        qsort(spans, m, sizeof *spans, by_begin);
        for (size_t i = 1; i < m; i++) {
            if (spans[i].begin < spans[i - 1].end) {
                const fr_tensor *a = &src->tensors[spans[i - 1].tensor];
                const fr_tensor *b = &src->tensors[spans[i].tensor];
                st = fr_fail(err, FR_E_FORMAT,
                             "cannot read '%s': tensors '%s' and '%s' overlap (data_offsets [%llu, %llu] and [%llu, %llu])",
                             path, a->name, b->name, (unsigned long long)(a->offset - data_start),
                             (unsigned long long)(a->offset - data_start + a->nbytes),
                             (unsigned long long)(b->offset - data_start),
                             (unsigned long long)(b->offset - data_start + b->nbytes));
                goto done;
            }
        }
    }
done:
    free(spans);
    cJSON_Delete(root);
    return st;
}

/* A shard name from the index is a path inside the folder: nothing
 * absolute, no "..", so an index cannot point outside the model. */
static int shard_name_ok(const char *name)
{
    if (!name[0] || name[0] == '/')
        return 0;
    for (const char *p = name; *p;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return 0;
        p += len + (slash != NULL);
    }
    return 1;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

fr_status fr_safetensors_read_index(fr_source *src, const char *index_path, const char *dir,
                                    fr_error *err)
{
    fr_status st = FR_OK;
    fr_mapped_file index = {0};
    cJSON *root = NULL;
    const char **shards = NULL;
    size_t *shard_file = NULL, *sorted = NULL;
    char *shard_path = NULL;
    size_t n_shards = 0;

    st = fr_map_file(index_path, &index, err);
    if (st != FR_OK)
        return st;
    if (index.size == 0) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': empty file", index_path);
        goto done;
    }
    root = cJSON_ParseWithLength((const char *)index.base, (size_t)index.size);
    if (!cJSON_IsObject(root)) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': not a JSON object", index_path);
        goto done;
    }
    const cJSON *weight_map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(weight_map)) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': \"weight_map\" is missing or not an object",
                     index_path);
        goto done;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (cJSON_IsObject(meta)) {
        cJSON *copy = cJSON_Duplicate(meta, 1);
        if (!copy || !cJSON_AddItemToObject(src->metadata, "index_metadata", copy)) {
            cJSON_Delete(copy);
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", index_path);
            goto done;
        }
    }
    int n_entries = cJSON_GetArraySize(weight_map);
    if (n_entries == 0) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': \"weight_map\" names no tensors", index_path);
        goto done;
    }
    shards = malloc((size_t)n_entries * sizeof *shards);
    shard_file = malloc((size_t)n_entries * sizeof *shard_file);
    if (!shards || !shard_file) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", index_path);
        goto done;
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, weight_map)
    {
        const char *shard = cJSON_GetStringValue(entry);
        if (!shard || !shard_name_ok(shard)) {
            st = fr_fail(err, FR_E_FORMAT,
                         "cannot read '%s': tensor '%s': shard is not a file name inside the folder",
                         index_path, entry->string);
            goto done;
        }
        shards[n_shards++] = shard;
    }
    /* shards in name order (model-00001-of-00003 first), each once */
    qsort(shards, n_shards, sizeof *shards, by_string);
    size_t unique = 0;
    for (size_t i = 0; i < n_shards; i++)
        if (unique == 0 || strcmp(shards[unique - 1], shards[i]))
            shards[unique++] = shards[i];
    n_shards = unique;
    for (size_t i = 0; i < n_shards; i++) {
        size_t len = strlen(dir) + strlen(shards[i]) + 2;
        shard_path = malloc(len);
        if (!shard_path) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", index_path);
            goto done;
        }
        snprintf(shard_path, len, "%s/%s", dir, shards[i]);
        st = fr_source_add_file(src, shard_path, &shard_file[i], err);
        if (st != FR_OK) {
            fr_error_prefix(err, "shard of '%s': ", index_path);
            goto done;
        }
        free(shard_path);
        shard_path = NULL;
        st = fr_safetensors_read(src, shard_file[i], err);
        if (st != FR_OK)
            goto done;
    }
    /* every tensor the index names must be in the shard it names */
    sorted = fr_source_sorted_by_name(src);
    cJSON_ArrayForEach(entry, weight_map)
    {
        const char *shard = cJSON_GetStringValue(entry);
        const char **found = bsearch(&shard, shards, n_shards, sizeof *shards, by_string);
        if (!found) { /* cannot happen: every shard name was collected above */
            st = fr_fail(err, FR_E_FAIL, "cannot read '%s': lost shard '%s'", index_path, shard);
            goto done;
        }
        size_t want = shard_file[found - shards];
        long j = fr_source_find_tensor(src, sorted, entry->string);
        if (j < 0 || (size_t)src->tensors[j].file != want) {
            st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor '%s' is missing from its shard '%s'",
                         index_path, entry->string, src->files[want].path);
            goto done;
        }
    }
done:
    free(sorted);
    free(shard_path);
    free(shards);
    free(shard_file);
    cJSON_Delete(root);
    fr_unmap_file(&index); /* the index was only needed while opening */
    return st;
}
