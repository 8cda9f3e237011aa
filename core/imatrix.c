/*
 * llama.cpp importance matrices as diagonal-only statistics (imatrix.h,
 * docs/calibration.md). The GGUF container is read by core/gguf.c (every
 * check of docs/readers.md applies first); the legacy .dat by a bounds-
 * checked cursor here. Values are copied out (never aligned in place) and
 * turned into means.
 */
#include "imatrix.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"
#include "source.h"

#define PREFIX "cannot read calibration '%s': "

static float le_float(const uint8_t *p)
{
    uint32_t u = fr_le32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int by_module(const void *a, const void *b)
{
    return strcmp(((const fr_imatrix_entry *)a)->module, ((const fr_imatrix_entry *)b)->module);
}

/* name without a trailing ".weight", malloc'd */
static char *module_of(const char *name, size_t len)
{
    static const char suffix[] = ".weight";
    size_t k = sizeof suffix - 1;
    if (len > k && !memcmp(name + len - k, suffix, k))
        len -= k;
    return fr_utf8_dup(name, len);
}

void fr_imatrix_free(fr_imatrix *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->n; i++) {
        free(im->entries[i].module);
        free(im->entries[i].counts);
        free(im->entries[i].sq_mean);
    }
    free(im->entries);
    memset(im, 0, sizeof *im);
}

fr_imatrix_format fr_imatrix_sniff(const uint8_t *data, uint64_t size, const char *name)
{
    if (fr_gguf_sniff(data, size))
        return FR_IMATRIX_GGUF;
    if (size >= 8) {
        int32_t n = (int32_t)fr_le32(data), len = (int32_t)fr_le32(data + 4);
        if (n >= 1 && len >= 1 && (uint64_t)len <= size - 8 && data[8] != '{')
            return FR_IMATRIX_DAT;
    }
    size_t l = name ? strlen(name) : 0;
    if (l >= 4 && !strcmp(name + l - 4, ".dat"))
        return FR_IMATRIX_DAT;
    return FR_IMATRIX_NONE;
}

/* Sorts the entries and refuses a module twice. */
static fr_status finish(const char *path, fr_imatrix *im, fr_error *err)
{
    if (im->n == 0)
        return fr_fail(err, FR_E_FORMAT, PREFIX "the importance matrix has no entries", path);
    qsort(im->entries, im->n, sizeof *im->entries, by_module);
    for (size_t i = 1; i < im->n; i++)
        if (!strcmp(im->entries[i - 1].module, im->entries[i].module))
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s' appears twice", path,
                           im->entries[i].module);
    return FR_OK;
}

/* ---- legacy .dat ---- */

struct dat_cursor {
    const uint8_t *p;
    uint64_t pos, size;
};

static int dat_i32(struct dat_cursor *c, int32_t *v)
{
    if (c->size - c->pos < 4)
        return 0;
    *v = (int32_t)fr_le32(c->p + c->pos);
    c->pos += 4;
    return 1;
}

