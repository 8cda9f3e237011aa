/*
 * Model sources: a checkpoint opened read-only and memory-mapped, seen as a
 * list of tensor views. Readers (safetensors, GGUF, ONNX) fill the same
 * structs; nothing is copied until a tensor is loaded, and
 * fr_tensor_release() returns a tensor's pages so resident memory stays
 * bounded by the tensors in flight, not by the checkpoint size.
 */
#ifndef FR_SOURCE_H
#define FR_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "classify.h"
#include "dtype.h"
#include "error.h"

struct cJSON;

#define FR_MAX_DIMS 8

typedef enum fr_source_kind {
    FR_SOURCE_SAFETENSORS = 0, /* one .safetensors file (or a folder holding model.safetensors) */
    FR_SOURCE_SAFETENSORS_SHARDED, /* a folder with model.safetensors.index.json */
    FR_SOURCE_GGUF,
    FR_SOURCE_ONNX,
    FR_SOURCE_SYNTHETIC
} fr_source_kind;

/* How a tensor's bytes are laid out in its file. */
typedef enum fr_encoding {
    FR_ENC_RAW = 0,       /* packed little-endian elements of dtype (zero-copy) */
    FR_ENC_VARINT = 1,    /* protobuf packed varints (ONNX int32_data holding F16/BF16 bits) */
    FR_ENC_SYNTHETIC = 2, /* generated on demand (see synthetic.h) */
    FR_ENC_MEMBERS = 3    /* one logical weight decoded from several stored tensors (a
                             compressed-tensors weight_packed, weight_scale, ...) by the
                             source's decode_rows hook; nbytes: all its members' bytes */
} fr_encoding;

typedef struct fr_tensor {
    char *name;
    fr_dtype dtype;
    char dtype_name[24];      /* as the file names it: "BF16", "Q4_K", "FLOAT16" */
    int ndim;
    int64_t shape[FR_MAX_DIMS]; /* C order, outermost first (GGUF dims are reversed to this) */
    int64_t numel;
    fr_tensor_class cls;
    int file;                 /* index into fr_source.files */
    uint64_t offset;          /* byte offset of the data (or varint payload) in that file */
    uint64_t nbytes;          /* bytes of data (or varint payload) */
    fr_encoding encoding;
    const char *skip_reason;  /* non-NULL: listed but not quantizable (static string) */
    int scale_tensor;         /* index of a checkpoint's dequantization scale for F8 tensors, or -1 */
    uint64_t synthetic_id;    /* FR_ENC_SYNTHETIC: index of the generator entry;
                                 FR_ENC_MEMBERS: index of the decoder's entry */
    /* A block format (dtype FR_DTYPE_QUANT, FR_ENC_RAW: GGUF's Q4_K, ...):
     * whole blocks of block_elems elements in block_bytes bytes along each
     * row; block_type is the reader's id of the format (GGUF: the
     * ggml_type). block_elems is 0 for every other tensor. Such a tensor is
     * read through its source's decode_blocks hook (fr_tensor_is_block_quantized). */
    uint32_t block_type;
    uint32_t block_elems;
    uint32_t block_bytes;
    /* FR_ENC_MEMBERS: the stored format as the dataset records it
     * ("nvfp4-pack-quantized", "pack-quantized int4 g128 sym"); "" otherwise
     * (a block tensor's format is its dtype_name). */
    char source_format[48];
} fr_tensor;

typedef struct fr_mapped_file {
    char *path;
    const uint8_t *base; /* mmap of the whole file, read-only */
    uint64_t size;
    int64_t mtime;
    int borrowed;        /* base is the caller's memory (fr_source_open_memory):
                            never unmapped nor madvised */
} fr_mapped_file;

