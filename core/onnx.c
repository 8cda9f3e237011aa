/*
 * ONNX (onnx/onnx.proto, IR version 3..10): ModelProto -> GraphProto ->
 * initializers (TensorProto) and Constant nodes (NodeProto op_type
 * "Constant" whose attribute "value" holds a TensorProto). Tensor bytes are
 * never copied: raw_data, packed float_data/double_data and external data
 * are zero-copy views of the mapping; FLOAT16/BFLOAT16/FLOAT8 stored in
 * int32_data (one varint per element holding the element's bits) are
 * decoded on load (FR_ENC_VARINT).
 *
 * Field numbers below are onnx.proto's. Subgraphs (If/Loop/Scan bodies),
 * sparse initializers and training info are not read (docs/readers.md).
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf.h"
#include "readers.h"
#include "source.h"

/* TensorProto.DataType -> storage. bits 0: no fixed element size (STRING). */
static const struct onnx_type {
    const char *name;
    fr_dtype dtype;
    unsigned bits;
    const char *skip_reason;
} onnx_types[] = {
    [1] = {"FLOAT", FR_DTYPE_F32, 32, NULL},
    [2] = {"UINT8", FR_DTYPE_U8, 8, "integer dtype"},
    [3] = {"INT8", FR_DTYPE_I8, 8, "integer dtype"},
    [4] = {"UINT16", FR_DTYPE_U16, 16, "integer dtype"},
    [5] = {"INT16", FR_DTYPE_I16, 16, "integer dtype"},
    [6] = {"INT32", FR_DTYPE_I32, 32, "integer dtype"},
    [7] = {"INT64", FR_DTYPE_I64, 64, "integer dtype"},
    [8] = {"STRING", FR_DTYPE_QUANT, 0, "string dtype"},
    [9] = {"BOOL", FR_DTYPE_BOOL, 8, "boolean dtype"},
    [10] = {"FLOAT16", FR_DTYPE_F16, 16, NULL},
    [11] = {"DOUBLE", FR_DTYPE_F64, 64, NULL},
    [12] = {"UINT32", FR_DTYPE_U32, 32, "integer dtype"},
    [13] = {"UINT64", FR_DTYPE_U64, 64, "integer dtype"},
    [14] = {"COMPLEX64", FR_DTYPE_QUANT, 64, "complex dtype"},
    [15] = {"COMPLEX128", FR_DTYPE_QUANT, 128, "complex dtype"},
    [16] = {"BFLOAT16", FR_DTYPE_BF16, 16, NULL},
    [17] = {"FLOAT8E4M3FN", FR_DTYPE_F8_E4M3, 8, NULL},
    [18] = {"FLOAT8E4M3FNUZ", FR_DTYPE_QUANT, 8, "unsupported float dtype (FNUZ)"},
    [19] = {"FLOAT8E5M2", FR_DTYPE_F8_E5M2, 8, NULL},
    [20] = {"FLOAT8E5M2FNUZ", FR_DTYPE_QUANT, 8, "unsupported float dtype (FNUZ)"},
    [21] = {"UINT4", FR_DTYPE_QUANT, 4, "integer dtype"},
    [22] = {"INT4", FR_DTYPE_QUANT, 4, "integer dtype"},
    [23] = {"FLOAT4E2M1", FR_DTYPE_QUANT, 4, "packed sub-byte dtype is not read"},
    [24] = {"FLOAT8E8M0", FR_DTYPE_QUANT, 8, "scale dtype (E8M0) is not read"},
};
#define N_ONNX_TYPES (sizeof onnx_types / sizeof onnx_types[0])

