/*
 * Opening a checkpoint: content sniffing, memory mapping, the checks every
 * reader shares (duplicate names, element counts), and turning a tensor's
 * stored bytes into float32.
 */
#include "source.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "protobuf.h"
#include "readers.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "frontier reads little-endian checkpoints by memcpy: port fr_tensor_load_f32 first"
#endif

#define CONFIG_JSON_MAX (1u << 20) /* a config.json bigger than 1 MiB is not a model config */

/* ---- small shared helpers ---- */

int fr_shape_numel(const int64_t *shape, int ndim, int64_t *numel)
{
    /* The product of the non-zero dimensions must fit too: a 0 must not hide
     * an absurd shape whose rows x cols view (fr_tensor_matrix) overflows. */
    int64_t nonzero = 1;
    int has_zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] == 0)
            has_zero = 1;
        else if (__builtin_mul_overflow(nonzero, shape[i], &nonzero))
            return -2;
    }
    *numel = has_zero ? 0 : nonzero;
    return 0;
}

const char *fr_shape_text(const int64_t *shape, int ndim, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if invalid (RFC 3629:
 * no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0x01 && c < 0x80)
        return 1;
    size_t k;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2;
        cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0u) != 0x80u)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

char *fr_utf8_dup(const char *s, size_t n)
{
    /* each invalid byte becomes the 3-byte U+FFFD */
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, u + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    return out;
}

cJSON *fr_json_string_n(const char *s, size_t n)
{
    char *text = fr_utf8_dup(s, n);
    if (!text)
        return NULL;
    cJSON *item = cJSON_CreateString(text);
    free(text);
    return item;
}

/* ---- files ---- */

fr_status fr_map_file(const char *path, fr_mapped_file *file, fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    memset(file, 0, sizeof *file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = fr_fail(err, FR_E_IO, "cannot stat '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = fr_fail(err, FR_E_IO, "cannot read '%s': not a regular file", path);
        goto done;
    }
    file->path = strdup(path);
    if (!file->path) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        goto done;
    }
    file->size = (uint64_t)sb.st_size;
    file->mtime = (int64_t)sb.st_mtime;
    if (file->size > 0) {
        /* read-only private mapping: pages come from the page cache on
         * demand and can be dropped again (fr_tensor_release) */
        void *base = mmap(NULL, (size_t)file->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            st = fr_fail(err, FR_E_IO, "cannot map '%s': %s", path,
                         fr_errno_text(errno, ebuf, sizeof ebuf));
            free(file->path);
            file->path = NULL;
            goto done;
        }
        file->base = base;
    }
done:
    close(fd);
    return st;
}

void fr_unmap_file(fr_mapped_file *file)
{
    if (file->base && !file->borrowed)
        munmap((void *)file->base, (size_t)file->size);
    free(file->path);
    memset(file, 0, sizeof *file);
}

fr_status fr_source_add_file(fr_source *src, const char *path, size_t *index, fr_error *err)
{
    for (size_t i = 0; i < src->n_files; i++) {
        if (!strcmp(src->files[i].path, path)) {
            *index = i;
            return FR_OK;
        }
    }
    fr_mapped_file *grown = realloc(src->files, (src->n_files + 1) * sizeof *grown);
    if (!grown)
        return fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
    src->files = grown;
    fr_status st = fr_map_file(path, &src->files[src->n_files], err);
    if (st != FR_OK)
        return st;
    *index = src->n_files++;
    return FR_OK;
}

fr_status fr_source_push_tensor(fr_source *src, const char *name, size_t name_len, fr_tensor **out,
                                fr_error *err)
{
    /* grow by doubling: readers append one tensor at a time */
    size_t n = src->n_tensors;
    if ((n & (n - 1)) == 0) {
        size_t cap = n ? 2 * n : 16;
        if (cap > SIZE_MAX / sizeof(fr_tensor))
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
        fr_tensor *grown = realloc(src->tensors, cap * sizeof *grown);
        if (!grown)
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
        src->tensors = grown;
    }
    fr_tensor *t = &src->tensors[n];
    memset(t, 0, sizeof *t);
    t->name = fr_utf8_dup(name, name_len);
    if (!t->name)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path);
    t->scale_tensor = -1;
    t->cls = FR_CLASS_OTHER;
    src->n_tensors++;
    *out = t;
    return FR_OK;
}

