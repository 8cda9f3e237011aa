/*
 * Every registered built-in configuration: descriptor sanity, round-trip
 * error bounds per bit width on seeded gaussian data, monotone error in bits
 * within a family, exact bits per weight, all-zero tensors, non-finite and
 * malformed input, the same output with 1 and N threads, and small cases
 * worked by hand for the five families of the first release.
 */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "frontier/exec/metrics.h"
#include "qtest.h"
#include "quantizers/builtin.h"
#include "quantizers/ggml_blocks.h"

static fr_pool *pool1, *pool4;

static double rel_err_of(const float *w, const float *w_hat, int64_t n)
{
    frontier_error_sums sums;
    fr_metrics m;
    fr_error err;
    fr_error_sums_init(&sums);
    if (fr_error_sums_accumulate(w, w_hat, n, pool4, &sums, &err) != FR_OK)
        return NAN;
    fr_metrics_from_sums(&sums, &m);
    return m.rel_err;
}

/* Quantizes w with the named configuration; returns its rel_err (NaN on failure). */
static double run_config(const char *name, const float *w, float *w_hat, int64_t rows, int64_t cols,
                         fr_pool *pool)
{
    const frontier_quantizer *q;
    const frontier_config *cfg;
    char msg[512];
    if (!qt_find(name, &q, &cfg)) {
        CHECK_MSG(0, "configuration %s not registered", name);
        return NAN;
    }
    int rc = qt_quantize(q, cfg, w, w_hat, rows, cols, pool, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_OK, "%s on %lld x %lld: %d %s", name, (long long)rows, (long long)cols,
              rc, msg);
    return rc == FRONTIER_OK ? rel_err_of(w, w_hat, rows * cols) : NAN;
}

/* ---- the descriptors ---- */

/*
 * Largest rel_err allowed on unit gaussian data, per configuration, about
 * 1.25x what the reference produced when the test was written (the ggml
 * test-quantize-fns idea: a fixed bound per bit width catches a broken
 * rounding or scale long before it shows up elsewhere). Every registered
 * configuration must have one and every one must name a registered
 * configuration, so a new family's file of bounds (bounds/<family>.inc) is
 * part of the family: the test fails without it.
 */
typedef struct bound {
    const char *config;
    double max_rel_err;
} bound;

static const bound bounds[] = {
#include "bounds_all.inc" /* every bounds/<family>.inc (tests/quantizers/CMakeLists.txt) */
};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

static double bound_for(const char *name)
{
    for (size_t i = 0; i < N_BOUNDS; i++)
        if (!strcmp(bounds[i].config, name))
            return bounds[i].max_rel_err;
    return -1.0;
}

/* The host families (calibrated and optimised variants, wrapping a base
 * configuration): tests/calibrated checks them against references. The
 * ggml family is host-only but data-free and a base of its own: it has
 * bounds and the properties here (and its rules in tests/quantize). */
static int is_wrapped(int family)
{
    return family >= FR_KERNEL_FAMILY_COUNT && family != FR_FAMILY_GGML;
}

static void check_quantizer(const frontier_quantizer *q, int wrapped)
{
    CHECK_MSG(q->abi_version == FRONTIER_PLUGIN_ABI_VERSION, "%s: abi", q->name);
    CHECK_MSG(q->struct_size == sizeof(frontier_quantizer), "%s: struct_size", q->name);
    CHECK_MSG(q->name && q->description && q->version, "%s: strings", q->name);
    CHECK_MSG(q->size_bits && q->quantize_cpu, "%s: required functions", q->name);
    CHECK_MSG((q->flags & ~FRONTIER_Q_KNOWN_FLAGS) == 0, "%s: unknown flags", q->name);
    CHECK_MSG(q->flags & FRONTIER_Q_DETERMINISTIC, "%s: deterministic", q->name);
    if (!wrapped)
        CHECK_MSG(!(q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)),
                  "%s: data-free", q->name);
    CHECK_MSG(!!(q->flags & FRONTIER_Q_HAS_CUDA) == (q->quantize_cuda || q->sweep_cuda),
              "%s: HAS_CUDA flag matches the functions", q->name);
}

/* An int configuration's name is what its parameters say (docs/formats.md):
 * int<bits>-<g<group_size> | gC | tensor>-<sym | asym>. */
static void check_int_name(const frontier_config *cfg, const cJSON *params)
{
    const cJSON *bits = cJSON_GetObjectItem(params, "bits");
    const cJSON *sym = cJSON_GetObjectItem(params, "symmetric");
    const cJSON *gran = cJSON_GetObjectItem(params, "granularity");
    const cJSON *group = cJSON_GetObjectItem(params, "group_size");
    if (!cJSON_IsNumber(bits) || !cJSON_IsBool(sym) || !cJSON_IsString(gran)) {
        CHECK_MSG(0, "%s: params lack bits, symmetric or granularity: %s", cfg->name,
                  cfg->params_json);
        return;
    }
    char scope[32];
    if (!strcmp(gran->valuestring, "group") && cJSON_IsNumber(group))
        snprintf(scope, sizeof scope, "g%d", group->valueint);
    else if (!strcmp(gran->valuestring, "row"))
        snprintf(scope, sizeof scope, "gC");
    else
        snprintf(scope, sizeof scope, "%s", gran->valuestring);
    char name[64];
    snprintf(name, sizeof name, "int%d-%s-%s", bits->valueint, scope,
             cJSON_IsTrue(sym) ? "sym" : "asym");
    CHECK_MSG(!strcmp(name, cfg->name), "%s: params %s describe %s", cfg->name, cfg->params_json,
              name);
    CHECK_MSG(cfg->nominal_bits == bits->valueint, "%s: nominal bits %g", cfg->name,
              cfg->nominal_bits);
}

