/*
 * GPTQ on the device (kernels/gptq.cu; the algorithm of quantizers/gptq.c,
 * docs/calibration.md "GPTQ", docs/gpu.md "GPTQ"): cuSOLVER for the
 * Cholesky factor of H^-1 (double, dampening retries), a kernel for the
 * column loop inside each block of B = max(128, g) columns (one thread
 * block per 8 rows, the block's columns in shared memory, one launch per
 * block), cuBLAS (FP32 math) for the lazy updates of the later columns.
 * C interface, no CUDA types. In the CPU emulation (tests/gpu/emu), which
 * has no cuSOLVER or cuBLAS, the same kernels run with LAPACKE (the CPU
 * reference's calls) for the factor and OpenBLAS for the lazy updates.
 */
#ifndef FR_KERNELS_GPTQ_H
#define FR_KERNELS_GPTQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

/* The variants, as quantizers/gptq.c numbers them. */
enum { FR_GPTQ_PLAIN = 0, FR_GPTQ_ACT = 1, FR_GPTQ_REFSCALE = 2 };

typedef struct fr_gptq_params {
    int bits;          /* 2..8 */
    int symmetric;     /* int sym / asym rule of quantizers/int_group.h */
    int row_scales;    /* gC: one group per row (static scales) */
    int64_t group;     /* columns per group (cols for gC) */
    int variant;       /* FR_GPTQ_* */
    int loop;          /* the column-loop kernel, FR_GPTQ_LOOP_* (0: the default) */
    int serial;        /* 1: each block's lazy update as one GEMM on the call's stream,
                        * after its column loop (before 2026-12-02); 0 (the default): the
                        * lookahead, the next block's columns first and the rest on a
                        * second stream, overlapping the next column loop (docs/gpu.md) */
    uint64_t h_serial; /* nonzero: H's identity (the executor numbers each H it uploads):
                        * the factor of H^-1 is kept per device and order and reused
                        * while the same number comes back (0: factor every call) */
} fr_gptq_params;

/* The column-loop kernels (equal results, bit for bit; docs/gpu.md, "GPTQ"):
 * one warp per 8 or 4 rows with the block's columns in registers, or the
 * thread block of B threads per 8 rows with them in shared memory (the
 * kernel before 2026-12-02; bench_gptq --loop compares them). */
enum { FR_GPTQ_LOOP_WARP8 = 0, FR_GPTQ_LOOP_WARP4 = 1, FR_GPTQ_LOOP_BLOCK = 2 };

/*
 * w_hat (device float32, rows x cols) = GPTQ of the device tensor w (enum
 * frontier_dtype) under H ([cols x cols] float32, on the device when
 * h_on_device, else host memory, uploaded). *damp_retries: how many times
 * the dampening was raised x10 (at most 3, else FR_E_USAGE "not positive
 * definite"); *damp_used: the final dampening in units of mean(diag H).
 * Synchronises the stream.
 */
fr_status fr_cuda_gptq(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                       const float *h, int h_on_device, const fr_gptq_params *p, void *stream,
                       int *damp_retries, double *damp_used, fr_error *err);

/* Frees the kept factors of the current device (the executor calls it when
 * it closes). */
void fr_cuda_gptq_release_cache(void);

/* Where the time of one call goes (CUDA events between the phases, in
 * milliseconds; bench/bench_gptq.cu --phases). */
typedef struct fr_gptq_phases {
    double setup_ms;   /* diag H to the host, order, allocations, uploads */
    double factor_ms;  /* A, potrf, trtri, U to float32 (dampening retries included) */
    double potrf_ms;   /* of which A and its potrf (when no retry was needed) */
    double prep_ms;    /* W = w[:, perm], static scales */
    double loop_ms;    /* the block loop, wall (column loops and lazy updates) */
    double block_ms;   /* sum of the column-loop kernels */
    double update_ms;  /* sum of the lazy-update GEMMs */
    int factor_tries;  /* factorisations run (1 + dampening retries) */
} fr_gptq_phases;

/* fr_cuda_gptq, filling *phases when it is not NULL (events cost a few
 * microseconds per block). */
fr_status fr_cuda_gptq_timed(const void *w, int dtype, float *w_hat, int64_t rows, int64_t cols,
                             const float *h, int h_on_device, const fr_gptq_params *p,
                             void *stream, int *damp_retries, double *damp_used,
                             fr_gptq_phases *phases, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif
