/*
 * Integer round-to-nearest, int2..int8, symmetric or asymmetric, with fp16
 * group scales (groups of 32/64/128/256, or one per row: `gC`) or one fp32
 * scale for the whole tensor (`int<b>-tensor-*`, what ONNX Runtime's uint8
 * weight quantization stores). docs/formats.md has the exact rules.
 */
#include <float.h>
#include <math.h>

#include "builtin.h"
#include "common.h"
#include "int_group.h"


#define P(b, gran, g, sym) (&(const fr_int_params){(b), (gran), (g), (sym)})

#define INT_GROUP_CFG(b, g, symname, sym, symjson)                                            \
    {"int" #b "-g" #g "-" symname, (b),                                                       \
     "{\"bits\":" #b ",\"granularity\":\"group\",\"group_size\":" #g                          \
     ",\"symmetric\":" symjson ",\"scale_dtype\":\"fp16\"}",                                  \
     P(b, FR_INT_GROUP, g, sym)}
#define INT_ROW_CFG(b, symname, sym, symjson)                                                 \
    {"int" #b "-gC-" symname, (b),                                                            \
     "{\"bits\":" #b ",\"granularity\":\"row\",\"symmetric\":" symjson                        \
     ",\"scale_dtype\":\"fp16\"}",                                                            \
     P(b, FR_INT_ROW, 0, sym)}
#define INT_TENSOR_CFG(b, symname, sym, symjson)                                              \
    {"int" #b "-tensor-" symname, (b),                                                        \
     "{\"bits\":" #b ",\"granularity\":\"tensor\",\"symmetric\":" symjson                     \
     ",\"scale_dtype\":\"fp32\"}",                                                            \
     P(b, FR_INT_TENSOR, 0, sym)}
#define INT_BITS_CFGS(b)                                                                      \
    INT_GROUP_CFG(b, 32, "sym", 1, "true"), INT_GROUP_CFG(b, 32, "asym", 0, "false"),         \
        INT_GROUP_CFG(b, 64, "sym", 1, "true"), INT_GROUP_CFG(b, 64, "asym", 0, "false"),     \
        INT_GROUP_CFG(b, 128, "sym", 1, "true"), INT_GROUP_CFG(b, 128, "asym", 0, "false"),   \
        INT_GROUP_CFG(b, 256, "sym", 1, "true"), INT_GROUP_CFG(b, 256, "asym", 0, "false"),   \
        INT_ROW_CFG(b, "sym", 1, "true"), INT_ROW_CFG(b, "asym", 0, "false"),                 \
        INT_TENSOR_CFG(b, "sym", 1, "true"), INT_TENSOR_CFG(b, "asym", 0, "false")

static const frontier_config int_configs[] = {
    INT_BITS_CFGS(2), INT_BITS_CFGS(3), INT_BITS_CFGS(4), INT_BITS_CFGS(5),
    INT_BITS_CFGS(6), INT_BITS_CFGS(7), INT_BITS_CFGS(8),
};

static const frontier_quantizer int_quantizer;

/* One job: the whole tensor, split into groups (a row is one group for gC). */
typedef struct int_job {
    const fr_int_params *p;
    const float *w;
    float *w_hat;
    int64_t cols, group, groups_per_row;
    float tensor_scale, tensor_zero; /* FR_INT_TENSOR only */
    fr_q_bad bad;
} int_job;

static void int_groups_range(void *arg, int64_t begin, int64_t end)
{
    int_job *job = arg;
    const int bits = job->p->bits;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / job->groups_per_row;
        int64_t start = (u % job->groups_per_row) * job->group;
        int64_t n = job->cols - start < job->group ? job->cols - start : job->group;
        int64_t offset = row * job->cols + start;
        const float *x = job->w + offset;
        float *x_hat = job->w_hat + offset;
        float lo = 0.0f, hi = 0.0f; /* min(min x, 0), max(max x, 0) */
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            if (fr_q_nonfinite(x[i])) {
                fr_q_bad_note(&job->bad, offset + i);
                bad = 1;
                continue;
            }
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        if (bad) {
            for (int64_t i = 0; i < n; i++)
                x_hat[i] = 0.0f;
            continue;
        }
        if (job->p->symmetric) {
            float qmax = fr_int_sym_qmax(bits);
            float amax = -lo > hi ? -lo : hi;
            fr_int_sym_group(x, x_hat, n, fr_int_sym_scale(amax, qmax), qmax);
        } else {
            float levels = fr_int_asym_levels(bits);
            float s = fr_int_asym_scale(lo, hi, levels);
            fr_int_asym_group(x, x_hat, n, s, fr_int_asym_zero(lo, s, levels), levels);
        }
    }
}

static void int_tensor_range(void *arg, int64_t begin, int64_t end)
{
    int_job *job = arg;
    const int bits = job->p->bits;
    if (job->p->symmetric)
        fr_int_sym_group(job->w + begin, job->w_hat + begin, end - begin, job->tensor_scale,
                         fr_int_sym_qmax(bits));
    else
        fr_int_asym_group(job->w + begin, job->w_hat + begin, end - begin, job->tensor_scale,
                          job->tensor_zero, fr_int_asym_levels(bits));
}

