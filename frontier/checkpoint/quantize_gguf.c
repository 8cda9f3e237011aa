/*
 * GGUF v3 output of `frontier quantize` (docs/quantize.md, "GGUF").
 *
 * The model was opened by core/gguf.c (tensor names, shapes, offsets, the
 * checked structure); the metadata key-value pairs and tensor infos are
 * walked here once more over the same mapped bytes, because they are copied
 * byte for byte (the reader keeps only a summary of long values) and the
 * original ggml type ids are needed for copied tensors.
 *
 * Output: "GGUF", u32 3, u64 n_tensors, u64 n_kv; the input's key-value
 * pairs in their order, general.file_type (u32) and
 * general.quantization_version (u32 2) replaced in place or appended; one
 * tensor info per tensor in the input's order (name, n_dims, ne[] innermost
 * first, ggml type, offset relative to the data section, each a multiple of
 * the alignment); zero padding to general.alignment (default 32); the data,
 * each tensor padded to the alignment.
 */
#include "frontier/checkpoint/quantize_gguf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/safetensors_write.h"
#include "quantizers/ggml_blocks.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGML_QNT_VERSION 2 /* ggml.h: the block layouts of this generation */

enum { GV_UINT16 = 2, GV_UINT32 = 4, GV_STRING = 8, GV_ARRAY = 9, GV_UINT64 = 10, GV_COUNT = 13 };

/* The block type a configuration asks for: its traits' gguf_type
 * (frontier_config_traits), when this writer has that type's encoder
 * (quantizers/ggml_blocks.h); NULL otherwise. */
static const fr_ggml_params *params_of(const fr_registry *reg, const fr_config_ref *ref)
{
    (void)reg;
    return ref ? fr_ggml_params_by_name(fr_config_traits_of(ref)->gguf_type) : NULL;
}

/* The innermost GGUF dimension (ne[0]): the length of a ggml row. */
static int64_t ne0_of(const fr_tensor *t)
{
    return t->ndim ? t->shape[t->ndim - 1] : 1;
}

/* The block type tensor t is stored as: what it asks for, or the type
 * llama-quantize falls back to when that block does not divide its rows
 * (fr_ggml_stored_type, the rule the quantizer measures); NULL: not
 * quantized. */
static const fr_ggml_params *stored_of(const fr_registry *reg, const fr_config_ref *ref,
                                       const fr_tensor *t)
{
    const fr_ggml_params *p = params_of(reg, ref);
    return p ? fr_ggml_stored_type(p, ne0_of(t)) : NULL;
}

int fr_gguf_writes_calibrated(const fr_registry *reg, const fr_config_ref *ref)
{
    (void)reg;
    return ref && params_of(reg, ref) && fr_config_traits_of(ref)->gguf_importance;
}

const char *fr_gguf_type_name(const fr_registry *reg, const fr_config_ref *ref)
{
    const fr_ggml_params *p = params_of(reg, ref);
    return p ? p->gguf_name : NULL;
}

const char *fr_gguf_stored_type_name(const fr_registry *reg, const fr_config_ref *ref,
                                     const fr_tensor *t)
{
    const fr_ggml_params *p = stored_of(reg, ref, t);
    return p ? p->gguf_name : NULL;
}

const char *fr_gguf_no_writer(const fr_registry *reg, const fr_config_ref *ref,
                              const fr_tensor *t, char *buf, size_t len)
{
    const fr_ggml_params *p = params_of(reg, ref);
    if (!p) {
        const char *declared = fr_config_traits_of(ref)->gguf_type;
        if (!declared)
            return "GGUF holds ggml block types, and this configuration declares none "
                   "(its traits' gguf_type)";
        snprintf(buf, len, "it declares the GGUF type '%.64s', which this writer cannot encode",
                 declared);
        return buf;
    }
    /* a tensor released quantized is re-quantized from its decoded values
     * (docs/quantized-sources.md) */
    if (t->dtype != FR_DTYPE_F32 && t->dtype != FR_DTYPE_F16 && t->dtype != FR_DTYPE_BF16 &&
        !fr_tensor_is_block_quantized(t)) {
        snprintf(buf, len,
                 "GGUF tensors are quantized from F32, F16, BF16 or a block type frontier "
                 "decodes, this is %s",
                 t->dtype_name);
        return buf;
    }
    return NULL;
}

