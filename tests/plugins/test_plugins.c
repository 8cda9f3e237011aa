/*
 * Plugins for the loader tests, one shared object per variant: the variant is
 * chosen with -DPLUGIN_<NAME> (tests/plugins/CMakeLists.txt builds each).
 *
 *   GOOD           a well-formed quantizer "good" (config "good-f32": identity)
 *   GOOD_DUP       well-formed, but reuses the config name "good-f32"
 *   MISBEHAVE      registers, then misbehaves at run time: NaN output, an
 *                  unwritten element, sizes 0 and 2^63, error codes; its
 *                  config "misbehave-ok" works, to show the run goes on
 *   BAD_ABI        descriptor of ABI version 7
 *   BAD_NOENTRY    exports no frontier_plugin_entry
 *   BAD_NULL       entry returns NULL
 *   BAD_CUDAFLAG   FRONTIER_Q_HAS_CUDA without a CUDA function
 *   BAD_CUDAFN     a CUDA function without FRONTIER_Q_HAS_CUDA
 *   BAD_FLAGS      a flag bit this ABI does not know
 *   BAD_DUPSELF    lists one config name twice
 *   BAD_PARAMS     params_json that is not a JSON object
 *   BAD_SIZE       struct_size that stops before quantize_cpu (a required field)
 *   CRASHY         for --isolate-plugins: "crashy-ok" works, "crashy-segv"
 *                  dereferences NULL, "crashy-abort" aborts, "crashy-hang"
 *                  never returns, "crashy-exit" calls exit(3); the size
 *                  functions of "crashy-size-segv" crash
 *   OLDER          an "older" plugin: its own, smaller descriptor struct that
 *                  ends after quantize_cpu (no GPU fields), followed in
 *                  memory by garbage where a newer struct's GPU fields would
 *                  be: the host must read only what struct_size covers
 */
#include <frontier/plugin.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const frontier_host_api *host;

static int identity_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                              uint64_t *total_bits, frontier_call *call)
{
    (void)cfg;
    (void)call;
    *total_bits = 32 * (uint64_t)rows * (uint64_t)cols;
    return FRONTIER_OK;
}

static int identity_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                 int64_t rows, int64_t cols, const frontier_calib *calib,
                                 frontier_call *call)
{
    (void)cfg;
    (void)calib;
    (void)call;
    memcpy(w_hat, w, (size_t)(rows * cols) * sizeof *w);
    return FRONTIER_OK;
}

#if defined(PLUGIN_BAD_CUDAFN)
static int fake_quantize_cuda(const frontier_config *cfg, const void *w, int dtype, float *w_hat,
                              int64_t rows, int64_t cols, const frontier_calib *calib,
                              void *stream, frontier_call *call)
{
    (void)cfg, (void)w, (void)dtype, (void)w_hat, (void)rows, (void)cols, (void)calib;
    (void)stream, (void)call;
    return FRONTIER_ERR_UNSUPPORTED;
}
#endif

#if defined(PLUGIN_MISBEHAVE)
/* which misbehaviour: frontier_config.impl points at one of these */
enum misbehaviour { OK, NAN_OUT, INF_OUT, UNWRITTEN, SIZE_ZERO, SIZE_HUGE, ERROR_MSG, ERROR_SILENT, ERROR_NOMEM };
static const enum misbehaviour mb[] = {OK, NAN_OUT, INF_OUT, UNWRITTEN, SIZE_ZERO, SIZE_HUGE,
                                       ERROR_MSG, ERROR_SILENT, ERROR_NOMEM};

static int misbehave_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                               uint64_t *total_bits, frontier_call *call)
{
    switch (*(const enum misbehaviour *)cfg->impl) {
    case SIZE_ZERO: *total_bits = 0; return FRONTIER_OK;
    case SIZE_HUGE: *total_bits = UINT64_C(1) << 63; return FRONTIER_OK;
    default: return identity_size_bits(cfg, rows, cols, total_bits, call);
    }
}

