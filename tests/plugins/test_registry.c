/*
 * The registry with descriptors built in this file: every validation rule
 * with its exact message, lookups, flag names, and the checked calls that
 * catch a quantizer's misbehaviour at run time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "frontier/exec/builtins.h"
#include "plugin_test.h"

/* ---- a well-formed quantizer: rounds to multiples of 1/4 ---- */

static int quarter_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                             uint64_t *total_bits, frontier_call *call)
{
    (void)cfg;
    (void)call;
    *total_bits = 8 * (uint64_t)rows * (uint64_t)cols;
    return FRONTIER_OK;
}

static int quarter_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                int64_t rows, int64_t cols, const frontier_calib *calib,
                                frontier_call *call)
{
    (void)cfg;
    (void)calib;
    (void)call;
    for (int64_t i = 0; i < rows * cols; i++)
        w_hat[i] = rintf(w[i] * 4.0f) / 4.0f;
    return FRONTIER_OK;
}

static int fake_cuda(const frontier_config *cfg, const void *w, int dtype, float *w_hat,
                     int64_t rows, int64_t cols, const frontier_calib *calib, void *stream,
                     frontier_call *call)
{
    (void)cfg, (void)w, (void)dtype, (void)w_hat, (void)rows, (void)cols, (void)calib;
    (void)stream, (void)call;
    return FRONTIER_ERR_UNSUPPORTED;
}

static const frontier_config quarter_configs[] = {
    {"quarter-8", 8, "{\"step\":0.25}", NULL},
    {"quarter-8b", 8.5, "{\"step\":0.25,\"variant\":\"b\"}", NULL},
};

static frontier_quantizer quarter(void)
{
    return (frontier_quantizer){
        .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
        .struct_size = sizeof(frontier_quantizer),
        .name = "quarter",
        .description = "rounds to multiples of 1/4",
        .version = "1",
        .flags = FRONTIER_Q_DETERMINISTIC,
        .n_configs = 2,
        .configs = quarter_configs,
        .size_bits = quarter_size_bits,
        .quantize_cpu = quarter_quantize_cpu,
    };
}

/* Registers q from origin "/p/libq.so" into a registry that already holds the
 * built-in "quarter"; expects rejection with `expected`, nothing kept. */
static void expect_rejected(int line, const frontier_quantizer *q, const char *expected)
{
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_error err = {0};
    frontier_quantizer base = quarter();
    if (fr_registry_add(&reg, &base, FR_ORIGIN_BUILTIN, NULL, &err) != FR_OK)
        fr_test_fail(__FILE__, line, "base registration failed: %s", err.msg);
    fr_status st = fr_registry_add(&reg, q, "/p/libq.so", NULL, &err);
    if (st != FR_E_PLUGIN)
        fr_test_fail(__FILE__, line, "expected FR_E_PLUGIN, got %d", (int)st);
    fr_test_check_str(__FILE__, line, err.msg, expected);
    if (reg.n_entries != 1 || reg.n_configs != 2)
        fr_test_fail(__FILE__, line, "a rejected descriptor was kept");
    fr_registry_free(&reg);
}
#define EXPECT_REJECTED(q, expected) expect_rejected(__LINE__, (q), (expected))

/* The descriptor each rejection case starts from: "other", two good
 * configurations; each case then breaks one thing. */
static void reset(frontier_quantizer *q, frontier_config cfgs[2])
{
    *q = quarter();
    q->name = "other";
    cfgs[0] = (frontier_config){"other-4", 4, "{}", NULL};
    cfgs[1] = (frontier_config){"other-5", 5, "{\"a\":[1]}", NULL};
    q->configs = cfgs;
    q->n_configs = 2;
}