/* ---- checks shared by every reader ---- */

static int by_name(const void *a, const void *b, void *ctx)
{
    const fr_tensor *tensors = ctx;
    return strcmp(tensors[*(const size_t *)a].name, tensors[*(const size_t *)b].name);
}

size_t *fr_source_sorted_by_name(const fr_source *src)
{
    if (src->n_tensors == 0)
        return NULL;
    size_t *idx = malloc(src->n_tensors * sizeof *idx);
    if (!idx)
        return NULL;
    for (size_t i = 0; i < src->n_tensors; i++)
        idx[i] = i;
    qsort_r(idx, src->n_tensors, sizeof *idx, by_name, src->tensors);
    return idx;
}

long fr_source_find_tensor(const fr_source *src, const size_t *sorted, const char *name)
{
    size_t lo = 0, hi = sorted ? src->n_tensors : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(src->tensors[sorted[mid]].name, name);
        if (c == 0)
            return (long)sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* An F8 weight's dequantization scale, under the names checkpoints use:
 * "X.weight_scale_inv" (DeepSeek-V3 block scales), "X.weight_scale"
 * (compressed-tensors / vLLM per-tensor or per-channel), "X.scale". */
static void link_f8_scales(fr_source *src, const size_t *idx)
{
    static const char *const suffixes[] = {"_scale_inv", "_scale", ".scale"};
    for (size_t i = 0; i < src->n_tensors; i++) {
        fr_tensor *t = &src->tensors[i];
        if (t->dtype != FR_DTYPE_F8_E4M3 && t->dtype != FR_DTYPE_F8_E5M2)
            continue;
        size_t len = strlen(t->name);
        char *probe = malloc(len + 16);
        if (!probe)
            return; /* the link is a convenience; without memory, go without */
        for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
            snprintf(probe, len + 16, "%s%s", t->name, suffixes[k]);
            long j = fr_source_find_tensor(src, idx, probe);
            if (j >= 0 && fr_dtype_is_float(src->tensors[j].dtype)) {
                t->scale_tensor = (int)j;
                break;
            }
        }
        free(probe);
    }
}

static fr_status finalize(fr_source *src, fr_error *err)
{
    fr_status st = FR_OK;
    int64_t total = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        fr_tensor *t = &src->tensors[i];
        t->cls = fr_classify(t->name, t->ndim);
        if (__builtin_add_overflow(total, t->numel, &total))
            return fr_fail(err, FR_E_FORMAT,
                           "cannot read '%s': the tensors hold more than 2^63 elements in all",
                           src->path);
    }
    if (src->n_tensors > (size_t)INT32_MAX)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': too many tensors (%zu)", src->path,
                       src->n_tensors);
    size_t *idx = fr_source_sorted_by_name(src);
    if (!idx)
        return src->n_tensors ? fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", src->path)
                              : FR_OK;
    for (size_t i = 1; i < src->n_tensors; i++) {
        const fr_tensor *a = &src->tensors[idx[i - 1]], *b = &src->tensors[idx[i]];
        if (!strcmp(a->name, b->name)) {
            st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': duplicate tensor name '%s'",
                         src->files[b->file].path, b->name);
            goto done;
        }
    }
    link_f8_scales(src, idx);
done:
    free(idx);
    return st;
}

/* ---- config.json of a Hugging Face folder: context for the metadata ---- */

static void read_config_json(fr_source *src, const char *dir)
{
    size_t len = strlen(dir) + sizeof "/config.json";
    char *path = malloc(len);
    fr_mapped_file file = {0};
    fr_error err;
    if (!path)
        return;
    snprintf(path, len, "%s/config.json", dir);
    if (access(path, F_OK) != 0)
        goto done;
    /* a broken config.json does not make the weights unreadable: warn, go on */
    if (fr_map_file(path, &file, &err) != FR_OK) {
        fr_warn("%s", err.msg);
        goto done;
    }
    if (file.size > CONFIG_JSON_MAX) {
        fr_warn("ignoring '%s': larger than %u bytes", path, CONFIG_JSON_MAX);
        goto done;
    }
    cJSON *config = file.size ? cJSON_ParseWithLength((const char *)file.base, file.size) : NULL;
    if (!cJSON_IsObject(config)) {
        fr_warn("ignoring '%s': not a JSON object", path);
        cJSON_Delete(config);
        goto done;
    }
    cJSON_AddItemToObject(src->metadata, "config", config);
done:
    fr_unmap_file(&file);
    free(path);
}

