/*
 * The GGUF writer of `frontier quantize --format gguf` (docs/quantize.md,
 * "GGUF"): from a GGUF model (F32/F16/BF16 tensors) to a GGUF v3 file whose
 * quantized tensors hold ggml blocks (quantizers/ggml_blocks.h) of the
 * type each configuration's traits name (gguf_type; the `ggml` family's),
 * as llama-quantize writes them: metadata copied
 * byte for byte (general.file_type and general.quantization_version set),
 * other tensors copied as they are, data aligned to general.alignment.
 * frontier/checkpoint/quantize.c plans, refuses, names the temporary and renames it;
 * this file writes the temporary.
 */
#ifndef FR_QUANTIZE_GGUF_H
#define FR_QUANTIZE_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/exec/metrics.h"

/* One tensor of the model, in the model's order. */
typedef struct fr_gguf_item {
    const fr_tensor *t;
    const fr_config_ref *ref;     /* NULL: copied as it is */
    int64_t rows, cols;           /* fr_sweep_matrix of t */
    /* filled for quantized tensors */
    fr_metrics written, measured; /* of the decoded bytes, of the registry's Q(W) */
    frontier_error_sums sums;     /* of the decoded bytes */
    int same_as_measured;
    int64_t experts;              /* E of an expert stack (rows = E x out), 0 or 1: one matrix */
    const frontier_calib *calib;  /* the tensor's statistics for a calibrated configuration
                                   * (NULL: none); an expert stack: expert_calib[E] instead */
    const frontier_calib *expert_calib;
    double *expert_rel_err;       /* a stack's [2 x E] (the caller's): each expert's rel_err of
                                   * the decoded bytes, then of Q(W); NULL: not wanted */
} fr_gguf_item;

/* Why ref cannot be written as GGUF for tensor t (NULL: it can); buf holds
 * composed messages. */
const char *fr_gguf_no_writer(const fr_registry *reg, const fr_config_ref *ref,
                              const fr_tensor *t, char *buf, size_t len);

/* True for a calibrated configuration whose codes the GGUF encoder
 * reproduces from the same statistics (its traits' gguf_importance:
 * `imat-ggml-`, llama-quantize --imatrix); the others are written as
 * dequantized only. */
int fr_gguf_writes_calibrated(const fr_registry *reg, const fr_config_ref *ref);

/* The ggml type name ("Q4_K") a configuration asks for, or NULL. */
const char *fr_gguf_type_name(const fr_registry *reg, const fr_config_ref *ref);

/* The ggml type name tensor t is stored as under ref: the one it asks for,
 * or where that type's block does not divide t's rows (ne[0]) the type
 * llama-quantize falls back to ("Q5_0", ..., "F16"; quantizers/
 * ggml_blocks.h fr_ggml_stored_type, what the quantizer measures); NULL
 * when ref has no GGUF type. */
const char *fr_gguf_stored_type_name(const fr_registry *reg, const fr_config_ref *ref,
                                     const fr_tensor *t);

/* Writes the GGUF file `path` from src (one GGUF file) and items[0..n) (n
 * == src->n_tensors, in its order): every quantized tensor is quantized by
 * the registry, encoded, decoded again and compared with Q(W) bit for bit
 * (a difference is FR_E_FAIL) before its bytes are written. *data_bytes
 * receives the bytes of the tensors' data. On failure path may be left
 * half-written: the caller removes it. */
fr_status fr_gguf_write(const fr_registry *reg, const fr_source *src, fr_gguf_item *items,
                        size_t n, const char *path, uint64_t *data_bytes, fr_error *err);

#endif
