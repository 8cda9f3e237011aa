/*
 * llama-quantize's stock mixes as reference recipes (docs/llama-mixes.md):
 * the ggml type llama.cpp's llama_tensor_get_type (llama-quant.cpp) gives
 * each tensor of a model for a file type such as Q4_K_M (its layer
 * position bumps of attn_v and ffn_down, the output and token_embd rules,
 * the GQA and expert cases, the fallback for rows a type's block does not
 * divide), and that mix evaluated on a dataset's ggml-* rows: its total
 * size and its error, beside frontier's own allocations.
 *
 * The rules need the model's hyperparameters (architecture, layers, heads,
 * experts) and its tensor list; fr_llama_model_describe reads them from
 * the model (GGUF metadata, a Hugging Face config.json) or, where the
 * model is not at hand, infers them from the dataset's tensors.
 */
#ifndef FR_LLAMA_MIX_H
#define FR_LLAMA_MIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "frontier/analysis/pareto.h"
#include "frontier/dataset/dataset.h"

/* llama-quantize's file types that frontier's ggml-* configurations can
 * reproduce (without an importance matrix), in order of size. */
#define FR_LLAMA_N_MIXES 16

/* Its name as llama-quantize prints it ("Q4_K_M"); NULL past the end. */
const char *fr_llama_mix_name(int mix);
/* The mix named name, case-insensitively ("q4_k_m"; "Q4_K" is Q4_K_M, as
 * in llama-quantize); -1 when none. */
int fr_llama_mix_from_name(const char *name);
/* "Q2_K, Q3_K_S, ..." into buf. */
const char *fr_llama_mix_names(char *buf, size_t size);

/* One tensor of the model as llama-quantize sees it. */
typedef struct fr_llama_tensor {
    char *name;    /* the GGUF name ("blk.3.attn_v.weight") */
    int64_t ne0;   /* the row: the innermost dimension */
    int ndim;
    int64_t ds;    /* its position in the dataset's tensors, -1: not in it */
} fr_llama_tensor;

/* What llama_tensor_get_type reads of a model. */
typedef struct fr_llama_model {
    char arch[64];        /* general.architecture ("llama"); "" when unknown */
    int n_layer;          /* block_count */
    int n_head, n_head_kv; /* of layer 0 (n_gqa = n_head / n_head_kv); 0 when unknown */
    int n_expert;
    size_t n_tensors;     /* every tensor of the model, in llama-quantize's order */
    fr_llama_tensor *tensors;
    int from_model;       /* read from the model file, else inferred from the dataset */
    char source[512];     /* the file read, or why the dataset was used */
} fr_llama_model;

/* The model of ds: model_path (NULL: the dataset's one source, when it
 * can still be opened) read with core/source.h, else what ds's tensors
 * say (names mapped to GGUF's, the layers from blk.N, n_gqa from the rows
 * of attn_q over attn_k, experts from the stacks; the architecture
 * unknown). FR_E_IO or FR_E_FORMAT when model_path is given and cannot be
 * read. */
fr_status fr_llama_model_describe(const fr_dataset *ds, const char *model_path,
                                  fr_llama_model *m, fr_error *err);
void fr_llama_model_free(fr_llama_model *m);

/* The types llama-quantize gives every tensor of m under the mix: target[i]
 * the one its rules choose, stored[i] after the fallback for rows the
 * type's block does not divide ("q5_0", ..., "f16"); both NULL for a tensor
 * it does not quantize (norms, 1-D tensors, ...). Names are static. */
void fr_llama_mix_types(int mix, const fr_llama_model *m, const char **target,
                        const char **stored);

/* A mix evaluated on a dataset's rows. */
typedef struct fr_llama_mix_choice {
    size_t tensor;          /* position in ds->tensors */
    const char *target, *stored; /* the llama types (fr_llama_mix_types) */
    int64_t config;         /* the configuration whose row stands for it: ggml-<stored>,
                             * else ggml-<target> (the same blocks); -1: neither measured */
    uint64_t total_bits, numel;
    double err_term, norm_term;
} fr_llama_mix_choice;

typedef struct fr_llama_mix_result {
    int mix;
    fr_metric metric;
    size_t n_choices;       /* the selected tensors llama-quantize quantizes */
    fr_llama_mix_choice *choices;
    size_t n_missing;       /* of them without a usable row: the totals cover the others */
    const char *missing_example;
    size_t n_unquantized;   /* selected tensors it leaves as they are (not in the totals) */
    uint64_t total_bits, numel;
    double err_sum, norm_sum;
    double bits_per_weight, value; /* the metric's value over the tensors with rows */
} fr_llama_mix_result;

/* The mix on the selected tensors of ds (sel NULL: all). FR_E_NOMEM only. */
fr_status fr_llama_mix_evaluate(const fr_dataset *ds, const fr_result_index *ix,
                                const fr_llama_model *m, int mix, fr_metric metric,
                                const fr_selector *sel, fr_llama_mix_result *out, fr_error *err);
void fr_llama_mix_result_free(fr_llama_mix_result *r);

/* Every mix that is complete on the selection (each selected tensor
 * llama-quantize quantizes has its row), by increasing size: *out (free
 * each with fr_llama_mix_result_free, then the array; NULL when *n is 0),
 * *n. A dataset without ggml-* rows gives none. */
fr_status fr_llama_mixes_complete(const fr_dataset *ds, const fr_result_index *ix,
                                  const fr_llama_model *m, fr_metric metric,
                                  const fr_selector *sel, fr_llama_mix_result **out, size_t *n,
                                  fr_error *err);

/* The mix as a recipe (frontier/recipe/recipe.h, as allocate -o writes
 * one): each tensor's configuration, the type llama-quantize stores it as
 * (llama_cpp_type), its size and error, the totals, and "llama_mix".
 * FR_E_FORMAT when a tensor has no row. */
fr_status fr_llama_mix_write_recipe(const fr_llama_mix_result *r, const fr_dataset *ds,
                                    const char *dataset_path, const char *path, fr_error *err);

/* The table of complete mixes (fr_llama_mixes_complete): name, bits per
 * weight, the metric; with p (a --by config Pareto set over the same
 * tensors) the cheapest uniform configuration that dominates each. */
void fr_llama_mixes_print(FILE *out, const fr_llama_mix_result *mixes, size_t n,
                          const fr_pareto *p);

/* One mix: its totals and, per_tensor, each tensor's type, configuration,
 * bits per weight and error. */
void fr_llama_mix_print(FILE *out, const fr_llama_mix_result *r, const fr_dataset *ds,
                        int per_tensor);

#endif