/* Rejections: the ABI version and the struct size. */
static void validation_version(void)
{
    frontier_quantizer q;
    frontier_config cfgs[2];
    reset(&q, cfgs);
    EXPECT_REJECTED(NULL, "plugin '/p/libq.so' returned no descriptor");

    reset(&q, cfgs);
    q.abi_version = 7;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has ABI version 7, this frontier supports 1 to 2");
    reset(&q, cfgs);
    q.abi_version = 0;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has ABI version 0, this frontier supports 1 to 2");

    reset(&q, cfgs);
    q.struct_size = 40;
    {
        char expected[256];
        snprintf(expected, sizeof expected,
                 "plugin '/p/libq.so' has a descriptor of 40 bytes, ABI version 2 needs at "
                 "least %zu",
                 offsetof(frontier_quantizer, quantize_cuda));
        EXPECT_REJECTED(&q, expected);
    }
}

/* Rejections: the quantizer's name, strings, flags and functions. */
static void validation_quantizer(void)
{
    frontier_quantizer q;
    frontier_config cfgs[2];
    reset(&q, cfgs);
    q.name = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has no quantizer name");
    reset(&q, cfgs);
    q.name = "two words";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has an invalid quantizer name 'two words' (a "
                        "letter, then letters, digits, '_' or '-')");
    reset(&q, cfgs);
    q.name = "4bit";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has an invalid quantizer name '4bit' (a letter, "
                        "then letters, digits, '_' or '-')");
    reset(&q, cfgs);
    q.name = "";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so' has an invalid quantizer name '' (a letter, then "
                        "letters, digits, '_' or '-')");
    reset(&q, cfgs);
    q.name = "quarter";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'quarter' is already registered (from "
                        "builtin)");

    reset(&q, cfgs);
    q.description = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' has no description");
    reset(&q, cfgs);
    q.version = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' has no version");

    reset(&q, cfgs);
    q.flags |= 1ull << 40;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' sets unknown flag bits "
                        "0x10000000000 (ABI version 2 knows 0xf)");
    reset(&q, cfgs);
    q.flags |= FRONTIER_Q_HAS_CUDA;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' sets FRONTIER_Q_HAS_CUDA but has "
                        "neither quantize_cuda nor sweep_cuda");
    reset(&q, cfgs);
    q.quantize_cuda = fake_cuda;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' has a CUDA function but does not "
                        "set FRONTIER_Q_HAS_CUDA");

    reset(&q, cfgs);
    q.size_bits = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' has no size_bits function");
    reset(&q, cfgs);
    q.quantize_cpu = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' has no quantize_cpu function");
}

/* Rejections: the configurations: names, nominal_bits, params_json. */
static void validation_configs(void)
{
    frontier_quantizer q;
    frontier_config cfgs[2];
    reset(&q, cfgs);
    q.n_configs = 0;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' offers no configurations");
    reset(&q, cfgs);
    q.configs = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': quantizer 'other' offers no configurations");

    reset(&q, cfgs);
    cfgs[1].name = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 1 has no name");
    reset(&q, cfgs);
    cfgs[1].name = "";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 1 has no name");
    reset(&q, cfgs);
    cfgs[1].name = "int4,g128";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': invalid configuration name 'int4,g128' (letters, "
                        "digits and '_-.+' only, starting with a letter or digit)");
    reset(&q, cfgs);
    cfgs[1].name = "other-4";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-4' is listed twice");
    reset(&q, cfgs);
    cfgs[1].name = "quarter-8b";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'quarter-8b' is already registered "
                        "by quantizer 'quarter' (from builtin)");

    reset(&q, cfgs);
    cfgs[0].nominal_bits = 0;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-4' has nominal_bits 0, "
                        "outside (0, 64]");
    reset(&q, cfgs);
    cfgs[0].nominal_bits = 64.5;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-4' has nominal_bits 64.5, "
                        "outside (0, 64]");
    reset(&q, cfgs);
    cfgs[0].nominal_bits = NAN;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-4' has nominal_bits nan, "
                        "outside (0, 64]");

    reset(&q, cfgs);
    cfgs[1].params_json = NULL;
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-5' has no params_json");
    reset(&q, cfgs);
    cfgs[1].params_json = "[1, 2]";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-5' has params_json that is "
                        "not a JSON object: '[1, 2]'");
    reset(&q, cfgs);
    cfgs[1].params_json = "{\"bits\": 4";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-5' has params_json that is "
                        "not a JSON object: '{\"bits\": 4'");
    reset(&q, cfgs);
    cfgs[1].params_json = "{} trailing";
    EXPECT_REJECTED(&q, "plugin '/p/libq.so': configuration 'other-5' has params_json that is "
                        "not a JSON object: '{} trailing'");
}

