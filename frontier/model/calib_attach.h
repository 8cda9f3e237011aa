/*
 * The calibration statistics of one weight, by the rules the sweep attaches
 * them with (docs/calibration.md): core/calib.h's fr_calib_lookup by the
 * weight's name and input dimension, and the tied-embedding rule. Shared by
 * frontier sweep (attach_calibration) and frontier quantize --calib, so a
 * checkpoint is written with exactly the statistics its rows were measured
 * with.
 */
#ifndef FR_CALIB_ATTACH_H
#define FR_CALIB_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#include "core/calib.h"
#include "core/error.h"
#include "core/source.h"

/* Whether tensors[0..n) hold an output layer of their own (FR_CLASS_LM_HEAD). */
int fr_calib_has_lm_head(const fr_tensor *tensors, size_t n);

/* The statistics of weight t, whose input dimension is cols (fr_calib_lookup).
 * A checkpoint with an embedding and no output layer of its own
 * (has_lm_head 0) ties them (tie_word_embeddings): the embedding matrix is
 * the output layer too, and an embedding without statistics under its own
 * name takes those a capture of the running model stores under lm_head
 * (an info line says so); when lm_head has none either, the skip reason is
 * the embedding's own. *matched (may be NULL) is the name the statistics
 * were found under, for fr_calib_unmatched: t->name or "lm_head.weight".
 * quiet: no info or warning lines (an MPI worker repeating rank 0's
 * lookups). Errors are fr_calib_lookup's. */
fr_status fr_calib_lookup_weight(fr_calib_file *cf, const fr_tensor *t, int64_t cols,
                                 int has_lm_head, int quiet, fr_calib_stats *out,
                                 const char **matched, fr_error *err);

/* Expert e of the expert stack t (n_experts experts of [rows, cols],
 * docs/formats.md "Expert tensors"): fr_calib_lookup_expert under the
 * stack's own name. An expert that received no calibration tokens takes
 * the token-weighted mean of the other experts' statistics, with one
 * warning line naming the module and the expert. Errors are
 * fr_calib_lookup_expert's (another expert count; statistics without an
 * expert axis). */
fr_status fr_calib_lookup_expert_weight(fr_calib_file *cf, const fr_tensor *t, int64_t expert,
                                        int64_t n_experts, int64_t cols, int quiet,
                                        fr_calib_stats *out, fr_error *err);

#endif