static fr_status read_dat(const char *path, const uint8_t *data, uint64_t size, fr_imatrix *im,
                          fr_error *err)
{
    struct dat_cursor c = {data, 0, size};
    int32_t n_entries;
    if (!dat_i32(&c, &n_entries))
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "%llu bytes: too short for a llama.cpp imatrix .dat (an int32 entry "
                              "count first)",
                       path, (unsigned long long)size);
    if (n_entries < 1)
        return fr_fail(err, FR_E_FORMAT, PREFIX "imatrix entry count %d is not positive", path,
                       (int)n_entries);
    /* each entry takes at least 16 bytes: a lying count fails here, before any allocation */
    if ((uint64_t)n_entries > (size - 4) / 16)
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "imatrix entry count %d does not fit in the file (%llu bytes)", path,
                       (int)n_entries, (unsigned long long)size);
    im->entries = calloc((size_t)n_entries, sizeof *im->entries);
    if (!im->entries)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    for (int32_t i = 0; i < n_entries; i++) {
        int32_t len, ncall, nval;
        if (!dat_i32(&c, &len))
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "entry %d of %d: truncated at offset %llu (its name length)", path,
                           (int)i + 1, (int)n_entries, (unsigned long long)c.pos);
        if (len < 1 || (uint64_t)len > c.size - c.pos)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "entry %d of %d: name length %d at offset %llu is not within the "
                                  "file (%llu bytes)",
                           path, (int)i + 1, (int)n_entries, (int)len,
                           (unsigned long long)(c.pos - 4), (unsigned long long)size);
        fr_imatrix_entry *e = &im->entries[im->n++];
        e->module = module_of((const char *)c.p + c.pos, (size_t)len);
        if (!e->module)
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        c.pos += (uint64_t)len;
        if (!dat_i32(&c, &ncall) || !dat_i32(&c, &nval))
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': truncated at offset %llu (its ncall and nval)", path,
                           e->module, (unsigned long long)c.pos);
        if (ncall < 1)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': ncall %d is not positive", path,
                           e->module, (int)ncall);
        if (nval < 1)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': nval %d is not positive", path,
                           e->module, (int)nval);
        if ((uint64_t)nval * 4 > c.size - c.pos)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': nval %d needs %llu bytes at offset %llu, the file "
                                  "has %llu",
                           path, e->module, (int)nval, (unsigned long long)nval * 4,
                           (unsigned long long)c.pos, (unsigned long long)size);
        e->in = nval;
        e->n_mat = 1;
        e->count = ncall;
        e->sq_mean = malloc((size_t)nval * sizeof *e->sq_mean);
        if (!e->sq_mean)
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        for (int32_t j = 0; j < nval; j++) {
            float v = le_float(c.p + c.pos + 4 * (uint64_t)j);
            if (!isfinite(v))
                return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': value[%d] is %g", path,
                               e->module, (int)j, (double)v);
            if (v < 0)
                return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': value[%d] = %g is negative",
                               path, e->module, (int)j, (double)v);
            e->sq_mean[j] = (float)((double)v / (double)ncall);
        }
        c.pos += (uint64_t)nval * 4;
    }
    /* the trailer: nothing, the chunk count, or the chunk count and the dataset name */
    uint64_t rest = c.size - c.pos;
    int32_t chunks = -1, name_len = -1;
    int ok = rest == 0;
    if (rest >= 4) {
        dat_i32(&c, &chunks);
        ok = rest == 4;
        if (rest >= 8) {
            dat_i32(&c, &name_len);
            ok = name_len >= 0 && (uint64_t)name_len == rest - 8;
        }
    }
    if (!ok)
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "%llu bytes after entry %d are not a .dat trailer (int32 chunk "
                              "count, int32 length, dataset name): is the entry count right?",
                       path, (unsigned long long)rest, (int)n_entries);
    im->chunk_count = chunks;
    im->token_count = 0;
    return FR_OK;
}

/* ---- GGUF ---- */

enum gguf_part { G_SUM2, G_COUNTS, G_SUM, G_COUNT };
static const char *const gguf_parts[G_COUNT] = {"in_sum2", "counts", "in_sum"};

struct gguf_group {
    const char *name; /* the entry's name (tensor name without the part), into src */
    size_t len;
    long t[G_COUNT];
};