/* A built-in is named as such in messages; a descriptor from a newer header
 * (a larger struct) is accepted. */
static void validation_builtin(void)
{
    frontier_quantizer q;
    frontier_config cfgs[2];
    {
        fr_registry reg;
        fr_registry_init_empty(&reg);
        fr_error err = {0};
        reset(&q, cfgs);
        q.abi_version = 3;
        CHECK(fr_registry_add(&reg, &q, FR_ORIGIN_BUILTIN, NULL, &err) == FR_E_PLUGIN);
        CHECK_STR(err.msg, "built-in quantizer has ABI version 3, this frontier supports 1 to 2");
        reset(&q, cfgs);
        cfgs[0].nominal_bits = -1;
        CHECK(fr_registry_add(&reg, &q, FR_ORIGIN_BUILTIN, NULL, &err) == FR_E_PLUGIN);
        CHECK_STR(err.msg, "built-in quantizer 'other': configuration 'other-4' has nominal_bits -1, "
                        "outside (0, 64]");
        CHECK(reg.n_entries == 0 && reg.n_configs == 0);
        fr_registry_free(&reg);
    }

    /* a descriptor from a newer header (larger struct) is accepted */
    reset(&q, cfgs);
    q.struct_size = sizeof(frontier_quantizer) + 16;
    {
        fr_registry reg;
        fr_registry_init_empty(&reg);
        fr_error err = {0};
        CHECK(fr_registry_add(&reg, &q, "/p/libq.so", NULL, &err) == FR_OK);
        fr_registry_free(&reg);
    }
}

/* ---- configuration traits (ABI v2) ---- */

/* What the traits function of the next registration writes: a copy of
 * this, with struct_size left as the host set it; fail makes it fail. */
static frontier_config_traits next_traits;
static int traits_fail;

static int test_config_traits(const frontier_config *cfg, frontier_config_traits *t,
                              frontier_call *call)
{
    if (traits_fail) {
        fr_host_api()->set_error(call, "no traits for %s", cfg->name);
        return FRONTIER_ERR_INVALID;
    }
    uint32_t size = t->struct_size;
    *t = next_traits;
    t->struct_size = size;
    return FRONTIER_OK;
}

static int test_scales(const frontier_config *cfg, const float *w, int64_t rows, int64_t cols,
                       float *scales, float *zero_points, frontier_call *call)
{
    (void)cfg, (void)w, (void)cols, (void)zero_points, (void)call;
    for (int64_t i = 0; i < rows; i++)
        scales[i] = 0.25f;
    return FRONTIER_OK;
}

/* A descriptor whose traits are next_traits, rejected with `expected`. */
static void expect_traits_rejected(int line, const char *expected)
{
    frontier_quantizer q;
    frontier_config cfgs[2];
    reset(&q, cfgs);
    q.config_traits = test_config_traits;
    expect_rejected(line, &q, expected);
    memset(&next_traits, 0, sizeof next_traits);
    traits_fail = 0;
}