/* The field numbers read. */
enum {
    MODEL_IR_VERSION = 1,
    MODEL_PRODUCER_NAME = 2,
    MODEL_PRODUCER_VERSION = 3,
    MODEL_DOMAIN = 4,
    MODEL_MODEL_VERSION = 5,
    MODEL_GRAPH = 7,
    MODEL_OPSET_IMPORT = 8,
    MODEL_METADATA_PROPS = 14,
    OPSET_DOMAIN = 1,
    OPSET_VERSION = 2,
    GRAPH_NODE = 1,
    GRAPH_NAME = 2,
    GRAPH_INITIALIZER = 5,
    NODE_OUTPUT = 2,
    NODE_NAME = 3,
    NODE_OP_TYPE = 4,
    NODE_ATTRIBUTE = 5,
    NODE_DOMAIN = 7,
    ATTR_NAME = 1,
    ATTR_T = 5,
    TENSOR_DIMS = 1,
    TENSOR_DATA_TYPE = 2,
    TENSOR_FLOAT_DATA = 4,
    TENSOR_INT32_DATA = 5,
    TENSOR_INT64_DATA = 7,
    TENSOR_NAME = 8,
    TENSOR_RAW_DATA = 9,
    TENSOR_DOUBLE_DATA = 10,
    TENSOR_UINT64_DATA = 11,
    TENSOR_EXTERNAL_DATA = 13,
    TENSOR_DATA_LOCATION = 14,
    ENTRY_KEY = 1,
    ENTRY_VALUE = 2,
};

struct onnx_ctx {
    fr_source *src;
    size_t file;
    const char *path;
    const char *dir; /* NULL: in memory, no external data */
    const uint8_t *base;
    fr_error *err;
    int64_t n_initializers, n_constants;
};

static fr_status malformed(struct onnx_ctx *c, const fr_pb_reader *r, const char *message)
{
    return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': %s at byte %llu (in %s)", c->path, r->error,
                   (unsigned long long)r->error_pos, message);
}

/* A known field with a wire type it can never have. */
static fr_status wrong_wire(struct onnx_ctx *c, const fr_pb_field *f, const char *message,
                            const char *field, const char *expected)
{
    return fr_fail(c->err, FR_E_FORMAT,
                   "cannot read '%s': %s.%s has wire type %s, expected %s (byte %llu)", c->path,
                   message, field, fr_pb_wire_name(f->wire), expected, (unsigned long long)f->pos);
}

#define EXPECT(c, f, wire_, message, field)                                                    \
    do {                                                                                       \
        if ((f)->wire != (wire_))                                                              \
            return wrong_wire((c), (f), (message), (field), fr_pb_wire_name(wire_));           \
    } while (0)

static int bytes_eq(const uint8_t *p, uint64_t n, const char *s)
{
    return n == strlen(s) && !memcmp(p, s, (size_t)n);
}

int fr_onnx_sniff(const uint8_t *p, uint64_t size)
{
    /* writers emit fields in number order: ModelProto starts with
     * ir_version (field 1, varint), a small number */
    return size >= 2 && p[0] == 0x08 && p[1] >= 1 && p[1] < 0x80;
}

/* ---- TensorProto ---- */

/* One typed repeated field (float_data, int32_data, ...): zero-copy is
 * possible when it came as one packed run, or as one unpacked element. */
struct typed {
    const uint8_t *data;
    uint64_t len;
    int runs; /* packed runs plus unpacked elements */
    int packed;
};

struct tensor_fields {
    int64_t dims[FR_MAX_DIMS];
    int ndim;
    int64_t data_type;
    const uint8_t *name;
    uint64_t name_len;
    const uint8_t *raw;
    uint64_t raw_len;
    int has_raw;
    struct typed float_data, int32_data, int64_data, double_data, uint64_data;
    int64_t data_location;
    const uint8_t *location;
    uint64_t location_len;
    const uint8_t *ext_offset_text, *ext_length_text; /* decimal strings, parsed once named */
    uint64_t ext_offset_len, ext_length_len;
    int has_ext_length, has_external;
    uint64_t pos; /* where the TensorProto starts, for messages */
};

static fr_status add_dim(struct onnx_ctx *c, struct tensor_fields *tf, uint64_t v, uint64_t pos)
{
    if (tf->ndim >= FR_MAX_DIMS)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor at byte %llu has more than %d dims",
                       c->path, (unsigned long long)pos, FR_MAX_DIMS);
    tf->dims[tf->ndim++] = (int64_t)v; /* int64 in two's complement: negatives stay negative */
    return FR_OK;
}

