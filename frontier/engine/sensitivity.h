/*
 * Per-tensor sensitivity of a language model (docs/calibration.md,
 * "Sensitivity through llama.cpp"): alpha_t, the increase of the mean
 * next-token KL divergence against the unperturbed model per unit squared
 * relative error r_t^2 = ||dW_t||^2 / ||W_t||^2 of weight t alone.
 *
 * The reference log-probabilities of n_sequences x seq_len tokens are
 * computed once; then for each selected tensor, alone, a perturbation dW is
 * added (the quantization error of a configuration of the registry, or
 * Gaussian noise), at each level the mean over all positions of
 * KL(p_ref || p_perturbed) is measured, and the tensor is restored. alpha
 * is the least-squares slope through the origin of KL against the realised
 * r^2, residual ||KL - alpha r^2|| / ||KL|| (examples/calibration/capture.py
 * fits the same way). Works on any fr_lm (frontier/engine/lm.h).
 */
#ifndef FR_SENSITIVITY_H
#define FR_SENSITIVITY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/engine/lm.h"

#define FR_SENS_MAX_LEVELS 16

typedef enum fr_sens_noise {
    FR_SENS_QUANT = 0,   /* dW = Q(W) - W, Q a configuration of the registry */
    FR_SENS_GAUSSIAN = 1 /* dW = c z, z standard normal (Philox4x32-10: key seed, tensor index) */
} fr_sens_noise;

/* What a progress callback is told after each measured (or skipped) tensor. */
typedef struct fr_sens_progress {
    size_t done, total;    /* selected tensors finished so far, and in all */
    size_t tensor;         /* its index in lm->tensors */
    const struct fr_sens_result *result;
    double elapsed, eta;   /* seconds since the reference pass began; estimate of the rest */
} fr_sens_progress;

typedef struct fr_sens_options {
    int64_t n_sequences, seq_len;  /* tokens[] holds n_sequences x seq_len tokens */
    fr_sens_noise noise;
    /* target relative errors r (> 0). With FR_SENS_QUANT, n_levels 0 means one
     * point at the configuration's own error; FR_SENS_GAUSSIAN needs >= 1 */
    double levels[FR_SENS_MAX_LEVELS];
    size_t n_levels;
    uint64_t seed;                    /* Gaussian noise; also the quantizer call's seed */
    const fr_registry *reg;           /* FR_SENS_QUANT: the configuration Q */
    const fr_config_ref *config;
    const unsigned char *selected;    /* [lm->n_tensors], nonzero: measure; NULL: every tensor */
    void (*progress)(void *ud, const fr_sens_progress *p);
    void *progress_ud;
} fr_sens_options;

typedef struct fr_sens_result {
    int measured;          /* 1: alpha and residual hold the fit */
    const char *skipped;   /* selected but not measured: why (NULL otherwise) */
    char reason[512];      /* storage for skipped */
    double alpha, residual;
    size_t n_points;
    double r2[FR_SENS_MAX_LEVELS]; /* realised squared relative error of each level */
    double kl[FR_SENS_MAX_LEVELS]; /* mean KL(p_ref || p_perturbed) at that level, nats */
    double seconds;
} fr_sens_result;

typedef struct fr_sens_summary {
    double kl_repeat;          /* mean KL of a second unperturbed pass against the reference:
                                * the measurement's floor (0 when the engine is deterministic) */
    double seconds_reference;  /* the reference pass */
    double seconds;            /* everything */
    size_t n_measured, n_skipped;
} fr_sens_summary;

/* Measures every selected tensor of lm into res[lm->n_tensors] (entries of
 * tensors not selected are left with measured 0 and skipped NULL). A tensor
 * that cannot be perturbed (the configuration fails on its shape, a zero
 * tensor, a zero perturbation, a KL that is not finite) is skipped with its
 * reason and the run goes on; an error of the model itself (get, set,
 * logits) ends the run with that error, the tensor restored where possible. */
fr_status fr_sens_measure(fr_lm *lm, const int32_t *tokens, const fr_sens_options *o,
                          fr_sens_result *res, fr_sens_summary *sum, fr_error *err);

/* Least-squares slope of y = alpha x through the origin (0 when sum x^2 is
 * 0) and the relative residual ||y - alpha x|| / ||y|| (0 when y is 0). */
void fr_sens_fit(const double *x, const double *y, size_t n, double *alpha, double *residual);

/* log(sum_i exp(x_i)), in double. */
double fr_sens_logsumexp(const float *x, int64_t n);

/* KL(p || q) of one position, p = softmax(ref), q = softmax(x), given their
 * logsumexp: sum_i p_i (log p_i - log q_i), in double. */
double fr_sens_kl_row(const float *ref, double ref_lse, const float *x, double x_lse, int64_t n);

#endif
