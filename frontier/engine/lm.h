/*
 * A language model as the sensitivity measurement (frontier/engine/
 * sensitivity.h) sees it: weight tensors that can be read and replaced in
 * place, and the next-token logits of a token sequence. An interface of
 * types only: the llama.cpp adapter (frontier/engine/llama_lm.h) is one
 * implementation, the unit tests' small softmax models are others.
 */
#ifndef FR_LM_H
#define FR_LM_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* One weight tensor that can be perturbed. */
typedef struct fr_lm_tensor {
    const char *name;      /* the model file's name ("blk.0.attn_q.weight") */
    int64_t rows, cols;    /* frontier's matrix view: cols is the innermost dimension (the
                            * input of a linear layer), rows the product of the others */
    const char *type_name; /* how the file stores it ("q4_1", "f16"): for messages */
    int tied;              /* nonzero: the model also uses this matrix as another layer
                            * (a token embedding that is the output layer too, when the
                            * file has no output.weight); set() moves both uses */
} fr_lm_tensor;

typedef struct fr_lm fr_lm;

struct fr_lm {
    void *state; /* the implementation's own */
    const fr_lm_tensor *tensors;
    size_t n_tensors;
    int64_t n_vocab;
    /* The tensor's current values, rows x cols float32 (row-major). */
    fr_status (*get)(fr_lm *lm, size_t tensor, float *w, fr_error *err);
    /* Replaces the tensor's values with w (rows x cols float32). */
    fr_status (*set)(fr_lm *lm, size_t tensor, const float *w, fr_error *err);
    /* The logits of the next token after each prefix of tokens[0..n), the
     * sequence starting at position 0 with nothing before it: out[n x n_vocab]. */
    fr_status (*logits)(fr_lm *lm, const int32_t *tokens, int64_t n, float *out, fr_error *err);
};

#endif
