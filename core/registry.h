/*
 * The quantizer registry: built-ins and plugins, all through the
 * frontier_quantizer descriptor of include/frontier/plugin.h.
 *
 * Registration validates a descriptor before anything of it is trusted
 * (docs/plugins.md lists every check and its message). Once registered, the
 * engine calls a quantizer only through fr_quantizer_size_bits() and
 * fr_quantizer_quantize_cpu(), which check what the quantizer hands back.
 */
#ifndef FR_REGISTRY_H
#define FR_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frontier/plugin.h"

typedef struct fr_qentry {
    const frontier_quantizer *q;
    char *origin;  /* "builtin" or the plugin's path */
    void *dl;      /* dlopen handle, NULL for built-ins */
    int family;    /* the built-in family (enum fr_family of quantizers/families.h),
                    * -1 for a plugin: what the GPU dispatch keys on */
    frontier_quantizer *copy; /* a built-in's descriptor, the registry's own copy
                               * (q points to it); NULL for a plugin */
} fr_qentry;

typedef struct fr_config_ref {
    size_t quantizer;           /* index into fr_registry.entries */
    const frontier_config *cfg; /* points into the descriptor */
    /* what the descriptor's config_traits said at registration, checked;
     * all zero ("nothing known") without the function */
    frontier_config_traits traits;
} fr_config_ref;

typedef struct fr_registry {
    fr_qentry *entries;
    size_t n_entries;
    fr_config_ref *configs;  /* every configuration, in registration order */
    size_t n_configs;
    /* > 0: plugins' size_bits and quantize_cpu run in a child process with
     * this timeout in seconds (core/isolate.h); 0: in this process */
    double isolate_timeout_s;
} fr_registry;

/* Plugin isolation (`--isolate-plugins`, core/isolate.h): seconds > 0 runs
 * every plugin's size_bits and quantize_cpu in a child process that is
 * killed past that many seconds; 0 turns it off. Built-ins run in process. */
void fr_registry_set_isolation(fr_registry *reg, double timeout_s);

/* Origin of every built-in quantizer. */
#define FR_ORIGIN_BUILTIN "builtin"

/* An empty registry. The built-ins are registered from above core/ by
 * fr_registry_init (frontier/exec/builtins.h), which is what callers use. */
void fr_registry_init_empty(fr_registry *reg);
/* Unregisters everything and dlclose()s the plugins. */
void fr_registry_free(fr_registry *reg);

/* Validates a descriptor (ABI version, struct size, required functions,
 * known flags, unique quantizer and config names) and adds it. origin is
 * copied. On success the registry owns dl (closed by fr_registry_free); on
 * failure nothing is kept and dl stays the caller's. */
fr_status fr_registry_add(fr_registry *reg, const frontier_quantizer *q, const char *origin,
                          void *dl, fr_error *err);

/* fr_registry_add of a built-in descriptor of family `family` (enum
 * fr_family, >= 0): origin "builtin", no shared object. The registry keeps
 * a copy of *q (freed with it), so the caller may pass one it assembled,
 * e.g. a quantizers/ descriptor with kernels/' GPU functions attached. */
fr_status fr_registry_add_builtin(fr_registry *reg, const frontier_quantizer *q, int family,
                                  fr_error *err);

/* dlopen()s a plugin and registers its descriptor; on failure nothing is
 * kept and the object is dlclose()d (FR_E_PLUGIN). Loading an object that is
 * already registered (same file) is a no-op. */
fr_status fr_registry_load_plugin(fr_registry *reg, const char *path, fr_error *err);

/* Loads the explicit --plugin paths (a failure is an error: FR_E_PLUGIN),
 * then FRONTIER_PLUGIN_PATH (colon-separated folders or files; "none"
 * disables discovery) and the installed plugin folder; plugins found by
 * discovery that fail are reported and skipped. */
fr_status fr_registry_discover(fr_registry *reg, const char *const *explicit_paths,
                               size_t n_explicit, fr_error *err);

/* fr_registry_discover with the environment made explicit: plugin_path is
 * the value of FRONTIER_PLUGIN_PATH (NULL when unset), installed_dir the
 * installed plugin folder (NULL: none). */
fr_status fr_registry_discover_from(fr_registry *reg, const char *const *explicit_paths,
                                    size_t n_explicit, const char *plugin_path,
                                    const char *installed_dir, fr_error *err);

/* The installed plugin folder compiled in (FRONTIER_PLUGIN_DIR). */
const char *fr_registry_plugin_dir(void);

const fr_config_ref *fr_registry_find_config(const fr_registry *reg, const char *name);
const fr_qentry *fr_registry_find_quantizer(const fr_registry *reg, const char *name);

static inline const frontier_quantizer *fr_config_quantizer(const fr_registry *reg,
                                                            const fr_config_ref *ref)
{
    return reg->entries[ref->quantizer].q;
}

static inline const char *fr_config_origin(const fr_registry *reg, const fr_config_ref *ref)
{
    return reg->entries[ref->quantizer].origin;
}

/* The traits of a configuration (include/frontier/plugin.h,
 * frontier_config_traits): everything the engine decides per configuration
 * beyond its numbers (row blocks, checkpoint storage, GGUF type, fused
 * groups) is read here, for built-ins and plugins alike. */
static inline const frontier_config_traits *fr_config_traits_of(const fr_config_ref *ref)
{
    return &ref->traits;
}