static void validation_traits(void)
{
    memset(&next_traits, 0, sizeof next_traits);
    next_traits.row_multiple = -1;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with row_multiple -1 (0: needs the whole tensor, > 0: row "
                                     "blocks)");
    next_traits.needs_range = 1;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with needs_range without a row_multiple");
    next_traits.storage = 9;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with storage 9 (enum frontier_storage: 0 to 4)");
    next_traits.storage = FRONTIER_STORAGE_INT_PACK;
    next_traits.storage_bits = 9;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with storage_bits 9 (int-pack: 2 to 8)");
    next_traits.storage = FRONTIER_STORAGE_FP8;
    next_traits.storage_scales = test_scales;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with storage_scales on a fp8 storage (int-pack only)");
    next_traits.storage = FRONTIER_STORAGE_FP8;
    next_traits.storage_fp8_scope = 3;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with storage_fp8_scope 3 (enum frontier_fp8_scope: 0 to 2)");
    next_traits.gguf_type = "";
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with a gguf_type that is empty, longer than 200 bytes or "
                                     "not text");
    next_traits.fused_companion_of = "nvfp4";
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with a fused_companion_of without needs_group_amax");
    next_traits.whole_tensor_reason = "two\nlines";
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': configuration 'other-4' has traits "
                                     "with a whole_tensor_reason that is empty, longer than 200 "
                                     "bytes or not text");
    traits_fail = 1;
    expect_traits_rejected(__LINE__, "plugin '/p/libq.so': config_traits of configuration "
                                     "'other-4' failed (invalid argument): no traits for other-4");

    /* what a v2 descriptor declares is what the registry holds */
    frontier_quantizer q;
    frontier_config cfgs[2];
    reset(&q, cfgs);
    q.config_traits = test_config_traits;
    next_traits.row_multiple = 16;
    next_traits.needs_range = 1;
    next_traits.storage = FRONTIER_STORAGE_INT_PACK;
    next_traits.storage_bits = 3;
    next_traits.storage_group_size = 32;
    next_traits.storage_symmetric = 1;
    next_traits.storage_scales = test_scales;
    next_traits.gguf_type = "q4_0";
    {
        fr_registry reg;
        fr_registry_init_empty(&reg);
        fr_error err = {0};
        CHECK(fr_registry_add(&reg, &q, "/p/libq.so", NULL, &err) == FR_OK);
        const frontier_config_traits *t =
            fr_config_traits_of(fr_registry_find_config(&reg, "other-5"));
        CHECK(t->struct_size == sizeof *t && t->row_multiple == 16 && t->needs_range == 1 &&
              t->storage == FRONTIER_STORAGE_INT_PACK && t->storage_bits == 3 &&
              t->storage_group_size == 32 && t->storage_symmetric == 1 &&
              t->storage_scales == test_scales && !strcmp(t->gguf_type, "q4_0"));
        fr_registry_free(&reg);
    }
    memset(&next_traits, 0, sizeof next_traits);

    /* a version-1 descriptor: its struct ends before config_traits, and
     * whatever follows it in memory is not read: nothing known */
    struct {
        frontier_quantizer q;
        uintptr_t junk[4];
    } v1;
    memset(&v1, 0xa5, sizeof v1);
    reset(&v1.q, cfgs);
    v1.q.abi_version = 1;
    v1.q.struct_size = (uint32_t)offsetof(frontier_quantizer, config_traits);
    {
        frontier_quantizer *qp = &v1.q;
        /* junk where config_traits would be */
        memset((char *)qp + offsetof(frontier_quantizer, config_traits), 0xa5,
               sizeof qp->config_traits);
        fr_registry reg;
        fr_registry_init_empty(&reg);
        fr_error err = {0};
        CHECK(fr_registry_add(&reg, qp, "/p/libv1.so", NULL, &err) == FR_OK);
        const frontier_config_traits *t =
            fr_config_traits_of(fr_registry_find_config(&reg, "other-4"));
        CHECK(t->row_multiple == 0 && t->storage == FRONTIER_STORAGE_NONE && !t->gguf_type &&
              !t->needs_group_amax && !t->storage_scales);
        fr_registry_free(&reg);
    }
}

static void test_validation(void)
{
    validation_version();
    validation_quantizer();
    validation_configs();
    validation_builtin();
    validation_traits();
}