typedef struct fr_source {
    char *path;               /* what the user gave */
    fr_source_kind kind;
    size_t n_files;
    fr_mapped_file *files;
    size_t n_tensors;
    fr_tensor *tensors;
    struct cJSON *metadata;   /* kind-specific: __metadata__, GGUF keys, ONNX producer, config.json */
    void *impl;               /* reader-private state (synthetic generator spec) */
    /* Hook for generated sources (FR_ENC_SYNTHETIC tensors): fr_tensor_load_f32
     * calls generate_f32; fr_source_close calls impl_free(impl). NULL for files. */
    fr_status (*generate_f32)(const struct fr_source *src, const fr_tensor *t, float *dst,
                              fr_error *err);
    void (*impl_free)(void *impl);
    /* Hook for block formats: decodes the n elements (whole blocks of t's
     * format) at blocks into dst, exactly as the format's reference does.
     * Set by a layer that knows the formats (frontier/model/block_source.c),
     * which also clears the skip_reason of the tensors it decodes; NULL:
     * block-quantized tensors stay listed, not readable. */
    fr_status (*decode_blocks)(const fr_tensor *t, const uint8_t *blocks, int64_t n, float *dst,
                               fr_error *err);
    /* Hook for FR_ENC_MEMBERS tensors: decodes elements [begin, begin + n)
     * of t (whole rows of its last dimension, the end excepted) into dst.
     * Set with the tensors by the layer that folds them
     * (frontier/model/ct_source.c); NULL: such tensors cannot be loaded. */
    fr_status (*decode_rows)(const struct fr_source *src, const fr_tensor *t, int64_t begin,
                             int64_t n, float *dst, fr_error *err);
    void *decode_state;                   /* what decode_rows reads (its tensors' members) */
    void (*decode_state_free)(void *state); /* called by fr_source_close */
} fr_source;

/* Opens a .safetensors file, a folder (model.safetensors or a sharded
 * index), a .gguf or an .onnx file; detects the kind from content, not name. */
fr_status fr_source_open(const char *path, fr_source **out, fr_error *err);
void fr_source_close(fr_source *src);

/* Opens a checkpoint held in memory (size bytes at data, which must outlive
 * the source); name stands for the file in messages and, when the content is
 * not recognised, its extension picks the reader. External files (ONNX
 * external data) cannot be reached from memory and fail with FR_E_IO. */
fr_status fr_source_open_memory(const void *data, size_t size, const char *name, fr_source **out,
                                fr_error *err);

const char *fr_source_kind_name(fr_source_kind kind);

/* Total parameters (sum of numel) of the source. */
int64_t fr_source_numel(const fr_source *src);

/* Converts the tensor to float32 (exactly) into dst[numel]. Fails with a
 * message naming the file and tensor for unreadable dtypes. Does not check
 * for NaN/Inf (callers do). */
fr_status fr_tensor_load_f32(const fr_source *src, const fr_tensor *t, float *dst, fr_error *err);

/* Converts elements [begin, begin + n) of the tensor (row-major order) to
 * float32 into dst[n], exactly as fr_tensor_load_f32 would: what the CPU
 * executor's row blocks read (--max-memory). Only FR_ENC_RAW tensors of a
 * float dtype, block tensors by whole blocks and folded (FR_ENC_MEMBERS)
 * tensors by whole rows can be read by range (FR_E_FORMAT otherwise, naming the
 * file and tensor); synthetic tensors use fr_synthetic_load_range. */
fr_status fr_tensor_load_f32_range(const fr_source *src, const fr_tensor *t, int64_t begin,
                                   int64_t n, float *dst, fr_error *err);

/* Nonzero when t is stored in a block format its source decodes (a
 * quantized GGUF tensor with decode_blocks attached, a compressed-tensors
 * weight folded from its members): its values are the decoded ones, and it
 * is measured and written like a float tensor. */
int fr_tensor_is_block_quantized(const fr_tensor *t);

/* The stored format of a quantized tensor as the dataset records it
 * ("Q4_1", "nvfp4-pack-quantized"), "" for a tensor of float elements. */
const char *fr_tensor_source_format(const fr_tensor *t);

/* Bits the checkpoint stores for t's values: its bytes x 8 for a block
 * format (scales included; all members of a folded weight), numel x the element width for an element
 * dtype; 0 when unknown (a ggml type newer than the reader's table). */
uint64_t fr_tensor_stored_bits(const fr_tensor *t);

/* Zero-copy view of a FR_ENC_RAW tensor's bytes, or NULL. */
const void *fr_tensor_raw(const fr_source *src, const fr_tensor *t);

/* Tells the kernel the tensor's mapped pages are no longer needed. */
void fr_tensor_release(const fr_source *src, const fr_tensor *t);

/* The same for the pages of elements [begin, begin + n) of a FR_ENC_RAW
 * tensor (rounded outward to whole pages; a neighbour's page is re-read
 * from the file if needed). */
void fr_tensor_release_range(const fr_source *src, const fr_tensor *t, int64_t begin, int64_t n);

/* Matrix view of docs/formats.md: rows = shape[0], cols = the rest (1-D: one row). */
void fr_tensor_matrix(const fr_tensor *t, int64_t *rows, int64_t *cols);

#endif
