/*
 * Shared by every .cu file of kernels/ (never included from C): the CUDA
 * call checks, the C headers of the library (wrapped in extern "C", since
 * core/ headers carry no C++ guards), and the device-side view of a config.
 *
 * Error rule (ggml-cuda's CUDA_CHECK, but returning instead of aborting):
 * every CUDA runtime call goes through FR_CU, every launch through
 * FR_LAUNCH, which checks cudaGetLastError() right after it. Both record the
 * statement, file and line in the fr_error and jump to the function's one
 * `cleanup` label with `st` set; functions using them declare
 * `fr_status st = FR_OK;` and `fr_error *err`.
 */
#ifndef FR_KCOMMON_CUH
#define FR_KCOMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "core/error.h"
#include "frontier/plugin.h"
}
#include "launchers.h"
#include "quantizers/families.h"

/* Element i of a tensor in its stored dtype (F32, BF16 or F16) as float32,
 * exactly (bf16 is the upper half of a float32, f16 the hardware
 * conversion): the one-element load of the kernels that are not the fused
 * sweep's (GPTQ, AWQ, the clipping searches, HQQ, RHT, the output terms). */
__device__ static inline float fr_kload1(const void *w, int dtype, int64_t i)
{
    if (dtype == FRONTIER_DTYPE_F32)
        return ((const float *)w)[i];
    uint16_t v = ((const uint16_t *)w)[i];
    if (dtype == FRONTIER_DTYPE_BF16)
        return __uint_as_float((uint32_t)v << 16);
    return __half2float(__ushort_as_half(v));
}

/* Records a failed CUDA call; returns FR_E_NOMEM for allocation failures,
 * FR_E_DEVICE otherwise. */
fr_status fr_cuda_failed(fr_error *err, cudaError_t e, const char *stmt, const char *file,
                         int line);