/* ---- opening ---- */

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static char *join(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static fr_source *new_source(const char *path, fr_error *err)
{
    fr_source *src = calloc(1, sizeof *src);
    if (!src) {
        fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        return NULL;
    }
    src->path = strdup(path);
    src->metadata = cJSON_CreateObject();
    if (!src->path || !src->metadata) {
        fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        fr_source_close(src);
        return NULL;
    }
    return src;
}

/* Reads files[0] (already mapped) with the reader its content or, failing
 * that, its name asks for. */
static fr_status read_single(fr_source *src, const char *dir, fr_error *err)
{
    const fr_mapped_file *f = &src->files[0];
    if (f->size == 0)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': empty file", f->path);
    if (fr_gguf_sniff(f->base, f->size) || has_suffix(f->path, ".gguf")) {
        src->kind = FR_SOURCE_GGUF;
        return fr_gguf_read(src, 0, err);
    }
    if (fr_safetensors_sniff(f->base, f->size) || has_suffix(f->path, ".safetensors")) {
        src->kind = FR_SOURCE_SAFETENSORS;
        fr_status st = fr_safetensors_read(src, 0, err);
        if (st == FR_OK && dir)
            read_config_json(src, dir);
        return st;
    }
    if (fr_onnx_sniff(f->base, f->size) || has_suffix(f->path, ".onnx")) {
        src->kind = FR_SOURCE_ONNX;
        return fr_onnx_read(src, 0, dir, err);
    }
    return fr_fail(err, FR_E_FORMAT,
                   "cannot read '%s': not a safetensors, GGUF or ONNX file (unrecognised content)",
                   f->path);
}

/* A folder: the sharded index, model.safetensors, or its only model file. */
static fr_status open_folder(fr_source *src, const char *dir, fr_error *err)
{
    fr_status st = FR_OK;
    char *index = join(dir, "model.safetensors.index.json");
    char *single = join(dir, "model.safetensors");
    if (!index || !single) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", dir);
        goto done;
    }
    if (is_file(index)) {
        src->kind = FR_SOURCE_SAFETENSORS_SHARDED;
        st = fr_safetensors_read_index(src, index, dir, err);
        if (st == FR_OK)
            read_config_json(src, dir);
        goto done;
    }
    size_t file;
    if (is_file(single)) {
        st = fr_source_add_file(src, single, &file, err);
        if (st == FR_OK)
            st = read_single(src, dir, err);
        goto done;
    }
    st = fr_fail(err, FR_E_IO,
                 "cannot open '%s': the folder holds neither model.safetensors nor "
                 "model.safetensors.index.json",
                 dir);
done:
    free(index);
    free(single);
    return st;
}

fr_status fr_source_open(const char *path, fr_source **out, fr_error *err)
{
    char ebuf[128];
    char *dir = NULL;
    fr_status st = FR_OK;
    *out = NULL;
    fr_source *src = new_source(path, err);
    if (!src)
        return err ? err->code : FR_E_NOMEM;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        st = fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = open_folder(src, path, err);
        goto done;
    }
    dir = dir_of(path);
    if (!dir) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        goto done;
    }
    if (has_suffix(path, ".index.json")) {
        src->kind = FR_SOURCE_SAFETENSORS_SHARDED;
        st = fr_safetensors_read_index(src, path, dir, err);
        if (st == FR_OK)
            read_config_json(src, dir);
        goto done;
    }
    size_t file;
    st = fr_source_add_file(src, path, &file, err);
    if (st == FR_OK)
        st = read_single(src, dir, err);
