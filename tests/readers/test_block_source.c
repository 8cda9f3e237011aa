/*
 * GGUF tensors released in a ggml block type, read as one weight each
 * (docs/quantized-sources.md; frontier/model/block_source.c):
 *
 * - a fixture written here with frontier's own encoders
 *   (quantizers/ggml_blocks.h): one tensor of every decoded type (Q4_0,
 *   Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, Q2_K..Q6_K, IQ4_NL, IQ4_XS) on rows of
 *   512, a Q4_1 expert stack, two types frontier does not decode (Q8_1,
 *   IQ2_XXS), an F16 matrix and an F32 norm;
 * - core alone (fr_source_open) lists the block tensors and refuses to
 *   load them; with the decoders attached (fr_block_source_open) each loads
 *   to the decoded blocks, which are the encoder's own decode of the rows,
 *   by whole tensor, by row ranges and by expert view; stored bits are the
 *   bytes x 8 (bits per weight as the type's table says);
 * - the undecoded types are refused by name (the sweep's skip reason, a
 *   load: 4, FR_E_FORMAT); lying sizes, unaligned ranges and a truncated
 *   file get a message naming the file and the tensor;
 * - re-encoding each decoded tensor with its own type: how many blocks come
 *   back byte for byte (printed; docs/quantized-sources.md records it).
 *
 * usage: test_block_source WORK_DIR
 *        test_block_source --dump FILE.gguf DIR   (every decoded tensor of
 *        FILE through fr_block_source_open and fr_tensor_load_f32, as
 *        DIR/<name>.f32, for crosscheck_block_source.py)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "core/source.h"
#include "frontier/model/block_source.h"
#include "frontier/model/tensors.h"
#include "gguf_file.h"
#include "quantizers/ggml_blocks.h"

#define COLS 512
#define ROWS 4
#define STACK_E 3 /* the Q4_1 expert stack [3, 4, 64] */

static const struct {
    const char *name;
    fr_ggml_qtype type;
    double bits; /* per weight */
} types[] = {
    {"Q8_0", FR_GGML_Q8_0, 8.5},     {"Q4_0", FR_GGML_Q4_0, 4.5},
    {"Q4_1", FR_GGML_Q4_1, 5.0},     {"Q5_0", FR_GGML_Q5_0, 5.5},
    {"Q5_1", FR_GGML_Q5_1, 6.0},     {"MXFP4", FR_GGML_MXFP4, 4.25},
    {"Q2_K", FR_GGML_Q2_K, 2.625},   {"Q3_K", FR_GGML_Q3_K, 3.4375},
    {"Q4_K", FR_GGML_Q4_K, 4.5},     {"Q5_K", FR_GGML_Q5_K, 5.5},
    {"Q6_K", FR_GGML_Q6_K, 6.5625},  {"IQ4_NL", FR_GGML_IQ4_NL, 4.5},
    {"IQ4_XS", FR_GGML_IQ4_XS, 4.25},
};
#define N_TYPES (sizeof types / sizeof types[0])

/* A tensor of the fixture: name, ggml type id, ne[] innermost first, bytes. */
typedef struct ftensor {
    char name[64];
    uint32_t type, n_dims;
    uint64_t ne[3];
    uint8_t *data;
    uint64_t nbytes;
} ftensor;

/* GGUF v3, alignment 32, general.architecture "llama". */
static int write_gguf(const char *path, const ftensor *t, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite("GGUF", 1, 4, f);
    put_le(f, 3, 4);
    put_le(f, n, 8);
    put_le(f, 1, 8);
    put_gguf_str(f, "general.architecture");
    put_le(f, 8, 4);
    put_gguf_str(f, "llama");
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        put_gguf_str(f, t[i].name);
        put_le(f, t[i].n_dims, 4);
        for (uint32_t d = 0; d < t[i].n_dims; d++)
            put_le(f, t[i].ne[d], 8);
        put_le(f, t[i].type, 4);
        put_le(f, offset, 8);
        offset += (t[i].nbytes + 31) / 32 * 32;
    }
    for (long pos = ftell(f); pos % 32; pos++)
        fputc(0, f);
    for (size_t i = 0; i < n; i++) {
        fwrite(t[i].data, 1, (size_t)t[i].nbytes, f);
        for (uint64_t k = t[i].nbytes; k % 32; k++)
            fputc(0, f);
    }
    return fclose(f) == 0;
}

/* Seeded rows: gaussian-like (sum of uniforms) with a scale per row, and a
 * few zeros and outliers so that blocks differ. */