/* ---- the input's header, walked raw ---- */

typedef struct cursor {
    const uint8_t *p;
    uint64_t pos, size;
} cursor;

static int take(cursor *c, uint64_t n)
{
    if (n > c->size - c->pos)
        return 0;
    c->pos += n;
    return 1;
}

static int rd_u32(cursor *c, uint32_t *v)
{
    if (c->size - c->pos < 4)
        return 0;
    const uint8_t *q = c->p + c->pos;
    *v = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    c->pos += 4;
    return 1;
}

static int rd_u64(cursor *c, uint64_t *v)
{
    uint32_t lo, hi;
    if (!rd_u32(c, &lo) || !rd_u32(c, &hi))
        return 0;
    *v = (uint64_t)hi << 32 | lo;
    return 1;
}

static int skip_value(cursor *c, uint32_t type, int depth)
{
    static const unsigned sizes[GV_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type >= GV_COUNT || depth > 4)
        return 0;
    if (type == GV_STRING) {
        uint64_t n;
        return rd_u64(c, &n) && take(c, n);
    }
    if (type != GV_ARRAY)
        return take(c, sizes[type]);
    uint32_t elem;
    uint64_t n;
    if (!rd_u32(c, &elem) || !rd_u64(c, &n) || elem >= GV_COUNT)
        return 0;
    if (sizes[elem]) {
        uint64_t bytes;
        return !__builtin_mul_overflow(n, (uint64_t)sizes[elem], &bytes) && take(c, bytes);
    }
    for (uint64_t i = 0; i < n; i++)
        if (!skip_value(c, elem, depth + 1))
            return 0;
    return 1;
}

typedef struct kv {
    uint64_t start, end;   /* the whole pair's bytes */
    const char *key;
    uint64_t key_len;
    uint32_t type;
    uint64_t value_at;
} kv;

typedef struct tinfo {
    uint32_t n_dims, type;
    uint64_t ne[FR_MAX_DIMS];
} tinfo;

static int key_is(const kv *k, const char *s)
{
    return k->key_len == strlen(s) && !memcmp(k->key, s, k->key_len);
}

/* ---- output buffer ---- */

typedef struct obuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} obuf;

static void put(obuf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 256;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u32(obuf *b, uint32_t v)
{
    uint8_t q[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, q, 4);
}

static void put_u64(obuf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(obuf *b, const char *s, uint64_t len)
{
    put_u64(b, len);
    put(b, s, (size_t)len);
}

static void put_kv_u32(obuf *b, const char *key, uint32_t v)
{
    put_str(b, key, strlen(key));
    put_u32(b, GV_UINT32);
    put_u32(b, v);
}

static uint64_t pad_to(uint64_t n, uint64_t a)
{
    return (a - n % a) % a;
}

/* ---- writing ---- */

static fr_status write_bytes(FILE *f, const void *p, size_t n, const char *path, fr_error *err)
{
    if (n && fwrite(p, 1, n, f) != n) {
        char why[128];
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, why, sizeof why));
    }
    return FR_OK;
}

static fr_status write_zeros(FILE *f, uint64_t n, const char *path, fr_error *err)
{
    static const uint8_t zeros[256];
    fr_status st = FR_OK;
    while (n && st == FR_OK) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        st = write_bytes(f, zeros, k, path, err);
        n -= k;
    }
    return st;
}

static uint64_t quantized_bytes(const fr_gguf_item *it, const fr_ggml_params *p)
{
    return (uint64_t)it->t->numel / p->block * p->block_bytes;
}

/* The error sums of W against W_hat over `experts` matrices of `per`
 * elements: each expert's own sums added in expert order, max_abs_err the
 * maximum (a stack's row in the sweep, docs/formats.md "Expert tensors"). */
