/*
 * GGUF v2 and v3 (ggml's docs/gguf.md), all little-endian:
 *   "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
 *   metadata: { string key, u32 value_type, value },
 *   tensor infos: { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
 *                   u64 offset (from the data section, aligned) },
 *   padding to general.alignment (default 32), then the data section.
 * A string is a u64 length and that many bytes (no NUL). ne[0] is the
 * innermost (fastest varying) dimension: shapes are reversed to C order.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"
#include "source.h"

#define GGUF_DEFAULT_ALIGNMENT 32 /* gguf.md: "general.alignment ... default 32" */
#define GGUF_MAX_NESTING 4        /* arrays of arrays deeper than this are not metadata */

enum gguf_value_type {
    GGUF_UINT8 = 0,
    GGUF_INT8 = 1,
    GGUF_UINT16 = 2,
    GGUF_INT16 = 3,
    GGUF_UINT32 = 4,
    GGUF_INT32 = 5,
    GGUF_FLOAT32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_UINT64 = 10,
    GGUF_INT64 = 11,
    GGUF_FLOAT64 = 12,
    GGUF_TYPE_COUNT
};

static const char *const value_type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};

/* Bytes of a fixed-size value (0: string or array). */
static unsigned value_size(uint32_t type)
{
    static const unsigned sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < GGUF_TYPE_COUNT ? sizes[type] : 0;
}

/* ggml_type -> name, block of elements, bytes per block (ggml.c
 * type_traits, gguf-py GGML_QUANT_SIZES). A NULL name is a retired id. */
static const struct ggml_traits {
    const char *name;
    unsigned block;
    unsigned bytes;
    fr_dtype dtype;
} ggml_types[] = {
    [0] = {"F32", 1, 4, FR_DTYPE_F32},
    [1] = {"F16", 1, 2, FR_DTYPE_F16},
    [2] = {"Q4_0", 32, 18, FR_DTYPE_QUANT},
    [3] = {"Q4_1", 32, 20, FR_DTYPE_QUANT},
    [6] = {"Q5_0", 32, 22, FR_DTYPE_QUANT},
    [7] = {"Q5_1", 32, 24, FR_DTYPE_QUANT},
    [8] = {"Q8_0", 32, 34, FR_DTYPE_QUANT},
    [9] = {"Q8_1", 32, 36, FR_DTYPE_QUANT},
    [10] = {"Q2_K", 256, 84, FR_DTYPE_QUANT},
    [11] = {"Q3_K", 256, 110, FR_DTYPE_QUANT},
    [12] = {"Q4_K", 256, 144, FR_DTYPE_QUANT},
    [13] = {"Q5_K", 256, 176, FR_DTYPE_QUANT},
    [14] = {"Q6_K", 256, 210, FR_DTYPE_QUANT},
    [15] = {"Q8_K", 256, 292, FR_DTYPE_QUANT},
    [16] = {"IQ2_XXS", 256, 66, FR_DTYPE_QUANT},
    [17] = {"IQ2_XS", 256, 74, FR_DTYPE_QUANT},
    [18] = {"IQ3_XXS", 256, 98, FR_DTYPE_QUANT},
    [19] = {"IQ1_S", 256, 50, FR_DTYPE_QUANT},
    [20] = {"IQ4_NL", 32, 18, FR_DTYPE_QUANT},
    [21] = {"IQ3_S", 256, 110, FR_DTYPE_QUANT},
    [22] = {"IQ2_S", 256, 82, FR_DTYPE_QUANT},
    [23] = {"IQ4_XS", 256, 136, FR_DTYPE_QUANT},
    [24] = {"I8", 1, 1, FR_DTYPE_I8},
    [25] = {"I16", 1, 2, FR_DTYPE_I16},
    [26] = {"I32", 1, 4, FR_DTYPE_I32},
    [27] = {"I64", 1, 8, FR_DTYPE_I64},
    [28] = {"F64", 1, 8, FR_DTYPE_F64},
    [29] = {"IQ1_M", 256, 56, FR_DTYPE_QUANT},
    [30] = {"BF16", 1, 2, FR_DTYPE_BF16},
    [34] = {"TQ1_0", 256, 54, FR_DTYPE_QUANT},
    [35] = {"TQ2_0", 256, 66, FR_DTYPE_QUANT},
    [39] = {"MXFP4", 32, 17, FR_DTYPE_QUANT},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

int fr_gguf_sniff(const uint8_t *p, uint64_t size)
{
    return size >= 4 && !memcmp(p, "GGUF", 4);
}

/* A bounds-checked cursor over the mapped file. */
struct cursor {
    const uint8_t *base;
    uint64_t pos, size;
    const char *path;
    fr_error *err;
    const char *what; /* what is being read, for "truncated ..." */
};

static fr_status truncated(struct cursor *c)
{
    return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': truncated %s at byte %llu", c->path,
                   c->what, (unsigned long long)c->pos);
}