static fr_status read_typed(struct onnx_ctx *c, const fr_pb_reader *r, const fr_pb_field *f,
                            struct typed *ty, fr_pb_wire unpacked, const char *field)
{
    if (f->wire == FR_PB_LEN) {
        ty->data = f->data;
        ty->len = f->len;
        ty->packed = 1;
    } else if (f->wire == unpacked) {
        /* the element's bytes end where the reader now stands */
        uint64_t size = unpacked == FR_PB_I32 ? 4 : unpacked == FR_PB_I64 ? 8 : 0;
        if (size) {
            ty->data = r->p - size;
            ty->len = size;
        } else {
            /* a varint: from after the tag to the reader; find the tag's end */
            const uint8_t *q = c->base + f->pos;
            uint64_t tag;
            fr_pb_varint(&q, r->p, &tag);
            ty->data = q;
            ty->len = (uint64_t)(r->p - q);
        }
        ty->packed = 0;
    } else {
        return wrong_wire(c, f, "TensorProto", field, "length-delimited");
    }
    ty->runs++;
    return FR_OK;
}

/* Whole decimal number (external_data offset/length are strings). */
static int parse_decimal(const uint8_t *p, uint64_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return 0;
    for (uint64_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, (uint64_t)(p[i] - '0'), &v))
            return 0;
    }
    *out = v;
    return 1;
}

static fr_status read_external_entry(struct onnx_ctx *c, const fr_pb_field *outer,
                                     struct tensor_fields *tf)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    const uint8_t *key = NULL, *value = NULL;
    uint64_t key_len = 0, value_len = 0;
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        if (f.number == ENTRY_KEY) {
            EXPECT(c, &f, FR_PB_LEN, "StringStringEntryProto", "key");
            key = f.data;
            key_len = f.len;
        } else if (f.number == ENTRY_VALUE) {
            EXPECT(c, &f, FR_PB_LEN, "StringStringEntryProto", "value");
            value = f.data;
            value_len = f.len;
        }
    }
    if (rc < 0)
        return malformed(c, &r, "external_data");
    if (!key)
        return FR_OK;
    tf->has_external = 1;
    if (bytes_eq(key, key_len, "location")) {
        tf->location = value;
        tf->location_len = value_len;
    } else if (bytes_eq(key, key_len, "offset")) {
        tf->ext_offset_text = value;
        tf->ext_offset_len = value ? value_len : 0;
    } else if (bytes_eq(key, key_len, "length")) {
        tf->ext_length_text = value;
        tf->ext_length_len = value ? value_len : 0;
        tf->has_ext_length = 1;
    }
    return FR_OK;
}

static fr_status parse_tensor(struct onnx_ctx *c, const uint8_t *data, uint64_t len,
                              struct tensor_fields *tf)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    fr_status st;
    memset(tf, 0, sizeof *tf);
    tf->pos = (uint64_t)(data - c->base);
    fr_pb_init(&r, c->base, data, len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        switch (f.number) {
        case TENSOR_DIMS:
            if (f.wire == FR_PB_VARINT) {
                if ((st = add_dim(c, tf, f.value, tf->pos)) != FR_OK)
                    return st;
            } else if (f.wire == FR_PB_LEN) {
                const uint8_t *p = f.data, *end = f.data + f.len;
                while (p < end) {
                    uint64_t v;
                    if (fr_pb_varint(&p, end, &v) != 0)
                        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': truncated varint at byte %llu (in TensorProto.dims)",
                                       c->path, (unsigned long long)(p - c->base));
                    if ((st = add_dim(c, tf, v, tf->pos)) != FR_OK)
                        return st;
                }
            } else {
                return wrong_wire(c, &f, "TensorProto", "dims", "varint");
            }
            break;
        case TENSOR_DATA_TYPE:
            EXPECT(c, &f, FR_PB_VARINT, "TensorProto", "data_type");
            tf->data_type = (int64_t)f.value;
            break;
        case TENSOR_NAME:
            EXPECT(c, &f, FR_PB_LEN, "TensorProto", "name");
            tf->name = f.data;
            tf->name_len = f.len;
            break;
        case TENSOR_RAW_DATA:
            EXPECT(c, &f, FR_PB_LEN, "TensorProto", "raw_data");
            tf->raw = f.data;
            tf->raw_len = f.len;
            tf->has_raw = 1;
            break;
        case TENSOR_FLOAT_DATA:
            if ((st = read_typed(c, &r, &f, &tf->float_data, FR_PB_I32, "float_data")) != FR_OK)
                return st;
            break;
        case TENSOR_INT32_DATA:
            if ((st = read_typed(c, &r, &f, &tf->int32_data, FR_PB_VARINT, "int32_data")) != FR_OK)
                return st;
            break;
        case TENSOR_INT64_DATA:
            if ((st = read_typed(c, &r, &f, &tf->int64_data, FR_PB_VARINT, "int64_data")) != FR_OK)
                return st;
            break;
        case TENSOR_DOUBLE_DATA:
            if ((st = read_typed(c, &r, &f, &tf->double_data, FR_PB_I64, "double_data")) != FR_OK)
                return st;
            break;
        case TENSOR_UINT64_DATA:
            if ((st = read_typed(c, &r, &f, &tf->uint64_data, FR_PB_VARINT, "uint64_data")) != FR_OK)
                return st;
            break;
        case TENSOR_EXTERNAL_DATA:
            EXPECT(c, &f, FR_PB_LEN, "TensorProto", "external_data");
            if ((st = read_external_entry(c, &f, tf)) != FR_OK)
                return st;
            break;
        case TENSOR_DATA_LOCATION:
            EXPECT(c, &f, FR_PB_VARINT, "TensorProto", "data_location");
            tf->data_location = (int64_t)f.value;
            break;
        default:
            break; /* segment, string_data, doc_string, metadata_props */
        }
    }
    if (rc < 0)
        return malformed(c, &r, "TensorProto");
    return FR_OK;
}