static void check_descriptors(void)
{
    const fr_registry *reg = qt_registry();
    CHECK_MSG(reg->n_entries > 0 && reg->n_configs > 0, "%zu quantizers, %zu configurations",
              reg->n_entries, reg->n_configs);
    for (size_t e = 0; e < fr_n_builtin_entries; e++)
        CHECK_MSG(fr_builtin_entries[e](NULL) == NULL, "built-in entry %zu accepts a NULL host", e);
    for (size_t e = 0; e < reg->n_entries; e++) {
        CHECK_MSG(!strcmp(reg->entries[e].origin, FR_ORIGIN_BUILTIN), "%s: origin %s",
                  reg->entries[e].q->name, reg->entries[e].origin);
        check_quantizer(reg->entries[e].q, is_wrapped(reg->entries[e].family));
    }
    for (size_t c = 0; c < reg->n_configs; c++) {
        const fr_config_ref *ref = &reg->configs[c];
        const frontier_config *cfg = ref->cfg;
        cJSON *params = cJSON_Parse(cfg->params_json);
        CHECK_MSG(params && cJSON_IsObject(params), "%s: params_json does not parse: %s",
                  cfg->name, cfg->params_json);
        CHECK_MSG(cfg->nominal_bits >= 2 && cfg->nominal_bits <= 8, "%s: nominal bits",
                  cfg->name);
        CHECK_MSG(fr_registry_find_config(reg, cfg->name) == ref, "%s: name not unique",
                  cfg->name);
        if (!is_wrapped(reg->entries[ref->quantizer].family))
            CHECK_MSG(bound_for(cfg->name) > 0,
                      "%s: no error bound in tests/quantizers/bounds/<family>.inc", cfg->name);
        if (params && !strcmp(fr_config_quantizer(reg, ref)->name, "int"))
            check_int_name(cfg, params);
        /* a configuration the GGUF writer stores as a type is that type in
         * a recipe's llama_cpp_type and tensor-type file too */
        const char *gguf = fr_config_traits_of(ref)->gguf_type;
        if (gguf)
            CHECK_MSG(fr_builtin_ggml_type(cfg->name) && !strcmp(fr_builtin_ggml_type(cfg->name), gguf),
                      "%s: traits' gguf_type %s, family table's llama.cpp type %s", cfg->name,
                      gguf, fr_builtin_ggml_type(cfg->name) ? fr_builtin_ggml_type(cfg->name) : "none");
        cJSON_Delete(params);
    }
    for (size_t i = 0; i < N_BOUNDS; i++)
        CHECK_MSG(fr_registry_find_config(reg, bounds[i].config) != NULL,
                  "tests/quantizers/bounds/ names %s, which is not registered", bounds[i].config);
    const frontier_quantizer *q;
    const frontier_config *cfg;
    CHECK_MSG(qt_find("nvfp4", &q, &cfg) && cfg->nominal_bits == 4, "nvfp4 nominal bits");
    CHECK_MSG(qt_find("mxfp6-e2m3", &q, &cfg) && cfg->nominal_bits == 6, "mxfp6 nominal bits");
    CHECK_MSG(qt_find("fp8-e5m2-tensor", &q, &cfg) && cfg->nominal_bits == 8, "fp8 nominal bits");
}

/* ---- sizes ---- */

static uint64_t size_of(const char *name, int64_t rows, int64_t cols)
{
    const frontier_quantizer *q;
    const frontier_config *cfg;
    uint64_t bits = 0;
    char msg[512];
    if (!qt_find(name, &q, &cfg))
        return 0;
    int rc = qt_size(q, cfg, rows, cols, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_OK, "%s size: %s", name, msg);
    return bits;
}

