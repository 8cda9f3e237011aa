/*
 * ggml- and imat-ggml- on the device (kernels/ggml.h; docs/gpu.md, "ggml-
 * and imat-ggml- on the GPU"): one thread per block (32 elements, or a
 * super-block of 256), which loads its elements, runs the CPU's own
 * fr_ggml_encode_block_weighted and fr_ggml_decode_block (FR_HD:
 * quantizers/ggml_blocks.h and ggml_kquants.h, the very source the CPU
 * compiles, scale searches included) and stores the decoded block. The
 * kernel is a template of the type, so each instance holds one type's
 * search; float32 arithmetic in the source's order (-fmad=false: no
 * contraction, IEEE division and square root), so every byte of every
 * block, and w^, are the CPU's.
 *
 * On rows a type's block does not divide, the kernels run the type
 * llama-quantize falls back to (fr_ggml_stored_type), as the CPU does; a
 * weighted legacy fallback first reduces each row's sum of squares in the
 * CPU's order (fr_kg_sigma2).
 *
 * The rows' blocks are independent: no shared memory, no barrier. Before
 * them, fr_cuda_check_finite refuses a NaN or Inf weight with the CPU's
 * words (fr_q_bad_report). ggml's and ggml_imat's quantize_cuda (rows of
 * gpu_entries.h's table) are here; imat-ggml-'s column importance is the
 * CPU's (fr_ggml_importance), uploaded.
 */
#include <stdlib.h>

#include "kcommon.cuh"
#include "clipsearch.h"
#include "ggml.h"

extern "C" {
#include "core/call.h"
#include "quantizers/ggml.h"
#include "quantizers/wrap.h"
}

/* threads per block: the searches' arrays live in local memory (up to
 * about 3 KB a thread), so few threads per SM keep them in L1 */
#define FR_KG_THREADS 64
#define FR_KG_MAX_GRID (1 << 20)

typedef struct fr_kg_args {
    const void *w;
    int dtype;
    float *w_hat;
    const float *qw;     /* device [cols] or NULL */
    const float *sigma2; /* device [rows]: the rows' fr_ggml_row_sigma2 (weighted legacy) */
    int64_t cols, per_row, n_blocks;
} fr_kg_args;

/* sigma2[r] = fr_ggml_row_sigma2 of row r, one thread per row summing in
 * the CPU's order: what the weighted legacy searches of a fallback type
 * (imat-ggml- on rows a super-block does not divide) weigh by. */
static __global__ void fr_kg_sigma2(const void *w, int dtype, int64_t rows, int64_t cols,
                                    float *sigma2)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
        float sum = 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            const float x = fr_kload1(w, dtype, r * cols + j);
            sum += x * x;
        }
        sigma2[r] = sum / (float)cols;
    }
}

/* Blocks of BLOCK elements of ggml type TYPE, weighted by the column
 * importance when WEIGHTED (imat-ggml-). */
template <int TYPE, int BLOCK, bool WEIGHTED>
static __global__ void __launch_bounds__(FR_KG_THREADS) fr_kggml(fr_kg_args a)
{
    const fr_ggml_qtype type = (fr_ggml_qtype)TYPE;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < a.n_blocks;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t start = u % a.per_row * BLOCK;
        const int n = (int)(a.cols - start < BLOCK ? a.cols - start : BLOCK);
        const int64_t at = u / a.per_row * a.cols + start;
        float x[BLOCK];
        uint8_t blk[FR_GGML_MAX_BLOCK_BYTES];
        for (int i = 0; i < BLOCK; i++) /* a short block's tail is never read */
            x[i] = i < n ? fr_kload1(a.w, a.dtype, at + i) : 0.0f;
        fr_ggml_encode_block_in_row(type, x, n, WEIGHTED ? a.qw + start : NULL,
                                    WEIGHTED && a.sigma2 ? a.sigma2[u / a.per_row] : 0.0f, blk);
        if (n == BLOCK) { /* a whole block decodes in place */
            fr_ggml_decode_block(type, blk, a.w_hat + at);
        } else {
            float y[BLOCK];
            fr_ggml_decode_block(type, blk, y);
            for (int i = 0; i < n; i++)
                a.w_hat[at + i] = y[i];
        }
    }
}

typedef void (*fr_kg_kernel)(fr_kg_args);

/* The instance of a type; NULL for a type the family does not have. Q8_0,
 * MXFP4 and F16 ignore an importance (as ggml does) but have a weighted
 * instance too: a super-block type falls back to a legacy type or F16 on
 * rows its block does not divide (fr_ggml_stored_type), imat-ggml- too. */
static fr_kg_kernel fr_kg_pick(int type, int weighted)
{
#define FR_KG_BOTH(T, B)                                                                     \
    case T: return weighted ? fr_kggml<T, B, true> : fr_kggml<T, B, false>;
    switch (type) {
        FR_KG_BOTH(FR_GGML_Q8_0, 32)
        FR_KG_BOTH(FR_GGML_Q4_0, 32)
        FR_KG_BOTH(FR_GGML_Q4_1, 32)
        FR_KG_BOTH(FR_GGML_Q5_0, 32)
        FR_KG_BOTH(FR_GGML_Q5_1, 32)
        FR_KG_BOTH(FR_GGML_MXFP4, 32)
        FR_KG_BOTH(FR_GGML_F16, 1)
        FR_KG_BOTH(FR_GGML_Q2_K, 256)
        FR_KG_BOTH(FR_GGML_Q3_K, 256)
        FR_KG_BOTH(FR_GGML_Q4_K, 256)
        FR_KG_BOTH(FR_GGML_Q5_K, 256)
        FR_KG_BOTH(FR_GGML_Q6_K, 256)
        FR_KG_BOTH(FR_GGML_IQ4_NL, 32)
        FR_KG_BOTH(FR_GGML_IQ4_XS, 256)
    default: return NULL;
    }
#undef FR_KG_BOTH
}