/* Name of a storage (enum frontier_storage): "none", "int-pack", "fp8",
 * "nvfp4", "mxfp4"; NULL for an unknown value. */
const char *fr_storage_name(int storage);

/* Name of one FRONTIER_Q_* bit ("needs-hessian", "needs-act-stats", "cuda",
 * "deterministic"); NULL for an unknown bit. */
const char *fr_quantizer_flag_name(uint64_t bit);

/* Writes the flag names ("needs-hessian,cuda,deterministic"; "" for none)
 * into buf; returns buf. */
char *fr_quantizer_flag_names(uint64_t flags, char *buf, size_t size);

/* Short name of a plugin return code (enum frontier_status): "invalid argument". */
const char *fr_plugin_status_name(int code);

/*
 * Checked calls: the only way the engine calls a quantizer. Each fills in
 * call->quantizer when unset, calls the function and checks the result; a
 * failure is reported in err naming the configuration, the tensor and where
 * the quantizer came from, and the caller goes on with the other
 * configurations. tensor may be NULL ("a rows x cols tensor" in messages).
 *
 * fr_quantizer_size_bits: the function must return FRONTIER_OK and a size
 * with 0 < total_bits < 2^63.
 *
 * fr_quantizer_quantize_cpu: the function must return FRONTIER_OK and write
 * a finite value into every element of w_hat (w_hat is filled with NaN
 * before the call, so an element it never wrote is caught too). A quantizer
 * flagged FRONTIER_Q_NEEDS_HESSIAN / NEEDS_ACT_STATS is not called without
 * those statistics (FR_E_USAGE).
 *
 * Status: FR_E_PLUGIN when the quantizer failed or misbehaved (FR_E_NOMEM
 * when it returned FRONTIER_ERR_NOMEM).
 */
fr_status fr_quantizer_size_bits(const fr_registry *reg, const fr_config_ref *ref, int64_t rows,
                                 int64_t cols, const char *tensor, frontier_call *call,
                                 uint64_t *total_bits, fr_error *err);
fr_status fr_quantizer_quantize_cpu(const fr_registry *reg, const fr_config_ref *ref,
                                    const float *w, float *w_hat, int64_t rows, int64_t cols,
                                    const frontier_calib *calib, const char *tensor,
                                    frontier_call *call, fr_error *err);

/*
 * fr_quantizer_storage_scales: the traits' storage_scales of an INT_PACK
 * configuration (FR_E_USAGE when it has none): scales [rows x groups] and,
 * for an asymmetric storage, zero_points (else NULL) of w. The scales must
 * come back finite and >= 0, the zero points integers in [0, 2^bits - 1]
 * (both are poisoned with NaN before the call). groups is
 * ceil(cols / storage_group_size), 1 for one group per row.
 */
fr_status fr_quantizer_storage_scales(const fr_registry *reg, const fr_config_ref *ref,
                                      const float *w, int64_t rows, int64_t cols,
                                      float *scales, float *zero_points, const char *tensor,
                                      frontier_call *call, fr_error *err);

/* True when the descriptor's struct_size covers `field`: a field past the
 * end of a plugin's struct is absent, whatever the bytes there hold. */
#define FR_QUANTIZER_HAS(q, field)                                                           \
    ((size_t)(q)->struct_size >= offsetof(frontier_quantizer, field) + sizeof((q)->field))

/* The descriptor's GPU functions as the host may call them: NULL when the
 * quantizer has no CUDA path or its struct does not reach the field. */
static inline int fr_quantizer_has_cuda(const frontier_quantizer *q)
{
    return (q->flags & FRONTIER_Q_HAS_CUDA) &&
           ((FR_QUANTIZER_HAS(q, sweep_cuda) && q->sweep_cuda) ||
            (FR_QUANTIZER_HAS(q, quantize_cuda) && q->quantize_cuda));
}

/*
 * The GPU side of the checked calls. w is a device tensor of `dtype`
 * (enum frontier_dtype), stream a cudaStream_t; core/ calls the
 * descriptor's function and checks what comes back, never touching the
 * device itself.
 *
 * fr_quantizer_sweep_cuda: sweep_cuda of one configuration; the sums it
 * returns must be finite with sq_err, sq_hat, max_abs_err >= 0 (a NaN or
 * negative sum is the quantizer's failure, not a measurement).
 *
 * fr_quantizer_quantize_cuda: quantize_cuda into the device buffer w_hat
 * (enqueued on stream; the caller synchronises and measures).
 *
 * Both: FR_E_USAGE when the function is absent (FR_QUANTIZER_HAS) or the
 * quantizer needs statistics it was not given; FR_E_PLUGIN / FR_E_NOMEM
 * when it fails, with the message naming configuration, tensor and origin.
 */
fr_status fr_quantizer_sweep_cuda(const fr_registry *reg, const fr_config_ref *ref,
                                  const void *w, int dtype, int64_t rows, int64_t cols,
                                  const frontier_calib *calib, const char *tensor, void *stream,
                                  frontier_call *call, frontier_error_sums *sums, fr_error *err);
fr_status fr_quantizer_quantize_cuda(const fr_registry *reg, const fr_config_ref *ref,
                                     const void *w, int dtype, float *w_hat, int64_t rows,
                                     int64_t cols, const frontier_calib *calib,
                                     const char *tensor, void *stream, frontier_call *call,
                                     fr_error *err);

#endif