static void stack_sums(const float *w, const float *w_hat, int64_t experts, int64_t per,
                       frontier_error_sums *sums, double *expert_rel_err)
{
    fr_error e = {0};
    fr_error_sums_init(sums);
    if (experts <= 1) {
        fr_error_sums_accumulate(w, w_hat, per, NULL, sums, &e);
        return;
    }
    for (int64_t x = 0; x < experts; x++) {
        frontier_error_sums s;
        fr_error_sums_init(&s);
        fr_error_sums_accumulate(w + x * per, w_hat + x * per, per, NULL, &s, &e);
        if (expert_rel_err) {
            fr_metrics m;
            fr_metrics_from_sums(&s, &m);
            expert_rel_err[x] = m.rel_err;
        }
        sums->sq_err += s.sq_err;
        sums->sq_ref += s.sq_ref;
        sums->sq_hat += s.sq_hat;
        sums->dot += s.dot;
        if (s.max_abs_err > sums->max_abs_err || x == 0)
            sums->max_abs_err = s.max_abs_err;
    }
}

/* The statistics expert x of an item is quantized with (NULL: none). */
static const frontier_calib *calib_of(const fr_gguf_item *it, int64_t x)
{
    return it->expert_calib ? &it->expert_calib[x] : it->calib;
}

/* One quantized tensor: Q(W) from the registry, the blocks, the check. */
static fr_status emit_quantized(const fr_registry *reg, const fr_source *src, fr_gguf_item *it,
                                FILE *f, const char *path, fr_error *err)
{
    const fr_ggml_params *p = stored_of(reg, it->ref, it->t);
    const int64_t n = it->rows * it->cols;
    const uint64_t nbytes = quantized_bytes(it, p);
    fr_status st = FR_OK;
    float *w = malloc((size_t)n * sizeof *w);
    float *w_hat = malloc((size_t)n * sizeof *w_hat);
    float *dec = malloc((size_t)n * sizeof *dec);
    float *importance = malloc((size_t)it->cols * sizeof *importance);
    uint8_t *blocks = malloc(nbytes ? (size_t)nbytes : 1);
    frontier_call call;
    fr_call_init(&call, NULL, 0, it->t->name, it->ref->cfg->name);
    if (!w || !w_hat || !dec || !importance || !blocks) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory quantizing '%s'", it->t->name);
        goto done;
    }
    if ((st = fr_tensor_load_f32(src, it->t, w, err)) != FR_OK)
        goto done;
    fr_tensor_release(src, it->t);
    /* an expert stack [E, out, in] is E matrices, as the sweep measures it;
     * ggml blocks lie along one row, so no block spans two experts */
    const int64_t experts = it->experts > 1 ? it->experts : 1, per = n / experts;
    for (int64_t x = 0; x < experts; x++) {
        fr_call_release(&call);
        fr_call_init(&call, NULL, 0, it->t->name, it->ref->cfg->name);
        if ((st = fr_quantizer_quantize_cpu(reg, it->ref, w + x * per, w_hat + x * per,
                                            it->rows / experts, it->cols, calib_of(it, x),
                                            it->t->name, &call, err)) != FR_OK) {
            if (st == FR_E_PLUGIN)
                st = FR_E_FORMAT; /* a built-in refuses only bad weights (non-finite) */
            if (experts > 1)
                fr_error_prefix(err, "expert %lld: ", (long long)x);
            goto done;
        }
    }
    /* blocks along the rows of cols elements: ne0 divides cols and the block
     * stored divides ne0 (check_rows) */
    const uint64_t row_bytes = (uint64_t)it->cols / p->block * p->block_bytes;
    const int weighted = fr_gguf_writes_calibrated(reg, it->ref);
    const float *qw = NULL;
    for (int64_t r = 0; r < it->rows; r++) {
        if (weighted && r % (it->rows / experts) == 0) /* each expert's importance */
            qw = fr_config_traits_of(it->ref)->gguf_importance(
                calib_of(it, r / (it->rows / experts)), it->cols, importance);
        if (weighted && !qw) {
            st = fr_fail(err, FR_E_FAIL, "internal error: '%s' as %s has no importance",
                         it->t->name, it->ref->cfg->name);
            goto done;
        }
        fr_ggml_encode_row_weighted(p->type, w + r * it->cols, it->cols, qw,
                                    blocks + (uint64_t)r * row_bytes);
        fr_ggml_decode_row(p->type, blocks + (uint64_t)r * row_bytes, it->cols, dec + r * it->cols);
    }
    for (int64_t i = 0; i < n; i++)
        if (dec[i] != w_hat[i]) { /* -0 == +0 */
            st = fr_fail(err, FR_E_FAIL,
                         "internal error: '%s' as %s decodes to %.9g at element %lld, the "
                         "quantizer gives %.9g",
                         it->t->name, it->ref->cfg->name, dec[i], (long long)i, w_hat[i]);
            goto done;
        }
    if ((st = write_bytes(f, blocks, (size_t)nbytes, path, err)) != FR_OK)
        goto done;
    frontier_error_sums sums;
    double *xr = experts > 1 ? it->expert_rel_err : NULL;
    stack_sums(w, w_hat, experts, per, &sums, xr ? xr + experts : NULL);
    fr_metrics_from_sums(&sums, &it->measured);
    stack_sums(w, dec, experts, per, &it->sums, xr);
    fr_metrics_from_sums(&it->sums, &it->written);
    it->same_as_measured = 1;