static void check_sizes(void)
{
    const uint64_t n = 4096ull * 4096ull;
    /* the examples of docs/formats.md */
    CHECK_MSG((double)size_of("int4-g128-asym", 4096, 4096) / (double)n == 4.15625,
              "int4-g128-asym 4096x4096 is %.17g bits/weight",
              (double)size_of("int4-g128-asym", 4096, 4096) / (double)n);
    CHECK_MSG(size_of("nvfp4", 4096, 4096) == n * 9 / 2 + 32, "nvfp4 4096x4096: 4.5 + 32/numel");
    CHECK_MSG(size_of("int4-g128-sym", 4096, 4096) == n * 4 + n / 128 * 16, "int4-g128-sym");
    CHECK_MSG(size_of("mxfp4", 4096, 4096) == n * 4 + n / 32 * 8, "mxfp4: 4.25");
    CHECK_MSG(size_of("mxfp6-e3m2", 4096, 4096) == n * 6 + n / 32 * 8, "mxfp6: 6.25");
    CHECK_MSG(size_of("mxint8", 4096, 4096) == n * 8 + n / 32 * 8, "mxint8: 8.25");
    CHECK_MSG(size_of("nf4-g64", 4096, 4096) == n * 9 / 2, "nf4-g64: 4.5");
    /* nf4-dq: 4 + 8/64 + 32 * ceil(blocks/256) / numel + 32 / numel */
    CHECK_MSG(size_of("nf4-g64-dq", 4096, 4096) == n * 4 + n / 64 * 8 + 32 * (n / 64 / 256) + 32,
              "nf4-g64-dq 4096x4096");
    CHECK_MSG(size_of("fp8-e4m3-tensor", 4096, 4096) == n * 8 + 32, "fp8 tensor");
    CHECK_MSG(size_of("fp8-e5m2-channel", 4096, 4096) == n * 8 + 4096 * 32, "fp8 channel");
    CHECK_MSG(size_of("fp8-e4m3-block128", 4096, 4096) == n * 8 + 32 * 32 * 32, "fp8 block128");
    /* short last groups and edge tiles still store a full scale */
    CHECK_MSG(size_of("int3-g32-sym", 5, 33) == 3 * 165 + 5 * 2 * 16, "int3-g32-sym 5x33");
    CHECK_MSG(size_of("int3-g32-asym", 5, 33) == 3 * 165 + 5 * 2 * (16 + 3), "int3-g32-asym 5x33");
    CHECK_MSG(size_of("int4-gC-asym", 7, 100) == 4 * 700 + 7 * (16 + 4), "int4-gC-asym 7x100");
    CHECK_MSG(size_of("int8-tensor-asym", 10, 10) == 800 + 32 + 8, "int8-tensor-asym 10x10");
    CHECK_MSG(size_of("int2-tensor-sym", 1, 3) == 6 + 32, "int2-tensor-sym 1x3");
    CHECK_MSG(size_of("nvfp4", 3, 17) == 4 * 51 + 3 * 2 * 8 + 32, "nvfp4 3x17");
    CHECK_MSG(size_of("mxfp6-e2m3", 3, 33) == 6 * 99 + 3 * 2 * 8, "mxfp6 3x33");
    CHECK_MSG(size_of("fp8-e4m3-block128", 130, 257) == 8 * 130 * 257 + 2 * 3 * 32,
              "fp8 block128 130x257");
    CHECK_MSG(size_of("nf4-g64", 2, 65) == 4 * 130 + 2 * 2 * 32, "nf4 2x65");
    /* 257 rows of 64: 257 blocks -> 2 second-level groups */
    CHECK_MSG(size_of("nf4-g64-dq", 257, 64) == 4 * 257 * 64 + 257 * 8 + 2 * 32 + 32,
              "nf4-g64-dq 257x64");
    CHECK_MSG(size_of("nf4-g64-dq", 1, 1) == 4 + 8 + 32 + 32, "nf4-g64-dq 1x1");
    /* llama.cpp's types: their block bytes; a super-block of 256 on a short
     * row still stores all its bytes; the imatrix variants the same blocks */
    static const struct {
        const char *name;
        double bits;
    } ggml_bits[] = {{"ggml-q2_k", 2.625},  {"ggml-q3_k", 3.4375}, {"ggml-q4_k", 4.5},
                     {"ggml-q5_k", 5.5},    {"ggml-q6_k", 6.5625}, {"ggml-iq4_nl", 4.5},
                     {"ggml-iq4_xs", 4.25}, {"ggml-q4_0", 4.5},    {"ggml-q8_0", 8.5}};
    for (size_t i = 0; i < sizeof ggml_bits / sizeof ggml_bits[0]; i++) {
        char imat[64];
        snprintf(imat, sizeof imat, "imat-%s", ggml_bits[i].name);
        double bpw = (double)size_of(ggml_bits[i].name, 4096, 4096) / (double)n;
        CHECK_MSG(bpw == ggml_bits[i].bits, "%s: %.17g bits per weight", ggml_bits[i].name, bpw);
        if (strstr(ggml_bits[i].name, "_k") || strstr(ggml_bits[i].name, "iq4"))
            CHECK_MSG(size_of(imat, 4096, 4096) == size_of(ggml_bits[i].name, 4096, 4096),
                      "%s: the base's size", imat);
    }
    /* rows no block divides: llama-quantize's fallback (IQ4_XS to IQ4_NL,
     * and F16 where no block of 32 fits either; tests/quantize has the rule) */
    CHECK_MSG(size_of("ggml-q4_k", 3, 300) == 3 * 300 * 16, "ggml-q4_k 3x300");
    CHECK_MSG(size_of("ggml-iq4_xs", 2, 64) == 2 * 2 * 18 * 8, "ggml-iq4_xs 2x64");

    /* overflow, empty shapes and foreign configurations are refused with a message */
    const frontier_quantizer *q, *q2;
    const frontier_config *cfg, *cfg2;
    uint64_t bits;
    char msg[512];
    CHECK_MSG(qt_find("int8-g32-asym", &q, &cfg) && qt_find("nvfp4", &q2, &cfg2), "lookup");
    int rc = qt_size(q, cfg, INT64_MAX / 2, 2, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID && strstr(msg, "overflows 64 bits"), "overflow: %d '%s'",
              rc, msg);
    rc = qt_size(q, cfg, (int64_t)1 << 31, (int64_t)1 << 31, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID && !strcmp(msg, "size of a 2147483648 x 2147483648 "
                                                         "tensor overflows 64 bits"),
              "overflow message '%s'", msg);
    rc = qt_size(q, cfg, (int64_t)1 << 40, (int64_t)1 << 30, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID &&
                  !strcmp(msg, "1099511627776 x 1073741824 elements overflow 64 bits"),
              "int64 overflow message '%s'", msg);
    rc = qt_size(q, cfg, 0, 5, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID && !strcmp(msg, "empty tensor (0 x 5)"), "empty: '%s'", msg);
    rc = qt_size(q, cfg2, 4, 4, &bits, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID && !strcmp(msg, "int: configuration 'nvfp4' is not one of mine"),
              "foreign config: '%s'", msg);
}

