/*
 * The quantizer registry: validation of descriptors, lookup, and the checked
 * calls through which the engine reaches a quantizer. Loading shared objects
 * and discovery live in plugin_loader.c.
 *
 * A descriptor is validated completely before the registry keeps anything of
 * it (HDF5's H5PL checks, SQLite's versioned struct): every message names
 * where the descriptor came from ("plugin '/p/libx.so'" or "built-in
 * quantizer 'int'") and, for duplicates, where the first one came from.
 */
#include "registry.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "isolate.h"
#include "parallel.h"
#include "log.h"

/* The smallest descriptor of each ABI version: its required fields (size_bits
 * and quantize_cpu, both v1) must be there; optional fields past the end of
 * a plugin's struct are absent (FR_QUANTIZER_HAS), so a plugin built against
 * an older or leaner header is read only as far as its struct_size. A
 * version that appends a required field raises its own minimum here. */
#define FR_QUANTIZER_V1_MIN_SIZE                                                             \
    (offsetof(frontier_quantizer, quantize_cpu) + sizeof(((frontier_quantizer *)0)->quantize_cpu))

static size_t min_descriptor_size(uint32_t abi_version)
{
    (void)abi_version; /* every version so far requires only the v1 fields */
    return FR_QUANTIZER_V1_MIN_SIZE;
}

/* Bounds on what a descriptor may hold. They also bound how far the host
 * reads a string that a broken plugin forgot to terminate. */
#define FR_MAX_QUANTIZER_NAME 63
#define FR_MAX_CONFIG_NAME 127
#define FR_MAX_TEXT 4095          /* description, version */
#define FR_MAX_PARAMS_JSON 65535
#define FR_MAX_CONFIGS 65536

/* Quantizer (family) names: a letter, then letters, digits, '_' or '-'. */
static int valid_quantizer_name(const char *s)
{
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

/* Configuration names appear in comma-separated lists and globs on the
 * command line (--quantizers) and as HDF5 strings: letters, digits and
 * "_-.+" only ("int4-g128-asym", "rht+nvfp4"), starting with a letter or
 * digit. */
static int valid_config_name(const char *s)
{
    char c0 = s[0];
    if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || (c0 >= '0' && c0 <= '9')))
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '.' || c == '+';
        if (!ok)
            return 0;
    }
    return 1;
}

/* "plugin '/p/libx.so'" or "built-in quantizer 'int'" (name may be NULL). */
static void describe_origin(char *buf, size_t size, const char *origin, const char *name)
{
    if (origin && strcmp(origin, FR_ORIGIN_BUILTIN) != 0)
        snprintf(buf, size, "plugin '%s'", origin);
    else if (name)
        snprintf(buf, size, "built-in quantizer '%.*s'", FR_MAX_QUANTIZER_NAME, name);
    else
        snprintf(buf, size, "built-in quantizer");
}

/* "builtin" or "'/p/libx.so'", for "already registered by ... (from X)". */
static void describe_from(char *buf, size_t size, const char *origin)
{
    if (!strcmp(origin, FR_ORIGIN_BUILTIN))
        snprintf(buf, size, "builtin");
    else
        snprintf(buf, size, "'%s'", origin);
}

static fr_status validate_config(const fr_registry *reg, const frontier_quantizer *q, size_t i,
                                 const char *who, fr_error *err)
{
    const frontier_config *c = &q->configs[i];
    if (!c->name || !c->name[0])
        return fr_fail(err, FR_E_PLUGIN, "%s: configuration %zu has no name", who, i);
    size_t len = strnlen(c->name, FR_MAX_CONFIG_NAME + 1);
    if (len > FR_MAX_CONFIG_NAME)
        return fr_fail(err, FR_E_PLUGIN, "%s: configuration %zu has a name longer than %d bytes",
                       who, i, FR_MAX_CONFIG_NAME);
    if (!valid_config_name(c->name))
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: invalid configuration name '%s' (letters, digits and '_-.+' only, "
                       "starting with a letter or digit)",
                       who, c->name);
    for (size_t j = 0; j < i; j++)
        if (!strcmp(q->configs[j].name, c->name))
            return fr_fail(err, FR_E_PLUGIN, "%s: configuration '%s' is listed twice", who,
                           c->name);
    const fr_config_ref *dup = fr_registry_find_config(reg, c->name);
    if (dup) {
        char from[FR_ERROR_MSG_MAX / 2];
        describe_from(from, sizeof from, reg->entries[dup->quantizer].origin);
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: configuration '%s' is already registered by quantizer '%s' (from %s)",
                       who, c->name, reg->entries[dup->quantizer].q->name, from);
    }
    /* isnan first: a NaN compares false with everything */
    if (isnan(c->nominal_bits) || !(c->nominal_bits > 0.0 && c->nominal_bits <= 64.0))
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: configuration '%s' has nominal_bits %g, outside (0, 64]", who, c->name,
                       c->nominal_bits);
    if (!c->params_json)
        return fr_fail(err, FR_E_PLUGIN, "%s: configuration '%s' has no params_json", who,
                       c->name);
    if (strnlen(c->params_json, FR_MAX_PARAMS_JSON + 1) > FR_MAX_PARAMS_JSON)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: configuration '%s' has params_json longer than %d bytes", who, c->name,
                       FR_MAX_PARAMS_JSON);
    cJSON *params = cJSON_ParseWithOpts(c->params_json, NULL, 1);
    int is_object = params && cJSON_IsObject(params);
    cJSON_Delete(params);
    if (!is_object)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: configuration '%s' has params_json that is not a JSON object: '%.60s'",
                       who, c->name, c->params_json);
    return FR_OK;
}