done:
    if (st != FR_OK)
        fr_error_prefix(err, "quantizing '%s' as %s: ", it->t->name, it->ref->cfg->name);
    fr_call_release(&call);
    free(w);
    free(w_hat);
    free(dec);
    free(importance);
    free(blocks);
    return st;
}

/* The input's key-value pairs walked (bytes kept for copying); general.alignment read. */
static fr_status read_metadata(cursor *c, const fr_source *src, kv *kvs, uint64_t n_kv,
                               uint64_t *alignment, fr_error *err)
{
    for (uint64_t i = 0; i < n_kv; i++) {
        kv *k = &kvs[i];
        k->start = c->pos;
        if (!rd_u64(c, &k->key_len) || c->size - c->pos < k->key_len)
            return fr_fail(err, FR_E_FORMAT, "cannot read '%s': metadata key %llu", src->path,
                           (unsigned long long)i);
        k->key = (const char *)c->p + c->pos;
        c->pos += k->key_len;
        if (!rd_u32(c, &k->type))
            return fr_fail(err, FR_E_FORMAT, "cannot read '%s': metadata", src->path);
        k->value_at = c->pos;
        if (!skip_value(c, k->type, 0))
            return fr_fail(err, FR_E_FORMAT, "cannot read '%s': metadata value of '%.*s'",
                           src->path, (int)(k->key_len > 200 ? 200 : k->key_len), k->key);
        k->end = c->pos;
        if (key_is(k, "general.alignment")) {
            cursor v = {c->p, k->value_at, c->size};
            uint32_t a32;
            uint64_t a64 = 0;
            if (k->type == GV_UINT32 && rd_u32(&v, &a32))
                a64 = a32;
            else if (k->type == GV_UINT64)
                rd_u64(&v, &a64);
            else if (k->type == GV_UINT16)
                a64 = (uint64_t)c->p[k->value_at] | (uint64_t)c->p[k->value_at + 1] << 8;
            if (a64 == 0 || (a64 & (a64 - 1)) || a64 > (1u << 30))
                return fr_fail(err, FR_E_FORMAT, "cannot read '%s': general.alignment",
                               src->path);
            *alignment = a64;
        }
    }
    return FR_OK;
}

/* Each tensor info is the reader's tensor and its item's, in order; its dims and type kept. */
static fr_status read_tensor_infos(cursor *c, const fr_source *src, const fr_gguf_item *items,
                                   size_t n, tinfo *infos, fr_error *err)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t name_len;
        tinfo *ti = &infos[i];
        const fr_tensor *t = src->tensors + i;
        int ok = rd_u64(c, &name_len) && name_len == strlen(t->name) &&
                 c->size - c->pos >= name_len && !memcmp(c->p + c->pos, t->name, name_len);
        ok = ok && take(c, name_len) && rd_u32(c, &ti->n_dims) && ti->n_dims <= FR_MAX_DIMS;
        for (uint32_t d = 0; ok && d < ti->n_dims; d++)
            ok = rd_u64(c, &ti->ne[d]);
        uint64_t offset;
        ok = ok && rd_u32(c, &ti->type) && rd_u64(c, &offset);
        if (!ok || items[i].t != t)
            return fr_fail(err, FR_E_FORMAT, "cannot read '%s': tensor info %zu ('%s')",
                           src->path, i, t->name);
        if (!items[i].ref && t->numel > 0 && t->nbytes == 0)
            /* the reader knows no size for a ggml type newer than its table */
            return fr_fail(err, FR_E_USAGE, "'%s': tensor '%s' has ggml type %s, whose size is "
                           "unknown: it cannot be copied", src->path, t->name, t->dtype_name);
    }
    return FR_OK;
}