/* Maps the tensor's external file and points t at its bytes. */
static fr_status attach_external(struct onnx_ctx *c, const struct tensor_fields *tf, size_t ti,
                                 uint64_t need, int need_known)
{
    fr_status st = FR_OK;
    char *location = NULL, *path = NULL;
    const char *name = c->src->tensors[ti].name;
    if (!tf->location)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': external data without a location",
                       c->path, name);
    location = fr_utf8_dup((const char *)tf->location, (size_t)tf->location_len);
    if (!location)
        return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    /* onnx.checker's rule: a location is relative and stays inside the folder */
    int bad = location[0] == '\0' || location[0] == '/' || strlen(location) != tf->location_len;
    for (const char *p = location; !bad && *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        bad = n == 2 && p[0] == '.' && p[1] == '.';
        p += n + (slash != NULL);
    }
    if (bad) {
        st = fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': external data location '%s' leaves the model's folder",
                     c->path, name, location);
        goto done;
    }
    if (!c->dir) {
        st = fr_fail(c->err, FR_E_IO, "cannot read '%s': tensor '%s': external data '%s' needs the model's folder",
                     c->path, name, location);
        goto done;
    }
    size_t plen = strlen(c->dir) + strlen(location) + 2;
    path = malloc(plen);
    if (!path) {
        st = fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
        goto done;
    }
    snprintf(path, plen, "%s/%s", c->dir, location);
    size_t file;
    st = fr_source_add_file(c->src, path, &file, c->err);
    if (st != FR_OK) {
        fr_error_prefix(c->err, "external data of tensor '%s' in '%s': ", name, c->path);
        goto done;
    }
    uint64_t size = c->src->files[file].size, offset = 0, length = 0;
    if ((tf->ext_offset_text && !parse_decimal(tf->ext_offset_text, tf->ext_offset_len, &offset)) ||
        (tf->has_ext_length && !parse_decimal(tf->ext_length_text, tf->ext_length_len, &length))) {
        st = fr_fail(c->err, FR_E_FORMAT,
                     "cannot read '%s': tensor '%s': external_data %s is not a whole number", c->path, name,
                     tf->has_ext_length && !parse_decimal(tf->ext_length_text, tf->ext_length_len, &length)
                         ? "length"
                         : "offset");
        goto done;
    }
    if (!tf->has_ext_length)
        length = need_known ? need : (offset <= size ? size - offset : 0);
    if (offset > size || length > size - offset) {
        st = fr_fail(c->err, FR_E_FORMAT,
                     "cannot read '%s': tensor '%s': external data [%llu, +%llu) past the end of '%s' (%llu bytes)",
                     c->path, name, (unsigned long long)offset, (unsigned long long)length, path,
                     (unsigned long long)size);
        goto done;
    }
    if (need_known && length != need) {
        st = fr_fail(c->err, FR_E_FORMAT,
                     "cannot read '%s': tensor '%s': external data holds %llu bytes, dims x %s need %llu",
                     c->path, name, (unsigned long long)length, c->src->tensors[ti].dtype_name,
                     (unsigned long long)need);
        goto done;
    }
    fr_tensor *t = &c->src->tensors[ti];
    t->file = (int)file;
    t->offset = offset;
    t->nbytes = length;
    t->encoding = FR_ENC_RAW;