static fr_status validate(const fr_registry *reg, const frontier_quantizer *q, const char *origin,
                          fr_error *err)
{
    char who[FR_ERROR_MSG_MAX / 2];
    describe_origin(who, sizeof who, origin, NULL);
    if (!q)
        return fr_fail(err, FR_E_PLUGIN, "%s returned no descriptor", who);
    /* The version and size come first and are the only fields read before
     * they are known to be meaningful (plugin.h: versioning). Any version
     * from 1 to this host's is accepted (the append-only rule of SQLite and
     * Redis modules); a newer one may have required fields this host does
     * not know. */
    if (q->abi_version < 1 || q->abi_version > FRONTIER_PLUGIN_ABI_VERSION) {
        if (FRONTIER_PLUGIN_ABI_VERSION == 1)
            return fr_fail(err, FR_E_PLUGIN, "%s has ABI version %u, this frontier supports 1",
                           who, (unsigned)q->abi_version);
        return fr_fail(err, FR_E_PLUGIN,
                       "%s has ABI version %u, this frontier supports 1 to %u", who,
                       (unsigned)q->abi_version, (unsigned)FRONTIER_PLUGIN_ABI_VERSION);
    }
    if (q->struct_size < min_descriptor_size(q->abi_version))
        return fr_fail(err, FR_E_PLUGIN,
                       "%s has a descriptor of %u bytes, ABI version %u needs at least %zu", who,
                       (unsigned)q->struct_size, (unsigned)q->abi_version,
                       min_descriptor_size(q->abi_version));
    if (!q->name)
        return fr_fail(err, FR_E_PLUGIN, "%s has no quantizer name", who);
    if (strnlen(q->name, FR_MAX_QUANTIZER_NAME + 1) > FR_MAX_QUANTIZER_NAME)
        return fr_fail(err, FR_E_PLUGIN, "%s has a quantizer name longer than %d bytes", who,
                       FR_MAX_QUANTIZER_NAME);
    if (!valid_quantizer_name(q->name))
        return fr_fail(err, FR_E_PLUGIN,
                       "%s has an invalid quantizer name '%s' (a letter, then letters, digits, "
                       "'_' or '-')",
                       who, q->name);
    describe_origin(who, sizeof who, origin, q->name);
    const fr_qentry *dup = fr_registry_find_quantizer(reg, q->name);
    if (dup) {
        char from[FR_ERROR_MSG_MAX / 2];
        describe_from(from, sizeof from, dup->origin);
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' is already registered (from %s)",
                       who, q->name, from);
    }
    if (!q->description)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has no description", who, q->name);
    if (strnlen(q->description, FR_MAX_TEXT + 1) > FR_MAX_TEXT)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has a description longer than %d bytes",
                       who, q->name, FR_MAX_TEXT);
    if (!q->version)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has no version", who, q->name);
    if (strnlen(q->version, FR_MAX_TEXT + 1) > FR_MAX_TEXT)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has a version longer than %d bytes",
                       who, q->name, FR_MAX_TEXT);
    if (q->flags & ~(uint64_t)FRONTIER_Q_KNOWN_FLAGS)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: quantizer '%s' sets unknown flag bits 0x%llx (ABI version %u knows "
                       "0x%llx)",
                       who, q->name, (unsigned long long)(q->flags & ~(uint64_t)FRONTIER_Q_KNOWN_FLAGS),
                       (unsigned)FRONTIER_PLUGIN_ABI_VERSION,
                       (unsigned long long)FRONTIER_Q_KNOWN_FLAGS);
    /* only the GPU fields the plugin's struct covers exist */
    int has_cuda_fn = (FR_QUANTIZER_HAS(q, quantize_cuda) && q->quantize_cuda != NULL) ||
                      (FR_QUANTIZER_HAS(q, sweep_cuda) && q->sweep_cuda != NULL);
    if ((q->flags & FRONTIER_Q_HAS_CUDA) && !has_cuda_fn)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: quantizer '%s' sets FRONTIER_Q_HAS_CUDA but has neither quantize_cuda "
                       "nor sweep_cuda",
                       who, q->name);
    if (!(q->flags & FRONTIER_Q_HAS_CUDA) && has_cuda_fn)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: quantizer '%s' has a CUDA function but does not set "
                       "FRONTIER_Q_HAS_CUDA",
                       who, q->name);
    if (!q->size_bits)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has no size_bits function", who,
                       q->name);
    if (!q->quantize_cpu)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' has no quantize_cpu function", who,
                       q->name);
    if (q->n_configs == 0 || !q->configs)
        return fr_fail(err, FR_E_PLUGIN, "%s: quantizer '%s' offers no configurations", who,
                       q->name);
    if (q->n_configs > FR_MAX_CONFIGS)
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: quantizer '%s' claims %zu configurations, more than %d", who, q->name,
                       q->n_configs, FR_MAX_CONFIGS);
    for (size_t i = 0; i < q->n_configs; i++) {
        fr_status st = validate_config(reg, q, i, who, err);
        if (st != FR_OK)
            return st;
    }
    return FR_OK;
}