static fr_status need(struct cursor *c, uint64_t n)
{
    return n <= c->size - c->pos ? FR_OK : truncated(c);
}

static fr_status get_u32(struct cursor *c, uint32_t *v)
{
    if (need(c, 4) != FR_OK)
        return FR_E_FORMAT;
    *v = fr_le32(c->base + c->pos);
    c->pos += 4;
    return FR_OK;
}

static fr_status get_u64(struct cursor *c, uint64_t *v)
{
    if (need(c, 8) != FR_OK)
        return FR_E_FORMAT;
    *v = fr_le64(c->base + c->pos);
    c->pos += 8;
    return FR_OK;
}

static fr_status get_string(struct cursor *c, const char **s, uint64_t *len)
{
    if (get_u64(c, len) != FR_OK || need(c, *len) != FR_OK)
        return FR_E_FORMAT;
    *s = (const char *)c->base + c->pos;
    c->pos += *len;
    return FR_OK;
}

/* A JSON value for a scalar; integers beyond 2^53 become decimal strings so
 * that no digit is lost. */
static cJSON *scalar_json(uint32_t type, const uint8_t *p)
{
    char buf[32];
    switch (type) {
    case GGUF_UINT8: return cJSON_CreateNumber(p[0]);
    case GGUF_INT8: return cJSON_CreateNumber((int8_t)p[0]);
    case GGUF_UINT16: return cJSON_CreateNumber(fr_le16(p));
    case GGUF_INT16: return cJSON_CreateNumber((int16_t)fr_le16(p));
    case GGUF_UINT32: return cJSON_CreateNumber(fr_le32(p));
    case GGUF_INT32: return cJSON_CreateNumber((int32_t)fr_le32(p));
    case GGUF_BOOL: return cJSON_CreateBool(p[0] != 0);
    case GGUF_FLOAT32: {
        float f = fr_bits_to_f32(fr_le32(p));
        /* JSON has no NaN/Inf: say them as strings */
        if (f != f || f - f != 0.0f)
            return cJSON_CreateString(f != f ? "nan" : f > 0 ? "inf" : "-inf");
        return cJSON_CreateNumber(f);
    }
    case GGUF_FLOAT64: {
        double d;
        uint64_t bits = fr_le64(p);
        memcpy(&d, &bits, sizeof d);
        if (d != d || d - d != 0.0)
            return cJSON_CreateString(d != d ? "nan" : d > 0 ? "inf" : "-inf");
        return cJSON_CreateNumber(d);
    }
    case GGUF_UINT64: {
        uint64_t v = fr_le64(p);
        if (v < (1ull << 53))
            return cJSON_CreateNumber((double)v);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        return cJSON_CreateString(buf);
    }
    case GGUF_INT64: {
        int64_t v = (int64_t)fr_le64(p);
        if (v > -(1ll << 53) && v < (1ll << 53))
            return cJSON_CreateNumber((double)v);
        snprintf(buf, sizeof buf, "%lld", (long long)v);
        return cJSON_CreateString(buf);
    }
    }
    return NULL;
}

/* Reads one value of type; *out (may be NULL: skip) receives its JSON. Long
 * arrays (token lists of 32k+ strings) and long strings (chat templates) are
 * summarised as {"type", "length"} rather than dumped. */