done:
    free(dir);
    if (st == FR_OK)
        st = finalize(src, err);
    if (st != FR_OK) {
        fr_source_close(src);
        return st;
    }
    *out = src;
    return FR_OK;
}

fr_status fr_source_open_memory(const void *data, size_t size, const char *name, fr_source **out,
                                fr_error *err)
{
    fr_status st = FR_OK;
    *out = NULL;
    fr_source *src = new_source(name, err);
    if (!src)
        return err ? err->code : FR_E_NOMEM;
    src->files = calloc(1, sizeof *src->files);
    if (!src->files || !(src->files[0].path = strdup(name))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", name);
        goto done;
    }
    src->n_files = 1;
    src->files[0].base = size ? data : NULL;
    src->files[0].size = size;
    src->files[0].borrowed = 1;
    st = read_single(src, NULL, err);
    if (st == FR_OK)
        st = finalize(src, err);
done:
    if (st != FR_OK) {
        fr_source_close(src);
        return st;
    }
    *out = src;
    return FR_OK;
}

void fr_source_close(fr_source *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < src->n_tensors; i++)
        free(src->tensors[i].name);
    free(src->tensors);
    for (size_t i = 0; i < src->n_files; i++)
        fr_unmap_file(&src->files[i]);
    free(src->files);
    cJSON_Delete(src->metadata);
    if (src->impl_free)
        src->impl_free(src->impl);
    if (src->decode_state_free)
        src->decode_state_free(src->decode_state);
    free(src->path);
    free(src);
}

const char *fr_source_kind_name(fr_source_kind kind)
{
    switch (kind) {
    case FR_SOURCE_SAFETENSORS: return "safetensors";
    case FR_SOURCE_SAFETENSORS_SHARDED: return "safetensors-sharded";
    case FR_SOURCE_GGUF: return "gguf";
    case FR_SOURCE_ONNX: return "onnx";
    case FR_SOURCE_SYNTHETIC: return "synthetic";
    }
    return "unknown";
}

int64_t fr_source_numel(const fr_source *src)
{
    /* finalize() checked that the sum fits */
    int64_t total = 0;
    for (size_t i = 0; i < src->n_tensors; i++)
        total += src->tensors[i].numel;
    return total;
}

/* ---- tensor data ---- */

static void convert_raw(fr_dtype dtype, const uint8_t *p, int64_t n, float *dst)
{
    switch (dtype) {
    case FR_DTYPE_F32:
        memcpy(dst, p, (size_t)n * 4);
        break;
    case FR_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = fr_f16_to_f32(fr_le16(p + 2 * i));
        break;
    case FR_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = fr_bf16_to_f32(fr_le16(p + 2 * i));
        break;
    case FR_DTYPE_F8_E4M3:
        for (int64_t i = 0; i < n; i++)
            dst[i] = fr_e4m3_to_f32(p[i]);
        break;
    case FR_DTYPE_F8_E5M2:
        for (int64_t i = 0; i < n; i++)
            dst[i] = fr_e5m2_to_f32(p[i]);
        break;
    case FR_DTYPE_F64:
        /* the one lossy case: F64 rounds to nearest float32 (docs/readers.md) */
        for (int64_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, p + 8 * i, sizeof d);
            dst[i] = (float)d;
        }
        break;
    default:
        break;
    }
}

static float convert_bits(fr_dtype dtype, uint64_t bits)
{
    switch (dtype) {
    case FR_DTYPE_F16: return fr_f16_to_f32((uint16_t)bits);
    case FR_DTYPE_BF16: return fr_bf16_to_f32((uint16_t)bits);
    case FR_DTYPE_F8_E4M3: return fr_e4m3_to_f32((uint8_t)bits);
    case FR_DTYPE_F8_E5M2: return fr_e5m2_to_f32((uint8_t)bits);
    default: return 0.0f;
    }
}

int fr_tensor_is_block_quantized(const fr_tensor *t)
{
    if (t->encoding == FR_ENC_MEMBERS)
        return !t->skip_reason;
    return t->dtype == FR_DTYPE_QUANT && t->block_elems > 0 && t->block_bytes > 0 &&
           !t->skip_reason && t->encoding == FR_ENC_RAW;
}

