/*
 * A model's tensors as the sweep measures them and the checkpoint writer
 * writes them (frontier/model/tensors.c): which ones are quantized by
 * default, the matrix view of a tensor, the experts of an expert stack.
 * One definition for both, so that the row measured is the tensor written.
 */
#ifndef FR_TENSORS_H
#define FR_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/source.h"

/* Why a tensor is not measured by default (NULL: it is measured). buf
 * receives the message when one is built. */
const char *fr_sweep_skip_reason(const fr_tensor *t, int64_t min_numel, char *buf, size_t len);

/* FORMATS.md's matrix view: rows = shape[0], cols = the rest; 1-D: one row. */
void fr_sweep_matrix(const fr_tensor *t, int64_t *rows, int64_t *cols);

/* Nonzero for an expert stack (docs/formats.md "Expert tensors"): a rank-3
 * tensor [E, out, in] of class expert, quantized as E matrices [out, in]. */
int fr_sweep_expert_stack(const fr_tensor *t);

/* Expert e of the expert stack t as a 2-D tensor [out, in] of its own: a
 * copy of t (the same name, source and dtype) at the bytes of slice e. */
void fr_sweep_expert_view(const fr_tensor *t, uint32_t e, fr_tensor *view);

#endif