/* ---- error bounds, monotonicity, determinism, zeros, bad input ---- */

typedef struct shape {
    int64_t rows, cols;
} shape;

/* The buffers of check_every_config, each of max_n floats. */
typedef struct buffers {
    float *w, *a, *b, *zero;
} buffers;

/* Whether cfg stores rows of cols as F16: its GGUF type's last fallback. */
static int stored_as_f16(const frontier_config *cfg, int64_t cols)
{
    const fr_config_ref *ref = fr_registry_find_config(qt_registry(), cfg->name);
    const fr_ggml_params *p = ref ? fr_ggml_params_by_name(fr_config_traits_of(ref)->gguf_type)
                                  : NULL;
    return p && fr_ggml_stored_type(p, cols) == &fr_ggml_f16;
}

/* On one shape: the error bound, 1 and 4 threads alike, finite output,
 * scaling by powers of two, zero in zero out. Returns the rel_err. */
static double check_config_on(const frontier_config *cfg, const shape *sh, uint64_t seed,
                              const buffers *buf)
{
    float *w = buf->w, *a = buf->a, *b = buf->b, *zero = buf->zero;
    int64_t rows = sh->rows, cols = sh->cols, n = rows * cols;
    qt_gaussian(w, n, seed, 1.0);
    double r1 = run_config(cfg->name, w, a, rows, cols, pool1);
    double r4 = run_config(cfg->name, w, b, rows, cols, pool4);
    CHECK_MSG(memcmp(a, b, (size_t)n * sizeof *a) == 0, "%s %lldx%lld: 1 and 4 threads differ",
              cfg->name, (long long)rows, (long long)cols);
    int finite = 1;
    for (int64_t i = 0; i < n; i++)
        finite &= isfinite(a[i]) != 0;
    CHECK_MSG(finite, "%s: non-finite output", cfg->name);
    double limit = bound_for(cfg->name);
    CHECK_MSG(limit > 0, "%s: no error bound", cfg->name);
    CHECK_MSG(r1 == r4 && r1 <= limit, "%s %lldx%lld: rel_err %.6g > bound %.6g", cfg->name,
              (long long)rows, (long long)cols, r1, limit);
    /* every scale of every format is a product or quotient of the data by
     * constants, rounded in a floating type: multiplying the input by a power
     * of two (with all scales staying normal) multiplies the output by
     * exactly the same power; not F16 itself, a GGUF type's last fallback on
     * rows no block of 32 divides, whose subnormals are absolute steps */
    for (int k = -3; k <= 5 && !stored_as_f16(cfg, cols); k += 8) {
        float *scaled = zero; /* borrowed; cleared again below */
        float p = ldexpf(1.0f, k);
        for (int64_t i = 0; i < n; i++)
            scaled[i] = w[i] * p;
        run_config(cfg->name, scaled, b, rows, cols, pool4);
        int exact = 1;
        for (int64_t i = 0; i < n; i++)
            exact &= qt_same(b[i], a[i] * p);
        CHECK_MSG(exact, "%s %lldx%lld: input x 2^%d does not scale the output by 2^%d",
                  cfg->name, (long long)rows, (long long)cols, k, k);
        memset(zero, 0, (size_t)n * sizeof *zero);
    }
    /* all zero in, all zero out */
    memset(b, 0xff, (size_t)n * sizeof *b);
    run_config(cfg->name, zero, b, rows, cols, pool4);
    int all_zero = 1;
    for (int64_t i = 0; i < n; i++)
        all_zero &= b[i] == 0.0f;
    CHECK_MSG(all_zero, "%s: all-zero tensor does not reconstruct to zero", cfg->name);
    frontier_error_sums sums;
    fr_metrics m;
    fr_error err;
    fr_error_sums_init(&sums);
    fr_error_sums_accumulate(zero, b, n, pool4, &sums, &err);
    fr_metrics_from_sums(&sums, &m);
    CHECK_MSG(m.rel_err == 0.0 && m.cosine == 1.0 && isinf(m.sqnr_db), "%s: all-zero metrics",
              cfg->name);
    return r1;
}