/* ---- configuration traits (plugin.h, frontier_config_traits) ---- */

#define FR_MAX_TRAIT_TEXT 200 /* whole_tensor_reason, gguf_type, fused_companion_of */

const char *fr_storage_name(int storage)
{
    switch (storage) {
    case FRONTIER_STORAGE_NONE: return "none";
    case FRONTIER_STORAGE_INT_PACK: return "int-pack";
    case FRONTIER_STORAGE_FP8: return "fp8";
    case FRONTIER_STORAGE_NVFP4: return "nvfp4";
    case FRONTIER_STORAGE_MXFP4: return "mxfp4";
    }
    return NULL;
}

/* A trait string: absent (NULL) or 1..FR_MAX_TRAIT_TEXT printable bytes. */
static int valid_trait_text(const char *s)
{
    if (!s)
        return 1;
    size_t n = strnlen(s, FR_MAX_TRAIT_TEXT + 1);
    if (n == 0 || n > FR_MAX_TRAIT_TEXT)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* The checks of one configuration's traits; the message names the field. */
static fr_status check_traits(const frontier_config_traits *t, const char *who,
                              const char *config, fr_error *err)
{
#define TRAIT_FAIL(...)                                                                      \
    do {                                                                                     \
        char why_[FR_ERROR_MSG_MAX / 2];                                                     \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                            \
        return fr_fail(err, FR_E_PLUGIN, "%s: configuration '%s' has traits with %s", who,   \
                       config, why_);                                                        \
    } while (0)
    if (t->row_multiple < 0)
        TRAIT_FAIL("row_multiple %lld (0: needs the whole tensor, > 0: row blocks)",
                   (long long)t->row_multiple);
    if (t->needs_range != 0 && t->needs_range != 1)
        TRAIT_FAIL("needs_range %d (0 or 1)", (int)t->needs_range);
    if (t->needs_range && !t->row_multiple)
        TRAIT_FAIL("needs_range without a row_multiple");
    if (!valid_trait_text(t->whole_tensor_reason))
        TRAIT_FAIL("a whole_tensor_reason that is empty, longer than %d bytes or not text",
                   FR_MAX_TRAIT_TEXT);
    if (!fr_storage_name(t->storage))
        TRAIT_FAIL("storage %d (enum frontier_storage: 0 to 4)", (int)t->storage);
    if (t->storage == FRONTIER_STORAGE_INT_PACK) {
        if (t->storage_bits < 2 || t->storage_bits > 8)
            TRAIT_FAIL("storage_bits %d (int-pack: 2 to 8)", (int)t->storage_bits);
        if (t->storage_group_size < 0)
            TRAIT_FAIL("storage_group_size %d (0: one group per row)", (int)t->storage_group_size);
        if (t->storage_symmetric != 0 && t->storage_symmetric != 1)
            TRAIT_FAIL("storage_symmetric %d (0 or 1)", (int)t->storage_symmetric);
    } else if (t->storage_scales) {
        TRAIT_FAIL("storage_scales on a %s storage (int-pack only)", fr_storage_name(t->storage));
    }
    if (t->storage == FRONTIER_STORAGE_FP8 && (t->storage_fp8_scope < FRONTIER_FP8_TENSOR ||
                                               t->storage_fp8_scope > FRONTIER_FP8_BLOCK128))
        TRAIT_FAIL("storage_fp8_scope %d (enum frontier_fp8_scope: 0 to 2)",
                   (int)t->storage_fp8_scope);
    if (!valid_trait_text(t->gguf_type))
        TRAIT_FAIL("a gguf_type that is empty, longer than %d bytes or not text",
                   FR_MAX_TRAIT_TEXT);
    if (t->needs_group_amax != 0 && t->needs_group_amax != 1)
        TRAIT_FAIL("needs_group_amax %d (0 or 1)", (int)t->needs_group_amax);
    if (t->fused_companion_of && !t->needs_group_amax)
        TRAIT_FAIL("a fused_companion_of without needs_group_amax");
    if (t->gguf_importance && !t->gguf_type)
        TRAIT_FAIL("a gguf_importance without gguf_type");
    if (t->fused_companion_of && (!valid_trait_text(t->fused_companion_of) ||
                                  !valid_quantizer_name(t->fused_companion_of)))
        TRAIT_FAIL("fused_companion_of that is not a quantizer name");
#undef TRAIT_FAIL
    return FR_OK;
}

/* Asks the descriptor for the traits of every configuration (v2,
 * config_traits; all zero without it) and checks them. */
static fr_status query_traits(const frontier_quantizer *q, const char *origin,
                              frontier_config_traits *out, fr_error *err)
{
    char who[FR_ERROR_MSG_MAX / 2];
    describe_origin(who, sizeof who, origin, q->name);
    int has = FR_QUANTIZER_HAS(q, config_traits) && q->config_traits;
    for (size_t i = 0; i < q->n_configs; i++) {
        const frontier_config *cfg = &q->configs[i];
        frontier_config_traits *t = &out[i];
        memset(t, 0, sizeof *t);
        t->struct_size = (uint32_t)sizeof *t;
        if (!has)
            continue;
        frontier_call call;
        fr_call_init(&call, NULL, 0, NULL, cfg->name);
        call.quantizer = q->name;
        int rc = q->config_traits(cfg, t, &call);
        /* the host's size, whatever the quantizer wrote there */
        t->struct_size = (uint32_t)sizeof *t;
        fr_status st = FR_OK;
        if (rc != FRONTIER_OK)
            st = fr_fail(err, FR_E_PLUGIN,
                         "%s: config_traits of configuration '%s' failed (%s)%s%s", who,
                         cfg->name, fr_plugin_status_name(rc),
                         call.failed && call.error[0] ? ": " : "",
                         call.failed && call.error[0] ? call.error : "");
        fr_call_release(&call);
        if (st == FR_OK)
            st = check_traits(t, who, cfg->name, err);
        if (st != FR_OK)
            return st;
    }
    return FR_OK;
}

void fr_registry_init_empty(fr_registry *reg)
{
    memset(reg, 0, sizeof *reg);
}

void fr_registry_set_isolation(fr_registry *reg, double timeout_s)
{
    reg->isolate_timeout_s = timeout_s > 0 ? timeout_s : 0;
}

/* ---- isolated plugin calls (core/isolate.h) ---- */

static int isolated(const fr_registry *reg, const fr_config_ref *ref)
{
    return reg->isolate_timeout_s > 0 &&
           strcmp(reg->entries[ref->quantizer].origin, FR_ORIGIN_BUILTIN) != 0;
}

typedef struct size_job {
    const frontier_quantizer *q;
    const frontier_config *cfg;
    int64_t rows, cols;
} size_job;

static int size_body(void *ctx, void *out, frontier_call *cc)
{
    size_job *j = ctx;
    return j->q->size_bits(j->cfg, j->rows, j->cols, (uint64_t *)out, cc);
}

typedef struct quantize_job {
    const frontier_quantizer *q;
    const frontier_config *cfg;
    const float *w;
    int64_t rows, cols;
    const frontier_calib *calib;
} quantize_job;

static int quantize_body(void *ctx, void *out, frontier_call *cc)
{
    quantize_job *j = ctx;
    /* the child's copy of the NaN-filled output, so unwritten elements are
     * still caught by the host's finiteness check */
    float *w_hat = out;
    for (int64_t i = 0; i < j->rows * j->cols; i++)
        w_hat[i] = __builtin_nanf("");
    return j->q->quantize_cpu(j->cfg, j->w, w_hat, j->rows, j->cols, j->calib, cc);
}

void fr_registry_free(fr_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n_entries; i++) {
        free(reg->entries[i].origin);
        free(reg->entries[i].copy);
        if (reg->entries[i].dl)
            dlclose(reg->entries[i].dl);
    }
    free(reg->entries);
    free(reg->configs);
    memset(reg, 0, sizeof *reg);
}

static fr_status registry_add(fr_registry *reg, const frontier_quantizer *q, const char *origin,
                              void *dl, int family, fr_error *err)
{
    fr_status st = validate(reg, q, origin, err);
    if (st != FR_OK)
        return st;
    frontier_config_traits *traits = calloc(q->n_configs, sizeof *traits);
    if (!traits)
        return fr_fail(err, FR_E_NOMEM, "out of memory registering quantizer '%s'", q->name);
    if ((st = query_traits(q, origin, traits, err)) != FR_OK) {
        free(traits);
        return st;
    }

    char *origin_copy = strdup(origin ? origin : FR_ORIGIN_BUILTIN);
    fr_qentry *entries = realloc(reg->entries, (reg->n_entries + 1) * sizeof *entries);
    if (entries)
        reg->entries = entries;
    fr_config_ref *configs =
        realloc(reg->configs, (reg->n_configs + q->n_configs) * sizeof *configs);
    if (configs)
        reg->configs = configs;
    if (!origin_copy || !entries || !configs) {
        /* the grown arrays are kept (they hold nothing new), the entry is not */
        free(origin_copy);
        free(traits);
        return fr_fail(err, FR_E_NOMEM, "out of memory registering quantizer '%s'", q->name);
    }

    size_t index = reg->n_entries++;
    reg->entries[index] = (fr_qentry){.q = q, .origin = origin_copy, .dl = dl, .family = family};
    for (size_t i = 0; i < q->n_configs; i++)
        reg->configs[reg->n_configs++] =
            (fr_config_ref){.quantizer = index, .cfg = &q->configs[i], .traits = traits[i]};
    free(traits);
    fr_debug("registered quantizer '%s' (%zu configurations) from %s", q->name, q->n_configs,
             reg->entries[index].origin);
    return FR_OK;
}

fr_status fr_registry_add(fr_registry *reg, const frontier_quantizer *q, const char *origin,
                          void *dl, fr_error *err)
{
    return registry_add(reg, q, origin, dl, -1, err);
}

fr_status fr_registry_add_builtin(fr_registry *reg, const frontier_quantizer *q, int family,
                                  fr_error *err)
{
    if (family < 0)
        return fr_fail(err, FR_E_FAIL, "internal: built-in family %d", family);
    if (!q)
        return registry_add(reg, q, FR_ORIGIN_BUILTIN, NULL, family, err);
    frontier_quantizer *copy = malloc(sizeof *copy);
    if (!copy)
        return fr_fail(err, FR_E_NOMEM, "out of memory registering quantizer '%s'",
                       q->name ? q->name : "(null)");
    /* a built-in is compiled against this very header: its struct is whole */
    *copy = *q;
    fr_status st = registry_add(reg, copy, FR_ORIGIN_BUILTIN, NULL, family, err);
    if (st != FR_OK) {
        free(copy);
        return st;
    }
    reg->entries[reg->n_entries - 1].copy = copy;
    return FR_OK;
}

const fr_config_ref *fr_registry_find_config(const fr_registry *reg, const char *name)
{
    for (size_t i = 0; name && i < reg->n_configs; i++)
        if (!strcmp(reg->configs[i].cfg->name, name))
            return &reg->configs[i];
    return NULL;
}

const fr_qentry *fr_registry_find_quantizer(const fr_registry *reg, const char *name)
{
    for (size_t i = 0; name && i < reg->n_entries; i++)
        if (!strcmp(reg->entries[i].q->name, name))
            return &reg->entries[i];
    return NULL;
}

const char *fr_quantizer_flag_name(uint64_t bit)
{
    switch (bit) {
    case FRONTIER_Q_NEEDS_HESSIAN: return "needs-hessian";
    case FRONTIER_Q_NEEDS_ACT_STATS: return "needs-act-stats";
    case FRONTIER_Q_HAS_CUDA: return "cuda";
    case FRONTIER_Q_DETERMINISTIC: return "deterministic";
    }
    return NULL;
}

char *fr_quantizer_flag_names(uint64_t flags, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int b = 0; b < 64; b++) {
        const char *name = fr_quantizer_flag_name(UINT64_C(1) << b);
        if (!(flags & (UINT64_C(1) << b)) || !name)
            continue;
        int n = snprintf(buf + used, size > used ? size - used : 0, "%s%s", used ? "," : "", name);
        if (n < 0 || (size_t)n >= (size > used ? size - used : 0)) {
            if (size > used)
                buf[used] = '\0'; /* whole names only */
            break;
        }
        used += (size_t)n;
    }
    return buf;
}

const char *fr_plugin_status_name(int code)
{
    switch (code) {
    case FRONTIER_OK: return "success";
    case FRONTIER_ERR_INVALID: return "invalid argument";
    case FRONTIER_ERR_NOMEM: return "out of memory";
    case FRONTIER_ERR_UNSUPPORTED: return "unsupported";
    case FRONTIER_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

/* "config 'x' on tensor 'w'" and "(quantizer 'q' from '/p/l.so')" parts of a
 * runtime failure message. */
static void call_context(const fr_registry *reg, const fr_config_ref *ref, const char *tensor,
                         int64_t rows, int64_t cols, char *what, size_t what_size, char *from,
                         size_t from_size)
{
    if (tensor)
        snprintf(what, what_size, "config '%s' on tensor '%s'", ref->cfg->name, tensor);
    else
        snprintf(what, what_size, "config '%s' on a %lld x %lld tensor", ref->cfg->name,
                 (long long)rows, (long long)cols);
    const char *origin = fr_config_origin(reg, ref);
    if (!strcmp(origin, FR_ORIGIN_BUILTIN))
        snprintf(from, from_size, "built-in quantizer '%s'", fr_config_quantizer(reg, ref)->name);
    else
        snprintf(from, from_size, "quantizer '%s' from '%s'", fr_config_quantizer(reg, ref)->name,
                 origin);
}

static fr_status call_failed(const fr_registry *reg, const fr_config_ref *ref, const char *tensor,
                             int64_t rows, int64_t cols, const char *function, int rc,
                             const frontier_call *call, fr_error *err)
{
    char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
    call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
    fr_status st = rc == FRONTIER_ERR_NOMEM ? FR_E_NOMEM : FR_E_PLUGIN;
    if (call->failed && call->error[0])
        return fr_fail(err, st, "%s: %s failed (%s): %s (%s)", what, function,
                       fr_plugin_status_name(rc), call->error, from);
    return fr_fail(err, st, "%s: %s failed (%s, code %d) (%s)", what, function,
                   fr_plugin_status_name(rc), rc, from);
}

static fr_status isolation_failed(const fr_registry *reg, const fr_config_ref *ref,
                                  const char *tensor, int64_t rows, int64_t cols,
                                  const char *function, const char *why, fr_error *err)
{
    char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
    call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
    return fr_fail(err, FR_E_PLUGIN, "%s: %s %s (isolated) (%s)", what, function, why, from);
}

static void prepare_call(const fr_registry *reg, const fr_config_ref *ref, const char *tensor,
                         frontier_call *call)
{
    if (!call->quantizer)
        call->quantizer = fr_config_quantizer(reg, ref)->name;
    if (!call->config)
        call->config = ref->cfg->name;
    if (!call->tensor)
        call->tensor = tensor;
    call->failed = 0;
    call->error[0] = '\0';
}

fr_status fr_quantizer_size_bits(const fr_registry *reg, const fr_config_ref *ref, int64_t rows,
                                 int64_t cols, const char *tensor, frontier_call *call,
                                 uint64_t *total_bits, fr_error *err)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    prepare_call(reg, ref, tensor, call);
    uint64_t bits = 0;
    int rc;
    if (isolated(reg, ref)) {
        size_job job = {q, ref->cfg, rows, cols};
        char why[256];
        if (fr_isolate_run(size_body, &job, &bits, sizeof bits, reg->isolate_timeout_s, call, &rc,
                           why, sizeof why) != 0)
            return isolation_failed(reg, ref, tensor, rows, cols, "size_bits", why, err);
    } else {
        rc = q->size_bits(ref->cfg, rows, cols, &bits, call);
    }
    if (rc != FRONTIER_OK)
        return call_failed(reg, ref, tensor, rows, cols, "size_bits", rc, call, err);
    /* 2^63: total bits are stored as int64 in the dataset */
    if (bits == 0 || bits >= (UINT64_C(1) << 63)) {
        char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
        call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
        return fr_fail(err, FR_E_PLUGIN, "%s: size_bits returned %llu bits, outside [1, 2^63) (%s)",
                       what, (unsigned long long)bits, from);
    }
    *total_bits = bits;
    return FR_OK;
}

/* Elements per chunk of the output checks: large enough that a chunk costs
 * far more than handing it to a thread. */
#define FR_SCAN_GRAIN (INT64_C(1) << 16)

typedef struct fr_output_scan {
    float *w_hat;
    _Atomic int64_t first_bad; /* smallest index of a non-finite element, n if none */
} fr_output_scan;

static void fill_nan(void *arg, int64_t begin, int64_t end)
{
    fr_output_scan *scan = arg;
    for (int64_t i = begin; i < end; i++)
        scan->w_hat[i] = NAN;
}

/* The exponent field all ones is Inf or NaN; written on the bits so the loop
 * vectorises, and the smallest such index wins whatever the chunk order. */
static void find_non_finite(void *arg, int64_t begin, int64_t end)
{
    fr_output_scan *scan = arg;
    uint32_t any = 0;
    for (int64_t i = begin; i < end; i++) {
        uint32_t u;
        memcpy(&u, &scan->w_hat[i], sizeof u);
        any |= (u & 0x7f800000u) == 0x7f800000u;
    }
    if (!any)
        return;
    for (int64_t i = begin; i < end; i++) {
        if (!isfinite(scan->w_hat[i])) {
            int64_t seen = atomic_load(&scan->first_bad);
            while (i < seen && !atomic_compare_exchange_weak(&scan->first_bad, &seen, i))
                ;
            return;
        }
    }
}

/* A quantizer flagged as needing statistics is not called without them. */
static fr_status check_statistics(const fr_registry *reg, const fr_config_ref *ref,
                                  const frontier_calib *calib, const char *tensor, int64_t rows,
                                  int64_t cols, fr_error *err)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
    if ((q->flags & FRONTIER_Q_NEEDS_HESSIAN) && !(calib && calib->hessian)) {
        call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
        return fr_fail(err, FR_E_USAGE, "%s: needs a Hessian from calibration statistics (%s)",
                       what, from);
    }
    if ((q->flags & FRONTIER_Q_NEEDS_ACT_STATS) &&
        !(calib && (calib->act_mean_abs || calib->act_mean_sq))) {
        call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
        return fr_fail(err, FR_E_USAGE, "%s: needs activation statistics from calibration (%s)",
                       what, from);
    }
    return FR_OK;
}

