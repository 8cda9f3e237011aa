/*
 * test_same A B: the two checkpoints hold the same tensors: the same names,
 * shapes and canonical dtypes, the same float32 values bit for bit, and,
 * where both are stored raw in the same dtype, the same bytes. Used for a
 * sharded folder against its single-file original, and for one model
 * written as safetensors, GGUF and ONNX.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/source.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_same A B\n");
        return 2;
    }
    fr_source *a = NULL, *b = NULL;
    fr_error err;
    int failures = 0;
    if (fr_source_open(argv[1], &a, &err) != FR_OK || fr_source_open(argv[2], &b, &err) != FR_OK) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        fr_source_close(a);
        return 1;
    }
    if (a->n_tensors != b->n_tensors) {
        fprintf(stderr, "FAIL: %zu tensors in %s, %zu in %s\n", a->n_tensors, argv[1], b->n_tensors, argv[2]);
        failures++;
    }
    for (size_t i = 0; i < a->n_tensors; i++) {
        const fr_tensor *x = &a->tensors[i], *y = NULL;
        for (size_t j = 0; j < b->n_tensors && !y; j++)
            if (!strcmp(b->tensors[j].name, x->name))
                y = &b->tensors[j];
        if (!y) {
            fprintf(stderr, "FAIL: '%s' missing from %s\n", x->name, argv[2]);
            failures++;
            continue;
        }
        int same_shape = x->ndim == y->ndim && x->numel == y->numel &&
                         !memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof x->shape[0]);
        if (!same_shape || x->dtype != y->dtype || x->cls != y->cls) {
            fprintf(stderr, "FAIL: '%s' differs in shape, dtype or class\n", x->name);
            failures++;
            continue;
        }
        if (x->encoding == FR_ENC_RAW && y->encoding == FR_ENC_RAW && x->nbytes != y->nbytes) {
            fprintf(stderr, "FAIL: '%s' holds %" PRIu64 " vs %" PRIu64 " bytes\n", x->name, x->nbytes, y->nbytes);
            failures++;
        } else if (x->encoding == FR_ENC_RAW && y->encoding == FR_ENC_RAW && x->nbytes &&
                   memcmp(fr_tensor_raw(a, x), fr_tensor_raw(b, y), x->nbytes) != 0) {
            fprintf(stderr, "FAIL: '%s' bytes differ\n", x->name);
            failures++;
        }
        if (x->skip_reason)
            continue;
        float *u = malloc(((size_t)x->numel + 1) * sizeof *u), *v = malloc(((size_t)x->numel + 1) * sizeof *v);
        if (fr_tensor_load_f32(a, x, u, &err) != FR_OK || fr_tensor_load_f32(b, y, v, &err) != FR_OK) {
            fprintf(stderr, "FAIL: %s\n", err.msg);
            failures++;
        } else if (memcmp(u, v, (size_t)x->numel * sizeof *u) != 0) {
            fprintf(stderr, "FAIL: '%s' values differ\n", x->name);
            failures++;
        }
        free(u);
        free(v);
    }
    if (fr_source_numel(a) != fr_source_numel(b)) {
        fprintf(stderr, "FAIL: %" PRId64 " vs %" PRId64 " parameters\n", fr_source_numel(a), fr_source_numel(b));
        failures++;
    }
    if (!failures)
        printf("test_same: %s and %s hold the same %zu tensors\n", argv[1], argv[2], a->n_tensors);
    fr_source_close(a);
    fr_source_close(b);
    return failures ? 1 : 0;
}