static fr_status read_value(struct cursor *c, uint32_t type, int depth, cJSON **out)
{
    if (out)
        *out = NULL;
    if (type >= GGUF_TYPE_COUNT)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': unknown metadata value type %u at byte %llu",
                       c->path, type, (unsigned long long)c->pos);
    if (type == GGUF_STRING) {
        const char *s;
        uint64_t len;
        if (get_string(c, &s, &len) != FR_OK)
            return FR_E_FORMAT;
        if (!out)
            return FR_OK;
        if (len <= FR_META_STRING_MAX) {
            *out = fr_json_string_n(s, (size_t)len);
        } else {
            *out = cJSON_CreateObject();
            if (*out && (!cJSON_AddStringToObject(*out, "type", "string") ||
                         !cJSON_AddNumberToObject(*out, "length", (double)len))) {
                cJSON_Delete(*out);
                *out = NULL;
            }
        }
        return *out ? FR_OK : fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    }
    if (type != GGUF_ARRAY) {
        unsigned size = value_size(type);
        if (need(c, size) != FR_OK)
            return FR_E_FORMAT;
        if (out && !(*out = scalar_json(type, c->base + c->pos)))
            return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
        c->pos += size;
        return FR_OK;
    }
    if (depth >= GGUF_MAX_NESTING)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': metadata arrays nested deeper than %d",
                       c->path, GGUF_MAX_NESTING);
    uint32_t elem;
    uint64_t n;
    if (get_u32(c, &elem) != FR_OK || get_u64(c, &n) != FR_OK)
        return FR_E_FORMAT;
    if (elem >= GGUF_TYPE_COUNT)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': unknown array element type %u at byte %llu",
                       c->path, elem, (unsigned long long)c->pos);
    int dump = out && n <= FR_META_ARRAY_MAX && elem != GGUF_ARRAY;
    cJSON *arr = NULL;
    if (dump && !(arr = cJSON_CreateArray()))
        return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    unsigned size = value_size(elem);
    if (size && !dump) {
        /* fixed-size elements: skip them at once, checking n * size */
        uint64_t bytes;
        if (__builtin_mul_overflow(n, (uint64_t)size, &bytes) || need(c, bytes) != FR_OK)
            return truncated(c);
        c->pos += bytes;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            cJSON *item = NULL;
            fr_status st = read_value(c, elem, depth + 1, dump ? &item : NULL);
            if (st != FR_OK) {
                cJSON_Delete(arr);
                return st;
            }
            if (dump && !cJSON_AddItemToArray(arr, item)) {
                cJSON_Delete(item);
                cJSON_Delete(arr);
                return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
            }
        }
    }
    if (!out)
        return FR_OK;
    if (!dump) {
        arr = cJSON_CreateObject();
        if (!arr || !cJSON_AddStringToObject(arr, "type", "array") ||
            !cJSON_AddStringToObject(arr, "element_type", value_type_names[elem]) ||
            !cJSON_AddNumberToObject(arr, "length", (double)n)) {
            cJSON_Delete(arr);
            return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
        }
    }
    *out = arr;
    return FR_OK;
}

struct key_ref {
    const char *s;
    uint64_t len;
};

static int by_key(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    uint64_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, (size_t)n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static fr_status out_of_memory(const struct cursor *c)
{
    return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
}

/* Step 1, the header. Afterwards the cursor is at the first metadata key,
 * the counts are known to fit in the file, and the version is recorded. */
static fr_status read_header(struct cursor *c, fr_source *src, uint64_t *n_tensors,
                             uint64_t *n_kv)
{
    uint32_t version;
    if (c->size == 0)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': empty file", c->path);
    if (c->size < 4 || memcmp(c->base, "GGUF", 4) != 0)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': bad magic (not a GGUF file)", c->path);
    c->pos = 4;
    if (get_u32(c, &version) != FR_OK)
        return FR_E_FORMAT;
    /* v1 used 32-bit counts and lengths; v2 (2023-08) made them 64-bit */
    if (version != 2 && version != 3)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': unsupported GGUF version %u (2 and 3 are read)",
                       c->path, version);
    if (get_u64(c, n_tensors) != FR_OK || get_u64(c, n_kv) != FR_OK)
        return FR_E_FORMAT;
    /* each key-value takes at least 12 bytes, each tensor info at least 24:
     * counts beyond that are lies, caught before allocating for them */
    if (*n_kv > (c->size - c->pos) / 12 || *n_tensors > (c->size - c->pos) / 24)
        return fr_fail(c->err, FR_E_FORMAT,
                       "cannot read '%s': header claims %llu tensors and %llu metadata keys, more than the file holds",
                       c->path, (unsigned long long)*n_tensors, (unsigned long long)*n_kv);
    if (!cJSON_AddNumberToObject(src->metadata, "gguf_version", version))
        return out_of_memory(c);
    return FR_OK;
}

/* general.alignment, whose value of the given type starts at value_at:
 * gguf.md says uint32; any unsigned width a writer chose is accepted. 0
 * when it is not a power of two below 2^30. */
