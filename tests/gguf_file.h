/*
 * Writing GGUF fixtures by hand in the C tests (ggml's docs/gguf.md):
 * little-endian integers and GGUF strings (a u64 length, then the bytes).
 */
#ifndef FR_TEST_GGUF_FILE_H
#define FR_TEST_GGUF_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

#endif