/* general.file_type: the LLAMA_FTYPE of the ggml type holding the most quantized elements. */
static unsigned output_file_type(const fr_registry *reg, const fr_gguf_item *items, size_t n,
                                 const tinfo *infos, int *quantizes)
{
    /* tensors the input already had in one of the family's types count
     * too; *quantizes: whether this run quantizes something (only then is
     * the type set) */
    unsigned file_type = 0;
    int64_t count[64] = {0}, best = 0;
    unsigned ftype_of[64] = {0};
    *quantizes = 0;
    for (size_t i = 0; i < n; i++) {
        const fr_ggml_params *p = params_of(reg, items[i].ref);
        uint32_t ty = p ? (uint32_t)p->type : infos[i].type;
        unsigned ft = p ? p->file_type : fr_ggml_file_type((fr_ggml_qtype)ty);
        *quantizes |= p != NULL;
        if (ty < 64 && ft) {
            count[ty] += items[i].t->numel;
            ftype_of[ty] = ft;
        }
    }
    for (int ty = 0; ty < 64; ty++)
        if (ftype_of[ty] && count[ty] > best) {
            best = count[ty];
            file_type = ftype_of[ty];
        }
    return file_type;
}

/* The output's header: the input's pairs (type and version set when major), the tensor infos. */
static void build_header(obuf *h, const fr_registry *reg, const fr_mapped_file *in,
                         const fr_gguf_item *items, size_t n, const kv *kvs, uint64_t n_kv,
                         const tinfo *infos, uint64_t alignment, int major, unsigned file_type)
{
    int have_ft = 0, have_qv = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        have_ft |= key_is(&kvs[i], "general.file_type");
        have_qv |= key_is(&kvs[i], "general.quantization_version");
    }
    uint64_t n_kv_out = n_kv + (uint64_t)(major && !have_ft) + (uint64_t)(major && !have_qv);
    put(h, "GGUF", 4);
    put_u32(h, 3);
    put_u64(h, n);
    put_u64(h, n_kv_out);
    for (uint64_t i = 0; i < n_kv; i++) {
        if (major && key_is(&kvs[i], "general.file_type"))
            put_kv_u32(h, "general.file_type", file_type);
        else if (major && key_is(&kvs[i], "general.quantization_version"))
            put_kv_u32(h, "general.quantization_version", GGML_QNT_VERSION);
        else
            put(h, in->base + kvs[i].start, (size_t)(kvs[i].end - kvs[i].start));
    }
    if (major && !have_qv)
        put_kv_u32(h, "general.quantization_version", GGML_QNT_VERSION);
    if (major && !have_ft)
        put_kv_u32(h, "general.file_type", file_type);
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const fr_tensor *t = items[i].t;
        const fr_ggml_params *p = stored_of(reg, items[i].ref, t);
        uint64_t bytes = p ? quantized_bytes(&items[i], p) : t->nbytes;
        put_str(h, t->name, strlen(t->name));
        put_u32(h, infos[i].n_dims);
        for (uint32_t d = 0; d < infos[i].n_dims; d++)
            put_u64(h, infos[i].ne[d]);
        put_u32(h, p ? (uint32_t)p->type : infos[i].type);
        put_u64(h, offset);
        offset += bytes + pad_to(bytes, alignment);
    }
}

/* The data section: each tensor quantized or copied byte for byte, padded to the alignment. */
static fr_status write_data(const fr_registry *reg, const fr_source *src, fr_gguf_item *items,
                           size_t n, FILE *f, const char *path, uint64_t alignment,
                           uint64_t *data_bytes, fr_error *err)
{
    fr_status st = FR_OK;
    *data_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        fr_gguf_item *it = &items[i];
        const fr_ggml_params *p = stored_of(reg, it->ref, it->t);
        uint64_t bytes = p ? quantized_bytes(it, p) : it->t->nbytes;
        if (p) {
            st = emit_quantized(reg, src, it, f, path, err);
        } else {
            const void *raw = fr_tensor_raw(src, it->t);
            if (!raw && it->t->nbytes)
                st = fr_fail(err, FR_E_IO, "cannot read tensor '%s' of '%s'", it->t->name,
                             src->path);
            else
                st = write_bytes(f, raw, (size_t)it->t->nbytes, path, err);
            fr_tensor_release(src, it->t);
        }
        if (st == FR_OK)
            st = write_zeros(f, pad_to(bytes, alignment), path, err);
        if (st != FR_OK)
            return st;
        *data_bytes += bytes;
    }
    return FR_OK;
}

