/*
 * ternary: an out-of-tree frontier quantizer plugin.
 *
 * Ternary weights in the style of TWN (Li, Zhang, Liu 2016, "Ternary Weight
 * Networks", arXiv:1605.04711, eq. 5-6): per group, the threshold is
 * delta = 0.7 * mean|w|, the weights above it keep their sign and share one
 * magnitude alpha = mean of |w| over them, everything else becomes 0:
 *
 *     w_hat = +alpha if w > delta,  -alpha if w < -delta,  0 otherwise.
 *
 * Storage counted by size_bits (see README.md): the trits of each row are
 * packed five to a byte (3^5 = 243 <= 256, the packing of llama.cpp's TQ1_0),
 * so 8 * ceil(cols / 5) bits per row, plus the alphas.
 *
 * Built with one line against an installed frontier:
 *     cc -shared -fPIC $(pkg-config --cflags frontier) ternary.c -o libternary.so
 * It needs nothing but <frontier/plugin.h> and libc (no libm).
 */
#include <frontier/plugin.h>

#include <stdint.h>
#include <string.h>

/* The host's services, set once by the entry point before any other call. */
static const frontier_host_api *host;

/* Which elements share one threshold and one alpha. */
enum ternary_group { TERNARY_TENSOR, TERNARY_ROW, TERNARY_G64 };

typedef struct ternary_params {
    enum ternary_group group;
    int64_t group_size;   /* TERNARY_G64: elements per group along a row */
    int alpha_bits;       /* 32 (fp32) or 16 (fp16) */
} ternary_params;

/* TWN's approximation of the optimal threshold (Li et al. 2016, eq. 6). */
#define TERNARY_THRESHOLD_RATIO 0.7

static const ternary_params params_tensor = {TERNARY_TENSOR, 0, 32};
static const ternary_params params_row = {TERNARY_ROW, 0, 32};
static const ternary_params params_g64 = {TERNARY_G64, 64, 16};

static const frontier_config ternary_configs[] = {
    {"ternary-tensor", 1.6,
     "{\"group_size\":\"tensor\",\"threshold_ratio\":0.7,\"scale_dtype\":\"fp32\","
     "\"packing\":\"5 trits per byte\"}",
     &params_tensor},
    {"ternary-row", 1.6,
     "{\"group_size\":\"row\",\"threshold_ratio\":0.7,\"scale_dtype\":\"fp32\","
     "\"packing\":\"5 trits per byte\"}",
     &params_row},
    {"ternary-g64", 1.6,
     "{\"group_size\":64,\"threshold_ratio\":0.7,\"scale_dtype\":\"fp16\","
     "\"packing\":\"5 trits per byte\"}",
     &params_g64},
};

static float abs_f32(float x)
{
    return x < 0.0f ? -x : x;
}

/* 2^k as float32, for -126 <= k <= 127. */
static float pow2_f32(int k)
{
    uint32_t u = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * x >= 0 (finite) rounded to the nearest IEEE binary16 value, ties to even,
 * subnormals kept, values past the largest finite fp16 (65504) saturating to
 * it so that the reconstruction stays finite. Bit manipulation only, so the
 * plugin needs no libm.
 */
static float round_to_fp16(float x)
{
    if (x >= 65504.0f)
        return 65504.0f;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)(u >> 23) - 127; /* x = m * 2^(e - 23) */
    if (e < -26)
        return 0.0f; /* below 2^-25, half of the smallest fp16 subnormal */
    uint32_t m = (u & 0x7fffffu) | 0x800000u;
    /* quantum of fp16 at x: 2^(e - 10) for normals, 2^-24 below 2^-14 */
    int quantum = e >= -14 ? e - 10 : -24;
    int shift = quantum - (e - 23);
    if (shift > 24)
        return 0.0f;
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (float)r * pow2_f32(quantum); /* r <= 2^11: both factors exact */
}

/* alpha of a group: the mean of |w| over the elements above the threshold,
 * rounded to float32 and then to the storage dtype. 0 when none is above
 * (an all-zero group), which reconstructs the group to 0. */
