/*
 * Numeric edge cases of a (tensor, configuration), named instead of silent
 * (docs/dataset.md "Numeric flags"): the FR_ROW_* bits of a
 * /results row and the sweep's warning lines.
 *
 * Tensor facts (all zero, float32 subnormals, -0) come from one pass over
 * the float32 copy the executor already holds. Scale facts come from the
 * configuration's params (scale_dtype, bits/symmetric or element,
 * granularity/group_size/block_size, global_scale_dtype), never from its
 * family's name: per distinct group shape one pass gives the largest group
 * amax (or asymmetric range) and the smallest nonzero one, and because
 * every scale rule is monotone in them, the rule evaluated at those two
 * values in float32, exactly as docs/formats.md writes it, says whether
 * any group's scale saturates or rounds to 0.
 */
#ifndef FR_NUMERIC_FLAGS_H
#define FR_NUMERIC_FLAGS_H

#include <stddef.h>
#include <stdint.h>

#include "frontier/dataset/dataset.h" /* FR_ROW_* */

typedef enum fr_scale_kind {
    FR_SCALE_NONE = 0,  /* no rule frontier can evaluate: FR_ROW_SCALE_UNCHECKED */
    FR_SCALE_DIV,       /* s = dtype(amax / divisor), or dtype(range / divisor) asym */
    FR_SCALE_TWO_LEVEL, /* gs = fp32(smax * divisor / amax_tensor), s = dtype(min(amax / divisor * gs, smax)) */
    FR_SCALE_POW2       /* e8m0: e = floor(log2 amax) - emax_elem, clamped to [-127, 127] */
} fr_scale_kind;

typedef struct fr_scale_rule {
    fr_scale_kind kind;
    char dtype[16];     /* the scale_dtype, for messages */
    int64_t tile_rows;  /* rows of a group: 1, N (2-D tiles), 0 = all rows */
    int64_t tile_cols;  /* columns of a group: g, 0 = the whole row */
    int asym;           /* the scale is of max(max x, 0) - min(min x, 0) */
    float divisor;      /* qmax, 2^b - 1, or the element's largest value */
    float smax;         /* the scale dtype's largest finite value */
    int mbits, emin;    /* its minifloat rounding; mbits < 0: fp32, no rounding */
    int emax_elem;      /* FR_SCALE_POW2: floor(log2(element max)) */
} fr_scale_rule;

/* The scale rule of a configuration from its params JSON (NULL or
 * malformed: FR_SCALE_NONE). Only top-level members count: a wrapped
 * variant ({"method": ..., "base_params": {...}}) chooses its scales from
 * transformed weights and is not predicted. */
void fr_scale_rule_parse(const char *params_json, fr_scale_rule *rule);

/* What the examination found, per configuration, for the messages. */
typedef struct fr_scale_detail {
    double largest;       /* the largest scale quotient (before rounding) */
    double smallest;      /* the smallest nonzero group's quotient */
} fr_scale_detail;

typedef struct fr_tensor_facts {
    uint32_t flags;       /* FR_ROW_CHECKED | ALL_ZERO | SUBNORMAL | NEG_ZERO */
    int64_t n_subnormal, n_neg_zero;
} fr_tensor_facts;

/* Examines w (rows x cols float32) for the n configurations whose rules
 * are given: flags[c] receives the row flags of configuration c (tensor
 * facts included), detail[c] (may be NULL) the quotients. Returns nonzero
 * when memory for the per-tile accumulators cannot be had (flags are then
 * 0: not examined). */
int fr_numeric_examine(const float *w, int64_t rows, int64_t cols,
                       const fr_scale_rule *const *rules, size_t n, uint32_t *flags,
                       fr_scale_detail *detail, fr_tensor_facts *facts);

/* The same examination over consecutive blocks of whole rows (the CPU
 * executor's --max-memory row blocks): begin, add every block in order
 * (row0: its first row; a block must start on a multiple of every rule's
 * tile rows), end. The result equals fr_numeric_examine's on the whole
 * tensor (extremes and counts merge exactly); end frees the stream and
 * returns nonzero (flags 0) when memory failed or a block was misaligned.
 * rules must outlive the stream. */
typedef struct fr_numeric_stream fr_numeric_stream;
fr_numeric_stream *fr_numeric_stream_begin(const fr_scale_rule *const *rules, size_t n,
                                           int64_t cols);
void fr_numeric_stream_add(fr_numeric_stream *st, const float *w, int64_t row0, int64_t rows);
int fr_numeric_stream_end(fr_numeric_stream *st, uint32_t *flags, fr_scale_detail *detail,
                          fr_tensor_facts *facts);

/* ---- the rule evaluation on reduced values, from any source ----
 *
 * What every examination reduces a tensor to: per distinct group shape the
 * largest group amax (and asymmetric range) and the smallest nonzero one,
 * and the tensor's counts. The CPU's passes above compute them; the CUDA
 * executor gets the same values from a device reduction (kernels/numeric.h)
 * and hands them here, so GPU rows carry the CPU's flags bit for bit. */
typedef struct fr_group_extremes {
    int64_t tile_rows, tile_cols; /* resolved: >= 1 (0 of a rule: every row / column) */
    float max_amax, min_amax;     /* min over groups that are not all zero, else +inf */
    float max_range, min_range;
} fr_group_extremes;

typedef struct fr_numeric_totals {
    int64_t n_nonzero, n_subnormal, n_neg_zero;
    uint32_t max_mag;             /* largest |x| as float32 bits (finite x) */
} fr_numeric_totals;

/* The distinct group shapes of the n rules on a rows x cols tensor, in
 * the order of first use: shapes (n entries at most) receive the resolved
 * tile sizes (extremes set to their identities), shape_of[c] the shape of
 * rule c (0 for a rule without one). Returns the number of shapes. */
size_t fr_numeric_shapes(const fr_scale_rule *const *rules, size_t n, int64_t rows, int64_t cols,
                         fr_group_extremes *shapes, size_t *shape_of);

/* The flags (and quotients, detail may be NULL) of the n configurations
 * from the reduced values, exactly as fr_numeric_examine decides them. */
void fr_numeric_evaluate(const fr_scale_rule *const *rules, size_t n,
                         const fr_group_extremes *shapes, const size_t *shape_of,
                         const fr_numeric_totals *totals, uint32_t *flags,
                         fr_scale_detail *detail, fr_tensor_facts *facts);

/* The warning lines of one tensor (tensor_flags: the FR_ROW_* tensor facts
 * of its rows): one for a tensor fact worth a warning (all zero, or else
 * subnormals; -0 alone is not) and one per (problem, scale dtype) naming
 * the configurations it hit (flags[c], detail[c] per configuration); each
 * goes to emit(ctx, line). */
void fr_numeric_report(const char *tensor, uint32_t tensor_flags, size_t n,
                       const char *const *config_names, const fr_scale_rule *const *rules,
                       const uint32_t *flags, const fr_scale_detail *detail,
                       void (*emit)(void *ctx, const char *line), void *ctx);

#endif