const char *fr_tensor_source_format(const fr_tensor *t)
{
    if (!fr_tensor_is_block_quantized(t))
        return "";
    return t->encoding == FR_ENC_MEMBERS ? t->source_format : t->dtype_name;
}

uint64_t fr_tensor_stored_bits(const fr_tensor *t)
{
    uint64_t bytes = t->nbytes, bits;
    if (t->encoding != FR_ENC_RAW && t->encoding != FR_ENC_MEMBERS)
        bytes = (uint64_t)t->numel * fr_dtype_size(t->dtype);
    return __builtin_mul_overflow(bytes, (uint64_t)8, &bits) ? 0 : bits;
}

/* Elements [begin, begin + n) of a block-quantized tensor through its
 * source's decoder: whole blocks only (a row is a whole number of them),
 * their bytes checked against the tensor's. */
static fr_status load_blocks(const fr_source *src, const fr_tensor *t, const char *file,
                             int64_t begin, int64_t n, float *dst, fr_error *err)
{
    const uint64_t be = t->block_elems, bb = t->block_bytes;
    uint64_t need;
    if (!src->decode_blocks)
        return fr_fail(err, FR_E_FAIL, "cannot load '%s' from '%s': no decoder for %s here",
                       t->name, file, t->dtype_name);
    if ((uint64_t)t->numel % be != 0 ||
        __builtin_mul_overflow((uint64_t)t->numel / be, bb, &need) || t->nbytes != need)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot load '%s' from '%s': %llu bytes do not hold %lld elements as %s "
                       "blocks of %llu in %llu bytes",
                       t->name, file, (unsigned long long)t->nbytes, (long long)t->numel,
                       t->dtype_name, (unsigned long long)be, (unsigned long long)bb);
    if ((uint64_t)begin % be != 0 || ((uint64_t)n % be != 0 && begin + n != t->numel))
        return fr_fail(err, FR_E_FAIL,
                       "cannot load elements [%lld, %lld) of '%s' from '%s': not whole %s blocks "
                       "of %llu",
                       (long long)begin, (long long)(begin + n), t->name, file, t->dtype_name,
                       (unsigned long long)be);
    if (n == 0)
        return FR_OK;
    const uint8_t *p = src->files[t->file].base + t->offset + (uint64_t)begin / be * bb;
    return src->decode_blocks(t, p, n, dst, err);
}

/* Elements [begin, begin + n) of a folded tensor through its source's
 * decode_rows: whole rows of its last dimension (the end excepted). */
static fr_status load_members(const fr_source *src, const fr_tensor *t, const char *file,
                              int64_t begin, int64_t n, float *dst, fr_error *err)
{
    if (t->skip_reason)
        return fr_fail(err, FR_E_FORMAT, "cannot load '%s' from '%s': %s", t->name, file,
                       t->skip_reason);
    if (!src->decode_rows)
        return fr_fail(err, FR_E_FAIL, "cannot load '%s' from '%s': no decoder for %s here",
                       t->name, file, t->dtype_name);
    if (begin < 0 || n < 0 || begin > t->numel || n > t->numel - begin)
        return fr_fail(err, FR_E_FAIL,
                       "cannot load elements [%lld, %lld) of '%s' from '%s': it has %lld",
                       (long long)begin, (long long)(begin + n), t->name, file,
                       (long long)t->numel);
    int64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
    if (row > 0 && (begin % row != 0 || (n % row != 0 && begin + n != t->numel)))
        return fr_fail(err, FR_E_FAIL,
                       "cannot load elements [%lld, %lld) of '%s' from '%s': not whole rows of %lld",
                       (long long)begin, (long long)(begin + n), t->name, file, (long long)row);
    if (n == 0)
        return FR_OK;
    return src->decode_rows(src, t, begin, n, dst, err);
}