static int misbehave_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                                  int64_t rows, int64_t cols, const frontier_calib *calib,
                                  frontier_call *call)
{
    int64_t last = rows * cols - 1;
    switch (*(const enum misbehaviour *)cfg->impl) {
    case NAN_OUT:
        identity_quantize_cpu(cfg, w, w_hat, rows, cols, calib, call);
        w_hat[last] = __builtin_nanf("");
        return FRONTIER_OK;
    case INF_OUT:
        identity_quantize_cpu(cfg, w, w_hat, rows, cols, calib, call);
        w_hat[0] = __builtin_inff();
        return FRONTIER_OK;
    case UNWRITTEN:
        /* forgets the last element */
        memcpy(w_hat, w, (size_t)last * sizeof *w);
        return FRONTIER_OK;
    case ERROR_MSG:
        host->set_error(call, "group size %d does not divide %lld columns", 7, (long long)cols);
        return FRONTIER_ERR_INVALID;
    case ERROR_SILENT:
        return FRONTIER_ERR_INTERNAL;
    case ERROR_NOMEM:
        host->set_error(call, "cannot allocate the codebook");
        return FRONTIER_ERR_NOMEM;
    default:
        return identity_quantize_cpu(cfg, w, w_hat, rows, cols, calib, call);
    }
}
#endif

#if defined(PLUGIN_CRASHY)
enum crash { C_OK, C_SEGV, C_ABORT, C_HANG, C_EXIT, C_SIZE_SEGV };
static const enum crash crashes[] = {C_OK, C_SEGV, C_ABORT, C_HANG, C_EXIT, C_SIZE_SEGV};
static volatile int *volatile null_pointer;

static void crash_now(enum crash c)
{
    switch (c) {
    case C_SEGV:
    case C_SIZE_SEGV: *null_pointer = 1; break;
    case C_ABORT: abort();
    case C_HANG:
        for (;;)
            ;
    case C_EXIT: exit(3);
    default: break;
    }
}

static int crashy_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols,
                            uint64_t *total_bits, frontier_call *call)
{
    if (*(const enum crash *)cfg->impl == C_SIZE_SEGV)
        crash_now(C_SIZE_SEGV);
    return identity_size_bits(cfg, rows, cols, total_bits, call);
}

static int crashy_quantize_cpu(const frontier_config *cfg, const float *w, float *w_hat,
                               int64_t rows, int64_t cols, const frontier_calib *calib,
                               frontier_call *call)
{
    enum crash c = *(const enum crash *)cfg->impl;
    if (c != C_SIZE_SEGV)
        crash_now(c);
    return identity_quantize_cpu(cfg, w, w_hat, rows, cols, calib, call);
}

static const frontier_config configs[] = {
    {"crashy-ok", 32, "{}", &crashes[0]},    {"crashy-segv", 32, "{}", &crashes[1]},
    {"crashy-abort", 32, "{}", &crashes[2]}, {"crashy-hang", 32, "{}", &crashes[3]},
    {"crashy-exit", 32, "{}", &crashes[4]},  {"crashy-size-segv", 32, "{}", &crashes[5]},
};
#define NAME "crashy"
#elif defined(PLUGIN_MISBEHAVE)
static const frontier_config configs[] = {
    {"misbehave-ok", 32, "{}", &mb[0]},
    {"misbehave-nan", 32, "{}", &mb[1]},
    {"misbehave-inf", 32, "{}", &mb[2]},
    {"misbehave-unwritten", 32, "{}", &mb[3]},
    {"misbehave-size0", 32, "{}", &mb[4]},
    {"misbehave-size-huge", 32, "{}", &mb[5]},
    {"misbehave-error", 32, "{}", &mb[6]},
    {"misbehave-error-silent", 32, "{}", &mb[7]},
    {"misbehave-nomem", 32, "{}", &mb[8]},
};
#define NAME "misbehave"
#elif defined(PLUGIN_GOOD_DUP)
static const frontier_config configs[] = {
    {"good_dup-f32", 32, "{}", NULL},
    {"good-f32", 32, "{\"dtype\":\"f32\"}", NULL},
};
#define NAME "good_dup"
#elif defined(PLUGIN_BAD_DUPSELF)
static const frontier_config configs[] = {
    {"dupself-a", 32, "{}", NULL},
    {"dupself-b", 32, "{}", NULL},
    {"dupself-a", 16, "{}", NULL},
};
#define NAME "dupself"
#elif defined(PLUGIN_BAD_PARAMS)
static const frontier_config configs[] = {
    {"params-list", 32, "[1, 2]", NULL},
};
#define NAME "params"
#else
static const frontier_config configs[] = {
    {PLUGIN_NAME "-f32", 32, "{\"dtype\":\"f32\"}", NULL},
};
#define NAME PLUGIN_NAME
#endif

