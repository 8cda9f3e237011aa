/*
 * Plugins for the traits test (tests/plugins/traits.sh), one shared object
 * per variant (-DPLUGIN_<NAME>; tests/plugins/CMakeLists.txt):
 *
 *   V1      "vone": a plugin built against the version-1 header: its own
 *           struct, abi_version 1, ending after sweep_cuda, followed in
 *           memory by junk where a version-2 struct has config_traits. It
 *           must load and run, the host knowing nothing of its
 *           configurations (whole tensors, dequantized output only).
 *   TRAITS  "rowlocal": a version-2 plugin declaring traits:
 *             rowlocal-g32     4-bit symmetric, scale amax / 7 (float32)
 *                              per 32 of a row: row-local, stored as
 *                              pack-quantized with its own scales
 *             rowlocal-tensor  4-bit symmetric, one scale amax / 7 for the
 *                              tensor: row-local given the tensor's range
 *             rowlocal-mean    one scale from the mean |w| of the tensor:
 *                              needs the whole tensor, says why
 *             rowlocal-q8_0    llama.cpp's Q8_0 reference quantizer: GGUF
 *                              type q8_0
 */
#include <frontier/plugin.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

static const frontier_host_api *host;

/* ---- the rules (cfg->impl: enum rule) ---- */

enum rule { G32, TENSOR, MEAN, Q8_0, ROUND8 };
static const enum rule rules[] = {G32, TENSOR, MEAN, Q8_0, ROUND8};

/* clamp(rint(x / s), -7, 7) * s; s == 0 gives 0 */
static float sym4(float x, float s)
{
    if (s == 0.0f)
        return 0.0f;
    float q = rintf(x / s);
    q = q < -7.0f ? -7.0f : (q > 7.0f ? 7.0f : q);
    return q * s;
}

static float amax_of(const float *x, int64_t n)
{
    float a = 0.0f;
    for (int64_t i = 0; i < n; i++)
        a = fabsf(x[i]) > a ? fabsf(x[i]) : a;
    return a;
}

/* IEEE binary16 round trip, round to nearest even (normal range: the
 * test's weights keep Q8_0's scales there) */
static float fp16_round(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    uint32_t sign = b & 0x80000000u, a = b & 0x7fffffffu;
    if (a < 0x38800000u) { /* below fp16's normal range: multiples of 2^-24 */
        float f;
        memcpy(&f, &a, sizeof f);
        f = rintf(f * 16777216.0f) / 16777216.0f;
        memcpy(&a, &f, sizeof a);
        a |= sign;
        memcpy(&f, &a, sizeof f);
        return f;
    }
    a = (a + 0x0fffu + ((a >> 13) & 1u)) & ~0x1fffu;
    b = sign | a;
    memcpy(&x, &b, sizeof x);
    return x;
}

static int rule_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                          uint64_t *total_bits, frontier_call *call)
{
    (void)call;
    uint64_t n = (uint64_t)rows * (uint64_t)cols;
    uint64_t groups = (uint64_t)rows * (uint64_t)((cols + 31) / 32);
    switch (*(const enum rule *)cfg->impl) {
    case G32: *total_bits = 4 * n + 32 * groups; break;
    case Q8_0: *total_bits = 8 * n + 16 * groups; break;
    case ROUND8: *total_bits = 8 * n; break;
    default: *total_bits = 4 * n + 32; break;
    }
    return FRONTIER_OK;
}

static int rule_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                             int64_t rows, int64_t cols, const frontier_calib *calib,
                             frontier_call *call)
{
    (void)calib;
    (void)call;
    const int64_t n = rows * cols;
    switch (*(const enum rule *)cfg->impl) {
    case G32:
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c0 = 0; c0 < cols; c0 += 32) {
                int64_t m = cols - c0 < 32 ? cols - c0 : 32;
                const float *x = w + r * cols + c0;
                float s = amax_of(x, m) / 7.0f;
                for (int64_t i = 0; i < m; i++)
                    w_hat[r * cols + c0 + i] = sym4(x[i], s);
            }
        break;
    case TENSOR: {
        float s = amax_of(w, n) / 7.0f;
        for (int64_t i = 0; i < n; i++)
            w_hat[i] = sym4(w[i], s);
        break;
    }
    case MEAN: {
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++)
            sum += fabs(w[i]);
        float s = (float)(sum / (double)n) / 2.0f;
        for (int64_t i = 0; i < n; i++)
            w_hat[i] = sym4(w[i], s);
        break;
    }
    case Q8_0:
        /* ggml-quants.c quantize_row_q8_0_ref: d = amax / 127, q =
         * roundf(x / d), stored d in fp16; dequantized q * fp16(d) */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c0 = 0; c0 < cols; c0 += 32) {
                int64_t m = cols - c0 < 32 ? cols - c0 : 32;
                const float *x = w + r * cols + c0;
                float d = amax_of(x, m) / 127.0f, id = d ? 1.0f / d : 0.0f;
                float dh = fp16_round(d);
                for (int64_t i = 0; i < m; i++)
                    w_hat[r * cols + c0 + i] = roundf(x[i] * id) * dh;
            }
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            w_hat[i] = rintf(w[i] * 8.0f) / 8.0f;
        break;
    }
    return FRONTIER_OK;
}