static void test_lookup(void)
{
    fr_registry reg;
    fr_error err = {0};
    /* the built-in table of this branch may be empty; whatever it holds
     * must register */
    CHECK(fr_registry_init(&reg, &err) == FR_OK);
    size_t builtin_configs = reg.n_configs, builtin_entries = reg.n_entries;

    frontier_quantizer q = quarter();
    CHECK(fr_registry_add(&reg, &q, "/p/libquarter.so", NULL, &err) == FR_OK);
    CHECK(reg.n_entries == builtin_entries + 1);
    CHECK(reg.n_configs == builtin_configs + 2);

    const fr_config_ref *ref = fr_registry_find_config(&reg, "quarter-8b");
    CHECK(ref && ref->cfg == &quarter_configs[1]);
    CHECK(ref && fr_config_quantizer(&reg, ref) == &q);
    CHECK(ref && !strcmp(fr_config_origin(&reg, ref), "/p/libquarter.so"));
    CHECK(fr_registry_find_config(&reg, "quarter-9") == NULL);
    CHECK(fr_registry_find_config(&reg, NULL) == NULL);
    const fr_qentry *e = fr_registry_find_quantizer(&reg, "quarter");
    CHECK(e && e->q == &q && e->dl == NULL);
    CHECK(fr_registry_find_quantizer(&reg, "quart") == NULL);

    /* the origin is copied, so the caller's buffer may go away */
    char origin[32] = "/p/libother.so";
    frontier_quantizer other = quarter();
    frontier_config other_cfg = {"other-1", 1, "{}", NULL};
    other.name = "other";
    other.configs = &other_cfg;
    other.n_configs = 1;
    CHECK(fr_registry_add(&reg, &other, origin, NULL, &err) == FR_OK);
    memset(origin, 'x', sizeof origin - 1);
    CHECK(!strcmp(fr_registry_find_quantizer(&reg, "other")->origin, "/p/libother.so"));

    char flags[128];
    CHECK(!strcmp(fr_quantizer_flag_names(0, flags, sizeof flags), ""));
    CHECK(!strcmp(fr_quantizer_flag_names(FRONTIER_Q_KNOWN_FLAGS, flags, sizeof flags),
                  "needs-hessian,needs-act-stats,cuda,deterministic"));
    CHECK(!strcmp(fr_quantizer_flag_names(FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_NEEDS_HESSIAN,
                                          flags, sizeof flags),
                  "needs-hessian,deterministic"));
    CHECK(!strcmp(fr_quantizer_flag_names(FRONTIER_Q_KNOWN_FLAGS, flags, 20), "needs-hessian"));
    CHECK(fr_quantizer_flag_name(1ull << 5) == NULL);
    CHECK(!strcmp(fr_plugin_status_name(FRONTIER_ERR_INVALID), "invalid argument"));
    CHECK(!strcmp(fr_plugin_status_name(99), "unknown status"));

    fr_registry_free(&reg);
    CHECK(reg.n_entries == 0 && reg.entries == NULL);
    fr_registry_free(&reg); /* twice is harmless */
}

/* ---- run-time checks ---- */

enum runtime_case {
    RT_OK, RT_NAN, RT_INF, RT_UNWRITTEN, RT_SIZE0, RT_SIZE_HUGE, RT_SIZE_MAX_OK, RT_SIZE_ERR,
    RT_ERR, RT_ERR_SILENT, RT_NOMEM
};
static const enum runtime_case rt_cases[] = {RT_OK,          RT_NAN,      RT_INF,    RT_UNWRITTEN,
                                             RT_SIZE0,       RT_SIZE_HUGE, RT_SIZE_MAX_OK,
                                             RT_SIZE_ERR,    RT_ERR,      RT_ERR_SILENT,
                                             RT_NOMEM};

static int rt_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                        uint64_t *total_bits, frontier_call *call)
{
    switch (*(const enum runtime_case *)cfg->impl) {
    case RT_SIZE0: *total_bits = 0; return FRONTIER_OK;
    case RT_SIZE_HUGE: *total_bits = UINT64_C(1) << 63; return FRONTIER_OK;
    case RT_SIZE_MAX_OK: *total_bits = (UINT64_C(1) << 63) - 1; return FRONTIER_OK;
    case RT_SIZE_ERR:
        fr_host_api()->set_error(call, "cannot size a %lld x %lld tensor", (long long)rows,
                                 (long long)cols);
        return FRONTIER_ERR_UNSUPPORTED;
    default: *total_bits = 32 * (uint64_t)rows * (uint64_t)cols; return FRONTIER_OK;
    }
}

