/*
 * llama.cpp importance matrices (docs/calibration.md, "llama.cpp importance
 * matrices") read as diagonal-only calibration statistics: for each weight,
 * the mean over tokens of x_j^2 per input column j (diag(H)), nothing else.
 *
 * Two formats, as llama.cpp's tools/imatrix writes them:
 *   GGUF (imatrix.gguf): general.type "imatrix"; per weight <name>.in_sum2
 *     (F32, ne = [in, n_mat]: the sums of x_j^2) and <name>.counts (F32,
 *     ne = [1, n_mat]: the tokens summed), optionally <name>.in_sum (sums
 *     of x_j, not used); n_mat > 1 for an expert stack (ffn_*_exps): one
 *     vector and one count per expert, a count of 0 for an expert that
 *     received no token; keys imatrix.chunk_count, imatrix.chunk_size,
 *     imatrix.datasets. mean x_j^2 = in_sum2 / counts.
 *   legacy .dat: int32 n_entries; per entry int32 name length, the name,
 *     int32 ncall, int32 nval, float32 values[nval] (= mean x_j^2 * ncall);
 *     then optionally int32 chunk count, int32 length and the dataset name.
 *     mean x_j^2 = value / ncall. All little-endian.
 * <name> is the weight's tensor name (blk.0.attn_q.weight, or a Hugging Face
 * name when the file uses them); the module is that name without .weight.
 *
 * Every entry is read, checked and converted when the file is read (an
 * imatrix holds one vector per weight: megabytes, not gigabytes).
 */
#ifndef FR_IMATRIX_H
#define FR_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum fr_imatrix_format {
    FR_IMATRIX_NONE = 0,
    FR_IMATRIX_GGUF,
    FR_IMATRIX_DAT
} fr_imatrix_format;

typedef struct fr_imatrix_entry {
    char *module;   /* the weight name without its trailing ".weight" */
    int64_t in;     /* input columns */
    int64_t n_mat;  /* 1, or the experts of a GGUF expert stack (in_sum2 [n_mat, in]) */
    double count;   /* tokens (GGUF counts; the largest over the matrices) or calls (.dat ncall) */
    double *counts; /* n_mat > 1: [n_mat] each expert's tokens (0: it received none); else NULL */
    float *sq_mean; /* [n_mat x in] mean x_j^2 (0 for an expert that received no token) */
} fr_imatrix_entry;

typedef struct fr_imatrix {
    fr_imatrix_format format;
    size_t n;
    fr_imatrix_entry *entries; /* sorted by module */
    int64_t token_count;       /* GGUF: the largest count; .dat: 0 (not recorded) */
    int64_t chunk_count;       /* imatrix.chunk_count / the .dat trailer; -1 when absent */
} fr_imatrix;

/* What the bytes are: a GGUF file whose general.type is "imatrix" or which
 * holds a tensor named *.in_sum2 is FR_IMATRIX_GGUF (a GGUF model is
 * FR_IMATRIX_NONE); anything else is FR_IMATRIX_DAT when it starts like one
 * (a positive entry count, a first name length that fits) or when name ends
 * in ".dat", else FR_IMATRIX_NONE. */
fr_imatrix_format fr_imatrix_sniff(const uint8_t *data, uint64_t size, const char *name);

/* Reads data[0..size) in the given format; path names the file in every
 * message. Errors: FR_E_FORMAT (with the module where there is one),
 * FR_E_NOMEM. On failure *out is empty. */
fr_status fr_imatrix_read(const char *path, const uint8_t *data, uint64_t size,
                          fr_imatrix_format format, fr_imatrix *out, fr_error *err);
void fr_imatrix_free(fr_imatrix *im);

#endif