/* Bad input: a NaN or Inf weight is refused, naming its position, whatever
 * the thread count; empty shapes and missing buffers too. */
static void check_config_refuses(const frontier_quantizer *q, const frontier_config *cfg,
                                 const buffers *buf)
{
    float *w = buf->w, *a = buf->a;
    int64_t rows = 130, cols = 1000;
    char msg[512];
    qt_gaussian(w, rows * cols, 77, 1.0);
    w[57 * cols + 999] = NAN;
    w[100 * cols + 3] = -INFINITY;
    for (int t = 0; t < 2; t++) {
        int rc = qt_quantize(q, cfg, w, a, rows, cols, t ? pool4 : pool1, msg, sizeof msg);
        CHECK_MSG(rc == FRONTIER_ERR_INVALID &&
                      !strcmp(msg, "non-finite weight at row 57, column 999"),
                  "%s: NaN input gives %d '%s'", cfg->name, rc, msg);
    }
    int rc = qt_quantize(q, cfg, w, a, 3, 0, pool1, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID && !strcmp(msg, "empty tensor (3 x 0)"),
              "%s: empty tensor: %d '%s'", cfg->name, rc, msg);
    rc = qt_quantize(q, cfg, NULL, a, 3, 3, pool1, msg, sizeof msg);
    CHECK_MSG(rc == FRONTIER_ERR_INVALID, "%s: NULL input", cfg->name);
}

/* Every registered configuration; --print-bounds prints the rows of
 * tests/quantizers/bounds/<family>.inc. */
static void check_every_config(int print_table)
{
    /* cols not a multiple of any group: short groups everywhere; 130 rows: edge tiles */
    const shape shapes[] = {{130, 1000}, {1, 3001}, {64, 256}};
    const int64_t max_n = 130 * 1000 + 64;
    buffers buf = {malloc(max_n * sizeof(float)), malloc(max_n * sizeof(float)),
                   malloc(max_n * sizeof(float)), calloc(max_n, sizeof(float))};
    const fr_registry *reg = qt_registry();
    if (!buf.w || !buf.a || !buf.b || !buf.zero) {
        CHECK_MSG(0, "out of memory");
        goto done;
    }
    for (size_t c = 0; c < reg->n_configs; c++) {
        const frontier_config *cfg = reg->configs[c].cfg;
        if (is_wrapped(reg->entries[reg->configs[c].quantizer].family))
            continue;
        double worst = 0.0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            double r = check_config_on(cfg, &shapes[s], 1000 + s, &buf);
            worst = r > worst ? r : worst;
        }
        if (print_table)
            printf("    {\"%s\", %.3g},\n", cfg->name, worst * 1.25);
        check_config_refuses(fr_config_quantizer(reg, &reg->configs[c]), cfg, &buf);
    }
done:
    free(buf.w);
    free(buf.a);
    free(buf.b);
    free(buf.zero);
}

