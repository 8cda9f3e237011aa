/*
 * The calibration file `frontier sensitivity` writes (docs/calibration.md,
 * "The file"): one `<module>.sensitivity` = [alpha, residual] (F32, [2]) per
 * measured tensor, `<module>` being the tensor's name without `.weight`
 * (core/calib.h fr_calib_module_of, the reader's own rule), and a
 * __metadata__ that says how it was measured. Written under a temporary
 * name and renamed, so a failed run leaves no partial file.
 */
#ifndef FR_SENSITIVITY_FILE_H
#define FR_SENSITIVITY_FILE_H

#include <stddef.h>

#include "core/error.h"
#include "frontier/engine/lm.h"
#include "frontier/engine/sensitivity.h"

/* How the measurement was made: __metadata__'s keys (each NULL or "" is left out). */
typedef struct fr_sens_meta {
    const char *model;      /* "SmolLM2-135M-Instruct.Q4_1.gguf sha256 <hex>" */
    const char *text;       /* "LICENSE sha256 <hex>" */
    const char *engine;     /* "llama.cpp (ggml 0.25.3, commit ...), CPU, 2 threads, f32 weights" */
    const char *noise;      /* "quantization error of ggml-q4_0 at its own relative error" */
    const char *fidelity;   /* the check against the engine's own loading of the file */
    const char *tool;       /* "frontier 0.1.0 sensitivity" */
    int64_t n_sequences, seq_len;
    unsigned long long seed;
} fr_sens_meta;

/* The __metadata__ key/value pairs (meta[2i], meta[2i + 1]) of a run, into
 * kv[cap] (strings allocated, freed by fr_sens_meta_free); their count. */
size_t fr_sens_meta_pairs(const fr_lm *lm, const fr_sens_result *res, const fr_sens_options *o,
                          const fr_sens_summary *sum, const fr_sens_meta *m, char **kv,
                          size_t cap);
void fr_sens_meta_free(char **kv, size_t n);

/* Writes path: every measured tensor's [alpha, residual]. FR_E_USAGE when
 * no tensor was measured or two tensors map to one module, FR_E_OUTPUT when
 * the file cannot be written. */
fr_status fr_sens_write(const char *path, const fr_lm *lm, const fr_sens_result *res,
                        const fr_sens_options *o, const fr_sens_summary *sum,
                        const fr_sens_meta *m, fr_error *err);

#endif
