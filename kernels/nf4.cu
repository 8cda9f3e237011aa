/*
 * nf4-g64 and nf4-g64-dq: the kernel spec of each configuration (from the
 * CPU reference's own parameters) and the family's descriptor functions
 * quantize_cuda / sweep_cuda, and the statistics pre-pass of nf4-g64-dq.
 * The device rule is nf4.cuh.
 */
#include "kquant.cuh"
#include "quantizers/nf4_block.h"

int fr_kspec_nf4(const frontier_config *cfg, fr_kspec *out)
{
    const fr_nf4_params *p = (const fr_nf4_params *)cfg->impl;
    if (!p)
        return 0;
    out->variant = p->double_quant ? FR_KV_NF4_DQ : FR_KV_NF4;
    out->level = 2; /* FR_NF4_BLOCK = 64 */
    return 1;
}

/* ---- the statistics pre-pass of nf4-g64-dq (its block scales a') ---- */

/* Blocks per nf4 partial sum, and the number of partials (<= 1024): a
 * function of the block count only, so the sum's order is fixed. */
#define FR_KNF4_PER_PARTIAL 4096

/* Partial sums (double) of the nf4 block absmax values, each over a fixed
 * range, threads strided then a fixed tree. */
static __global__ void __launch_bounds__(256)
    fr_knf4_partial(const float *__restrict__ seg_lo, const float *__restrict__ seg_hi,
                    int64_t n_blocks, int64_t per, double *__restrict__ part)
{
    __shared__ double s[256];
    const int64_t b0 = (int64_t)blockIdx.x * per;
    const int64_t b1 = b0 + per < n_blocks ? b0 + per : n_blocks;
    double sum = 0.0;
    for (int64_t b = b0 + threadIdx.x; b < b1; b += 256)
        sum += (double)fr_kamax(seg_lo[b], seg_hi[b]);
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int off = 128; off > 0; off >>= 1) {
        if ((int)threadIdx.x < off)
            s[threadIdx.x] += s[threadIdx.x + off];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[blockIdx.x] = s[0];
}

/*
 * The nf4-dq mean m = fp32(sum / n_blocks). The CPU adds the absmax values
 * sequentially in block order (nf4.c); this sums them in a tree, so the two
 * double sums may differ in their last bits. Both lie within
 * (n_blocks + depth) * 2^-53 * sum of the exact sum (each of the at most
 * n_blocks - 1 additions of non-negative terms adds at most one relative
 * rounding), so when every double in that interval rounds to the same fp32
 * mean, that mean is the CPU's. Otherwise (about one tensor in a few
 * hundred) thread 0 redoes the CPU's sequential sum exactly. tstats[3]
 * counts those fallbacks.
 */
static __global__ void __launch_bounds__(1024)
    fr_knf4_mean(const double *__restrict__ part, int n_part, const float *__restrict__ seg_lo,
                 const float *__restrict__ seg_hi, int64_t n_blocks, int64_t per,
                 float *__restrict__ tstats)
{
    __shared__ double s[1024];
    s[threadIdx.x] = (int)threadIdx.x < n_part ? part[threadIdx.x] : 0.0;
    __syncthreads();
    for (int off = 512; off > 0; off >>= 1) {
        if ((int)threadIdx.x < off)
            s[threadIdx.x] += s[threadIdx.x + off];
        __syncthreads();
    }
    if (threadIdx.x != 0)
        return;
    const double sum = s[0];
    const double n = (double)n_blocks;
    /* depth of this tree: per / 256 sequential steps, 8 + 10 tree levels */
    const double bound = ((double)n_blocks + (double)(per / 256) + 64.0) * 2.220446049250313e-16 * sum;
    float lo = (float)((sum - bound) / n), hi = (float)((sum + bound) / n);
    float mean = lo;
    if (lo != hi) {
        double seq = 0.0;
        for (int64_t b = 0; b < n_blocks; b++)
            seq += fr_kamax(seg_lo[b], seg_hi[b]);
        mean = (float)(seq / n);
        tstats[3] += 1.0f;
    }
    tstats[2] = mean;
}

/* a' of every block: a warp per second-level group of 256 blocks. */
static __global__ void __launch_bounds__(FR_K_THREADS)
    fr_knf4_dq(const float *__restrict__ seg_lo, const float *__restrict__ seg_hi, int64_t n_blocks,
               const float *__restrict__ tstats, float *__restrict__ nf4_scale)
{
    const int lane = threadIdx.x & 31;
    const float m = tstats[2];
    const int64_t n_groups = n_blocks / FR_NF4_DQ_GROUP + (n_blocks % FR_NF4_DQ_GROUP != 0);
    const int64_t warps = (int64_t)gridDim.x * FR_K_WARPS;
    for (int64_t g = (int64_t)blockIdx.x * FR_K_WARPS + (threadIdx.x >> 5); g < n_groups;
         g += warps) {
        float a[8];
        float max_dev = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int64_t b = g * FR_NF4_DQ_GROUP + lane * 8 + j;
            a[j] = b < n_blocks ? fr_kamax(seg_lo[b], seg_hi[b]) : 0.0f;
            float dev = b < n_blocks ? fabsf(a[j] - m) : 0.0f;
            max_dev = dev > max_dev ? dev : max_dev;
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_xor_sync(0xffffffffu, max_dev, off);
            max_dev = o > max_dev ? o : max_dev;
        }
        const float c = fr_nf4_dq_step(max_dev);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int64_t b = g * FR_NF4_DQ_GROUP + lane * 8 + j;
            if (b < n_blocks)
                nf4_scale[b] = fr_nf4_dq_absmax(a[j], m, c);
        }
    }
}


fr_status fr_knf4_dq_scales(const float *seg_lo, const float *seg_hi, int64_t n_blocks,
                            double *part, float *tstats, float *nf4_scale, cudaStream_t s,
                            fr_error *err)
{
    fr_status st = FR_OK;
    int64_t n_part = n_blocks / FR_KNF4_PER_PARTIAL + (n_blocks % FR_KNF4_PER_PARTIAL != 0);
    if (n_part > 1024)
        n_part = 1024;
    const int64_t per = n_blocks / n_part + (n_blocks % n_part != 0);
    n_part = n_blocks / per + (n_blocks % per != 0);
    const int64_t n_groups = n_blocks / FR_NF4_DQ_GROUP + (n_blocks % FR_NF4_DQ_GROUP != 0);
    FR_LAUNCH(fr_knf4_partial<<<(unsigned)n_part, 256, 0, s>>>(seg_lo, seg_hi, n_blocks, per,
                                                              part));
    FR_LAUNCH(fr_knf4_mean<<<1, 1024, 0, s>>>(part, (int)n_part, seg_lo, seg_hi, n_blocks, per,
                                             tstats));
    FR_LAUNCH(fr_knf4_dq<<<fr_kgrid(n_groups, FR_K_WARPS, 8192), FR_K_THREADS, 0, s>>>(
        seg_lo, seg_hi, n_blocks, tstats, nf4_scale));
cleanup:
    return st;
}

FR_KFAMILY(NF4, nf4)