/* rel_err falls strictly with every added bit, for each int granularity and sym/asym. */
static void check_monotone(void)
{
    const int64_t rows = 64, cols = 1024, n = rows * cols;
    float *w = malloc(n * sizeof *w), *w_hat = malloc(n * sizeof *w_hat);
    if (!w || !w_hat) {
        CHECK_MSG(0, "out of memory");
        goto done;
    }
    qt_gaussian(w, n, 9, 1.0);
    const char *grans[] = {"g32", "g64", "g128", "g256", "gC", "tensor"};
    for (int g = 0; g < 6; g++)
        for (int s = 0; s < 2; s++) {
            double prev = INFINITY;
            for (int b = 2; b <= 8; b++) {
                char name[64];
                snprintf(name, sizeof name, "int%d-%s-%s", b, grans[g], s ? "asym" : "sym");
                double r = run_config(name, w, w_hat, rows, cols, pool4);
                CHECK_MSG(r < prev, "%s: rel_err %.6g not below int%d's %.6g", name, r, b - 1, prev);
                prev = r;
            }
        }
    /* and within a width, smaller groups never hurt on gaussian data */
    for (int b = 2; b <= 8; b++)
        for (int s = 0; s < 2; s++) {
            double prev = 0.0;
            for (int g = 0; g < 6; g++) {
                char name[64];
                snprintf(name, sizeof name, "int%d-%s-%s", b, grans[g], s ? "asym" : "sym");
                double r = run_config(name, w, w_hat, rows, cols, pool4);
                CHECK_MSG(r >= prev, "%s: rel_err %.6g below a smaller group's %.6g", name, r, prev);
                prev = r;
            }
        }
    /* microscaling: 4 > 6 > 8 element bits */
    double fp4 = run_config("mxfp4", w, w_hat, rows, cols, pool4);
    double e3m2 = run_config("mxfp6-e3m2", w, w_hat, rows, cols, pool4);
    double e2m3 = run_config("mxfp6-e2m3", w, w_hat, rows, cols, pool4);
    double e4m3 = run_config("mxfp8-e4m3", w, w_hat, rows, cols, pool4);
    double e5m2 = run_config("mxfp8-e5m2", w, w_hat, rows, cols, pool4);
    double int8 = run_config("mxint8", w, w_hat, rows, cols, pool4);
    CHECK_MSG(fp4 > e3m2 && fp4 > e2m3, "mxfp4 %.4g vs mxfp6 %.4g %.4g", fp4, e3m2, e2m3);
    /* not e2m3 > e4m3: both have 3 mantissa bits, and on gaussian blocks E2M3's range suffices */
    CHECK_MSG(e3m2 > e4m3 && e3m2 > int8 && e2m3 > int8, "mxfp6 %.4g %.4g vs mxfp8-e4m3 %.4g, "
              "mxint8 %.4g", e3m2, e2m3, e4m3, int8);
    CHECK_MSG(e5m2 > e4m3, "mxfp8: e5m2 (2 mantissa bits) worse than e4m3");
    CHECK_MSG(run_config("fp8-e5m2-tensor", w, w_hat, rows, cols, pool4) >
                  run_config("fp8-e4m3-tensor", w, w_hat, rows, cols, pool4),
              "fp8: e5m2 worse than e4m3");
done:
    free(w);
    free(w_hat);
}

/* ---- small cases worked by hand ---- */

/* The quantizers (registry entries) that some case below worked by hand. */
static unsigned char *by_hand_done;

static void expect(const char *name, const float *w, int64_t rows, int64_t cols, const float *want)
{
    float w_hat[512];
    const fr_registry *reg = qt_registry();
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    if (ref && by_hand_done)
        by_hand_done[ref->quantizer] = 1;
    run_config(name, w, w_hat, rows, cols, pool1);
    for (int64_t i = 0; i < rows * cols; i++)
        CHECK_MSG(qt_same(w_hat[i], want[i]), "%s: element %lld: %.9g, want %.9g", name,
                  (long long)i, w_hat[i], want[i]);
}

static void by_hand_int(void)
{
    float w[512], want[512];

    /* int4-g32-sym: amax 7 -> s = fp16(7/7) = 1; rint ties to even (3.5 -> 4, 2.5 -> 2) */
    {
        const float x[] = {-7, 3.5f, 2.5f, 1.2f, 0.24f, -0.5f, -1.5f, 6.6f};
        const float y[] = {-7, 4, 2, 1, 0, 0, -2, 7};
        memset(w, 0, 32 * sizeof *w);
        memset(want, 0, 32 * sizeof *want);
        memcpy(w, x, sizeof x);
        memcpy(want, y, sizeof y);
        expect("int4-g32-sym", w, 1, 32, want);
    }
    /* int4-gC-sym on one row of 5: s = fp16(8/7) = 1170/1024 (8/7 = 1.142857 rounded to 10
     * mantissa bits); q = 1, 2, 3, 4, -7 */
    {
        const float x[] = {1, 2, 3, 4, -8};
        const float s = 1170.0f / 1024.0f;
        const float y[] = {1 * s, 2 * s, 3 * s, 4 * s, -7 * s};
        expect("int4-gC-sym", x, 1, 5, y);
    }
    /* int2-g32-asym: lo -1, hi 2, s = fp16(3/3) = 1, z = rint(1/1) = 1; q = rint(x) + 1 */
    {
        const float x[] = {-1, 0, 2, 0.9f, -0.4f, 1.5f};
        const float y[] = {-1, 0, 2, 1, 0, 2};
        memset(w, 0, 32 * sizeof *w);
        memset(want, 0, 32 * sizeof *want);
        memcpy(w, x, sizeof x);
        memcpy(want, y, sizeof y);
        expect("int2-g32-asym", w, 1, 32, want);
    }
    /* int3-g32-asym on {0, 1}: s = fp16(1/7) = 1170/8192, z = 0, q(1) = rint(7.0017) = 7:
     * the fp16 scale is used before quantizing, so 1 comes back as 7 * 1170/8192 */
    {
        memset(w, 0, 32 * sizeof *w);
        memset(want, 0, 32 * sizeof *want);
        w[1] = 1;
        want[1] = 7.0f * 1170.0f / 8192.0f; /* 0.999755859375 */
        expect("int3-g32-asym", w, 1, 32, want);
    }
    /* int8-tensor-sym: one fp32 scale 127/127 = 1 */
    {
        const float x[] = {-127, 0.5f, 1.5f, 100.4f};
        const float y[] = {-127, 0, 2, 100};
        expect("int8-tensor-sym", x, 2, 2, y);
    }
    /* int2-tensor-asym: lo -1, hi 5, s = 6/3 = 2, z = rint(0.5) = 0 (ties to even), so -1
     * clamps to code 0 and reconstructs to 0; 5/2 = 2.5 and 3/2 = 1.5 both tie to code 2 */
    {
        const float x[] = {-1, 5, 3, 0.9f};
        const float y[] = {0, 4, 4, 0};
        expect("int2-tensor-asym", x, 1, 4, y);
    }
}

