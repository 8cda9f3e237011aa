/*
 * A GGUF model run by llama.cpp, as an fr_lm (frontier/engine/lm.h), through
 * llama.cpp's public API only (llama.h, ggml.h, ggml-backend.h, gguf.h).
 * Compiled only when the build finds libllama (CMakeLists.txt,
 * FRONTIER_HAVE_LLAMA); docs/calibration.md, "Sensitivity through llama.cpp".
 *
 * The model is built with llama_model_init_from_user from the file's
 * metadata, every tensor float32: each weight is read from the file and
 * converted by ggml's own type traits (to_float: a quantized tensor is
 * dequantized, F16/BF16 widened), so the reference is the model the file
 * describes, computed in float32, and a perturbation is written into the
 * tensor in place (ggml_backend_tensor_set) and undone the same way.
 *
 * llama.cpp creates, for such a model, every optional tensor of the
 * architecture. One the file lacks gets its neutral value (a bias 0, a
 * scale or rope frequency factor 1); output.weight, when the file has none,
 * gets the token embedding (the tied output layer: fr_lm_tensor.tied, and
 * setting token_embd sets both). Any other missing tensor is an error
 * naming it. fr_llama_check compares the result with llama.cpp's own
 * loading of the file.
 */
#ifndef FR_LLAMA_LM_H
#define FR_LLAMA_LM_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "frontier/engine/lm.h"

typedef struct fr_llama_options {
    int threads;       /* CPU threads; 0: every online core */
    int64_t n_ctx;     /* the longest sequence logits() will be given */
    int verbose;       /* llama.cpp's own log lines (info and debug too) on stderr */
} fr_llama_options;

typedef struct fr_llama fr_llama;

/* Opens the GGUF model at path and builds its float32 model. Errors: the
 * file cannot be opened (FR_E_IO) or is no GGUF model llama.cpp can build
 * (FR_E_FORMAT, naming the file and, where there is one, the tensor). */
fr_status fr_llama_open(const char *path, const fr_llama_options *o, fr_llama **out,
                        fr_error *err);
void fr_llama_close(fr_llama *m);

/* The model as an fr_lm: its weight tensors (every tensor of the file with
 * two or more dimensions, in file order, that the model uses). */
fr_lm *fr_llama_lm(fr_llama *m);

/* Tensors of the file with two or more dimensions that llama.cpp's model
 * does not use (not measurable): their names, n of them. */
const char *const *fr_llama_unused(const fr_llama *m, size_t *n);

/* The text's tokens as the model's tokenizer makes them, with the BOS
 * token first when the model adds one (malloc'd, the caller frees). */
fr_status fr_llama_tokenize(fr_llama *m, const char *text, size_t len, int32_t **tokens,
                            int64_t *n, fr_error *err);

/* Loads the file again the way llama.cpp itself runs it (its own tensor
 * types, llama_model_load_from_file) and returns the mean over the n
 * positions of KL(p_file || p_this) of one sequence: small (quantized
 * activations of the file's dot products) when this model is the file's. */
fr_status fr_llama_check(fr_llama *m, const int32_t *tokens, int64_t n, double *kl,
                         fr_error *err);

/* "llama.cpp (ggml 0.25.3, commit abc1234; <where the build came from>)". */
const char *fr_llama_version(void);

/* Times one pass over tokens[0..n) with every online core and with one
 * (after a warm-up pass), and keeps the faster: on a machine shared with
 * other work, threads that wait for each other in ggml's barriers can
 * make all cores much slower than one. The count kept: fr_llama_threads. */
fr_status fr_llama_tune_threads(fr_llama *m, const int32_t *tokens, int64_t n, fr_error *err);

/* The model's architecture ("llama") and the number of CPU threads used. */
const char *fr_llama_arch(const fr_llama *m);
int fr_llama_threads(const fr_llama *m);

#endif