static uint64_t alignment_value(const struct cursor *c, uint32_t type, uint64_t value_at)
{
    uint64_t a = type == GGUF_UINT32 ? fr_le32(c->base + value_at)
                 : type == GGUF_UINT64 ? fr_le64(c->base + value_at)
                 : type == GGUF_UINT16 ? fr_le16(c->base + value_at)
                                       : 0;
    return a == 0 || (a & (a - 1)) != 0 || a > (1u << 30) ? 0 : a;
}

/* A FR_E_FORMAT failure when two of the keys are the same. */
static fr_status check_unique_keys(const struct cursor *c, struct key_ref *keys, uint64_t n_kv)
{
    if (n_kv < 2)
        return FR_OK;
    qsort(keys, (size_t)n_kv, sizeof *keys, by_key);
    for (uint64_t i = 1; i < n_kv; i++) {
        if (!by_key(&keys[i - 1], &keys[i])) {
            char *k = fr_utf8_dup(keys[i].s, (size_t)keys[i].len);
            fr_status st = fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': duplicate metadata key '%s'",
                                   c->path, k ? k : "?");
            free(k);
            return st;
        }
    }
    return FR_OK;
}

/* Step 2, the metadata. Afterwards every key is in src->metadata with its
 * value (long ones summarised), keys are known to be unique, *alignment is
 * general.alignment or the default, and the cursor is at the first tensor
 * info. */
static fr_status read_metadata(struct cursor *c, fr_source *src, uint64_t n_kv,
                               uint64_t *alignment)
{
    fr_status st = FR_OK;
    *alignment = GGUF_DEFAULT_ALIGNMENT;
    struct key_ref *keys = n_kv ? malloc((size_t)n_kv * sizeof *keys) : NULL;
    if (n_kv && !keys)
        return out_of_memory(c);
    for (uint64_t i = 0; i < n_kv; i++) {
        const char *key;
        uint64_t key_len;
        uint32_t type;
        c->what = "metadata key";
        if (get_string(c, &key, &key_len) != FR_OK || get_u32(c, &type) != FR_OK) {
            st = FR_E_FORMAT;
            goto done;
        }
        keys[i].s = key;
        keys[i].len = key_len;
        c->what = "metadata value";
        uint64_t value_at = c->pos;
        cJSON *value = NULL;
        if ((st = read_value(c, type, 0, &value)) != FR_OK)
            goto done;
        static const char align_key[] = "general.alignment";
        if (key_len == sizeof align_key - 1 && !memcmp(key, align_key, key_len)) {
            *alignment = alignment_value(c, type, value_at);
            if (*alignment == 0) {
                cJSON_Delete(value);
                st = fr_fail(c->err, FR_E_FORMAT,
                             "cannot read '%s': general.alignment is not a power of two below 2^30",
                             c->path);
                goto done;
            }
        }
        char *key_text = fr_utf8_dup(key, (size_t)key_len);
        int added = key_text && cJSON_AddItemToObject(src->metadata, key_text, value);
        free(key_text);
        if (!added) {
            cJSON_Delete(value);
            st = out_of_memory(c);
            goto done;
        }
    }
    st = check_unique_keys(c, keys, n_kv);
done:
    free(keys);
    return st;
}

/* The storage of tensor t of ggml type `type`: its dtype, why it is not
 * quantized when it is not, and its size in bytes. A type newer than the
 * table is listed and never read. */
static fr_status set_tensor_type(const struct cursor *c, fr_tensor *t, uint32_t type)
{
    const struct ggml_traits *tr = type < N_GGML_TYPES && ggml_types[type].name ? &ggml_types[type] : NULL;
    if (!tr) {
        snprintf(t->dtype_name, sizeof t->dtype_name, "GGML_TYPE_%u", type);
        t->dtype = FR_DTYPE_QUANT;
        t->skip_reason = "unknown ggml type";
        t->nbytes = 0;
        return FR_OK;
    }
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", tr->name);
    t->dtype = tr->dtype;
    if (tr->dtype == FR_DTYPE_QUANT) {
        /* listed until a layer that decodes the type attaches its decoder
         * (fr_source.decode_blocks, frontier/model/block_source.c) */
        t->skip_reason = "pre-quantized ggml type";
        t->block_type = type;
        t->block_elems = tr->block;
        t->block_bytes = tr->bytes;
    } else if (!fr_dtype_is_float(tr->dtype))
        t->skip_reason = "integer dtype";
    /* ggml packs whole blocks along each row */
    int64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
    if (row % tr->block != 0)
        return fr_fail(c->err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': row of %lld elements is not a whole number of %s blocks (%u)",
                       c->path, t->name, (long long)row, tr->name, tr->block);
    if (__builtin_mul_overflow((uint64_t)t->numel / tr->block, (uint64_t)tr->bytes, &t->nbytes))
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': size overflows 64 bits",
                       c->path, t->name);
    return FR_OK;
}

