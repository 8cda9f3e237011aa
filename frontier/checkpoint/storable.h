/*
 * What a checkpoint format can store (docs/quantize.md, "What each writer
 * refuses"): the rule `frontier quantize` refuses a (tensor, configuration)
 * pair by before writing anything, and `frontier allocate --target FORMAT`
 * keeps each tensor's candidates to, so that a recipe allocate writes for
 * a format is one quantize writes.
 */
#ifndef FR_STORABLE_H
#define FR_STORABLE_H

#include <stddef.h>

#include "core/registry.h"
#include "core/source.h"

typedef enum fr_qformat {
    FR_QFORMAT_DEQUANTIZED = 0,
    FR_QFORMAT_COMPRESSED_TENSORS,
    FR_QFORMAT_GGUF
} fr_qformat;

/* "dequantized", "compressed-tensors", "gguf"; -1 for another name. */
int fr_qformat_from_name(const char *name);
const char *fr_qformat_name(fr_qformat f);

/* Why `fmt` cannot store configuration ref on tensor t of src (NULL: it
 * can), into buf when the reason needs words of its own. rows x cols is
 * one matrix (one expert's of an expert stack of `experts` > 1). The
 * statistics a calibrated configuration needs are the writer's to check
 * (--calib); this says only whether the format can hold it at all. */
const char *fr_storable_refusal(const fr_registry *reg, fr_qformat fmt, const fr_source *src,
                                const fr_tensor *t, int64_t rows, int64_t cols, int64_t experts,
                                const fr_config_ref *ref, char *buf, size_t len);

/* Whether t is an embedding its source ties to the output layer: an
 * embedding, and no separate output layer (lm_head.weight, output.weight)
 * among src's tensors. */
int fr_storable_tied_embedding(const fr_source *src, const fr_tensor *t);

#endif