static int by_group(const void *a, const void *b)
{
    const struct gguf_group *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static fr_status gguf_entry(const char *path, const fr_source *src, const struct gguf_group *g,
                            fr_imatrix_entry *e, fr_error *err)
{
    char shape[256], other[256];
    e->module = module_of(g->name, g->len);
    if (!e->module)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    const char *m = e->module;
    if (g->t[G_SUM2] < 0)
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': %s without in_sum2", path, m,
                       g->t[G_COUNTS] >= 0 ? "counts" : "in_sum");
    if (g->t[G_COUNTS] < 0)
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum2 without counts", path, m);
    for (int p = 0; p < G_COUNT; p++) {
        if (g->t[p] < 0)
            continue;
        const fr_tensor *t = &src->tensors[g->t[p]];
        if (t->dtype != FR_DTYPE_F32)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': %s is %s, not F32", path, m,
                           gguf_parts[p], t->dtype_name);
    }
    const fr_tensor *s2 = &src->tensors[g->t[G_SUM2]], *ct = &src->tensors[g->t[G_COUNTS]];
    fr_shape_text(s2->shape, s2->ndim, shape, sizeof shape);
    if (s2->ndim < 1 || s2->ndim > 2)
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum2 is %s, not [in] or [n_mat, in]",
                       path, m, shape);
    int64_t n_mat = s2->ndim == 2 ? s2->shape[0] : 1, in = s2->shape[s2->ndim - 1];
    if (in == 0 || n_mat == 0)
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum2 is %s, empty", path, m, shape);
    if (ct->numel != n_mat)
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "module '%s': counts is %s, in_sum2 is %s (one count per matrix)", path,
                       m, fr_shape_text(ct->shape, ct->ndim, other, sizeof other), shape);
    if (g->t[G_SUM] >= 0 && src->tensors[g->t[G_SUM]].numel != s2->numel) {
        const fr_tensor *s1 = &src->tensors[g->t[G_SUM]];
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum is %s, in_sum2 is %s", path, m,
                       fr_shape_text(s1->shape, s1->ndim, other, sizeof other), shape);
    }
    const uint8_t *craw = fr_tensor_raw(src, ct), *sraw = fr_tensor_raw(src, s2);
    if (!craw || !sraw || ct->nbytes < (uint64_t)n_mat * 4 ||
        s2->nbytes < (uint64_t)n_mat * (uint64_t)in * 4)
        return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': its data is not in the file", path, m);
    e->in = in;
    e->n_mat = n_mat;
    e->count = 0;
    e->sq_mean = malloc((size_t)(n_mat * in) * sizeof *e->sq_mean);
    if (n_mat > 1)
        e->counts = malloc((size_t)n_mat * sizeof *e->counts);
    if (!e->sq_mean || (n_mat > 1 && !e->counts))
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    for (int64_t k = 0; k < n_mat; k++) {
        float count = le_float(craw + 4 * k);
        if (!isfinite(count))
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': counts[%lld] is %g", path, m,
                           (long long)k, (double)count);
        /* one matrix: its tokens are the statistics; an expert may have had none */
        if (n_mat == 1 && count <= 0)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': counts[0] = %g is not positive (no tokens reached it)",
                           path, m, (double)count);
        if (count < 0)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': counts[%lld] = %g is negative",
                           path, m, (long long)k, (double)count);
        if (e->counts)
            e->counts[k] = count;
        if (count > e->count)
            e->count = count;
        for (int64_t j = 0; j < in; j++) {
            float v = le_float(sraw + 4 * (k * in + j));
            char at[48];
            if (n_mat > 1)
                snprintf(at, sizeof at, "[%lld, %lld]", (long long)k, (long long)j);
            else
                snprintf(at, sizeof at, "[%lld]", (long long)j);
            if (!isfinite(v))
                return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum2%s is %g", path, m, at,
                               (double)v);
            if (v < 0)
                return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': in_sum2%s = %g is negative",
                               path, m, at, (double)v);
            if (count == 0 && v != 0)
                return fr_fail(err, FR_E_FORMAT,
                               PREFIX "module '%s': in_sum2%s = %g for expert %lld, whose count is "
                                      "0",
                               path, m, at, (double)v, (long long)k);
            e->sq_mean[k * in + j] = count > 0 ? (float)((double)v / (double)count) : 0.0f;
        }
    }
    return FR_OK;
}