/* The quantizer measures the type stored on rows of the matrix it sees
 * (cols), ggml stores rows of ne[0]: a tensor where the two fallbacks
 * differ (a rank-3 tensor that is not an expert stack) is refused. */
static fr_status check_rows(const fr_registry *reg, const fr_gguf_item *items, size_t n,
                            fr_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const fr_ggml_params *p = params_of(reg, items[i].ref);
        if (p && fr_ggml_stored_type(p, items[i].cols) != stored_of(reg, items[i].ref, items[i].t))
            return fr_fail(err, FR_E_USAGE,
                           "'%s' as %s: ggml stores rows of %lld elements as %s, but the "
                           "quantizer measures rows of %lld as %s",
                           items[i].t->name, items[i].ref->cfg->name,
                           (long long)ne0_of(items[i].t),
                           stored_of(reg, items[i].ref, items[i].t)->gguf_name,
                           (long long)items[i].cols,
                           fr_ggml_stored_type(p, items[i].cols)->gguf_name);
    }
    return FR_OK;
}

fr_status fr_gguf_write(const fr_registry *reg, const fr_source *src, fr_gguf_item *items,
                        size_t n, const char *path, uint64_t *data_bytes, fr_error *err)
{
    if (src->kind != FR_SOURCE_GGUF || src->n_files != 1 || n != src->n_tensors)
        return fr_fail(err, FR_E_USAGE, "'%s': GGUF is written from one GGUF file", src->path);
    fr_status rows_st = check_rows(reg, items, n, err);
    if (rows_st != FR_OK)
        return rows_st;
    const fr_mapped_file *in = &src->files[0];
    cursor c = {in->base, 0, in->size};
    uint32_t version;
    uint64_t n_tensors, n_kv;
    kv *kvs = NULL;
    tinfo *infos = NULL;
    obuf h = {0};
    FILE *f = NULL;
    fr_status st = FR_OK;
    char why[128];
    uint64_t alignment = GGUF_DEFAULT_ALIGNMENT;
    if (!take(&c, 4) || !rd_u32(&c, &version) || !rd_u64(&c, &n_tensors) || !rd_u64(&c, &n_kv) ||
        n_tensors != n || n_kv > in->size / 12) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': GGUF header", src->path);
        goto done;
    }
    kvs = calloc(n_kv ? (size_t)n_kv : 1, sizeof *kvs);
    infos = calloc(n ? n : 1, sizeof *infos);
    if (!kvs || !infos) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if ((st = read_metadata(&c, src, kvs, n_kv, &alignment, err)) != FR_OK ||
        (st = read_tensor_infos(&c, src, items, n, infos, err)) != FR_OK)
        goto done;
    int quantizes = 0;
    unsigned file_type = output_file_type(reg, items, n, infos, &quantizes);
    const int major = quantizes && file_type;
    build_header(&h, reg, in, items, n, kvs, n_kv, infos, alignment, major, file_type);
    if (h.oom) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }

    if (!(f = fopen(path, "wb"))) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot create '%s': %s", path,
                     fr_errno_text(errno, why, sizeof why));
        goto done;
    }
    if ((st = write_bytes(f, h.p, h.n, path, err)) != FR_OK ||
        (st = write_zeros(f, pad_to(h.n, alignment), path, err)) != FR_OK ||
        (st = write_data(reg, src, items, n, f, path, alignment, data_bytes, err)) != FR_OK)
        goto done;
    if (fflush(f) != 0 || ferror(f)) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, why, sizeof why));
        goto done;
    }
done:
    if (f && st == FR_OK && fr_file_sync(f) != 0)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, why, sizeof why));
    if (f && fclose(f) != 0 && st == FR_OK)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, why, sizeof why));
    free(h.p);
    free(kvs);
    free(infos);
    return st;
}
