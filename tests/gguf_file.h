/*
 * GGUF files in the C tests: writing fixtures by hand (ggml's docs/gguf.md:
 * little-endian integers, GGUF strings of a u64 length then the bytes), and
 * dumping what frontier reads of a file's block tensors for the gguf-py
 * cross-checks.
 */
#ifndef FR_TEST_GGUF_FILE_H
#define FR_TEST_GGUF_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/source.h"
#include "frontier/model/block_source.h"

/* v as `bytes` little-endian bytes. */
static inline void put_le(FILE *f, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        fputc((int)(v >> (8 * i)) & 0xff, f);
}

static inline void put_gguf_str(FILE *f, const char *str)
{
    put_le(f, strlen(str), 8);
    fputs(str, f);
}

/* Every block tensor, and every F16 one (llama-quantize's last fallback
 * type), of the GGUF at path as frontier reads it (the
 * decoders attached as the commands attach them: fr_block_source_open,
 * fr_tensor_load_f32), into dir/<name>.f32 (float32, C order). 0 on
 * success, 1 (with a line on stderr) otherwise. */
static inline int fr_test_dump_blocks(const char *path, const char *dir)
{
    fr_source *s = NULL;
    fr_error err = {0};
    if (fr_block_source_open(path, &s, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    mkdir(dir, 0777);
    int rc = 0;
    for (size_t i = 0; i < s->n_tensors && !rc; i++) {
        const fr_tensor *t = &s->tensors[i];
        if (!fr_tensor_is_block_quantized(t) && t->dtype != FR_DTYPE_F16)
            continue;
        float *y = malloc((size_t)t->numel * sizeof *y);
        char file[4096];
        snprintf(file, sizeof file, "%s/%s.f32", dir, t->name);
        FILE *f = y && fr_tensor_load_f32(s, t, y, &err) == FR_OK ? fopen(file, "wb") : NULL;
        if (!f || fwrite(y, sizeof *y, (size_t)t->numel, f) != (size_t)t->numel) {
            fprintf(stderr, "%s: %s\n", t->name, err.msg);
            rc = 1;
        }
        if (f && fclose(f) != 0)
            rc = 1;
        free(y);
    }
    fr_source_close(s);
    return rc;
}

#endif