static float alpha_of(double sum_above, int64_t n_above, int alpha_bits)
{
    if (n_above == 0)
        return 0.0f;
    float alpha = (float)(sum_above / (double)n_above);
    return alpha_bits == 16 ? round_to_fp16(alpha) : alpha;
}

/* Sums of |w| in element order, in double: the definition, so that another
 * implementation (the test's reference) gets the same threshold bit for bit. */
static double sum_abs(const float *w, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)abs_f32(w[i]);
    return s;
}

static void sum_above(const float *w, int64_t n, double delta, double *sum, int64_t *count)
{
    double s = 0.0;
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = (double)abs_f32(w[i]);
        if (a > delta) {
            s += a;
            c++;
        }
    }
    *sum = s;
    *count = c;
}

static void reconstruct(const float *w, float *w_hat, int64_t n, double delta, float alpha)
{
    for (int64_t i = 0; i < n; i++) {
        double a = (double)abs_f32(w[i]);
        w_hat[i] = a > delta ? (w[i] < 0.0f ? -alpha : alpha) : 0.0f;
    }
}

/* One group on its own: threshold, alpha, reconstruction. */
static void quantize_group(const float *w, float *w_hat, int64_t n, int alpha_bits)
{
    double delta = TERNARY_THRESHOLD_RATIO * (sum_abs(w, n) / (double)n);
    double above;
    int64_t n_above;
    sum_above(w, n, delta, &above, &n_above);
    reconstruct(w, w_hat, n, delta, alpha_of(above, n_above, alpha_bits));
}

/* State shared by the row-parallel loops. */
typedef struct ternary_job {
    const ternary_params *p;
    const float *w;
    float *w_hat;
    int64_t cols;
    double delta;        /* TERNARY_TENSOR: the tensor's threshold */
    float alpha;         /* TERNARY_TENSOR: the tensor's alpha */
    double *row_sum;     /* TERNARY_TENSOR: per-row partial sums */
    int64_t *row_count;
} ternary_job;

static void rows_grouped(void *arg, int64_t begin, int64_t end)
{
    const ternary_job *job = arg;
    int64_t g = job->p->group == TERNARY_G64 ? job->p->group_size : job->cols;
    for (int64_t r = begin; r < end; r++) {
        const float *w = job->w + r * job->cols;
        float *w_hat = job->w_hat + r * job->cols;
        for (int64_t c = 0; c < job->cols; c += g) {
            int64_t n = job->cols - c < g ? job->cols - c : g; /* short last group */
            quantize_group(w + c, w_hat + c, n, job->p->alpha_bits);
        }
    }
}

static void rows_sum_abs(void *arg, int64_t begin, int64_t end)
{
    const ternary_job *job = arg;
    for (int64_t r = begin; r < end; r++)
        job->row_sum[r] = sum_abs(job->w + r * job->cols, job->cols);
}

static void rows_sum_above(void *arg, int64_t begin, int64_t end)
{
    const ternary_job *job = arg;
    for (int64_t r = begin; r < end; r++)
        sum_above(job->w + r * job->cols, job->cols, job->delta, &job->row_sum[r],
                  &job->row_count[r]);
}

static void rows_reconstruct(void *arg, int64_t begin, int64_t end)
{
    const ternary_job *job = arg;
    for (int64_t r = begin; r < end; r++)
        reconstruct(job->w + r * job->cols, job->w_hat + r * job->cols, job->cols, job->delta,
                    job->alpha);
}

