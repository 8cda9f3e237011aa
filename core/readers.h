/*
 * Internal to the model readers (source.c, safetensors.c, gguf.c, onnx.c):
 * the helpers they share to map files, append tensors and word errors.
 * Not part of the public API; callers use source.h.
 *
 * A reader appends tensors straight into the fr_source being built; when it
 * fails, fr_source_open() closes the half-built source, so a reader never
 * frees what it already appended.
 */
#ifndef FR_READERS_H
#define FR_READERS_H

#include <stddef.h>
#include <stdint.h>

#include "source.h"

struct cJSON;

/* Upper bounds that keep a hostile file from asking for absurd work. */
#define FR_SAFETENSORS_MAX_HEADER 100000000ull /* the safetensors crate's own MAX_HEADER_SIZE */
#define FR_META_ARRAY_MAX 64                   /* longer metadata arrays are summarised */
#define FR_META_STRING_MAX 1024                /* longer metadata strings are summarised */

/* Little-endian loads from possibly unaligned bytes. */
static inline uint16_t fr_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t fr_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fr_le64(const uint8_t *p)
{
    return (uint64_t)fr_le32(p) | (uint64_t)fr_le32(p + 4) << 32;
}

/* Maps path read-only into *file (an empty file gets base NULL, size 0).
 * Missing or unreadable files fail with FR_E_IO. */
fr_status fr_map_file(const char *path, fr_mapped_file *file, fr_error *err);

/* Unmaps (unless borrowed) and frees what fr_map_file made; zeroes *file. */
void fr_unmap_file(fr_mapped_file *file);

/* Maps path and appends it to src->files; *index receives its position.
 * A path already in src->files is not mapped twice. */
fr_status fr_source_add_file(fr_source *src, const char *path, size_t *index, fr_error *err);

/* Appends a zeroed tensor named name[0..name_len) (scale_tensor -1) and
 * returns it in *out; the pointer is valid until the next append. */
fr_status fr_source_push_tensor(fr_source *src, const char *name, size_t name_len, fr_tensor **out,
                                fr_error *err);

/* Indices of src's tensors sorted by name (NULL when there are none or on
 * no memory), and a binary search in them (-1 when absent). */
size_t *fr_source_sorted_by_name(const fr_source *src);
long fr_source_find_tensor(const fr_source *src, const size_t *sorted, const char *name);

/* numel of a shape; -1 when a dimension is negative, -2 when the product
 * overflows int64 (so does the product of its non-zero dimensions). A
 * rank-0 shape has one element. */
int fr_shape_numel(const int64_t *shape, int ndim, int64_t *numel);

/* "[120, 360]" into buf. */
const char *fr_shape_text(const int64_t *shape, int ndim, char *buf, size_t len);

/* A JSON string from n bytes that need not be valid UTF-8 nor end in NUL:
 * bytes that do not form valid UTF-8 become U+FFFD, NUL becomes U+FFFD. */
struct cJSON *fr_json_string_n(const char *s, size_t n);

/* The same sanitising into a freshly malloc'd C string (NULL on no memory). */
char *fr_utf8_dup(const char *s, size_t n);

/* Readers. file is an index into src->files; dir is the folder holding the
 * model (for sibling files), NULL for in-memory sources. */
fr_status fr_safetensors_read(fr_source *src, size_t file, fr_error *err);
fr_status fr_safetensors_read_index(fr_source *src, const char *index_path, const char *dir,
                                    fr_error *err);
fr_status fr_gguf_read(fr_source *src, size_t file, fr_error *err);
fr_status fr_onnx_read(fr_source *src, size_t file, const char *dir, fr_error *err);

/* True when the mapped bytes start like each format (content sniffing). */
int fr_safetensors_sniff(const uint8_t *p, uint64_t size);
int fr_gguf_sniff(const uint8_t *p, uint64_t size);
int fr_onnx_sniff(const uint8_t *p, uint64_t size);

#endif
