/*
 * What an allocation is written as (docs/analysis.md, "allocate"): the
 * recipe JSON, a llama.cpp --tensor-type-file with the GGUF names and GGML
 * types that stand for frontier's configurations, and the tables people
 * read (frontier/analysis/allocate_output.c).
 */
#ifndef FR_ALLOCATE_OUTPUT_H
#define FR_ALLOCATE_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "frontier/analysis/allocate.h"

/* The recipe JSON (docs/analysis.md; frontier/recipe/recipe.h): totals,
 * the objective prob minimised (with prob->sensitivity_source) and tensor ->
 * configuration. */
fr_status fr_allocation_write_json(const fr_allocation *a, const fr_alloc_problem *prob,
                                   const char *dataset_path, const char *path, fr_error *err);

/* The same for choices over ds, without an objective (none is written);
 * llama_mix (NULL: none) names the llama-quantize stock mix the choices are
 * and llama_types[n_choices] the type each tensor is stored as
 * (frontier/analysis/llama_mix.h). */
fr_status fr_allocation_write_recipe(const fr_allocation *a, const fr_dataset *ds,
                                     const char *dataset_path, const char *llama_mix,
                                     const char *const *llama_types, const char *path,
                                     fr_error *err);

/* A llama.cpp `llama-quantize --tensor-type-file` file: one `pattern=type`
 * line per tensor whose configuration has a GGML type (an anchored, escaped
 * regex of the GGUF tensor name). Tensors without one are skipped and
 * counted in *n_unmapped. */
fr_status fr_allocation_write_tensor_types(const fr_allocation *a, const fr_alloc_problem *prob,
                                           const char *path, size_t *n_unmapped, fr_error *err);

/* The GGUF name of a Hugging Face Llama-style tensor name
 * ("model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight");
 * other names are copied. Writes at most size bytes. */
void fr_gguf_tensor_name(const char *name, char *buf, size_t size);

/* Table people read. */
void fr_allocation_print(FILE *out, const fr_allocation *a, const fr_alloc_problem *prob,
                         int per_tensor);
void fr_mixed_curve_print(FILE *out, const fr_mixed_curve *c);

#endif