#if defined(PLUGIN_TRAITS)
static int g32_scales(const frontier_config *cfg, const float *w, int64_t rows, int64_t cols,
                      float *scales, float *zero_points, frontier_call *call)
{
    (void)cfg, (void)zero_points, (void)call;
    const int64_t groups = (cols + 31) / 32;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            int64_t c0 = g * 32, m = cols - c0 < 32 ? cols - c0 : 32;
            scales[r * groups + g] = amax_of(w + r * cols + c0, m) / 7.0f;
        }
    return FRONTIER_OK;
}

static int rule_traits(const frontier_config *cfg, frontier_config_traits *t, frontier_call *call)
{
    /* a host with a smaller struct gets only the fields it has */
    if (!FRONTIER_TRAITS_HAS(t, fused_companion_of)) {
        host->set_error(call, "the host's traits struct is older than this plugin's");
        return FRONTIER_ERR_UNSUPPORTED;
    }
    switch (*(const enum rule *)cfg->impl) {
    case G32:
        t->row_multiple = 1;
        t->storage = FRONTIER_STORAGE_INT_PACK;
        t->storage_bits = 4;
        t->storage_group_size = 32;
        t->storage_symmetric = 1;
        t->storage_scales = g32_scales;
        break;
    case TENSOR:
        t->row_multiple = 1;
        t->needs_range = 1;
        break;
    case MEAN:
        t->whole_tensor_reason = "a scale from the mean |w| of the whole tensor";
        break;
    case Q8_0:
        t->gguf_type = "q8_0";
        break;
    default:
        break;
    }
    return FRONTIER_OK;
}

static const frontier_config configs[] = {
    {"rowlocal-g32", 5, "{\"bits\":4,\"group_size\":32,\"scale_dtype\":\"fp32\"}", &rules[0]},
    {"rowlocal-tensor", 4, "{\"bits\":4,\"granularity\":\"tensor\"}", &rules[1]},
    {"rowlocal-mean", 4, "{\"bits\":4,\"scale\":\"mean\"}", &rules[2]},
    {"rowlocal-q8_0", 8.5, "{\"ggml_type\":\"q8_0\"}", &rules[3]},
};

static const frontier_quantizer descriptor = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_quantizer),
    .name = "rowlocal",
    .description = "a test plugin declaring traits",
    .version = "0.0.2",
    .flags = FRONTIER_Q_DETERMINISTIC,
    .n_configs = sizeof configs / sizeof configs[0],
    .configs = configs,
    .size_bits = rule_size_bits,
    .quantize_cpu = rule_quantize_cpu,
    .config_traits = rule_traits,
};
#define DESCRIPTOR (&descriptor)

#elif defined(PLUGIN_V1)
/* The descriptor of the version-1 header: the fields up to sweep_cuda. */
typedef struct v1_quantizer {
    uint32_t abi_version, struct_size;
    const char *name, *description, *version;
    uint64_t flags;
    size_t n_configs;
    const frontier_config *configs;
    int (*size_bits)(const frontier_config *, int64_t, int64_t, uint64_t *, frontier_call *);
    int (*quantize_cpu)(const frontier_config *, const float *, float *, int64_t, int64_t,
                        const frontier_calib *, frontier_call *);
    void *quantize_cuda, *sweep_cuda;
} v1_quantizer;

static const frontier_config configs[] = {
    {"vone-r8", 8, "{\"step\":0.125}", &rules[4]},
};

/* junk where a version-2 struct has config_traits: never read */
static const struct {
    v1_quantizer q;
    uintptr_t junk[2];
} v1 = {
    {1, sizeof(v1_quantizer), "vone", "a version-1 test plugin", "0.0.1",
     FRONTIER_Q_DETERMINISTIC, 1, configs, rule_size_bits, rule_quantize_cpu, NULL, NULL},
    {(uintptr_t)0xdeadbeef, (uintptr_t)0xfeedface},
};
#define DESCRIPTOR ((const frontier_quantizer *)&v1.q)
#endif

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *h)
{
    host = h;
    return DESCRIPTOR;
}