extern "C" fr_status fr_cuda_ggml(const void *w, int dtype, float *w_hat, int64_t rows,
                                  int64_t cols, int type, const float *importance, void *stream,
                                  fr_error *err)
{
    fr_status st = FR_OK;
    cudaStream_t s = (cudaStream_t)stream;
    float *qw = NULL, *sigma2 = NULL;
    fr_kg_args a;
    int64_t grid = 0;
    const fr_kg_kernel kernel = fr_kg_pick(type, importance != NULL);
    if (!kernel)
        return fr_fail(err, FR_E_USAGE, "ggml type %d%s has no kernel", type,
                       importance ? " with an importance matrix" : "");
    FR_TRY(fr_cuda_check_finite(w, dtype, rows, cols, stream, err));
    a.w = w;
    a.dtype = dtype;
    a.w_hat = w_hat;
    a.qw = NULL;
    a.sigma2 = NULL;
    a.cols = cols;
    a.per_row = (cols + fr_ggml_block_elems((fr_ggml_qtype)type) - 1) /
                fr_ggml_block_elems((fr_ggml_qtype)type);
    a.n_blocks = rows * a.per_row;
    if (importance) {
        /* pageable host memory: the copy has read it when the call returns */
        FR_CU(cudaMallocAsync((void **)&qw, (size_t)cols * sizeof(float), s));
        FR_CU(cudaMemcpyAsync(qw, importance, (size_t)cols * sizeof(float),
                              cudaMemcpyHostToDevice, s));
        a.qw = qw;
        if (fr_ggml_legacy_weighted((fr_ggml_qtype)type) && rows > 0) {
            FR_CU(cudaMallocAsync((void **)&sigma2, (size_t)rows * sizeof(float), s));
            const int64_t rgrid = (rows + 127) / 128;
            FR_LAUNCH(fr_kg_sigma2<<<(int)(rgrid < FR_KG_MAX_GRID ? rgrid : FR_KG_MAX_GRID), 128,
                                     0, s>>>(w, dtype, rows, cols, sigma2));
            a.sigma2 = sigma2;
        }
    }
    grid = (a.n_blocks + FR_KG_THREADS - 1) / FR_KG_THREADS;
    if (grid > 0)
        FR_LAUNCH(kernel<<<(int)(grid < FR_KG_MAX_GRID ? grid : FR_KG_MAX_GRID), FR_KG_THREADS,
                           0, s>>>(a));
cleanup:
    if (qw)
        cudaFreeAsync(qw, s);
    if (sigma2)
        cudaFreeAsync(sigma2, s);
    return st;
}

/* ---- ggml's and ggml_imat's quantize_cuda (gpu_entries.h) ---- */

extern "C" int fr_ggml_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                     float *w_hat, int64_t rows, int64_t cols,
                                     const frontier_calib *calib, void *stream,
                                     frontier_call *call)
{
    (void)calib; /* the weighted searches are ggml_imat's */
    fr_error err;
    fr_error_clear(&err);
    /* what llama-quantize stores on these rows (its fallback), as the CPU */
    const fr_ggml_params *p = fr_ggml_stored_type((const fr_ggml_params *)cfg->impl, cols);
    return fr_kreport(call, fr_cuda_ggml(w, dtype, w_hat, rows, cols, p->type, NULL, stream, &err),
                      &err);
}

extern "C" int fr_ggml_imat_quantize_cuda(const frontier_config *cfg, const void *w, int dtype,
                                          float *w_hat, int64_t rows, int64_t cols,
                                          const frontier_calib *calib, void *stream,
                                          frontier_call *call)
{
    fr_error err;
    fr_error_clear(&err);
    /* the CPU's checks in its order (quantizers/ggml_imat.c) */
    if (!calib || calib->cols != cols) {
        fr_fail(&err, FR_E_USAGE,
                "needs an importance matrix (activation statistics) for %lld inputs",
                (long long)cols);
        return fr_kreport(call, FR_E_USAGE, &err);
    }
    float *scratch = NULL;
    if (!calib->act_mean_sq && !(scratch = (float *)malloc((size_t)cols * sizeof(float)))) {
        fr_fail(&err, FR_E_NOMEM, "out of memory");
        return fr_kreport(call, FR_E_NOMEM, &err);
    }
    const float *qw = fr_ggml_importance(calib, cols, scratch);
    fr_status st;
    if (!qw) {
        st = fr_fail(&err, FR_E_USAGE, "needs activation statistics");
    } else {
        const fr_wrap_params *wp = (const fr_wrap_params *)cfg->impl;
        const fr_ggml_params *p =
            fr_ggml_stored_type((const fr_ggml_params *)wp->base->impl, cols);
        st = fr_cuda_ggml(w, dtype, w_hat, rows, cols, p->type, qw, stream, &err);
    }
    free(scratch);
    return fr_kreport(call, st, &err);
}
