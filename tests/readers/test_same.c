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

#include "check.h"
#include "core/source.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_same A B\n");
        return 2;
    }
    fr_source *a = NULL, *b = NULL;
    fr_error err;
    if (fr_source_open(argv[1], &a, &err) != FR_OK || fr_source_open(argv[2], &b, &err) != FR_OK) {
        fr_test_fail(__FILE__, __LINE__, "%s", err.msg);
        fr_source_close(a);
        return 1;
    }
    if (a->n_tensors != b->n_tensors) {
        fr_test_fail(__FILE__, __LINE__, "%zu tensors in %s, %zu in %s", a->n_tensors, argv[1],
                     b->n_tensors, argv[2]);
    }
    for (size_t i = 0; i < a->n_tensors; i++) {
        const fr_tensor *x = &a->tensors[i], *y = NULL;
        for (size_t j = 0; j < b->n_tensors && !y; j++)
            if (!strcmp(b->tensors[j].name, x->name))
                y = &b->tensors[j];
        if (!y) {
            fr_test_fail(__FILE__, __LINE__, "'%s' missing from %s", x->name, argv[2]);
            continue;
        }
        int same_shape = x->ndim == y->ndim && x->numel == y->numel &&
                         !memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof x->shape[0]);
        if (!same_shape || x->dtype != y->dtype || x->cls != y->cls) {
            fr_test_fail(__FILE__, __LINE__, "'%s' differs in shape, dtype or class", x->name);
            continue;
        }
        if (x->encoding == FR_ENC_RAW && y->encoding == FR_ENC_RAW && x->nbytes != y->nbytes) {
            fr_test_fail(__FILE__, __LINE__, "'%s' holds %" PRIu64 " vs %" PRIu64 " bytes", x->name, x->nbytes, y->nbytes);
        } else if (x->encoding == FR_ENC_RAW && y->encoding == FR_ENC_RAW && x->nbytes &&
                   memcmp(fr_tensor_raw(a, x), fr_tensor_raw(b, y), x->nbytes) != 0) {
            fr_test_fail(__FILE__, __LINE__, "'%s' bytes differ", x->name);
        }
        if (x->skip_reason)
            continue;
        float *u = malloc(((size_t)x->numel + 1) * sizeof *u), *v = malloc(((size_t)x->numel + 1) * sizeof *v);
        if (fr_tensor_load_f32(a, x, u, &err) != FR_OK || fr_tensor_load_f32(b, y, v, &err) != FR_OK) {
            fr_test_fail(__FILE__, __LINE__, "%s", err.msg);
        } else if (memcmp(u, v, (size_t)x->numel * sizeof *u) != 0) {
            fr_test_fail(__FILE__, __LINE__, "'%s' values differ", x->name);
        }
        free(u);
        free(v);
    }
    if (fr_source_numel(a) != fr_source_numel(b)) {
        fr_test_fail(__FILE__, __LINE__, "%" PRId64 " vs %" PRId64 " parameters", fr_source_numel(a), fr_source_numel(b));
    }
    if (!fr_test_failures)
        printf("test_same: %s and %s hold the same %zu tensors\n", argv[1], argv[2], a->n_tensors);
    fr_source_close(a);
    fr_source_close(b);
    return fr_test_finish("test_same");
}