fr_status fr_quantizer_quantize_cpu(const fr_registry *reg, const fr_config_ref *ref,
                                    const float *w, float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, const char *tensor,
                                    frontier_call *call, fr_error *err)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
    fr_status st = check_statistics(reg, ref, calib, tensor, rows, cols, err);
    if (st != FR_OK)
        return st;
    int64_t n = rows * cols;
    /* NaN in every element first: an element the quantizer never writes is
     * then caught by the same finiteness check as a NaN it computed */
    fr_output_scan scan = {.w_hat = w_hat, .first_bad = n};
    fr_parallel_for(call->pool, n, FR_SCAN_GRAIN, fill_nan, &scan);
    prepare_call(reg, ref, tensor, call);
    int rc;
    if (isolated(reg, ref)) {
        quantize_job job = {q, ref->cfg, w, rows, cols, calib};
        char why[256];
        if (fr_isolate_run(quantize_body, &job, w_hat, (size_t)n * sizeof *w_hat,
                           reg->isolate_timeout_s, call, &rc, why, sizeof why) != 0)
            return isolation_failed(reg, ref, tensor, rows, cols, "quantize_cpu", why, err);
    } else {
        rc = q->quantize_cpu(ref->cfg, w, w_hat, rows, cols, calib, call);
    }
    if (rc != FRONTIER_OK)
        return call_failed(reg, ref, tensor, rows, cols, "quantize_cpu", rc, call, err);
    fr_parallel_for(call->pool, n, FR_SCAN_GRAIN, find_non_finite, &scan);
    int64_t bad = atomic_load(&scan.first_bad);
    if (bad < n) {
        call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
        return fr_fail(err, FR_E_PLUGIN, "%s: quantize_cpu output is %s at row %lld, col %lld (%s)",
                       what, isnan(w_hat[bad]) ? "nan" : "inf", (long long)(bad / cols),
                       (long long)(bad % cols), from);
    }
    return FR_OK;
}

/* The function `function` of the descriptor is absent or not covered by
 * its struct_size. */
static fr_status missing_function(const fr_registry *reg, const fr_config_ref *ref,
                                  const char *tensor, int64_t rows, int64_t cols,
                                  const char *function, fr_error *err)
{
    char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
    call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
    return fr_fail(err, FR_E_USAGE, "%s: the quantizer has no %s (%s)", what, function, from);
}