done:
    free(location);
    free(path);
    return st;
}

/* Adds the TensorProto at data[0..len) as a tensor; name overrides its own
 * name (a Constant node names its tensor by its output). */
static fr_status add_tensor(struct onnx_ctx *c, const uint8_t *data, uint64_t len,
                            const uint8_t *name, uint64_t name_len)
{
    struct tensor_fields tf;
    char shape_text[256];
    fr_status st = parse_tensor(c, data, len, &tf);
    if (st != FR_OK)
        return st;
    if (!name || name_len == 0) {
        name = tf.name;
        name_len = tf.name_len;
    }
    char fallback[48];
    if (!name || name_len == 0) {
        snprintf(fallback, sizeof fallback, "tensor@%llu", (unsigned long long)tf.pos);
        name = (const uint8_t *)fallback;
        name_len = strlen(fallback);
    }
    fr_tensor *t;
    if ((st = fr_source_push_tensor(c->src, (const char *)name, (size_t)name_len, &t, c->err)) != FR_OK)
        return st;
    size_t ti = c->src->n_tensors - 1;
    t->file = (int)c->file;
    t->encoding = FR_ENC_RAW;
    t->ndim = tf.ndim;
    memcpy(t->shape, tf.dims, sizeof tf.dims);
    int rc = fr_shape_numel(t->shape, t->ndim, &t->numel);
    if (rc == -1)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': negative dimension in %s",
                       c->path, t->name, fr_shape_text(t->shape, t->ndim, shape_text, sizeof shape_text));
    if (rc != 0)
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': dims %s have more than 2^63 elements",
                       c->path, t->name, fr_shape_text(t->shape, t->ndim, shape_text, sizeof shape_text));
    if (tf.data_type <= 0 || tf.data_type > INT32_MAX) /* an int32 enum, 0 = UNDEFINED */
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': no valid data_type", c->path,
                       t->name);
    const struct onnx_type *ty =
        (uint64_t)tf.data_type < N_ONNX_TYPES && onnx_types[tf.data_type].name ? &onnx_types[tf.data_type]
                                                                                : NULL;
    if (!ty) {
        /* a type newer than this table: list it, never read it */
        snprintf(t->dtype_name, sizeof t->dtype_name, "TYPE_%d", (int)tf.data_type);
        t->dtype = FR_DTYPE_QUANT;
        t->skip_reason = "unknown ONNX data_type";
        return FR_OK;
    }
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", ty->name);
    t->dtype = ty->dtype;
    t->skip_reason = ty->skip_reason;

    /* bytes the elements take when stored raw */
    uint64_t bits, need = 0;
    int need_known = ty->bits != 0;
    if (need_known) {
        if (__builtin_mul_overflow((uint64_t)t->numel, (uint64_t)ty->bits, &bits))
            return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': size overflows 64 bits",
                           c->path, t->name);
        need = bits / 8 + (bits % 8 != 0);
    }
    const char *shape = fr_shape_text(t->shape, t->ndim, shape_text, sizeof shape_text);

    if (tf.data_location == 1 || tf.has_external) /* TensorProto.EXTERNAL */
        return attach_external(c, &tf, ti, need, need_known);
    if (tf.has_raw) {
        if (need_known && tf.raw_len != need)
            return fr_fail(c->err, FR_E_FORMAT,
                           "cannot read '%s': tensor '%s': raw_data holds %llu bytes, dims %s x %s need %llu",
                           c->path, t->name, (unsigned long long)tf.raw_len, shape, ty->name,
                           (unsigned long long)need);
        t->offset = (uint64_t)(tf.raw - c->base);
        t->nbytes = tf.raw_len;
        return FR_OK;
    }
    if (t->skip_reason)
        return FR_OK; /* typed fields of types never read are left unchecked */

    /* a readable float type held in its typed field */
    const struct typed *field = t->dtype == FR_DTYPE_F32   ? &tf.float_data
                                : t->dtype == FR_DTYPE_F64 ? &tf.double_data
                                                           : &tf.int32_data;
    const char *field_name = t->dtype == FR_DTYPE_F32   ? "float_data"
                             : t->dtype == FR_DTYPE_F64 ? "double_data"
                                                        : "int32_data";
    if (field->runs == 0) {
        if (t->numel == 0)
            return FR_OK;
        return fr_fail(c->err, FR_E_FORMAT, "cannot read '%s': tensor '%s': no data for dims %s", c->path,
                       t->name, shape);
    }
    if (field->runs > 1) {
        /* legal protobuf, but not one contiguous run: list it, do not read it */
        t->skip_reason = "typed data split across several fields";
        return FR_OK;
    }
    t->offset = (uint64_t)(field->data - c->base);
    t->nbytes = field->len;
    if (t->dtype == FR_DTYPE_F32 || t->dtype == FR_DTYPE_F64) {
        if (field->len != need)
            return fr_fail(c->err, FR_E_FORMAT,
                           "cannot read '%s': tensor '%s': %s holds %llu bytes, dims %s x %s need %llu",
                           c->path, t->name, field_name, (unsigned long long)field->len, shape, ty->name,
                           (unsigned long long)need);
        return FR_OK;
    }
    /* FLOAT16, BFLOAT16, FLOAT8*: each varint holds the element's bits */
    int64_t count = fr_pb_count_varints(field->data, field->len, ty->bits == 8 ? 0xffu : 0xffffu);
    if (count < 0)
        return fr_fail(c->err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': int32_data has a malformed or out-of-range %s element",
                       c->path, t->name, ty->name);
    if (count != t->numel)
        return fr_fail(c->err, FR_E_FORMAT,
                       "cannot read '%s': tensor '%s': int32_data holds %lld elements, dims %s need %lld",
                       c->path, t->name, (long long)count, shape, (long long)t->numel);
    t->encoding = FR_ENC_VARINT;
    return FR_OK;
}