static void by_hand_fp8(void)
{
    /* fp8-e4m3-tensor: amax 896 -> s = 2; 34/2 = 17 ties to 16 (even mantissa); 0.001/2 is
     * below half the smallest subnormal 2^-9 */
    {
        const float x[] = {896, 1, -3, 0.001f, 34};
        const float y[] = {896, 1, -3, 0, 32};
        expect("fp8-e4m3-tensor", x, 1, 5, y);
    }
    /* fp8-e5m2-channel: row 0 amax 57344 -> s = 1, 1.125 ties to 1 (2 mantissa bits), 1.25
     * exact; row 1 all zero -> scale 0 -> zeros */
    {
        const float x[] = {57344, 1.125f, 1.25f, 0, 0, 0};
        const float y[] = {57344, 1, 1.25f, 0, 0, 0};
        expect("fp8-e5m2-channel", x, 2, 3, y);
    }
}

static void by_hand_nvfp4(void)
{
    float w[512], want[512];

    /* nvfp4, two groups of 16: amax 6 -> gs = 2688/6 = 448; group 0 scale e4m3(448) = 448,
     * elements round on the E2M1 grid; group 1 amax 1 -> 1/6*448 = 74.67 -> e4m3 72
     * (step 8 in [64, 128)); 1*448/72 = 6.22 -> 6 -> 6*72/448; 0.5 -> 3.11 -> 3 */
    {
        memset(w, 0, 32 * sizeof *w);
        memset(want, 0, 32 * sizeof *want);
        const float x[] = {6, 3, 2.9f, -1.1f, 0.3f, 0.2f, -0.75f, 5};
        const float y[] = {6, 3, 3, -1, 0.5f, 0, -1, 4};
        memcpy(w, x, sizeof x);
        memcpy(want, y, sizeof y);
        w[16] = 1;
        want[16] = 0.9642857142857143f; /* 432/448 */
        w[17] = 0.5f;
        want[17] = 0.48214285714285715f; /* 216/448 */
        expect("nvfp4", w, 1, 32, want);
    }
}

static void by_hand_mx(void)
{
    float w[512], want[512];

    /* mxfp4, three blocks of 32: amax 6 -> e = 2 - 2 = 0, X = 1 (0.75 ties up to 1, -2.5 ties
     * down to -2); amax 7 -> X = 1 too, so 7 saturates to 6 (the spec's note); amax 0.3 ->
     * e = -2 - 2 = -4, X = 1/16, 0.3 * 16 = 4.8 -> 4 -> 0.25 */
    {
        memset(w, 0, 96 * sizeof *w);
        memset(want, 0, 96 * sizeof *want);
        const float x[] = {6, 0.75f, -2.5f, 0.1f, 5};
        const float y[] = {6, 1, -2, 0, 4};
        memcpy(w, x, sizeof x);
        memcpy(want, y, sizeof y);
        w[32] = 7;
        want[32] = 6;
        w[64] = 0.3f;
        want[64] = 0.25f;
        expect("mxfp4", w, 1, 96, want);
    }
    /* mxint8: amax 1.99 -> e = 0, X = 1; 1.99 * 64 = 127.36 -> 127/64; 1.5/64 ties to 2/64;
     * 0.5/64 ties to 0 */
    {
        memset(w, 0, 32 * sizeof *w);
        memset(want, 0, 32 * sizeof *want);
        w[0] = 1.99f;
        want[0] = 127.0f / 64.0f;
        w[1] = 1.5f / 64.0f;
        want[1] = 2.0f / 64.0f;
        w[2] = 0.5f / 64.0f;
        want[2] = 0;
        w[3] = -1;
        want[3] = -1;
        expect("mxint8", w, 1, 32, want);
    }
}

