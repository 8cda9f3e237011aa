/*
 * What a sweep measures: the --bits filter and the configurations --bits
 * and --quantizers select (frontier/sweep/sweep_select.c). Which tensors
 * it measures by default: frontier/model/tensors.h.
 */
#ifndef FR_SWEEP_SELECT_H
#define FR_SWEEP_SELECT_H

#include <stddef.h>

#include "core/error.h"
#include "core/registry.h"

#define FR_BITS_MAX_TERMS 64

/* A --bits filter: a union of closed ranges (a single number is [v, v]). */
typedef struct fr_bits_filter {
    size_t n;
    double lo[FR_BITS_MAX_TERMS], hi[FR_BITS_MAX_TERMS];
} fr_bits_filter;

/* FR_E_USAGE for malformed text or an empty range like "8..2". */
fr_status fr_bits_parse(const char *text, fr_bits_filter *out, fr_error *err);
int fr_bits_match(const fr_bits_filter *f, double nominal_bits);

/* The configurations a sweep measures, in registry order: those that pass
 * --bits and --quantizers, of the data-free ones (no Hessian or activation
 * statistics needed) and, when `calibrated` (--calib), also of those that
 * need statistics. nvfp4-fused is never among them (--fused-global-scale
 * adds it; naming it is FR_E_USAGE). FR_E_USAGE when a pattern matches no
 * quantizer or configuration, or when nothing is left. *out is malloc'd. */
fr_status fr_sweep_select_configs(const fr_registry *reg, const char *bits, const char *quantizers,
                                  int calibrated, const fr_config_ref ***out, size_t *n_out,
                                  fr_error *err);

#endif
