/*
 * What a sweep measures: the --bits filter, the configurations --bits,
 * --quantizers and --fused-global-scale select, and the tensor names
 * --include and --exclude select (frontier/sweep/sweep_select.c). Which
 * tensors it measures by default: frontier/model/tensors.h.
 */
#ifndef FR_SWEEP_SELECT_H
#define FR_SWEEP_SELECT_H

#include <regex.h>
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

/* --fused-global-scale: appends to the selection (*configs, *n_configs,
 * malloc'd) every configuration that needs its fused group's joint amax
 * (traits.needs_group_amax) and whose companion quantizer is selected
 * (traits.fused_companion_of: nvfp4-fused next to nvfp4), in registration
 * order. FR_E_USAGE when no registered configuration needs a joint amax, or
 * when none of them has its companion selected. */
fr_status fr_sweep_select_fused(const fr_registry *reg, const fr_config_ref ***configs,
                                size_t *n_configs, fr_error *err);

/* --include and --exclude: POSIX extended regexes over tensor names. */
typedef struct fr_tensor_filter {
    regex_t include, exclude;
    int has_include, has_exclude;
} fr_tensor_filter;

/* NULL patterns select every name. FR_E_USAGE for a malformed regex (the
 * message names its option); f is then still fr_tensor_filter_free's to
 * free. */
fr_status fr_tensor_filter_compile(fr_tensor_filter *f, const char *include, const char *exclude,
                                   fr_error *err);
/* Nonzero when --include (if any) matches name and --exclude (if any) does not. */
int fr_tensor_filter_selects(const fr_tensor_filter *f, const char *name);
void fr_tensor_filter_free(fr_tensor_filter *f);

#endif