#define FR_CU(call)                                                                          \
    do {                                                                                     \
        cudaError_t fr_cu_e_ = (call);                                                       \
        if (fr_cu_e_ != cudaSuccess) {                                                       \
            st = fr_cuda_failed(err, fr_cu_e_, #call, __FILE__, __LINE__);                   \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)

#define FR_LAUNCH(...)                                                                       \
    do {                                                                                     \
        __VA_ARGS__;                                                                         \
        cudaError_t fr_cu_e_ = cudaGetLastError();                                           \
        if (fr_cu_e_ != cudaSuccess) {                                                       \
            st = fr_cuda_failed(err, fr_cu_e_, #__VA_ARGS__, __FILE__, __LINE__);            \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)

/* A status from a helper: keep it and leave. */
#define FR_TRY(expr)                                                                         \
    do {                                                                                     \
        st = (expr);                                                                         \
        if (st != FR_OK)                                                                     \
            goto cleanup;                                                                    \
    } while (0)

/* ---- the geometry every kernel shares ---- */

/* A unit is 256 consecutive elements of one row: one warp, 8 per lane. 256 is
 * the least common multiple of every group size (16, 32, 64, 128, 256), so a
 * group never straddles two units or two lanes' halves unevenly. */
#define FR_K_UNIT 256
#define FR_K_PER_LANE 8
#define FR_K_THREADS 256
#define FR_K_WARPS (FR_K_THREADS / 32)
/* Units per tile of the fused kernel: two per warp, held in shared memory. */
#define FR_K_TILE_UNITS 16
/* Grid of the fused kernel: a constant (8 x the 132 SMs of an H100/H200
 * SXM), not a query of the device, so per-block partial sums and therefore
 * the reduced sums are the same on every GPU. */
#define FR_K_GRID 1056
/* Configurations per fused launch (they travel in the kernel parameters). */
#define FR_K_MAX_SPECS 128
/* 64-column segments of the statistics pre-pass: the nf4 block. */
#define FR_K_SEG 64

/* One configuration as a kernel sees it: 12 bytes, so 128 of them fit in
 * the kernel parameters. Built on the host by the family's spec builder
 * (kernels/<family>.cu) from the quantizer's own impl struct
 * (fr_int_params, fr_fp8_params, fr_mx_params, fr_nf4_params). */
typedef struct fr_kspec {
    int8_t variant;   /* enum fr_kvariant (kquant.cuh): family x scope */
    int8_t level;     /* group scales: group size 16 << level */
    int8_t is_int8;   /* mx: MXINT8 elements */
    int8_t mbits;     /* fp8/mx element format (fr_minifloat) */
    int8_t emin;
    int8_t emax_elem; /* mx */
    int8_t bits;      /* int */
    int8_t spare;
    float q;          /* int: qmax (sym) or 2^b - 1 (asym); fp8/mx: element max */
} fr_kspec;

/* Per-configuration partial error sums (max kept as double too). The extra
 * slot after the configurations holds {sum w^2, NaN count, Inf count,
 * -(flat index of the first non-finite element), or -inf when none}. */
typedef struct fr_kpart {
    double sq_err, sq_hat, dot, max_abs;
} fr_kpart;

/* The kernel spec of configuration cfg of built-in family `family` (enum
 * fr_family of quantizers/families.h), through the family's builder; 0
 * when the family has no kernel for it. The caller guarantees cfg belongs
 * to that family (its impl has the family's parameter type): the registry's
 * family index says so (fr_qentry.family). */
int fr_kspec_of(int family, const frontier_config *cfg, fr_kspec *out);

/* The spec of registry configuration ref when it is a built-in's with a
 * kernel (its entry's family index, and cfg one of that descriptor's own
 * configurations); 0 otherwise. fr_cuda_has_kernel is this without the spec. */
int fr_kspec_of_ref(const fr_registry *reg, const fr_config_ref *ref, fr_kspec *out);

/* The families' spec builders (kernels/<family>.cu). */
#define FR_KSPEC_DECLARE(ID, stem, ggml) int fr_kspec_##stem(const frontier_config *cfg, fr_kspec *out);
FR_BUILTIN_FAMILIES(FR_KSPEC_DECLARE)
#undef FR_KSPEC_DECLARE

/* A cheap configuration whose sums are dropped: a fused launch with it
 * alone yields a tensor's sum w^2 and its finiteness check (the extra
 * slot), for tensors whose configurations all run elsewhere. */
void fr_kspec_norm_probe(fr_kspec *out);

/* nf4-g64-dq's pre-pass (kernels/nf4.cu): from the lo/hi of every 64-column
 * block (n_blocks), the mean of the block absmax values into tstats[2]
 * (fallbacks counted in tstats[3]) and each block's double-quantized a'
 * into nf4_scale; part holds up to 1024 double partial sums. Enqueued. */
fr_status fr_knf4_dq_scales(const float *seg_lo, const float *seg_hi, int64_t n_blocks,
                            double *part, float *tstats, float *nf4_scale, cudaStream_t s,
                            fr_error *err);

/* What a set of specs needs from the statistics pre-pass. */
typedef struct fr_kneeds {
    int segs;   /* 64-column segment lo/hi (everything below derives from them) */
    int rows;   /* per-row lo/hi */
    int tensor; /* tensor lo/hi */
    int tiles;  /* 128 x 128 tile amax */
    int nf4dq;  /* nf4 double quantization: block scales a' */
} fr_kneeds;

fr_kneeds fr_kneeds_of(const fr_kspec *specs, size_t n);

/* A grow-only device buffer, resized in stream order (cudaMallocAsync). */
typedef struct fr_kbuf {
    void *p;
    size_t bytes;
} fr_kbuf;

/*
 * Device scratch of one tensor's evaluation: statistics and partial sums.
 * Sized for the whole tensor (rows_total) even when it is processed in row
 * chunks, so pass 1 over the chunks can fill it and pass 2 read it.
 */
typedef struct fr_kwork {
    cudaStream_t stream;
    fr_kbuf seg_lo, seg_hi;  /* [rows * segs_per_row] */
    fr_kbuf row_lohi;        /* [rows][2] */
    fr_kbuf tile_amax;       /* [ceil(rows/128) * ceil(cols/128)] */
    fr_kbuf nf4_scale;       /* [rows * segs_per_row]: a' of nf4-g64-dq */
    fr_kbuf nf4_part;        /* double partial sums of block absmax */
    fr_kbuf tstats;          /* float [4]: tensor lo, hi, nf4 mean m, nf4 mean fallbacks */
    fr_kbuf partials;        /* fr_kpart [grid][n + 1] */
    fr_kbuf results;         /* fr_kpart [n + 1] */
} fr_kwork;

/* The tensor a launch reads: rows [row0, row0 + chunk_rows) of a
 * rows x cols tensor, whose data (chunk only) starts at w. */
typedef struct fr_kview {
    const void *w;
    int dtype; /* enum frontier_dtype */
    int64_t rows, cols;
    int64_t row0, chunk_rows;
} fr_kview;

void fr_kwork_init(fr_kwork *work, cudaStream_t stream);
/* Frees in stream order; the caller synchronises before relying on it. */
void fr_kwork_free(fr_kwork *work);

/* Sizes the statistics buffers for a rows x cols tensor. */
fr_status fr_kwork_reserve(fr_kwork *work, const fr_kneeds *needs, int64_t rows, int64_t cols,
                           fr_error *err);

/* Pass 1 on one chunk: segment, row and tile statistics. */
fr_status fr_kstats_chunk(fr_kwork *work, const fr_kneeds *needs, const fr_kview *v,
                          fr_error *err);
/* After every chunk's pass 1: tensor lo/hi and the nf4 double quantization. */
fr_status fr_kstats_finish(fr_kwork *work, const fr_kneeds *needs, int64_t rows, int64_t cols,
                           fr_error *err);

/*
 * Pass 2 on one chunk: evaluates n specs (n <= FR_K_MAX_SPECS) with one read
 * of the chunk and leaves n + 1 fr_kpart in work->results (device): the error
 * sums of each spec, then {sum w^2, non-finite count}. With w_hat (device
 * float, chunk_rows x cols) and n == 1 it also writes the reconstruction.
 */
fr_status fr_kfused(fr_kwork *work, const fr_kspec *specs, int n, const fr_kview *v,
                    float *w_hat, fr_error *err);

/* Blocks of a grid-stride launch: one per per_block work items, at least 1,
 * at most cap. */
static inline unsigned fr_kgrid(int64_t work_items, int64_t per_block, unsigned cap)
{
    int64_t g = work_items / per_block + (work_items % per_block != 0);
    if (g < 1)
        g = 1;
    return g > cap ? cap : (unsigned)g;
}

/* Bytes per element of a frontier_dtype, 0 when unknown. */
static inline size_t fr_kdtype_size(int dtype)
{
    return dtype == FRONTIER_DTYPE_F32 ? 4
           : (dtype == FRONTIER_DTYPE_F16 || dtype == FRONTIER_DTYPE_BF16) ? 2
                                                                           : 0;
}

/* Maps an fr_status of the engine to a plugin return code, with the message
 * handed to the host through set_error. */
int fr_kreport(frontier_call *call, fr_status st, const fr_error *err);

/* The body of every built-in descriptor's quantize_cuda / sweep_cuda
 * (evaluate.cu); FR_KFAMILY(ID, stem) defines the two C entry points of
 * family FR_FAMILY_<ID> that gpu_entries.h declares and lists. */
int fr_kfamily_quantize(int family, const frontier_config *cfg, const void *w, int dtype,
                        float *w_hat, int64_t rows, int64_t cols, void *stream,
                        frontier_call *call);
int fr_kfamily_sweep(int family, const frontier_config *const *cfgs, size_t n, const void *w,
                     int dtype, int64_t rows, int64_t cols, frontier_error_sums *sums,
                     void *stream, frontier_call *call);

#define FR_KFAMILY(ID, stem)                                                                   \
    extern "C" int fr_##stem##_quantize_cuda(const frontier_config *cfg, const void *w,        \
                                             int dtype, float *w_hat, int64_t rows,            \
                                             int64_t cols, const frontier_calib *calib,        \
                                             void *stream, frontier_call *call)                \
    {                                                                                          \
        (void)calib; /* data-free: statistics are not used */                                  \
        return fr_kfamily_quantize(FR_FAMILY_##ID, cfg, w, dtype, w_hat, rows, cols, stream,   \
                                   call);                                                      \
    }                                                                                          \
    extern "C" int fr_##stem##_sweep_cuda(const frontier_config *const *cfgs, size_t n_cfgs,   \
                                          const void *w, int dtype, int64_t rows,              \
                                          int64_t cols, const frontier_calib *calib,           \
                                          frontier_error_sums *sums, void *stream,             \
                                          frontier_call *call)                                 \
    {                                                                                          \
        (void)calib;                                                                           \
        return fr_kfamily_sweep(FR_FAMILY_##ID, cfgs, n_cfgs, w, dtype, rows, cols, sums,      \
                                stream, call);                                                 \
    }

#endif