static int int_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                            int64_t rows, int64_t cols, const frontier_calib *calib,
                            frontier_call *call)
{
    (void)calib;
    int rc = fr_q_check_call(&int_quantizer, cfg, w, w_hat, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    const fr_int_params *p = cfg->impl;
    int_job job = {.p = p, .w = w, .w_hat = w_hat, .cols = cols};
    fr_q_bad_init(&job.bad);

    if (p->granularity == FR_INT_TENSOR) {
        float lo, hi;
        rc = fr_q_tensor_range(call, w, rows * cols, cols, &lo, &hi);
        if (rc != FRONTIER_OK)
            return rc;
        lo = lo < 0.0f ? lo : 0.0f;
        hi = hi > 0.0f ? hi : 0.0f;
        /* one fp32 scale: no storage rounding beyond the float32 division */
        if (p->symmetric) {
            float amax = -lo > hi ? -lo : hi;
            job.tensor_scale = amax / fr_int_sym_qmax(p->bits);
        } else {
            float levels = fr_int_asym_levels(p->bits);
            job.tensor_scale = (hi - lo) / levels;
            job.tensor_zero = fr_int_asym_zero(lo, job.tensor_scale, levels);
        }
        fr_q_parallel_for(call, rows * cols, FR_Q_CHUNK_ELEMS, int_tensor_range, &job);
        return FRONTIER_OK;
    }

    job.group = p->granularity == FR_INT_ROW ? cols : p->group_size;
    job.groups_per_row = fr_q_ceil_div(cols, job.group);
    fr_q_parallel_for(call, rows * job.groups_per_row, fr_q_grain(job.group), int_groups_range,
                      &job);
    return fr_q_bad_report(&job.bad, cols, call);
}

static int int_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                         uint64_t *total_bits, frontier_call *call)
{
    int rc = fr_q_check_shape(&int_quantizer, cfg, rows, cols, call);
    if (rc != FRONTIER_OK)
        return rc;
    if (!total_bits)
        return fr_q_fail(call, FRONTIER_ERR_INVALID, "no output for the size");
    const fr_int_params *p = cfg->impl;
    uint64_t b = (uint64_t)p->bits;
    uint64_t zero_bits = p->symmetric ? 0 : b; /* asym stores a b-bit zero point per scale */
    switch (p->granularity) {
    case FR_INT_TENSOR:
        return fr_q_size_bits(call, rows, cols, b, 0, 0, 0, 32 + zero_bits, total_bits, NULL);
    case FR_INT_ROW:
        return fr_q_size_bits(call, rows, cols, b, 1, cols, 16 + zero_bits, 0, total_bits, NULL);
    default:
        return fr_q_size_bits(call, rows, cols, b, 1, p->group_size, 16 + zero_bits, 0,
                              total_bits, NULL);
    }
}

/* Row blocks: group and row scales are row-local; the tensor form's one
 * scale (and zero point) comes from the tensor's range. Storage:
 * pack-quantized for group and row scales (compressed-tensors packs zero
 * points of group and channel strategies only, so not the tensor form). */
static int int_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                             frontier_call *call)
{
    (void)call;
    const fr_int_params *p = cfg->impl;
    t->row_multiple = 1;
    if (p->granularity == FR_INT_TENSOR) {
        t->needs_range = 1;
        return FRONTIER_OK;
    }
    t->storage = FRONTIER_STORAGE_INT_PACK;
    t->storage_bits = p->bits;
    t->storage_group_size = p->granularity == FR_INT_GROUP ? p->group_size : 0;
    t->storage_symmetric = p->symmetric;
    return FRONTIER_OK;
}

static const frontier_quantizer int_quantizer = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "int",
    .description = "integer round-to-nearest, int2..int8, sym/asym, fp16 group or row "
                   "scales, or one fp32 tensor scale",
    .version = FRONTIER_VERSION,
    .flags = FRONTIER_Q_DETERMINISTIC, /* GPU: kernels/int.cu, attached when registered */
    .n_configs = sizeof int_configs / sizeof int_configs[0],
    .configs = int_configs,
    .size_bits = int_size_bits,
    .quantize_cpu = int_quantize_cpu,
    .config_traits = int_config_traits,
};

/* Configurations with the storage of a GGML type (ggml-common.h block
 * layouts): a block of 32 with an fp16 scale (Q8_0, Q4_0, Q5_0) or an fp16
 * scale and fp16 minimum (Q4_1, Q5_1). The rounding rules differ in detail
 * (Q4_0 uses the 16 levels -8..7 with d = max / -8; Q4_1/Q5_1 store an fp16
 * minimum where frontier stores a b-bit zero point), so llama.cpp's error
 * and size are close to, not identical with, what frontier measured:
 * docs/analysis.md. */
const fr_ggml_type fr_int_ggml_types[] = {
    {"int8-g32-sym", "q8_0"},  {"int4-g32-sym", "q4_0"},  {"int4-g32-asym", "q4_1"},
    {"int5-g32-sym", "q5_0"},  {"int5-g32-asym", "q5_1"}, {NULL, NULL},
};

const frontier_quantizer *fr_int_entry(const frontier_host_api *host)
{
    return fr_q_set_host(host) ? &int_quantizer : NULL;
}
