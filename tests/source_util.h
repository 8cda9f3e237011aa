/*
 * Helpers of the tests that open checkpoints and compare tensors: a tensor
 * by name, a tensor loaded as float32 (exit 1 when it cannot be), the
 * registry's Q(W) of one matrix (what the sweep measures), a whole file.
 */
#ifndef FR_TEST_SOURCE_UTIL_H
#define FR_TEST_SOURCE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/registry.h"
#include "core/source.h"

static inline long fr_test_find(const fr_source *s, const char *name)
{
    for (size_t i = 0; i < s->n_tensors; i++)
        if (!strcmp(s->tensors[i].name, name))
            return (long)i;
    return -1;
}

static inline float *fr_test_load(const fr_source *s, const fr_tensor *t)
{
    float *w = malloc((size_t)t->numel * sizeof *w);
    fr_error err;
    if (!w || fr_tensor_load_f32(s, t, w, &err) != FR_OK) {
        fprintf(stderr, "cannot load '%s': %s\n", t->name, w ? err.msg : "no memory");
        exit(1);
    }
    return w;
}

/* Q(W) of a rows x cols matrix into w_hat (exit 1 when it fails). */
static inline void fr_test_quantize(const fr_registry *reg, const char *config, const float *w,
                                    float *w_hat, int64_t rows, int64_t cols, const char *name)
{
    const fr_config_ref *ref = fr_registry_find_config(reg, config);
    frontier_call call;
    fr_error err;
    fr_call_init(&call, NULL, 0, name, config);
    if (!ref || fr_quantizer_quantize_cpu(reg, ref, w, w_hat, rows, cols, NULL, name, &call,
                                          &err) != FR_OK) {
        fprintf(stderr, "cannot quantize '%s' as %s\n", name, config);
        exit(1);
    }
    fr_call_release(&call);
}

/* The file's bytes and a NUL after them, *n the size; NULL when unreadable. */
static inline char *fr_test_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[len] = '\0';
    *n = buf ? (size_t)len : 0;
    fclose(f);
    return buf;
}

#endif