/* Step 3, one tensor info. Afterwards the tensor is the last of src with
 * its name, C-order shape, type and size, and an offset still relative to
 * the data section. */
static fr_status read_tensor_info(struct cursor *c, fr_source *src, size_t file)
{
    char shape_text[256];
    const char *name;
    uint64_t name_len, ne[FR_MAX_DIMS], offset;
    uint32_t n_dims, type;
    fr_status st;
    c->what = "tensor info";
    if (get_string(c, &name, &name_len) != FR_OK || get_u32(c, &n_dims) != FR_OK)
        return FR_E_FORMAT;
    fr_tensor *t;
    if ((st = fr_source_push_tensor(src, name, (size_t)name_len, &t, c->err)) != FR_OK)
        return st;
    if (n_dims > FR_MAX_DIMS)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': %u dimensions, more than %d",
                       c->path, t->name, n_dims, FR_MAX_DIMS);
    for (uint32_t d = 0; d < n_dims; d++) {
        if (get_u64(c, &ne[d]) != FR_OK)
            return FR_E_FORMAT;
        if (ne[d] > (uint64_t)INT64_MAX)
            return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': dimension %u is %llu, beyond 2^63",
                           c->path, t->name, d, (unsigned long long)ne[d]);
        t->shape[n_dims - 1 - d] = (int64_t)ne[d]; /* innermost-first -> C order */
    }
    t->ndim = (int)n_dims;
    if (get_u32(c, &type) != FR_OK || get_u64(c, &offset) != FR_OK)
        return FR_E_FORMAT;
    if (fr_shape_numel(t->shape, t->ndim, &t->numel) != 0)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': shape %s has more than 2^63 elements",
                       c->path, t->name, fr_shape_text(t->shape, t->ndim, shape_text, sizeof shape_text));
    t->file = (int)file;
    t->encoding = FR_ENC_RAW;
    t->offset = offset; /* relative to the data section until it is known */
    return set_tensor_type(c, t, type);
}

/* Step 4, with the cursor after the last tensor info: the data section
 * starts at the next multiple of the alignment, and every tensor of this
 * file (from first on) gets its absolute offset, checked to be aligned and
 * inside the file. */
static fr_status place_tensors(const struct cursor *c, fr_source *src, size_t first,
                               uint64_t alignment)
{
    uint64_t data_start = c->pos + (alignment - c->pos % alignment) % alignment;
    for (size_t i = first; i < src->n_tensors; i++) {
        fr_tensor *t = &src->tensors[i];
        uint64_t rel = t->offset;
        if (rel % alignment != 0)
            return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': offset %llu is not a multiple of the alignment %llu",
                           c->path, t->name, (unsigned long long)rel, (unsigned long long)alignment);
        if (data_start > c->size || rel > c->size - data_start || t->nbytes > c->size - data_start - rel)
            return fr_fail(c->err, FR_E_FORMAT,
                           "cannot read '%s': tensor '%s': data [%llu, +%llu) past the end of the file (%llu bytes)",
                           c->path, t->name, (unsigned long long)rel, (unsigned long long)t->nbytes,
                           (unsigned long long)c->size);
        t->offset = data_start + rel;
    }
    return FR_OK;
}

fr_status fr_gguf_read(fr_source *src, size_t file, fr_error *err)
{
    const fr_mapped_file *f = &src->files[file];
    struct cursor c = {f->base, 0, f->size, f->path, err, "header"};
    fr_status st;
    uint64_t n_tensors, n_kv, alignment;
    if ((st = read_header(&c, src, &n_tensors, &n_kv)) != FR_OK ||
        (st = read_metadata(&c, src, n_kv, &alignment)) != FR_OK)
        return st;
    size_t first = src->n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++)
        if ((st = read_tensor_info(&c, src, file)) != FR_OK)
            return st;
    return place_tensors(&c, src, first, alignment);
}
