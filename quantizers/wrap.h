/*
 * The calibrated and optimised variants (docs/formats.md, "Calibrated and
 * optimised variants"): families whose configurations wrap a base
 * configuration of a kernel family. `gptq-int4-g128-sym` stores what
 * `int4-g128-sym` stores and is measured like it; only the choice of codes
 * and scales differs. This header has what they share: the configuration
 * list built from the base families, the integer group rules in a form a
 * search can call, and the host-side checks.
 */
#ifndef FR_WRAP_H
#define FR_WRAP_H

#include <stddef.h>
#include <stdint.h>

#include "families.h"
#include "frontier/plugin.h"
#include "int_group.h"

/* frontier_config.impl of every wrapped configuration. */
typedef struct fr_wrap_params {
    int base_family;                   /* enum fr_family */
    const frontier_quantizer *base_q;  /* its descriptor */
    const frontier_config *base;       /* the base configuration */
    int variant;                       /* the family's own option (e.g. gptq act-order) */
} fr_wrap_params;

/* Which base configurations a family wraps, and under which names: called
 * for every configuration of every kernel family (and the extra families
 * given to fr_wrap_build); returns how many variants to make of it (0: none)
 * and writes variant v's name suffix (may be ""). */
typedef int (*fr_wrap_accept_fn)(int family, const frontier_config *base, int variant,
                                 const char **suffix);

/* A family's configuration list, built once (thread-safe) from the base
 * families' descriptors: names "<prefix><base name><suffix>", the base's
 * nominal bits, params {"base": ..., "method": ..., <extra(v)>, "base_params": {...}}.
 * Lives until the process exits. Returns 0 when out of memory or a base
 * entry fails. `extra_json` (may be NULL) adds members for variant v. */
typedef struct fr_wrap_list {
    const char *prefix;   /* "gptq-" */
    const char *method;   /* "gptq" */
    fr_wrap_accept_fn accept;
    const char *(*extra_json)(int variant);
    int with_host_families; /* also wrap configurations of these host families (bitmask of 1 << family) */
    /* filled by fr_wrap_build */
    frontier_config *configs;
    fr_wrap_params *params;
    size_t n_configs;
} fr_wrap_list;

int fr_wrap_build(fr_wrap_list *list, const frontier_host_api *host);

/* What a wrapped family's descriptor says beyond its configuration list.
 * GPU functions are not here: quantizers/ does not see kernels/, which
 * registers them in its own table, attached when the built-ins are
 * registered (frontier/exec/builtins.h). A descriptor field a family may set
 * later is one more member here, copied by fr_wrap_entry. */
typedef struct fr_wrap_family {
    const char *name;        /* the descriptor's name: the family's file stem */
    const char *description; /* one line */
    uint64_t flags;          /* FRONTIER_Q_*, without FRONTIER_Q_HAS_CUDA */
    int (*size_bits)(const frontier_config *cfg, int64_t rows, int64_t cols,
                     uint64_t *total_bits, frontier_call *call);
    int (*quantize_cpu)(const frontier_config *cfg, const float *w, float *w_hat,
                        int64_t rows, int64_t cols, const frontier_calib *calib,
                        frontier_call *call);
    int (*config_traits)(const frontier_config *cfg, frontier_config_traits *t,
                         frontier_call *call);
} fr_wrap_family;

/* The entry of a wrapped family, the one definition the seven share:
 * records the host services, builds `list` (fr_wrap_build) and fills the
 * family's static descriptor *q from `family` and the list. Returns q, or
 * NULL when the host is unusable or the list cannot be built. */
const frontier_quantizer *fr_wrap_entry(frontier_quantizer *q, fr_wrap_list *list,
                                        const fr_wrap_family *family,
                                        const frontier_host_api *host);

/* size_bits of every wrapped configuration: the base's. */
int fr_wrap_size_bits(const frontier_quantizer *q, const frontier_config *cfg, int64_t rows,
                      int64_t cols, uint64_t *total_bits, frontier_call *call);

/* config_traits of a wrapped configuration, derived from its base's: with
 * keep_storage, the base's checkpoint storage (the layout a runtime loads;
 * the codes and scales are the family's own, so the layout without
 * storage_scales); nothing else: the family's choice of codes is not known
 * to be row-local, and it needs no fused group and has no GGUF type. */
int fr_wrap_config_traits(const frontier_config *cfg, int keep_storage,
                          frontier_config_traits *t, frontier_call *call);