/* ---- NodeProto: Constant nodes ---- */

static fr_status read_node(struct onnx_ctx *c, const fr_pb_field *outer)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    const uint8_t *op = NULL, *domain = NULL, *output = NULL;
    uint64_t op_len = 0, domain_len = 0, output_len = 0;
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        if (f.number == NODE_OP_TYPE) {
            EXPECT(c, &f, FR_PB_LEN, "NodeProto", "op_type");
            op = f.data;
            op_len = f.len;
        } else if (f.number == NODE_DOMAIN) {
            EXPECT(c, &f, FR_PB_LEN, "NodeProto", "domain");
            domain = f.data;
            domain_len = f.len;
        } else if (f.number == NODE_OUTPUT) {
            EXPECT(c, &f, FR_PB_LEN, "NodeProto", "output");
            if (!output) {
                output = f.data;
                output_len = f.len;
            }
        } else if (f.number == NODE_ATTRIBUTE || f.number == NODE_NAME) {
            EXPECT(c, &f, FR_PB_LEN, "NodeProto", f.number == NODE_NAME ? "name" : "attribute");
        }
    }
    if (rc < 0)
        return malformed(c, &r, "NodeProto");
    if (!op || !bytes_eq(op, op_len, "Constant") ||
        (domain && domain_len && !bytes_eq(domain, domain_len, "ai.onnx")))
        return FR_OK;
    /* second pass: the "value" attribute's TensorProto */
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while (fr_pb_next(&r, &f) > 0) {
        if (f.number != NODE_ATTRIBUTE)
            continue;
        fr_pb_reader ar;
        fr_pb_field af;
        const uint8_t *attr_name = NULL, *t = NULL;
        uint64_t attr_name_len = 0, t_len = 0;
        fr_pb_init(&ar, c->base, f.data, f.len);
        while ((rc = fr_pb_next(&ar, &af)) > 0) {
            if (af.number == ATTR_NAME) {
                EXPECT(c, &af, FR_PB_LEN, "AttributeProto", "name");
                attr_name = af.data;
                attr_name_len = af.len;
            } else if (af.number == ATTR_T) {
                EXPECT(c, &af, FR_PB_LEN, "AttributeProto", "t");
                t = af.data;
                t_len = af.len;
            }
        }
        if (rc < 0)
            return malformed(c, &ar, "AttributeProto");
        if (attr_name && bytes_eq(attr_name, attr_name_len, "value") && t) {
            c->n_constants++;
            return add_tensor(c, t, t_len, output, output_len);
        }
    }
    return FR_OK; /* value_float(s), value_int(s), sparse_value: not weights */
}