static int ternary_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                int64_t rows, int64_t cols, const frontier_calib *calib,
                                frontier_call *call)
{
    (void)calib; /* data-free */
    const ternary_params *p = cfg->impl;
    if (rows <= 0 || cols <= 0) {
        host->set_error(call, "cannot quantize a %lld x %lld tensor", (long long)rows,
                        (long long)cols);
        return FRONTIER_ERR_INVALID;
    }
    ternary_job job = {.p = p, .w = w, .w_hat = w_hat, .cols = cols};
    /* about 64 Ki elements per chunk: enough work to be worth a thread */
    int64_t grain = cols >= 65536 ? 1 : 65536 / cols;

    if (p->group != TERNARY_TENSOR) {
        host->parallel_for(call, rows, grain, rows_grouped, &job);
        return FRONTIER_OK;
    }

    /* One threshold for the tensor: per-row partial sums (in parallel), then
     * added in row order, so the result does not depend on the threads. */
    job.row_sum = host->scratch_alloc(call, (size_t)rows * sizeof *job.row_sum);
    job.row_count = host->scratch_alloc(call, (size_t)rows * sizeof *job.row_count);
    if (!job.row_sum || !job.row_count) {
        host->set_error(call, "no memory for %lld row sums", (long long)rows);
        return FRONTIER_ERR_NOMEM;
    }
    host->parallel_for(call, rows, grain, rows_sum_abs, &job);
    double total = 0.0;
    for (int64_t r = 0; r < rows; r++)
        total += job.row_sum[r];
    job.delta = TERNARY_THRESHOLD_RATIO * (total / ((double)rows * (double)cols));

    host->parallel_for(call, rows, grain, rows_sum_above, &job);
    double above = 0.0;
    int64_t n_above = 0;
    for (int64_t r = 0; r < rows; r++) {
        above += job.row_sum[r];
        n_above += job.row_count[r];
    }
    job.alpha = alpha_of(above, n_above, p->alpha_bits);
    host->parallel_for(call, rows, grain, rows_reconstruct, &job);
    return FRONTIER_OK;
}

static int ternary_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                             uint64_t *total_bits, frontier_call *call)
{
    const ternary_params *p = cfg->impl;
    if (rows <= 0 || cols <= 0) {
        host->set_error(call, "no size for a %lld x %lld tensor", (long long)rows,
                        (long long)cols);
        return FRONTIER_ERR_INVALID;
    }
    uint64_t r = (uint64_t)rows, c = (uint64_t)cols;
    uint64_t code_bits = 8 * ((c + 4) / 5); /* per row: five trits per byte */
    uint64_t alpha_bits = 0;
    switch (p->group) {
    case TERNARY_TENSOR: /* one for the whole tensor, added below */
        break;
    case TERNARY_ROW:
        alpha_bits = (uint64_t)p->alpha_bits;
        break;
    case TERNARY_G64: /* a short last group still stores its alpha */
        alpha_bits = (uint64_t)p->alpha_bits * ((c + (uint64_t)p->group_size - 1) /
                                                (uint64_t)p->group_size);
        break;
    }
    uint64_t per_row = code_bits + alpha_bits;
    if (per_row > (UINT64_MAX - 64) / r) {
        host->set_error(call, "size of a %lld x %lld tensor overflows 64 bits", (long long)rows,
                        (long long)cols);
        return FRONTIER_ERR_INVALID;
    }
    *total_bits = per_row * r + (p->group == TERNARY_TENSOR ? (uint64_t)p->alpha_bits : 0);
    return FRONTIER_OK;
}

static const frontier_quantizer ternary_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "ternary",
    .description = "TWN ternary weights {-alpha, 0, +alpha}, threshold 0.7 mean|w|, "
                   "trits packed 5 per byte",
    .version = "1.0.0",
    .flags = FRONTIER_Q_DETERMINISTIC,
    .n_configs = sizeof ternary_configs / sizeof ternary_configs[0],
    .configs = ternary_configs,
    .size_bits = ternary_size_bits,
    .quantize_cpu = ternary_quantize_cpu,
    .quantize_cuda = NULL, /* CPU only: FRONTIER_Q_HAS_CUDA stays clear */
    .sweep_cuda = NULL,
};

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *h)
{
    /* Every service used above is in ABI version 1; a host that is older or
     * whose table is shorter cannot run this plugin. */
    if (!h || h->abi_version < 1 ||
        h->struct_size < offsetof(frontier_host_api, parallel_for) + sizeof h->parallel_for)
        return NULL;
    host = h;
    return &ternary_quantizer;
}
