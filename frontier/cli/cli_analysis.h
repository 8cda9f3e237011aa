/* What the analysis commands (pareto, allocate, export) share. */
#ifndef FR_CLI_ANALYSIS_H
#define FR_CLI_ANALYSIS_H

#include "core/error.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/llama_mix.h"
#include "frontier/analysis/pareto.h"
#include "frontier/analysis/annotate.h"

/* Reads a dataset and indexes its results. FR_E_FORMAT when it has no
 * results ("did the sweep finish?"). On failure nothing is left allocated;
 * on success the caller frees them (fr_result_index_free, fr_dataset_free). */
fr_status cli_read_dataset(const char *path, fr_dataset *ds, fr_result_index *ix, fr_error *err);

/* Warns (standard error) how many tensors of the dataset that the selection
 * takes have no row of a selected configuration: pareto's and export's
 * tables count only tensors with results ("76 of 76 tensors"), so a sweep
 * that has not finished (stopped, or being continued with --resume) would
 * otherwise read as a whole model. allocate says the same in its own words. */
void cli_warn_unmeasured(const fr_dataset *ds, const fr_result_index *ix, const fr_selection *spec);

/* "2..8" or "2..8:0.25" (step default_step when absent). 0 when malformed. */
int cli_parse_range(const char *text, double default_step, double *lo, double *hi, double *step);

/* A finite number; 0 when text is not one. */
int cli_parse_double(const char *text, double *out);

/* llama-quantize's stock mixes that are complete on the selection
 * (fr_llama_mixes_complete) under metric, their rules read from
 * model_path or, NULL, the dataset's source (else inferred from its
 * tensors; frontier/analysis/llama_mix.h); an info line says which. *n 0
 * when none is (a dataset without ggml-* rows). Errors are logged: a
 * model_path that cannot be read (its status), no memory. */
fr_status cli_llama_mixes(const fr_dataset *ds, const fr_result_index *ix,
                          const fr_selection *spec, fr_metric metric, const char *model_path,
                          fr_llama_mix_result **out, size_t *n);
void cli_llama_mixes_free(fr_llama_mix_result *mixes, size_t n);

/* Where the mixes' rules come from, for the info line: "'m.gguf' (llama,
 * 30 layers, 9/3 heads)" into buf. */
const char *cli_llama_model_text(const fr_llama_model *m, char *buf, size_t size);

/* What a choice is predicted to do, for cli_print_measured: the weight
 * error (under the command's metric) and the predicted KL divergence of the
 * measured row m, NAN where the command has no prediction for it. */
typedef void (*cli_predict_fn)(const fr_measured *m, void *ctx, double *metric_value,
                               double *predicted_kl);

/* The same rows as JSON objects (name, kind, bits_per_weight, the metric
 * and predicted_kl as predict says, kl_mean, kl_stderr, ppl_quant,
 * ppl_orig, top1_agreement, positions; null where unknown), for --json;
 * NULL when there are none (or the table cannot be read: warned). */
struct cJSON;
struct cJSON *cli_measured_json(const char *path, const char *metric_name,
                                cli_predict_fn predict, void *ctx);

/* The dataset's measured results (/frontier/measured: frontier annotate and
 * frontier evaluate), one line each beside what predict says of them
 * (predict NULL: nothing), under a heading; prints nothing when there are
 * none. A dataset whose measured table cannot be read is warned about, not
 * an error (the analysis above it stands). */
void cli_print_measured(FILE *out, const char *path, const char *metric_name,
                        cli_predict_fn predict, void *ctx);

#endif