static void fill_rows(float *x, int64_t rows, int64_t cols, uint64_t *seed)
{
    for (int64_t r = 0; r < rows; r++) {
        float scale = (float)(0.01 * pow(10.0, (double)(r % 4) * 0.7));
        for (int64_t c = 0; c < cols; c++) {
            double u = fr_test_uniform(seed) + fr_test_uniform(seed) + fr_test_uniform(seed) - 1.5;
            float v = (float)u * scale;
            if (c % 97 == 13)
                v *= 6.0f;
            if (c % 211 == 7)
                v = 0.0f;
            x[r * cols + c] = v;
        }
    }
}

static ftensor encoded(const char *name, fr_ggml_qtype type, int n_dims, const uint64_t *ne,
                       const float *x)
{
    ftensor t = {.type = (uint32_t)type, .n_dims = (uint32_t)n_dims};
    snprintf(t.name, sizeof t.name, "%s", name);
    uint64_t numel = 1;
    for (int d = 0; d < n_dims; d++)
        numel *= (t.ne[d] = ne[d]);
    t.nbytes = numel / (uint64_t)fr_ggml_block_elems(type) * fr_ggml_block_bytes(type);
    t.data = malloc((size_t)t.nbytes);
    uint64_t row_bytes = ne[0] / (uint64_t)fr_ggml_block_elems(type) * fr_ggml_block_bytes(type);
    for (uint64_t r = 0; r < numel / ne[0]; r++)
        fr_ggml_encode_row(type, x + r * ne[0], (int64_t)ne[0], t.data + r * row_bytes);
    return t;
}

static ftensor raw_tensor(const char *name, uint32_t type, uint64_t ne0, uint64_t ne1,
                          uint64_t nbytes, uint8_t fill)
{
    ftensor t = {.type = type, .n_dims = ne1 ? 2u : 1u, .ne = {ne0, ne1}, .nbytes = nbytes};
    snprintf(t.name, sizeof t.name, "%s", name);
    t.data = malloc((size_t)nbytes);
    memset(t.data, fill, (size_t)nbytes);
    return t;
}

/* The fixture: every decoded type, the stack, two undecoded types, F16, F32. */
static size_t make_fixture(ftensor *t)
{
    uint64_t seed = 20260101;
    float *x = malloc(ROWS * COLS * sizeof *x);
    size_t n = 0;
    for (size_t k = 0; k < N_TYPES; k++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%zu.attn_q.weight", k);
        fill_rows(x, ROWS, COLS, &seed);
        const uint64_t ne[2] = {COLS, ROWS};
        t[n++] = encoded(name, types[k].type, 2, ne, x);
    }
    fill_rows(x, STACK_E * 4, 64, &seed);
    const uint64_t ne3[3] = {64, 4, STACK_E};
    t[n++] = encoded("blk.0.ffn_gate_exps.weight", FR_GGML_Q4_1, 3, ne3, x);
    t[n++] = raw_tensor("blk.1.ffn_up.weight", 9 /* Q8_1 */, 32, 2, 2 * 36, 0x11);
    t[n++] = raw_tensor("blk.1.ffn_down.weight", 16 /* IQ2_XXS */, 256, 1, 66, 0x22);
    ftensor h = raw_tensor("blk.1.attn_k.weight", 1 /* F16 */, 64, 4, 64 * 4 * 2, 0);
    for (int i = 0; i < 256; i++) { /* 0x3c00 = 1.0, 0xbc00 = -1.0 */
        h.data[2 * i] = 0;
        h.data[2 * i + 1] = (uint8_t)(i % 2 ? 0xbc : 0x3c);
    }
    t[n++] = h;
    t[n++] = raw_tensor("output_norm.weight", 0 /* F32 */, 64, 0, 64 * 4, 0);
    free(x);
    return n;
}

static const fr_tensor *find(const fr_source *s, const char *name)
{
    for (size_t i = 0; i < s->n_tensors; i++)
        if (!strcmp(s->tensors[i].name, name))
            return &s->tensors[i];
    return NULL;
}

/* Core alone lists the block tensors with their geometry and loads none. */
static void core_alone(const char *path)
{
    fr_source *s = NULL;
    fr_error err = {0};
    CHECK_OK(fr_source_open(path, &s, &err), err);
    if (!s)
        return;
    const fr_tensor *t = find(s, "blk.2.attn_q.weight"); /* Q4_1 */
    CHECK(t && t->block_type == 3 && t->block_elems == 32 && t->block_bytes == 20);
    CHECK(t && t->skip_reason && !fr_tensor_is_block_quantized(t));
    float *y = malloc(ROWS * COLS * sizeof *y);
    CHECK(t && fr_tensor_load_f32(s, t, y, &err) == FR_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "blk.2.attn_q.weight") && strstr(err.msg, path) &&
                  strstr(err.msg, "Q4_1 pre-quantized ggml type"),
              "core alone: '%s'", err.msg);
    CHECK(s->decode_blocks == NULL);
    free(y);
    fr_source_close(s);
}