static const frontier_quantizer descriptor = {
#if defined(PLUGIN_BAD_ABI)
    .abi_version = 7,
#else
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
#endif
#if defined(PLUGIN_BAD_SIZE)
    .struct_size = offsetof(frontier_quantizer, quantize_cpu),
#else
    .struct_size = sizeof(frontier_quantizer),
#endif
    .name = NAME,
    .description = "a test plugin (" NAME ")",
    .version = "0.0.1",
#if defined(PLUGIN_BAD_CUDAFLAG)
    .flags = FRONTIER_Q_DETERMINISTIC | FRONTIER_Q_HAS_CUDA,
#elif defined(PLUGIN_BAD_FLAGS)
    .flags = FRONTIER_Q_DETERMINISTIC | (1ull << 9),
#else
    .flags = FRONTIER_Q_DETERMINISTIC,
#endif
    .n_configs = sizeof configs / sizeof configs[0],
    .configs = configs,
#if defined(PLUGIN_MISBEHAVE)
    .size_bits = misbehave_size_bits,
    .quantize_cpu = misbehave_quantize_cpu,
#elif defined(PLUGIN_CRASHY)
    .size_bits = crashy_size_bits,
    .quantize_cpu = crashy_quantize_cpu,
#else
    .size_bits = identity_size_bits,
    .quantize_cpu = identity_quantize_cpu,
#endif
#if defined(PLUGIN_BAD_CUDAFN)
    .quantize_cuda = fake_quantize_cuda,
#endif
};

#if defined(PLUGIN_OLDER)
/* The descriptor as a plugin written against a header without the optional
 * GPU functions would lay it out: the v1 fields up to quantize_cpu. */
typedef struct older_quantizer {
    uint32_t abi_version, struct_size;
    const char *name, *description, *version;
    uint64_t flags;
    size_t n_configs;
    const frontier_config *configs;
    int (*size_bits)(const frontier_config *, int64_t, int64_t, uint64_t *, frontier_call *);
    int (*quantize_cpu)(const frontier_config *, const float *, float *, int64_t, int64_t,
                        const frontier_calib *, frontier_call *);
} older_quantizer;

/* what follows the older struct in memory: non-NULL junk where a newer
 * struct has quantize_cuda and sweep_cuda */
static const struct {
    older_quantizer q;
    uintptr_t junk[2];
} older = {
    {FRONTIER_PLUGIN_ABI_VERSION, sizeof(older_quantizer), NAME, "a test plugin (" NAME ")",
     "0.0.1", FRONTIER_Q_DETERMINISTIC, sizeof configs / sizeof configs[0], configs,
     identity_size_bits, identity_quantize_cpu},
    {(uintptr_t)0xdeadbeef, (uintptr_t)0xfeedface},
};
#endif

#if defined(PLUGIN_BAD_NOENTRY)
/* a near miss of the entry symbol's name */
FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry_v1(const frontier_host_api *h);
#define ENTRY frontier_plugin_entry_v1
#else
#define ENTRY frontier_plugin_entry /* declared by plugin.h */
#endif

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *ENTRY(const frontier_host_api *h)
{
    host = h;
#if defined(PLUGIN_BAD_NULL)
    (void)descriptor;
    return NULL;
#elif defined(PLUGIN_OLDER)
    (void)descriptor;
    return (const frontier_quantizer *)&older.q;
#else
    return &descriptor;
#endif
}