fr_status fr_tensor_load_f32(const fr_source *src, const fr_tensor *t, float *dst, fr_error *err)
{
    const char *file = (t->file >= 0 && (size_t)t->file < src->n_files) ? src->files[t->file].path
                                                                          : src->path;
    if (t->encoding == FR_ENC_SYNTHETIC) {
        if (!src->generate_f32)
            return fr_fail(err, FR_E_FAIL,
                           "cannot load '%s' from '%s': synthetic tensors have no generator here",
                           t->name, src->path);
        return src->generate_f32(src, t, dst, err);
    }
    if (t->encoding == FR_ENC_MEMBERS)
        return load_members(src, t, file, 0, t->numel, dst, err);
    const int blocks = fr_tensor_is_block_quantized(t);
    if (t->skip_reason || (!fr_dtype_is_float(t->dtype) && !blocks))
        return fr_fail(err, FR_E_FORMAT, "cannot load '%s' from '%s': %s %s", t->name, file,
                       t->dtype_name, t->skip_reason ? t->skip_reason : "is not a float dtype");
    if ((size_t)t->file >= src->n_files)
        return fr_fail(err, FR_E_FAIL, "cannot load '%s' from '%s': no such file index %d", t->name,
                       src->path, t->file);
    const fr_mapped_file *f = &src->files[t->file];
    /* the readers validated the ranges; a tensor built by hand is checked here */
    if (t->offset > f->size || t->nbytes > f->size - t->offset)
        return fr_fail(err, FR_E_FORMAT, "cannot load '%s' from '%s': data past the end of the file",
                       t->name, file);
    if (t->numel == 0)
        return FR_OK; /* dst may be NULL then; memcpy(NULL, p, 0) is undefined */
    if (blocks)
        return load_blocks(src, t, file, 0, t->numel, dst, err);
    const uint8_t *p = f->base + t->offset;
    if (t->encoding == FR_ENC_RAW) {
        uint64_t need;
        if (__builtin_mul_overflow((uint64_t)t->numel, (uint64_t)fr_dtype_size(t->dtype), &need) ||
            t->nbytes != need)
            return fr_fail(err, FR_E_FORMAT,
                           "cannot load '%s' from '%s': %llu bytes do not hold %lld %s elements",
                           t->name, file, (unsigned long long)t->nbytes, (long long)t->numel,
                           fr_dtype_name(t->dtype));
        convert_raw(t->dtype, p, t->numel, dst);
        return FR_OK;
    }
    if (t->encoding == FR_ENC_VARINT) {
        /* ONNX int32_data: one varint per element holding the element's bits */
        const uint8_t *end = p + t->nbytes;
        uint64_t max = fr_dtype_size(t->dtype) == 1 ? 0xffu : 0xffffu;
        for (int64_t i = 0; i < t->numel; i++) {
            uint64_t v;
            if (fr_pb_varint(&p, end, &v) != 0 || v > max)
                return fr_fail(err, FR_E_FORMAT,
                               "cannot load '%s' from '%s': malformed int32_data element %lld",
                               t->name, file, (long long)i);
            dst[i] = convert_bits(t->dtype, v);
        }
        if (p != end)
            return fr_fail(err, FR_E_FORMAT,
                           "cannot load '%s' from '%s': int32_data holds more than %lld elements",
                           t->name, file, (long long)t->numel);
        return FR_OK;
    }
    return fr_fail(err, FR_E_FAIL, "cannot load '%s' from '%s': unknown encoding %d", t->name, file,
                   (int)t->encoding);
}

const void *fr_tensor_raw(const fr_source *src, const fr_tensor *t)
{
    if (t->encoding != FR_ENC_RAW || t->file < 0 || (size_t)t->file >= src->n_files)
        return NULL;
    const fr_mapped_file *f = &src->files[t->file];
    if (!f->base || t->offset > f->size || t->nbytes > f->size - t->offset)
        return NULL;
    return f->base + t->offset;
}

static void release_bytes(const fr_source *src, const fr_tensor *t, uint64_t offset, uint64_t nbytes)
{
    /* a folded tensor's offset is no place in a file (its members are) */
    if (t->encoding == FR_ENC_SYNTHETIC || t->encoding == FR_ENC_MEMBERS || t->file < 0 || (size_t)t->file >= src->n_files)
        return;
    const fr_mapped_file *f = &src->files[t->file];
    /* MADV_DONTNEED on anonymous memory would zero the caller's bytes */
    if (f->borrowed || !f->base || nbytes == 0 || offset >= f->size)
        return;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t end = offset + nbytes < f->size ? offset + nbytes : f->size;
    /* round outward: a shared page is re-read from the file if a
     * neighbour needs it, which is cheap; keeping it would let resident
     * memory grow with the checkpoint */
    uint64_t begin = offset & ~(page - 1);
    end = (end + page - 1) & ~(page - 1);
    madvise((void *)(f->base + begin), (size_t)(end - begin), MADV_DONTNEED);
}