/* Each decoded tensor: readable, its stored bits, its values the blocks'. */
static void decoded(const fr_source *s, const ftensor *ft)
{
    for (size_t k = 0; k < N_TYPES; k++) {
        const fr_tensor *t = find(s, ft[k].name);
        if (!t) {
            CHECK_MSG(0, "no tensor '%s'", ft[k].name);
            continue;
        }
        char why[256];
        CHECK_MSG(fr_tensor_is_block_quantized(t) && !t->skip_reason &&
                      !fr_sweep_skip_reason(t, 0, why, sizeof why),
                  "%s is not readable", types[k].name);
        CHECK_STR(t->dtype_name, types[k].name);
        CHECK_EQ_U64(fr_tensor_stored_bits(t), ft[k].nbytes * 8);
        CHECK_MSG((double)fr_tensor_stored_bits(t) / (double)t->numel == types[k].bits,
                  "%s: %g bits per weight", types[k].name,
                  (double)fr_tensor_stored_bits(t) / (double)t->numel);
        float *y = malloc(ROWS * COLS * sizeof *y), *ref = malloc(ROWS * COLS * sizeof *ref);
        fr_error err = {0};
        CHECK_OK(fr_tensor_load_f32(s, t, y, &err), err);
        uint64_t row_bytes = ft[k].nbytes / ROWS;
        for (int r = 0; r < ROWS; r++)
            fr_ggml_decode_row(types[k].type, ft[k].data + r * row_bytes, COLS, ref + r * COLS);
        CHECK_MSG(!memcmp(y, ref, ROWS * COLS * sizeof *y), "%s: load != decode", types[k].name);
        /* row ranges (the CPU executor's row blocks) */
        float row[COLS];
        for (int r = 0; r < ROWS; r++) {
            CHECK_OK(fr_tensor_load_f32_range(s, t, (int64_t)r * COLS, COLS, row, &err), err);
            CHECK_MSG(!memcmp(row, ref + r * COLS, sizeof row), "%s: row %d", types[k].name, r);
            fr_tensor_release_range(s, t, (int64_t)r * COLS, COLS);
        }
        int64_t block = fr_ggml_block_elems(types[k].type);
        CHECK(fr_tensor_load_f32_range(s, t, block / 2, block, row, &err) == FR_E_FAIL);
        CHECK_MSG(strstr(err.msg, "not whole") && strstr(err.msg, t->name), "%s", err.msg);
        free(y);
        free(ref);
    }
}

/* The Q4_1 expert stack: each expert's view is its slice of the whole. */
static void stack(const fr_source *s)
{
    const fr_tensor *t = find(s, "blk.0.ffn_gate_exps.weight");
    CHECK(t && fr_sweep_expert_stack(t));
    if (!t || !fr_sweep_expert_stack(t))
        return;
    float whole[STACK_E * 4 * 64], part[4 * 64];
    fr_error err = {0};
    CHECK_OK(fr_tensor_load_f32(s, t, whole, &err), err);
    for (uint32_t e = 0; e < STACK_E; e++) {
        fr_tensor v;
        fr_sweep_expert_view(t, e, &v);
        CHECK_OK(fr_tensor_load_f32(s, &v, part, &err), err);
        CHECK_MSG(!memcmp(part, whole + e * 4 * 64, sizeof part), "expert %u", e);
    }
}

/* Types frontier does not decode: listed, refused by name. */
static void undecoded(const fr_source *s, const char *path)
{
    static const char *const names[][2] = {{"blk.1.ffn_up.weight", "Q8_1"},
                                           {"blk.1.ffn_down.weight", "IQ2_XXS"}};
    for (int i = 0; i < 2; i++) {
        const fr_tensor *t = find(s, names[i][0]);
        if (!t) {
            CHECK_MSG(0, "no '%s'", names[i][0]);
            continue;
        }
        char why[256], expect[256];
        const char *reason = fr_sweep_skip_reason(t, 0, why, sizeof why);
        snprintf(expect, sizeof expect, "%s: ggml type not decoded by frontier (it decodes %s)",
                 names[i][1], fr_block_source_types());
        CHECK_STR(reason, expect);
        float y[256];
        fr_error err = {0};
        CHECK(fr_tensor_load_f32(s, t, y, &err) == FR_E_FORMAT);
        CHECK_MSG(strstr(err.msg, names[i][0]) && strstr(err.msg, path) &&
                      strstr(err.msg, names[i][1]),
                  "%s: '%s'", names[i][1], err.msg);
    }
}