static int rt_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                           int64_t cols, const frontier_calib *calib, frontier_call *call)
{
    (void)calib;
    int64_t n = rows * cols;
    enum runtime_case c = *(const enum runtime_case *)cfg->impl;
    if (c == RT_ERR) {
        fr_host_api()->set_error(call, "group size 7 does not divide %lld columns", (long long)cols);
        return FRONTIER_ERR_INVALID;
    }
    if (c == RT_ERR_SILENT)
        return FRONTIER_ERR_INTERNAL;
    if (c == RT_NOMEM) {
        fr_host_api()->set_error(call, "no memory for the codebook");
        return FRONTIER_ERR_NOMEM;
    }
    for (int64_t i = 0; i < n - (c == RT_UNWRITTEN); i++)
        w_hat[i] = w[i];
    if (c == RT_NAN) {
        /* two bad elements in different chunks of the host's scan: the
         * first one is reported, whatever order the threads finish in */
        w_hat[n > 200000 ? 150001 : 5] = NAN;
        w_hat[n - 1] = NAN;
    }
    if (c == RT_INF)
        w_hat[n - 1] = -INFINITY;
    return FRONTIER_OK;
}

static const frontier_config rt_configs[] = {
    {"rt-ok", 32, "{}", &rt_cases[0]},         {"rt-nan", 32, "{}", &rt_cases[1]},
    {"rt-inf", 32, "{}", &rt_cases[2]},        {"rt-unwritten", 32, "{}", &rt_cases[3]},
    {"rt-size0", 32, "{}", &rt_cases[4]},      {"rt-size-huge", 32, "{}", &rt_cases[5]},
    {"rt-size-max", 32, "{}", &rt_cases[6]},   {"rt-size-err", 32, "{}", &rt_cases[7]},
    {"rt-err", 32, "{}", &rt_cases[8]},        {"rt-err-silent", 32, "{}", &rt_cases[9]},
    {"rt-nomem", 32, "{}", &rt_cases[10]},
};

static const frontier_config hess_configs[] = {{"hess-4", 4, "{}", &rt_cases[0]}};
static const frontier_config act_configs[] = {{"act-4", 4, "{}", &rt_cases[0]}};

enum { RT_ROWS = 3, RT_COLS = 4 };

/* The misbehaving quantizer "rt" as a plugin, and the calibrated "hess" and
 * "act" as built-ins. */
static void rt_register(fr_registry *reg, fr_error *err)
{
    static frontier_quantizer rt, hess, act; /* the registry keeps pointers to them */
    rt = (frontier_quantizer){
        .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
        .struct_size = sizeof(frontier_quantizer),
        .name = "rt",
        .description = "misbehaves on purpose",
        .version = "1",
        .n_configs = sizeof rt_configs / sizeof rt_configs[0],
        .configs = rt_configs,
        .size_bits = rt_size_bits,
        .quantize_cpu = rt_quantize_cpu,
    };
    hess = act = rt;
    hess.name = "hess";
    hess.flags = FRONTIER_Q_NEEDS_HESSIAN;
    hess.configs = hess_configs;
    hess.n_configs = 1;
    act.name = "act";
    act.flags = FRONTIER_Q_NEEDS_ACT_STATS;
    act.configs = act_configs;
    act.n_configs = 1;
    CHECK(fr_registry_add(reg, &rt, "/p/librt.so", NULL, err) == FR_OK);
    CHECK(fr_registry_add(reg, &hess, FR_ORIGIN_BUILTIN, NULL, err) == FR_OK);
    CHECK(fr_registry_add(reg, &act, FR_ORIGIN_BUILTIN, NULL, err) == FR_OK);
}

static void rt_weights(float *w)
{
    for (int i = 0; i < RT_ROWS * RT_COLS; i++)
        w[i] = (float)i - 5.5f;
}