/* The integer base of a wrapped configuration, or NULL when the base is
 * not an int group/row configuration. */
const fr_int_params *fr_wrap_int_base(const fr_wrap_params *p);

/* True when an int configuration has group or row scales (not the tensor
 * form): the variants that search per group need them. */
int fr_wrap_is_int_grouped(int family, const frontier_config *base);

/* Elements per group of an int base over rows of `cols`. */
int64_t fr_wrap_group_cols(const fr_int_params *p, int64_t cols);

/* ---- one integer group, with a given (clipped) range ---- */

/* The scale and zero point that the base rule gives for the range
 * [lo, hi] (lo <= 0 <= hi; sym uses amax = max(-lo, hi)). These small
 * rules are FR_HD (core/hd.h): the GPU paths of the wrapped families
 * (kernels/) call the same definitions. */
typedef struct fr_int_qparams {
    float s, z;
} fr_int_qparams;

FR_HD fr_int_qparams fr_wrap_int_qparams(const fr_int_params *p, float lo, float hi)
{
    fr_int_qparams qp = {0.0f, 0.0f};
    if (p->symmetric) {
        float amax = -lo > hi ? -lo : hi;
        qp.s = fr_int_sym_scale(amax, fr_int_sym_qmax(p->bits));
    } else {
        float levels = fr_int_asym_levels(p->bits);
        qp.s = fr_int_asym_scale(lo, hi, levels);
        qp.z = fr_int_asym_zero(lo, qp.s, levels);
    }
    return qp;
}

/* x^ of one element under qp (the base dequantization). */
FR_HD float fr_wrap_int_dequant(const fr_int_params *p, fr_int_qparams qp, float x)
{
    if (p->symmetric)
        return fr_int_sym_dequant(x, qp.s, fr_int_sym_qmax(p->bits));
    return fr_int_asym_dequant(x, qp.s, qp.z, fr_int_asym_levels(p->bits));
}

/* lo = min(min x, 0), hi = max(max x, 0) of n elements (stride apart). */
void fr_wrap_range(const float *x, int64_t n, int64_t stride, float *lo, float *hi);

/* The shrink factors of the clipping searches: f_k = (20 - k) / 20 in
 * float32, k = 0..10 (1, 0.95, ..., 0.5). */
#define FR_WRAP_SHRINKS 11
FR_HD float fr_wrap_shrink(int k)
{
    return (float)(20 - k) / 20.0f;
}

/* The shrunk range of factor f: [f * lo, f * hi] in float32. */
FR_HD void fr_wrap_shrunk(float lo, float hi, float f, float *slo, float *shi)
{
    *slo = f * lo;
    *shi = f * hi;
}

/* The non-finite check every wrapper runs first (quantizers/common.h
 * reports the first element). */
int fr_wrap_check_finite(const float *w, int64_t rows, int64_t cols, frontier_call *call);


/* sum_i wt_i (x_i - x^_i)^2 in double under qp (wt NULL: 1); writes x^
 * when x_hat is not NULL. */
double fr_wrap_group_error(const fr_int_params *p, fr_int_qparams qp, const float *x, float *x_hat,
                           int64_t n, const float *wt);

/* The clipping search of one group of n contiguous elements: the shrink
 * factor whose range gives the least weighted squared error (the first of
 * equal ones, so the unshrunk range wins ties); writes x^ and returns k. */
int fr_wrap_search_group(const fr_int_params *p, const float *x, float *x_hat, int64_t n,
                         const float *wt);


/* One group of n contiguous elements (x^ into x_hat); wt: the group's
 * per-column weights or NULL. */
typedef void (*fr_wrap_group_fn)(const fr_int_params *p, const float *x, float *x_hat, int64_t n,
                                 const float *wt);

/* The common body of the per-group variants: checks the call and the
 * weights, then group_fn on every group of the int base in parallel
 * (cost: relative work per element, for the chunk size). */
int fr_wrap_per_group(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                      float *w_hat, int64_t rows, int64_t cols, const float *col_weight,
                      fr_wrap_group_fn group_fn, int64_t cost, frontier_call *call);

/* quantize_cpu of the clipping searches (mse-, imat-): every group of an
 * int base searched with per-column weights col_weight [cols] (NULL: 1). */
int fr_wrap_search_tensor(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                          float *w_hat, int64_t rows, int64_t cols, const float *col_weight,
                          frontier_call *call);

#endif