static fr_status read_gguf(const char *path, const uint8_t *data, uint64_t size, fr_imatrix *im,
                           fr_error *err)
{
    fr_status st;
    struct gguf_group *groups = NULL;
    fr_source *src = calloc(1, sizeof *src);
    if (!src || !(src->path = strdup(path)) || !(src->metadata = cJSON_CreateObject()) ||
        !(src->files = calloc(1, sizeof *src->files)) || !(src->files[0].path = strdup(path))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    src->kind = FR_SOURCE_GGUF;
    src->n_files = 1;
    src->files[0].base = size ? data : NULL;
    src->files[0].size = size;
    src->files[0].borrowed = 1;
    if ((st = fr_gguf_read(src, 0, err)) != FR_OK)
        goto done;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(src->metadata, "general.type");
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "imatrix"))) {
        st = fr_fail(err, FR_E_FORMAT,
                     PREFIX "a GGUF file whose general.type is %s%.64s%s, not \"imatrix\" (a model, "
                            "not a llama.cpp importance matrix?)",
                     path, cJSON_IsString(type) ? "\"" : "",
                     cJSON_IsString(type) ? type->valuestring : "not a string",
                     cJSON_IsString(type) ? "\"" : "");
        goto done;
    }
    const cJSON *chunks = cJSON_GetObjectItemCaseSensitive(src->metadata, "imatrix.chunk_count");
    im->chunk_count = cJSON_IsNumber(chunks) && chunks->valuedouble >= 0 &&
                              chunks->valuedouble < 9e15
                          ? (int64_t)chunks->valuedouble
                          : -1;
    groups = calloc(src->n_tensors + 1, sizeof *groups);
    if (!groups) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    int has_sum2 = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const char *name = src->tensors[i].name, *dot = strrchr(name, '.');
        int part = -1;
        for (int p = 0; dot && dot != name && p < G_COUNT && part < 0; p++)
            if (!strcmp(dot + 1, gguf_parts[p]))
                part = p;
        if (part < 0) {
            st = fr_fail(err, FR_E_FORMAT,
                         PREFIX "tensor '%s' is not <name>.in_sum2, <name>.counts or <name>.in_sum "
                                "(a model, not a llama.cpp importance matrix?)",
                         path, name);
            goto done;
        }
        has_sum2 |= part == G_SUM2;
        groups[i] = (struct gguf_group){name, (size_t)(dot - name), {-1, -1, -1}};
        groups[i].t[part] = (long)i;
    }
    if (!type && !has_sum2) {
        st = fr_fail(err, FR_E_FORMAT,
                     PREFIX "a GGUF file with no general.type \"imatrix\" and no <name>.in_sum2 "
                            "tensor: not a llama.cpp importance matrix",
                     path);
        goto done;
    }
    qsort(groups, src->n_tensors, sizeof *groups, by_group);
    size_t n_groups = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        if (n_groups && !by_group(&groups[n_groups - 1], &groups[i])) {
            struct gguf_group *into = &groups[n_groups - 1];
            for (int p = 0; p < G_COUNT; p++) {
                if (groups[i].t[p] < 0)
                    continue;
                if (into->t[p] >= 0) {
                    st = fr_fail(err, FR_E_FORMAT, PREFIX "tensor '%s' appears twice", path,
                                 src->tensors[groups[i].t[p]].name);
                    goto done;
                }
                into->t[p] = groups[i].t[p];
            }
            continue;
        }
        groups[n_groups++] = groups[i];
    }
    im->entries = calloc(n_groups + 1, sizeof *im->entries);
    if (!im->entries) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    int64_t tokens = 0;
    for (size_t i = 0; i < n_groups; i++) {
        fr_imatrix_entry *e = &im->entries[im->n++];
        if ((st = gguf_entry(path, src, &groups[i], e, err)) != FR_OK)
            goto done;
        if (e->count > (double)tokens && e->count < 9e15)
            tokens = (int64_t)e->count;
    }
    im->token_count = tokens;
done:
    free(groups);
    fr_source_close(src);
    return st;
}

fr_status fr_imatrix_read(const char *path, const uint8_t *data, uint64_t size,
                          fr_imatrix_format format, fr_imatrix *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->format = format;
    out->chunk_count = -1;
    fr_status st = format == FR_IMATRIX_GGUF  ? read_gguf(path, data, size, out, err)
                   : format == FR_IMATRIX_DAT ? read_dat(path, data, size, out, err)
                                              : fr_fail(err, FR_E_FORMAT,
                                                        PREFIX "not a llama.cpp importance matrix",
                                                        path);
    if (st == FR_OK)
        st = finish(path, out, err);
    if (st != FR_OK)
        fr_imatrix_free(out);
    return st;
}
