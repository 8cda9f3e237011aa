/*
 * safetensors writer: the header is a JSON object of name -> {"dtype",
 * "shape", "data_offsets": [begin, end]} in plan order plus "__metadata__",
 * padded with spaces to a multiple of 8 bytes (what the safetensors crate
 * writes, so the data section stays 8-byte aligned); the data section holds
 * the tensors back to back with no gaps, which the crate's loader requires.
 */
#include "safetensors_write.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readers.h"

struct fr_st_writer {
    FILE *f;
    char *path;
    uint64_t planned, written;
};

static const struct {
    const char *name;
    unsigned size;
} st_sizes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"I64", 8}, {"U64", 8}, {"I32", 4}, {"U32", 4}, {"I16", 2},      {"U16", 2},
    {"I8", 1},  {"U8", 1},  {"BOOL", 1},
};

unsigned fr_st_dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof st_sizes / sizeof st_sizes[0]; i++)
        if (!strcmp(st_sizes[i].name, dtype))
            return st_sizes[i].size;
    return 0;
}

uint64_t fr_st_plan_data_bytes(const fr_st_entry *entries, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += entries[i].nbytes;
    return total;
}

static fr_status check_entry(const fr_st_entry *e, const char *path, fr_error *err)
{
    unsigned size = fr_st_dtype_size(e->dtype);
    int64_t numel;
    if (!size)
        return fr_fail(err, FR_E_USAGE, "writing '%s': tensor '%s' has unknown dtype '%s'", path,
                       e->name, e->dtype);
    if (e->ndim < 0 || e->ndim > FR_MAX_DIMS || fr_shape_numel(e->shape, e->ndim, &numel) != 0)
        return fr_fail(err, FR_E_USAGE, "writing '%s': tensor '%s' has an invalid shape", path,
                       e->name);
    if ((uint64_t)numel * size != e->nbytes)
        return fr_fail(err, FR_E_USAGE,
                       "writing '%s': tensor '%s' is planned with %llu bytes, its shape needs %llu",
                       path, e->name, (unsigned long long)e->nbytes,
                       (unsigned long long)((uint64_t)numel * size));
    return FR_OK;
}

static cJSON *header_json(const fr_st_entry *entries, size_t n, const char *const *meta,
                          size_t n_meta)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    if (n_meta) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        if (!m)
            goto nomem;
        for (size_t i = 0; i < n_meta; i++)
            if (!cJSON_AddStringToObject(m, meta[2 * i], meta[2 * i + 1]))
                goto nomem;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const fr_st_entry *e = &entries[i];
        /* the format's field order: dtype, shape, data_offsets */
        cJSON *t = cJSON_AddObjectToObject(root, e->name);
        if (!t || !cJSON_AddStringToObject(t, "dtype", e->dtype))
            goto nomem;
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        cJSON *offs = shape ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        if (!offs)
            goto nomem;
        for (int d = 0; d < e->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->shape[d]));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        offset += e->nbytes;
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
    }
    return root;
nomem:
    cJSON_Delete(root);
    return NULL;
}

fr_status fr_st_writer_begin(const char *path, const fr_st_entry *entries, size_t n,
                             const char *const *meta, size_t n_meta, fr_st_writer **out,
                             fr_error *err)
{
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        fr_status st = check_entry(&entries[i], path, err);
        if (st != FR_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(entries[i].name, entries[j].name))
                return fr_fail(err, FR_E_USAGE, "writing '%s': tensor '%s' is planned twice", path,
                               entries[i].name);
    }
    /* offsets are JSON numbers (doubles): exact up to 2^53 bytes */
    uint64_t data = fr_st_plan_data_bytes(entries, n);
    if (data > (1ull << 53))
        return fr_fail(err, FR_E_USAGE, "writing '%s': %llu bytes do not fit one file", path,
                       (unsigned long long)data);
    cJSON *root = header_json(entries, n, meta, n_meta);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    fr_st_writer *w = calloc(1, sizeof *w);
    if (!text || !w || !(w->path = strdup(path))) {
        cJSON_free(text);
        free(w);
        return fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
    }
    size_t len = strlen(text);
    size_t padded = (len + 7) / 8 * 8;
    w->planned = data;
    w->f = fopen(path, "wb");
    if (!w->f) {
        char why[128];
        fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path, fr_errno_text(errno, why, sizeof why));
        cJSON_free(text);
        free(w->path);
        free(w);
        return FR_E_OUTPUT;
    }
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    fwrite(le, 1, 8, w->f);
    fwrite(text, 1, len, w->f);
    for (size_t i = len; i < padded; i++)
        fputc(' ', w->f);
    cJSON_free(text);
    *out = w;
    return FR_OK;
}

fr_status fr_st_writer_write(fr_st_writer *w, const void *data, size_t n, fr_error *err)
{
    if (n > w->planned - w->written)
        return fr_fail(err, FR_E_FAIL, "writing '%s': more data than its header planned", w->path);
    if (n && fwrite(data, 1, n, w->f) != n) {
        char why[128];
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", w->path,
                       fr_errno_text(errno, why, sizeof why));
    }
    w->written += n;
    return FR_OK;
}

fr_status fr_st_writer_finish(fr_st_writer *w, fr_error *err)
{
    fr_status st = FR_OK;
    char why[128];
    if (w->written != w->planned)
        st = fr_fail(err, FR_E_FAIL, "writing '%s': %llu of %llu planned bytes written", w->path,
                     (unsigned long long)w->written, (unsigned long long)w->planned);
    int bad = ferror(w->f) || fr_file_sync(w->f) != 0;
    if (fclose(w->f) != 0 || bad) {
        if (st == FR_OK)
            st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", w->path,
                         fr_errno_text(errno ? errno : EIO, why, sizeof why));
    }
    free(w->path);
    free(w);
    return st;
}

void fr_st_writer_abort(fr_st_writer *w)
{
    if (!w)
        return;
    fclose(w->f);
    free(w->path);
    free(w);
}

int fr_file_sync(FILE *f)
{
    if (fflush(f) != 0)
        return -1;
    if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        return -1;
    return 0;
}