/* ---- GraphProto and ModelProto ---- */

static fr_status read_graph(struct onnx_ctx *c, const fr_pb_field *outer)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    fr_status st;
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        if (f.number == GRAPH_NODE) {
            EXPECT(c, &f, FR_PB_LEN, "GraphProto", "node");
            if ((st = read_node(c, &f)) != FR_OK)
                return st;
        } else if (f.number == GRAPH_INITIALIZER) {
            EXPECT(c, &f, FR_PB_LEN, "GraphProto", "initializer");
            c->n_initializers++;
            if ((st = add_tensor(c, f.data, f.len, NULL, 0)) != FR_OK)
                return st;
        } else if (f.number == GRAPH_NAME) {
            EXPECT(c, &f, FR_PB_LEN, "GraphProto", "name");
            cJSON *name = fr_json_string_n((const char *)f.data, (size_t)(f.len < FR_META_STRING_MAX ? f.len : FR_META_STRING_MAX));
            if (!name || !cJSON_AddItemToObject(c->src->metadata, "graph_name", name)) {
                cJSON_Delete(name);
                return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
            }
        }
    }
    if (rc < 0)
        return malformed(c, &r, "GraphProto");
    return FR_OK;
}

static fr_status add_meta(struct onnx_ctx *c, cJSON *parent, const char *key, cJSON *value)
{
    if (!value || !cJSON_AddItemToObject(parent, key, value)) {
        cJSON_Delete(value);
        return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    }
    return FR_OK;
}

static cJSON *short_string(const uint8_t *p, uint64_t n)
{
    return fr_json_string_n((const char *)p, (size_t)(n < FR_META_STRING_MAX ? n : FR_META_STRING_MAX));
}

static fr_status read_opset(struct onnx_ctx *c, const fr_pb_field *outer, cJSON *opsets)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    cJSON *entry = cJSON_CreateObject();
    if (!entry)
        return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    const uint8_t *domain = (const uint8_t *)"";
    uint64_t domain_len = 0, version = 0;
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        if (f.number == OPSET_DOMAIN && f.wire == FR_PB_LEN) {
            domain = f.data;
            domain_len = f.len;
        } else if (f.number == OPSET_VERSION && f.wire == FR_PB_VARINT) {
            version = f.value;
        }
    }
    if (rc < 0) {
        cJSON_Delete(entry);
        return malformed(c, &r, "OperatorSetIdProto");
    }
    if (add_meta(c, entry, "domain", short_string(domain, domain_len)) != FR_OK ||
        add_meta(c, entry, "version", cJSON_CreateNumber((double)(int64_t)version)) != FR_OK) {
        cJSON_Delete(entry);
        return FR_E_NOMEM;
    }
    if (cJSON_GetArraySize(opsets) >= FR_META_ARRAY_MAX || !cJSON_AddItemToArray(opsets, entry))
        cJSON_Delete(entry);
    return FR_OK;
}

