/*
 * Plumbing shared by the built-in quantizer families (CPU side only; the
 * numeric rules shared with CUDA live in numerics.h and the *_group.h
 * headers): the host services handed to the entries, parallel loops, error
 * reporting, shape and configuration checks, exact size arithmetic, and the
 * detection of non-finite weights.
 */
#ifndef FR_Q_COMMON_H
#define FR_Q_COMMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier/plugin.h"

/* Elements per parallel chunk: large enough to amortise scheduling, small
 * enough to balance 2..128 threads on a 4096 x 4096 tensor (256 chunks). */
#define FR_Q_CHUNK_ELEMS 65536

/* Records the host services (called by every built-in entry). Returns 0 when
 * host is unusable (NULL or an older ABI than this build), 1 otherwise. */
int fr_q_set_host(const frontier_host_api *host);
const frontier_host_api *fr_q_host(void);

/* host->parallel_for, or a serial loop in the same chunks without a host. */
void fr_q_parallel_for(frontier_call *call, int64_t n, int64_t grain, frontier_range_fn fn,
                       void *arg);

/* host->set_error(call, fmt, ...) and returns code. */
int fr_q_fail(frontier_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 64-byte aligned scratch memory freed by the host after the call. */
void *fr_q_scratch(frontier_call *call, size_t bytes);

/* Grain (in units of `unit_elems` elements) that makes chunks of about
 * FR_Q_CHUNK_ELEMS elements. */
int64_t fr_q_grain(int64_t unit_elems);

static inline int64_t fr_q_ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/*
 * Checks the arguments every quantize_cpu receives: cfg is one of the
 * quantizer's own configurations (so cfg->impl has the expected type), the
 * shape is non-empty and rows * cols fits in int64, buffers are present.
 */
int fr_q_check_call(const frontier_quantizer *q, const frontier_config *cfg, const float *w,
                    const float *w_hat, int64_t rows, int64_t cols, frontier_call *call);

/* The same for size_bits (no buffers). */
int fr_q_check_shape(const frontier_quantizer *q, const frontier_config *cfg, int64_t rows,
                     int64_t cols, frontier_call *call);

/*
 * Exact size: elem_bits per element, plus bits_per_unit for every tile of
 * unit_rows x unit_cols (short tiles at the edges count fully), plus
 * extra_bits. Every product and sum is checked for uint64 overflow. *units
 * (may be NULL) receives the number of tiles.
 */
int fr_q_size_bits(frontier_call *call, int64_t rows, int64_t cols, uint64_t elem_bits,
                   int64_t unit_rows, int64_t unit_cols, uint64_t bits_per_unit,
                   uint64_t extra_bits, uint64_t *total_bits, uint64_t *units);

/* a * b and a + b on uint64; return 0 on overflow. */
int fr_q_mul_u64(uint64_t a, uint64_t b, uint64_t *out);
int fr_q_add_u64(uint64_t a, uint64_t b, uint64_t *out);

/*
 * The first (lowest flat index) non-finite weight seen by any thread. The
 * minimum is order-free, so the message does not depend on the thread count.
 */
typedef struct fr_q_bad {
    _Atomic int64_t first;
} fr_q_bad;

void fr_q_bad_init(fr_q_bad *bad);
void fr_q_bad_note(fr_q_bad *bad, int64_t index);
/* FRONTIER_OK, or FRONTIER_ERR_INVALID with "non-finite weight at row R, column C". */
int fr_q_bad_report(fr_q_bad *bad, int64_t cols, frontier_call *call);

/* True for NaN and +-Inf. */
static inline int fr_q_nonfinite(float x)
{
    return !(x - x == 0.0f);
}

/*
 * min(x) and max(x) over a whole tensor of n elements, in parallel chunks
 * (min and max are order-free). Non-finite elements are reported through
 * fr_q_bad_report. lo and hi are left as +FLT_MAX / -FLT_MAX when n == 0.
 */
int fr_q_tensor_range(frontier_call *call, const float *w, int64_t n, int64_t cols, float *lo,
                      float *hi);

#endif