void fr_tensor_release(const fr_source *src, const fr_tensor *t)
{
    release_bytes(src, t, t->offset, t->nbytes);
}

void fr_tensor_release_range(const fr_source *src, const fr_tensor *t, int64_t begin, int64_t n)
{
    if (t->encoding != FR_ENC_RAW || begin < 0 || n <= 0 || begin > t->numel ||
        n > t->numel - begin)
        return;
    if (t->block_elems && t->block_bytes) {
        /* the blocks the elements lie in (a whole row is whole blocks) */
        uint64_t first = (uint64_t)begin / t->block_elems;
        uint64_t last = ((uint64_t)(begin + n) + t->block_elems - 1) / t->block_elems;
        release_bytes(src, t, t->offset + first * t->block_bytes,
                      (last - first) * t->block_bytes);
        return;
    }
    uint64_t size = fr_dtype_size(t->dtype);
    release_bytes(src, t, t->offset + (uint64_t)begin * size, (uint64_t)n * size);
}

fr_status fr_tensor_load_f32_range(const fr_source *src, const fr_tensor *t, int64_t begin,
                                   int64_t n, float *dst, fr_error *err)
{
    const char *file = (t->file >= 0 && (size_t)t->file < src->n_files) ? src->files[t->file].path
                                                                          : src->path;
    if (t->encoding == FR_ENC_MEMBERS)
        return load_members(src, t, file, begin, n, dst, err);
    if (t->encoding != FR_ENC_RAW)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot load rows of '%s' from '%s': its encoding cannot be read by range",
                       t->name, file);
    if (begin < 0 || n < 0 || begin > t->numel || n > t->numel - begin)
        return fr_fail(err, FR_E_FAIL,
                       "cannot load elements [%lld, %lld) of '%s' from '%s': it has %lld",
                       (long long)begin, (long long)(begin + n), t->name, file,
                       (long long)t->numel);
    const int blocks = fr_tensor_is_block_quantized(t);
    if (t->skip_reason || (!fr_dtype_is_float(t->dtype) && !blocks))
        return fr_fail(err, FR_E_FORMAT, "cannot load '%s' from '%s': %s %s", t->name, file,
                       t->dtype_name, t->skip_reason ? t->skip_reason : "is not a float dtype");
    const fr_mapped_file *f = &src->files[t->file];
    uint64_t size = fr_dtype_size(t->dtype), need;
    if (t->offset > f->size || t->nbytes > f->size - t->offset)
        return fr_fail(err, FR_E_FORMAT, "cannot load '%s' from '%s': data past the end of the file",
                       t->name, file);
    if (blocks)
        return load_blocks(src, t, file, begin, n, dst, err);
    if (__builtin_mul_overflow((uint64_t)t->numel, size, &need) || t->nbytes != need)
        return fr_fail(err, FR_E_FORMAT,
                       "cannot load '%s' from '%s': %llu bytes do not hold %lld %s elements",
                       t->name, file, (unsigned long long)t->nbytes, (long long)t->numel,
                       fr_dtype_name(t->dtype));
    if (n == 0)
        return FR_OK;
    convert_raw(t->dtype, f->base + t->offset + (uint64_t)begin * size, n, dst);
    return FR_OK;
}

void fr_tensor_matrix(const fr_tensor *t, int64_t *rows, int64_t *cols)
{
    if (t->ndim <= 1) {
        *rows = 1;
        *cols = t->ndim == 1 ? t->shape[0] : 1;
        return;
    }
    int64_t c = 1;
    for (int i = 1; i < t->ndim; i++)
        c *= t->shape[i];
    *rows = t->shape[0];
    *cols = c;
}