fr_status fr_quantizer_sweep_cuda(const fr_registry *reg, const fr_config_ref *ref,
                                  const void *w, int dtype, int64_t rows, int64_t cols,
                                  const frontier_calib *calib, const char *tensor, void *stream,
                                  frontier_call *call, frontier_error_sums *sums, fr_error *err)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    if (!(q->flags & FRONTIER_Q_HAS_CUDA) || !FR_QUANTIZER_HAS(q, sweep_cuda) || !q->sweep_cuda)
        return missing_function(reg, ref, tensor, rows, cols, "sweep_cuda", err);
    fr_status st = check_statistics(reg, ref, calib, tensor, rows, cols, err);
    if (st != FR_OK)
        return st;
    prepare_call(reg, ref, tensor, call);
    const frontier_config *cfg = ref->cfg;
    frontier_error_sums got = {NAN, NAN, NAN, NAN, NAN};
    int rc = q->sweep_cuda(&cfg, 1, w, dtype, rows, cols, calib, &got, stream, call);
    if (rc != FRONTIER_OK)
        return call_failed(reg, ref, tensor, rows, cols, "sweep_cuda", rc, call, err);
    /* NaN fails every comparison, so each test is written to pass only on
     * a finite, non-negative value */
    if (!(isfinite(got.sq_err) && got.sq_err >= 0.0) ||
        !(isfinite(got.sq_hat) && got.sq_hat >= 0.0) || !isfinite(got.dot) ||
        !(isfinite(got.max_abs_err) && got.max_abs_err >= 0.0) || !isfinite(got.sq_ref)) {
        char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
        call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
        return fr_fail(err, FR_E_PLUGIN,
                       "%s: sweep_cuda returned sums that are not finite and non-negative "
                       "(sq_err %g, sq_hat %g, max_abs_err %g) (%s)",
                       what, got.sq_err, got.sq_hat, got.max_abs_err, from);
    }
    *sums = got;
    return FR_OK;
}

fr_status fr_quantizer_quantize_cuda(const fr_registry *reg, const fr_config_ref *ref,
                                     const void *w, int dtype, float *w_hat, int64_t rows,
                                     int64_t cols, const frontier_calib *calib,
                                     const char *tensor, void *stream, frontier_call *call,
                                     fr_error *err)
{
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    if (!(q->flags & FRONTIER_Q_HAS_CUDA) || !FR_QUANTIZER_HAS(q, quantize_cuda) ||
        !q->quantize_cuda)
        return missing_function(reg, ref, tensor, rows, cols, "quantize_cuda", err);
    fr_status st = check_statistics(reg, ref, calib, tensor, rows, cols, err);
    if (st != FR_OK)
        return st;
    prepare_call(reg, ref, tensor, call);
    int rc = q->quantize_cuda(ref->cfg, w, dtype, w_hat, rows, cols, calib, stream, call);
    if (rc != FRONTIER_OK)
        return call_failed(reg, ref, tensor, rows, cols, "quantize_cuda", rc, call, err);
    return FR_OK;
}

fr_status fr_quantizer_storage_scales(const fr_registry *reg, const fr_config_ref *ref,
                                      const float *w, int64_t rows, int64_t cols,
                                      float *scales, float *zero_points, const char *tensor,
                                      frontier_call *call, fr_error *err)
{
    const frontier_config_traits *t = fr_config_traits_of(ref);
    if (t->storage != FRONTIER_STORAGE_INT_PACK || !t->storage_scales)
        return missing_function(reg, ref, tensor, rows, cols, "storage_scales", err);
    const int64_t groups = t->storage_group_size > 0
                               ? (cols + t->storage_group_size - 1) / t->storage_group_size
                               : 1;
    const int64_t n = rows * groups;
    float *zeros = t->storage_symmetric ? NULL : zero_points;
    for (int64_t i = 0; i < n; i++) {
        scales[i] = NAN;
        if (zeros)
            zeros[i] = NAN;
    }
    prepare_call(reg, ref, tensor, call);
    int rc = t->storage_scales(ref->cfg, w, rows, cols, scales, zeros, call);
    if (rc != FRONTIER_OK)
        return call_failed(reg, ref, tensor, rows, cols, "storage_scales", rc, call, err);
    const float top = (float)((1 << t->storage_bits) - 1);
    for (int64_t i = 0; i < n; i++) {
        int bad_scale = !(isfinite(scales[i]) && scales[i] >= 0.0f);
        int bad_zero =
            zeros && !(zeros[i] >= 0.0f && zeros[i] <= top && zeros[i] == rintf(zeros[i]));
        if (bad_scale || bad_zero) {
            char what[FR_ERROR_MSG_MAX / 2], from[FR_ERROR_MSG_MAX / 2];
            call_context(reg, ref, tensor, rows, cols, what, sizeof what, from, sizeof from);
            return fr_fail(err, FR_E_PLUGIN,
                           "%s: storage_scales gave %s %g for row %lld, group %lld (%s)", what,
                           bad_scale ? "scale" : "zero point", bad_scale ? scales[i] : zeros[i],
                           (long long)(i / groups), (long long)(i % groups), from);
        }
    }
    return FR_OK;
}