/* Each misbehaviour caught by the checked calls, with its status and message. */
static void runtime_verdicts(const fr_registry *reg)
{
    enum { ROWS = RT_ROWS, COLS = RT_COLS };
    fr_error err = {0};
    float w[ROWS * COLS], w_hat[ROWS * COLS];
    rt_weights(w);
    struct {
        const char *config;
        const char *tensor;
        fr_status size_status, quantize_status;
        const char *message;
    } cases[] = {
        {"rt-ok", "w", FR_OK, FR_OK, ""},
        {"rt-size-max", "w", FR_OK, FR_OK, ""},
        {"rt-nan", "blk.0.w", FR_OK, FR_E_PLUGIN,
         "config 'rt-nan' on tensor 'blk.0.w': quantize_cpu output is nan at row 1, col 1 "
         "(quantizer 'rt' from '/p/librt.so')"},
        {"rt-inf", "w", FR_OK, FR_E_PLUGIN,
         "config 'rt-inf' on tensor 'w': quantize_cpu output is inf at row 2, col 3 (quantizer "
         "'rt' from '/p/librt.so')"},
        {"rt-unwritten", NULL, FR_OK, FR_E_PLUGIN,
         "config 'rt-unwritten' on a 3 x 4 tensor: quantize_cpu output is nan at row 2, col 3 "
         "(quantizer 'rt' from '/p/librt.so')"},
        {"rt-size0", "w", FR_E_PLUGIN, FR_OK,
         "config 'rt-size0' on tensor 'w': size_bits returned 0 bits, outside [1, 2^63) "
         "(quantizer 'rt' from '/p/librt.so')"},
        {"rt-size-huge", "w", FR_E_PLUGIN, FR_OK,
         "config 'rt-size-huge' on tensor 'w': size_bits returned 9223372036854775808 bits, "
         "outside [1, 2^63) (quantizer 'rt' from '/p/librt.so')"},
        {"rt-size-err", "w", FR_E_PLUGIN, FR_OK,
         "config 'rt-size-err' on tensor 'w': size_bits failed (unsupported): cannot size a 3 x "
         "4 tensor (quantizer 'rt' from '/p/librt.so')"},
        {"rt-err", "w", FR_OK, FR_E_PLUGIN,
         "config 'rt-err' on tensor 'w': quantize_cpu failed (invalid argument): group size 7 "
         "does not divide 4 columns (quantizer 'rt' from '/p/librt.so')"},
        {"rt-err-silent", "w", FR_OK, FR_E_PLUGIN,
         "config 'rt-err-silent' on tensor 'w': quantize_cpu failed (internal error, code 4) "
         "(quantizer 'rt' from '/p/librt.so')"},
        {"rt-nomem", "w", FR_OK, FR_E_NOMEM,
         "config 'rt-nomem' on tensor 'w': quantize_cpu failed (out of memory): no memory for "
         "the codebook (quantizer 'rt' from '/p/librt.so')"},
        {"hess-4", "w", FR_OK, FR_E_USAGE,
         "config 'hess-4' on tensor 'w': needs a Hessian from calibration statistics (built-in "
         "quantizer 'hess')"},
        {"act-4", "w", FR_OK, FR_E_USAGE,
         "config 'act-4' on tensor 'w': needs activation statistics from calibration (built-in "
         "quantizer 'act')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fr_config_ref *ref = fr_registry_find_config(reg, cases[i].config);
        CHECK(ref != NULL);
        if (!ref)
            continue;
        frontier_call call;
        fr_call_init(&call, NULL, 1, cases[i].tensor, cases[i].config);
        fr_error_clear(&err);
        uint64_t bits = 0;
        fr_status st = fr_quantizer_size_bits(reg, ref, ROWS, COLS, cases[i].tensor, &call,
                                              &bits, &err);
        CHECK_MSG(st == cases[i].size_status, "%s: size_bits status %d, expected %d (%s)",
                  cases[i].config, (int)st, (int)cases[i].size_status, err.msg);
        if (st != FR_OK) {
            CHECK_STR(err.msg, cases[i].message);
            fr_call_release(&call);
            continue;
        }
        st = fr_quantizer_quantize_cpu(reg, ref, w, w_hat, ROWS, COLS, NULL, cases[i].tensor,
                                       &call, &err);
        CHECK_MSG(st == cases[i].quantize_status, "%s: quantize_cpu status %d, expected %d (%s)",
                  cases[i].config, (int)st, (int)cases[i].quantize_status, err.msg);
        CHECK_STR(err.msg, cases[i].message);
        CHECK(call.quantizer != NULL); /* filled in for the plugin's log lines */
        if (st == FR_OK)
            CHECK(memcmp(w, w_hat, sizeof w) == 0);
        fr_call_release(&call);
    }
}

/* With statistics the calibrated ones run. */
static void runtime_calibrated(const fr_registry *reg)
{
    enum { ROWS = RT_ROWS, COLS = RT_COLS };
    fr_error err = {0};
    float w[ROWS * COLS], w_hat[ROWS * COLS];
    rt_weights(w);
    float hessian[COLS * COLS] = {0}, mean_abs[COLS] = {0};
    frontier_calib calib = {.cols = COLS, .hessian = hessian, .act_mean_abs = mean_abs};
    const char *calibrated[] = {"hess-4", "act-4"};
    for (int i = 0; i < 2; i++) {
        frontier_call call;
        fr_call_init(&call, NULL, 1, "w", calibrated[i]);
        CHECK(fr_quantizer_quantize_cpu(reg, fr_registry_find_config(reg, calibrated[i]), w,
                                        w_hat, ROWS, COLS, &calib, "w", &call, &err) == FR_OK);
        fr_call_release(&call);
    }
}

/* The output checks run in chunks on a pool: same verdicts. */
static void runtime_chunked(const fr_registry *reg)
{
    fr_error err = {0};
    fr_pool *pool = NULL;
    CHECK(fr_pool_create(2, &pool, &err) == FR_OK);
    int64_t big_rows = 3, big_cols = 100003;
    float *big_w = calloc((size_t)(big_rows * big_cols), sizeof *big_w);
    float *big_hat = calloc((size_t)(big_rows * big_cols), sizeof *big_hat);
    CHECK(big_w && big_hat);
    struct {
        const char *config;
        fr_status status;
        const char *message;
    } big[] = {
        {"rt-ok", FR_OK, ""},
        {"rt-nan", FR_E_PLUGIN,
         "config 'rt-nan' on tensor 'big': quantize_cpu output is nan at row 1, col 49998 "
         "(quantizer 'rt' from '/p/librt.so')"},
        {"rt-unwritten", FR_E_PLUGIN,
         "config 'rt-unwritten' on tensor 'big': quantize_cpu output is nan at row 2, col 100002 "
         "(quantizer 'rt' from '/p/librt.so')"},
    };
    for (size_t i = 0; big_w && big_hat && i < sizeof big / sizeof big[0]; i++) {
        frontier_call call;
        fr_call_init(&call, pool, 1, "big", big[i].config);
        fr_error_clear(&err);
        fr_status st = fr_quantizer_quantize_cpu(reg, fr_registry_find_config(reg, big[i].config),
                                                 big_w, big_hat, big_rows, big_cols, NULL, "big",
                                                 &call, &err);
        CHECK(st == big[i].status);
        CHECK_STR(err.msg, big[i].message);
        fr_call_release(&call);
    }
    free(big_w);
    free(big_hat);
    fr_pool_destroy(pool);
}

static void test_runtime_checks(void)
{
    fr_registry reg;
    fr_error err = {0};
    fr_registry_init_empty(&reg);
    rt_register(&reg, &err);
    runtime_verdicts(&reg);
    runtime_calibrated(&reg);
    runtime_chunked(&reg);
    fr_registry_free(&reg);
}

int main(void)
{
    test_validation();
    test_lookup();
    test_runtime_checks();
    return fr_test_finish("test_registry");
}