static fr_status read_metadata_prop(struct onnx_ctx *c, const fr_pb_field *outer, cJSON *props)
{
    fr_pb_reader r;
    fr_pb_field f;
    int rc;
    const uint8_t *key = NULL, *value = (const uint8_t *)"";
    uint64_t key_len = 0, value_len = 0;
    fr_pb_init(&r, c->base, outer->data, outer->len);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        if (f.number == ENTRY_KEY && f.wire == FR_PB_LEN) {
            key = f.data;
            key_len = f.len;
        } else if (f.number == ENTRY_VALUE && f.wire == FR_PB_LEN) {
            value = f.data;
            value_len = f.len;
        }
    }
    if (rc < 0)
        return malformed(c, &r, "StringStringEntryProto");
    if (!key || cJSON_GetArraySize(props) >= FR_META_ARRAY_MAX)
        return FR_OK;
    char *k = fr_utf8_dup((const char *)key, (size_t)(key_len < 256 ? key_len : 256));
    if (!k)
        return fr_fail(c->err, FR_E_NOMEM, "out of memory reading '%s'", c->path);
    fr_status st = add_meta(c, props, k, short_string(value, value_len));
    free(k);
    return st;
}

fr_status fr_onnx_read(fr_source *src, size_t file, const char *dir, fr_error *err)
{
    const fr_mapped_file *mf = &src->files[file];
    struct onnx_ctx c = {src, file, mf->path, dir, mf->base, err, 0, 0};
    fr_pb_reader r;
    fr_pb_field f;
    int rc, graphs = 0;
    fr_status st = FR_OK;
    cJSON *meta = src->metadata;
    cJSON *opsets = cJSON_CreateArray(), *props = cJSON_CreateObject();
    if (!opsets || !props) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", c.path);
        goto done;
    }
    if (mf->size == 0) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': empty file", c.path);
        goto done;
    }
    fr_pb_init(&r, mf->base, mf->base, mf->size);
    while ((rc = fr_pb_next(&r, &f)) > 0) {
        switch (f.number) {
        case MODEL_IR_VERSION:
        case MODEL_MODEL_VERSION:
            if (f.wire != FR_PB_VARINT) {
                st = wrong_wire(&c, &f, "ModelProto", f.number == 1 ? "ir_version" : "model_version", "varint");
                goto done;
            }
            st = add_meta(&c, meta, f.number == 1 ? "ir_version" : "model_version",
                          cJSON_CreateNumber((double)(int64_t)f.value));
            break;
        case MODEL_PRODUCER_NAME:
        case MODEL_PRODUCER_VERSION:
        case MODEL_DOMAIN: {
            static const char *const keys[] = {"", "", "producer_name", "producer_version", "domain"};
            if (f.wire != FR_PB_LEN) {
                st = wrong_wire(&c, &f, "ModelProto", keys[f.number], "length-delimited");
                goto done;
            }
            st = add_meta(&c, meta, keys[f.number], short_string(f.data, f.len));
            break;
        }
        case MODEL_GRAPH:
            if (f.wire != FR_PB_LEN) {
                st = wrong_wire(&c, &f, "ModelProto", "graph", "length-delimited");
                goto done;
            }
            graphs++;
            st = read_graph(&c, &f);
            break;
        case MODEL_OPSET_IMPORT:
            if (f.wire != FR_PB_LEN) {
                st = wrong_wire(&c, &f, "ModelProto", "opset_import", "length-delimited");
                goto done;
            }
            st = read_opset(&c, &f, opsets);
            break;
        case MODEL_METADATA_PROPS:
            if (f.wire != FR_PB_LEN) {
                st = wrong_wire(&c, &f, "ModelProto", "metadata_props", "length-delimited");
                goto done;
            }
            st = read_metadata_prop(&c, &f, props);
            break;
        default:
            break;
        }
        if (st != FR_OK)
            goto done;
    }
    if (rc < 0) {
        st = malformed(&c, &r, "ModelProto");
        goto done;
    }
    if (graphs == 0) {
        st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': no graph (not an ONNX model)", c.path);
        goto done;
    }
    if ((st = add_meta(&c, meta, "opset_import", opsets)) != FR_OK) {
        opsets = NULL;
        goto done;
    }
    opsets = NULL;
    if ((st = add_meta(&c, meta, "metadata_props", props)) != FR_OK) {
        props = NULL;
        goto done;
    }
    props = NULL;
    if ((st = add_meta(&c, meta, "initializers", cJSON_CreateNumber((double)c.n_initializers))) != FR_OK ||
        (st = add_meta(&c, meta, "constant_nodes", cJSON_CreateNumber((double)c.n_constants))) != FR_OK)
        goto done;
done:
    cJSON_Delete(opsets);
    cJSON_Delete(props);
    return st;
}