/* A tensor whose sizes lie (built by hand), a truncated file. */
static void lies(const fr_source *s, const char *path, const char *work)
{
    const fr_tensor *t = find(s, "blk.1.attn_q.weight"); /* Q4_0 */
    if (!t)
        return;
    fr_tensor bad = *t;
    bad.nbytes -= 18;
    float *y = malloc(ROWS * COLS * sizeof *y);
    fr_error err = {0};
    CHECK(fr_tensor_load_f32(s, &bad, y, &err) == FR_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "blk.1.attn_q.weight") && strstr(err.msg, path) &&
                  strstr(err.msg, "Q4_0 blocks of 32 in 18 bytes"),
              "nbytes lie: '%s'", err.msg);
    bad = *t;
    bad.numel += 32; /* elements past the bytes */
    CHECK(fr_tensor_load_f32(s, &bad, y, &err) == FR_E_FORMAT);
    free(y);
    /* the same file cut short inside the last decoded tensor's data */
    char cut[4096];
    snprintf(cut, sizeof cut, "%s/truncated.gguf", work);
    FILE *in = fopen(path, "rb"), *out = fopen(cut, "wb");
    const fr_tensor *last = find(s, "blk.12.attn_q.weight");
    if (!in || !out || !last) {
        CHECK_MSG(0, "cannot copy '%s'", path);
    } else {
        for (uint64_t i = 0; i < last->offset + last->nbytes / 2; i++)
            fputc(fgetc(in), out);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    fr_source *s2 = NULL;
    CHECK(fr_block_source_open(cut, &s2, &err) == FR_E_FORMAT && !s2);
    CHECK_MSG(strstr(err.msg, cut) && strstr(err.msg, "blk.12.attn_q.weight") &&
                  strstr(err.msg, "past the end"),
              "truncated: '%s'", err.msg);
}

/* Re-encoding the decoded values with the tensor's own type: blocks equal. */
static void requantize(const fr_source *s, const ftensor *ft)
{
    for (size_t k = 0; k < N_TYPES; k++) {
        const fr_tensor *t = find(s, ft[k].name);
        if (!t)
            continue;
        float *y = malloc(ROWS * COLS * sizeof *y);
        uint8_t *again = malloc((size_t)ft[k].nbytes);
        fr_error err = {0};
        CHECK_OK(fr_tensor_load_f32(s, t, y, &err), err);
        uint64_t row_bytes = ft[k].nbytes / ROWS, bb = fr_ggml_block_bytes(types[k].type);
        for (int r = 0; r < ROWS; r++)
            fr_ggml_encode_row(types[k].type, y + r * COLS, COLS, again + r * row_bytes);
        uint64_t same = 0, blocks = ft[k].nbytes / bb;
        for (uint64_t b = 0; b < blocks; b++)
            same += !memcmp(again + b * bb, ft[k].data + b * bb, (size_t)bb);
        printf("re-encoded %-6s: %llu of %llu blocks byte for byte\n", types[k].name,
               (unsigned long long)same, (unsigned long long)blocks);
        free(y);
        free(again);
    }
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--dump"))
        return fr_test_dump_blocks(argv[2], argv[3]);
    if (argc != 2) {
        fprintf(stderr, "usage: test_block_source WORK_DIR | --dump FILE.gguf DIR\n");
        return 2;
    }
    mkdir(argv[1], 0777);
    char path[4096];
    snprintf(path, sizeof path, "%s/blocks.gguf", argv[1]);
    ftensor ft[N_TYPES + 8];
    size_t n = make_fixture(ft);
    CHECK_MSG(write_gguf(path, ft, n), "cannot write '%s'", path);
    core_alone(path);
    fr_source *s = NULL;
    fr_error err = {0};
    CHECK_OK(fr_block_source_open(path, &s, &err), err);
    if (s) {
        decoded(s, ft);
        stack(s);
        undecoded(s, path);
        lies(s, path, argv[1]);
        requantize(s, ft);
        fr_source_close(s);
    }
    for (size_t i = 0; i < n; i++)
        free(ft[i].data);
    return fr_test_finish("readers.block_source");
}