static void by_hand_nf4(void)
{
    float w[512], want[512];

    /* nf4-g64: a = 2; y = 1, -1, 0.5, 0.25 -> codes 1, -1, 0.4407098 (0.0593 away vs 0.0626),
     * 0.2461123 */
    {
        memset(w, 0, 64 * sizeof *w);
        memset(want, 0, 64 * sizeof *want);
        const float x[] = {2, -2, 1, 0.5f};
        const float y[] = {2, -2, 2 * 0.4407098f, 2 * 0.2461123f};
        memcpy(w, x, sizeof x);
        memcpy(want, y, sizeof y);
        expect("nf4-g64", w, 1, 64, want);
    }
    /* nf4-g64-dq, three blocks with absmax 4, 1, 1: m = 2, c = fp32(2/127); the blocks of
     * absmax 1 have (a - m)/c = -63.5, which ties to k = -64, so their scale becomes
     * -64 c + 2 = 0.992126 and x = 1 -> y = 1.0079 -> code 1 -> 0.992126; block 0 has k = 127
     * and keeps 127 c + 2 */
    {
        memset(w, 0, 192 * sizeof *w);
        memset(want, 0, 192 * sizeof *want);
        const float c = 2.0f / 127.0f;
        const float a0 = 127.0f * c + 2.0f, a1 = -64.0f * c + 2.0f;
        w[0] = 4;
        want[0] = a0; /* y = 4/a0 ~ 1 -> code 1 */
        w[64] = 1;
        want[64] = a1;
        w[128] = -1;
        want[128] = -a1;
        w[129] = 0.5f; /* y = 0.504 -> 0.4407098 (0.063 away) vs 0.5626170 (0.059 away) */
        want[129] = 0.5626170f * a1;
        expect("nf4-g64-dq", w, 1, 192, want);
        /* and without double quantization the same tensor keeps its absmax exactly */
        want[64] = 1;
        want[128] = -1;
        want[129] = 0.4407098f;
        want[0] = 4;
        expect("nf4-g64", w, 1, 192, want);
    }
    /* nf4-g64-dq where every block has the same absmax: c = 0 -> a' = m = a */
    {
        for (int i = 0; i < 256; i++)
            w[i] = (i % 64 == 0) ? 3.0f : (float)(i % 7) * 0.25f;
        float a[256], b[256];
        run_config("nf4-g64", w, a, 4, 64, pool1);
        run_config("nf4-g64-dq", w, b, 4, 64, pool1);
        CHECK_MSG(memcmp(a, b, sizeof a) == 0, "nf4-g64-dq with equal absmax differs from nf4-g64");
    }
}

/* Small cases worked by hand for the families that have them. A family
 * without one (a new one, docs/adding-a-quantizer.md) is named in a note:
 * its bounds, properties and GPU parity still cover it, and a hand-worked
 * case is the reviewer's to ask for. */
static void check_by_hand(void)
{
    const fr_registry *reg = qt_registry();
    by_hand_done = calloc(reg->n_entries ? reg->n_entries : 1, 1);
    CHECK_MSG(by_hand_done != NULL, "out of memory");
    by_hand_int();
    by_hand_fp8();
    by_hand_nvfp4();
    by_hand_mx();
    by_hand_nf4();
    for (size_t e = 0; by_hand_done && e < reg->n_entries; e++)
        if (!by_hand_done[e])
            printf("note: family %s has no case worked by hand\n", reg->entries[e].q->name);
    free(by_hand_done);
    by_hand_done = NULL;
}

/* The spec's int rules, checked as properties on every group: the output is
 * k * s for an integer code in range, and it is the nearest such value. */
static void check_int_grid(void)
{
    const int64_t rows = 16, cols = 300, n = rows * cols;
    float *w = malloc(n * sizeof *w), *w_hat = malloc(n * sizeof *w_hat);
    if (!w || !w_hat) {
        CHECK_MSG(0, "out of memory");
        goto done;
    }
    qt_gaussian(w, n, 31, 0.02);
    for (int b = 2; b <= 8; b++) {
        char name[64];
        snprintf(name, sizeof name, "int%d-g64-sym", b);
        run_config(name, w, w_hat, rows, cols, pool4);
        float qmax = (float)((1 << (b - 1)) - 1);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t g0 = 0; g0 < cols; g0 += 64) {
                int64_t len = cols - g0 < 64 ? cols - g0 : 64;
                const float *x = w + r * cols + g0, *y = w_hat + r * cols + g0;
                float amax = 0;
                for (int64_t i = 0; i < len; i++)
                    amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
                float s = (float)(_Float16)(amax / qmax); /* the compiler's binary16 */
                for (int64_t i = 0; i < len; i++) {
                    float k = y[i] / s;
                    CHECK_MSG(k == rintf(k) && fabsf(k) <= qmax, "%s: %g is not on the grid", name,
                              y[i]);
                    float up = fminf(k + 1, qmax) * s, down = fmaxf(k - 1, -qmax) * s;
                    CHECK_MSG(fabsf(x[i] - y[i]) <= fabsf(x[i] - up) &&
                                  fabsf(x[i] - y[i]) <= fabsf(x[i] - down),
                              "%s: %g -> %g is not the nearest grid value", name, x[i], y[i]);
                }
            }
    }
done:
    free(w);
    free(w_hat);
}

int main(int argc, char **argv)
{
    fr_error err;
    if (fr_pool_create(1, &pool1, &err) != FR_OK || fr_pool_create(4, &pool4, &err) != FR_OK) {
        fprintf(stderr, "test_quantizers: %s\n", err.msg);
        return 1;
    }
    int print_table = argc > 1 && !strcmp(argv[1], "--print-bounds");
    check_descriptors();
    check_sizes();
    check_every_config(print_table);
    check_monotone();
    check_by_hand();
    check_int_grid();
    fr_pool_destroy(pool1);
    fr_pool_destroy(pool4);
    return fr_test_finish("test_quantizers");
}
