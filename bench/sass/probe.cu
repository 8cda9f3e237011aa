/*
 * Instruction-count probe (bench/sass/count.sh): the unit evaluation of
 * each variant (kquant.cuh, fr_keval) in a loop over units, as the fused
 * kernel runs it, one kernel per variant, so that cuobjdump -sass shows
 * the per-(unit, configuration) code of one family alone: the kernel with
 * two evaluations per iteration minus the kernel with one is what a lane
 * spends on one unit (8 elements) of one configuration. Never launched.
 * With -DFR_PROBE_FALLBACK_TRAP the fallbacks to the definitions become a
 * trap, leaving the fast path (what nearly every element takes).
 */
#include "kernels/kquant.cuh"

template <int V, int K, bool APPLY>
__global__ void fr_probe(const fr_kconf *cp, const float4 *xs, const float2 *st, double *out,
                         int n)
{
    __shared__ fr_nf4_bucket nf4[FR_NF4_BUCKETS];
    const fr_kconf c = *cp;
    const int lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < FR_NF4_BUCKETS; i += blockDim.x)
        nf4[i] = fr_nf4_bucket_make(i);
    __syncthreads();
    double se = 0.0, sh = 0.0, sd = 0.0;
    float me = 0.0f;
#pragma unroll 1
    for (int u = 0; u < n; u += K) {
#pragma unroll
        for (int k = 0; k < K; k++) {
        const float4 a = xs[2 * ((u + k) * 32 + lane)], b = xs[2 * ((u + k) * 32 + lane) + 1];
        float x[FR_K_PER_LANE] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}, h[FR_K_PER_LANE];
        fr_kterms t;
        if constexpr (APPLY) /* the fused kernel: the group's scale from its table */
            fr_kapply<V, false>(c, x, reinterpret_cast<const float4 *>(st)[(u + k) * 32 + lane],
                                nf4, t, h);
        else /* the streaming kernel: every lane computes its group's scale */
            fr_keval<V, false>(c, x, st[(u + k) * 32 + lane], nf4, t, h);
        se += (double)t.se;
        sh += (double)t.sh;
        sd += (double)t.sd;
        me = fmaxf(me, t.me);
        }
    }
    out[4 * threadIdx.x] = se;
    out[4 * threadIdx.x + 1] = sh;
    out[4 * threadIdx.x + 2] = sd;
    out[4 * threadIdx.x + 3] = me;
}

/* one and two evaluations per iteration: the difference of their sizes is
 * one (unit, configuration) evaluation of a lane, loads and sums included */
#define FR_PROBE_AT(v, k, apply)                                                             \
    template __global__ void fr_probe<v, k, apply>(const fr_kconf *, const float4 *,           \
                                                   const float2 *, double *, int);
#define FR_PROBE(v)                                                                          \
    FR_PROBE_AT(v, 1, false) FR_PROBE_AT(v, 2, false) FR_PROBE_AT(v, 1, true)                  \
    FR_PROBE_AT(v, 2, true)
FR_PROBE(FR_KV_INT_SYM_GROUP)
FR_PROBE(FR_KV_INT_SYM_TENSOR)
FR_PROBE(FR_KV_INT_ASYM_GROUP)
FR_PROBE(FR_KV_FP8_TENSOR)
FR_PROBE(FR_KV_FP8_ROW)
FR_PROBE(FR_KV_NVFP4)
FR_PROBE(FR_KV_MX)
FR_PROBE(FR_KV_MXINT8)
FR_PROBE(FR_KV_NF4)
