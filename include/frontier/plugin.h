/*
 * frontier quantizer plugin ABI.
 *
 * This is the only header a quantizer plugin needs. A plugin is a shared
 * object exporting one symbol, FRONTIER_PLUGIN_ENTRY_SYMBOL, of type
 * frontier_plugin_entry_fn. The host calls it once with its table of services
 * and receives a descriptor. Built-in quantizers are registered through the
 * very same descriptor, so the host has one code path for both.
 *
 * Versioning (the SQLite / Redis-module rule): the descriptor and the host's
 * table start with an ABI version and their own size, the traits struct with
 * its size. Fields are only ever appended; each new field is tagged with the
 * ABI version that added it. The host reads a field only when the plugin's
 * struct_size covers it, and refuses a plugin whose abi_version it does not
 * know, naming both versions; a version-1 plugin loads unchanged.
 *
 * Threading: the entry point runs once, before anything else. After that the
 * host may call size_bits / quantize_* from several threads at once, each
 * call with its own frontier_call, so these functions keep no mutable static
 * state. docs/plugins.md is the full contract (memory ownership, what the
 * host checks, discovery, exit codes).
 *
 * Nothing here includes CUDA headers: device pointers and streams are void *.
 */
#ifndef FRONTIER_PLUGIN_H
#define FRONTIER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the structs in this header. Bumped only when a field is appended. */
#define FRONTIER_PLUGIN_ABI_VERSION 2u

/* Name of the symbol a plugin exports (type frontier_plugin_entry_fn). */
#define FRONTIER_PLUGIN_ENTRY_SYMBOL "frontier_plugin_entry"

/* Portable export attribute for the entry symbol. */
#if defined(_WIN32)
#define FRONTIER_PLUGIN_EXPORT __declspec(dllexport)
#else
#define FRONTIER_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Return codes of every plugin function. */
enum frontier_status {
    FRONTIER_OK = 0,
    FRONTIER_ERR_INVALID = 1,     /* bad arguments or a shape/config it cannot handle */
    FRONTIER_ERR_NOMEM = 2,       /* an allocation failed */
    FRONTIER_ERR_UNSUPPORTED = 3, /* e.g. a GPU path asked for a dtype it lacks */
    FRONTIER_ERR_INTERNAL = 4     /* anything else; set_error says what */
};

/* Capability flags of a quantizer (frontier_quantizer.flags). */
#define FRONTIER_Q_NEEDS_HESSIAN   (1ull << 0) /* needs H = E[x x^T] per tensor */
#define FRONTIER_Q_NEEDS_ACT_STATS (1ull << 1) /* needs per-input-channel activation statistics */
#define FRONTIER_Q_HAS_CUDA        (1ull << 2) /* quantize_cuda (or sweep_cuda) is provided */
#define FRONTIER_Q_DETERMINISTIC   (1ull << 3) /* same input -> bit-identical output */
#define FRONTIER_Q_KNOWN_FLAGS     ((1ull << 4) - 1)

/* Element dtypes of tensors handed to GPU functions (inputs are read as stored). */
enum frontier_dtype {
    FRONTIER_DTYPE_F32 = 0,
    FRONTIER_DTYPE_F16 = 1,
    FRONTIER_DTYPE_BF16 = 2
};

/* Log levels for frontier_host_api.log. */
enum frontier_log_level {
    FRONTIER_LOG_ERROR = 0,
    FRONTIER_LOG_WARN = 1,
    FRONTIER_LOG_INFO = 2,
    FRONTIER_LOG_DEBUG = 3
};

/* One configuration a quantizer offers. */
typedef struct frontier_config {
    const char *name;        /* canonical and unique across the registry: "int4-g128-asym" */
    double nominal_bits;     /* what --bits selects on: 4 for nvfp4, 8 for fp8-e4m3-tensor */
    const char *params_json; /* parameters as one JSON object, stored in the dataset */
    const void *impl;        /* the quantizer's own parameters; opaque to the host */
} frontier_config;

/*
 * Calibration statistics of one tensor's input (cols = input features).
 * Pointers are NULL when the statistic is not available. Host memory for
 * every function, the GPU ones included (the struct and its arrays: a GPU
 * function uploads what its kernels need; frontier's executor has always
 * passed host pointers).
 */
typedef struct frontier_calib {
    int64_t cols;
    const float *hessian;      /* [cols x cols], H = mean of x x^T, row-major */
    const float *act_mean_abs; /* [cols], mean |x_j| */
    const float *act_mean_sq;  /* [cols], mean x_j^2 */
} frontier_calib;

/*
 * Error sums of one (tensor, configuration), accumulated in double.
 * rel_err = sqrt(sq_err / sq_ref), cosine = dot / sqrt(sq_ref * sq_hat).
 */
typedef struct frontier_error_sums {
    double sq_err;      /* sum (w - w_hat)^2 */
    double sq_ref;      /* sum w^2 */
    double sq_hat;      /* sum w_hat^2 */
    double dot;         /* sum w * w_hat */
    double max_abs_err; /* max |w - w_hat| */
} frontier_error_sums;

/* Opaque host context of one call (one tensor x configuration). */
typedef struct frontier_call frontier_call;

/* How a checkpoint stores a configuration (frontier_config_traits.storage):
 * the compressed-tensors formats `frontier quantize` writes (docs/quantize.md
 * has their layouts and the rule that computes codes and scales from W). */
enum frontier_storage {
    FRONTIER_STORAGE_NONE = 0,     /* no checkpoint format: dequantized output only */
    FRONTIER_STORAGE_INT_PACK = 1, /* pack-quantized: b-bit integer codes, one scale (and, when
                                    * asymmetric, one b-bit zero point) per group of a row or
                                    * per row; x^ = (q - z) s */
    FRONTIER_STORAGE_FP8 = 2,      /* float-quantized: E4M3 elements, fp32 scales */
    FRONTIER_STORAGE_NVFP4 = 3,    /* nvfp4-pack-quantized: E2M1, E4M3 per 16, fp32 global */
    FRONTIER_STORAGE_MXFP4 = 4     /* mxfp4-pack-quantized: E2M1, E8M0 per 32 */
};

/* Scale scopes of FRONTIER_STORAGE_FP8. */
enum frontier_fp8_scope {
    FRONTIER_FP8_TENSOR = 0,  /* one scale */
    FRONTIER_FP8_CHANNEL = 1, /* one per row */
    FRONTIER_FP8_BLOCK128 = 2 /* one per 128 x 128 tile */
};

/*
 * What the host may know of one configuration beyond its numbers: the
 * properties that decide how a sweep runs it and how a checkpoint stores
 * it. Filled by frontier_quantizer.config_traits (v2). The host zeroes the
 * struct and sets struct_size before the call; zero is "nothing known" for
 * every field, so a quantizer writes only what it knows, and only the fields
 * the host's struct_size covers (FRONTIER_TRAITS_HAS). Strings and the
 * function must stay valid until the plugin is unloaded (static storage).
 */
typedef struct frontier_config_traits {
    uint32_t struct_size; /* set by the host: sizeof(frontier_config_traits) as it was built */

    /* v2: row blocks (`frontier sweep --max-memory`). row_multiple > 0 says
     * quantize_cpu on a block of whole rows that starts at a multiple of
     * row_multiple rows gives exactly those rows of its result on the whole
     * tensor, bit for bit; 0: it needs the whole tensor. */
    int64_t row_multiple;
    /* v2: with row_multiple > 0: the one tensor-wide statistic it reads is
     * the tensor's range (min, max, or amax). The host appends two rows to
     * every block, one filled with the tensor's minimum and one with its
     * maximum, and drops their output. */
    int32_t needs_range;
    /* v2, optional: why it needs the whole tensor ("a tensor-wide scale
     * (...)"), quoted in the sweep's /skipped; at most 200 bytes */
    const char *whole_tensor_reason;

    /* v2: the checkpoint storage, enum frontier_storage. The writer computes
     * codes and scales from W by the storage's own rule (or, for INT_PACK,
     * from storage_scales), decodes them and requires the result to equal
     * quantize_cpu's bit for bit before it writes anything. */
    int32_t storage;
    int32_t storage_bits;       /* INT_PACK: 2..8 (the others imply theirs) */
    int32_t storage_group_size; /* INT_PACK: elements per group of a row, 0: one group per row */
    int32_t storage_symmetric;  /* INT_PACK: 1 symmetric (no zero point), 0 asymmetric */
    int32_t storage_fp8_scope;  /* FP8: enum frontier_fp8_scope */
    /* v2, INT_PACK, optional: the scales (and, asymmetric, the zero points,
     * integers in [0, 2^bits - 1]) cfg gives w, one per group, row-major
     * [rows][groups]; zero_points is NULL when symmetric. The writer then
     * codes x as clamp(rint(x / s) + z). NULL: the storage's own rule, an
     * fp16 scale amax / (2^(b-1) - 1) or (max - min) / (2^b - 1) and
     * z = clamp(rint(-min / s)) (docs/quantize.md). */
    int (*storage_scales)(const frontier_config *cfg, const float *w, int64_t rows,
                          int64_t cols, float *scales, float *zero_points, frontier_call *call);

    /* v2: the GGUF tensor type ("q4_0", llama-quantize's spelling) whose
     * blocks quantize_cpu computes exactly (ggml-quants.c's reference
     * quantizer), so `frontier quantize --format gguf` can write it; NULL:
     * none. On rows (cols) that type's block does not divide, quantize_cpu
     * computes the type llama-quantize falls back to, which the writer
     * stores (Q4_K as Q5_0, ..., F16; docs/quantize.md). */
    const char *gguf_type;

    /* v2: quantize_cpu reads the joint amax of the tensor's fused group
     * (q/k/v, gate/up, w1/w3, q_a/kv_a: frontier_host_api.group_amax) and
     * fails without it. The sweep measures such a configuration only with
     * --fused-global-scale, on members of a group of two or more; it is never
     * selected by --quantizers. */
    int32_t needs_group_amax;
    /* v2, with needs_group_amax: the quantizer (its name) next to whose
     * configurations --fused-global-scale measures this one ("nvfp4") */
    const char *fused_companion_of;

    /* v2, with gguf_type, optional: quantize_cpu's codes are ggml's
     * importance-weighted search (llama-quantize --imatrix) under the
     * per-column importance this function derives from the tensor's
     * statistics, so the GGUF writer encodes with the same importance and
     * can store a calibrated configuration. Writes up to cols floats into
     * scratch and returns the importance (scratch or a pointer into calib),
     * or NULL when calib has no statistics it can use. NULL: the
     * unweighted reference quantizer. */
    const float *(*gguf_importance)(const frontier_calib *calib, int64_t cols, float *scratch);
} frontier_config_traits;

/* True when a traits struct of size t->struct_size has `field`. */
#define FRONTIER_TRAITS_HAS(t, field)                                                        \
    ((size_t)(t)->struct_size >= offsetof(frontier_config_traits, field) + sizeof((t)->field))

/* Body of a parallel loop over [begin, end). */
typedef void (*frontier_range_fn)(void *arg, int64_t begin, int64_t end);

/* Services the host offers a plugin. Passed to the entry point; valid until unload. */
typedef struct frontier_host_api {
    uint32_t abi_version; /* the host's FRONTIER_PLUGIN_ABI_VERSION */
    uint32_t struct_size; /* sizeof(frontier_host_api) as the host built it */
    /* v1: message to the host's log (printf format). */
    void (*log)(frontier_call *call, int level, const char *fmt, ...);
    /* v1: records why the current call fails; return an error code after it.
     * Call it from the thread that received the call (not from a
     * parallel_for body); the host quotes the message in its report. */
    void (*set_error)(frontier_call *call, const char *fmt, ...);
    /* v1: 64-byte aligned scratch memory, freed by the host when the call
     * returns; NULL when out of memory. Thread-safe. */
    void *(*scratch_alloc)(frontier_call *call, size_t bytes);
    /* v1: deterministic 64-bit random numbers for this call (seeded from the
     * run's seed, the tensor and the configuration). Not thread-safe. */
    uint64_t (*rng_u64)(frontier_call *call);
    /* v1: runs fn over [0, n) in chunks of at least `grain`, on the host's
     * threads; returns when all chunks are done. Chunks must be independent. */
    void (*parallel_for)(frontier_call *call, int64_t n, int64_t grain,
                         frontier_range_fn fn, void *arg);
    /* v2: the joint amax (largest finite |w|) over the members of the
     * tensor's fused group, for a configuration whose traits set
     * needs_group_amax: 1 and *amax when the host has it for this call, 0
     * otherwise. */
    int (*group_amax)(frontier_call *call, float *amax);
} frontier_host_api;

/*
 * The descriptor. A plugin returns a pointer to a static instance; it must
 * stay valid until the plugin is unloaded.
 */
typedef struct frontier_quantizer {
    uint32_t abi_version; /* FRONTIER_PLUGIN_ABI_VERSION the plugin was built with */
    uint32_t struct_size; /* sizeof(frontier_quantizer) as the plugin saw it */
    const char *name;        /* v1: family name, unique: "int", "nvfp4", "ternary" */
    const char *description; /* v1: one line */
    const char *version;     /* v1: the plugin's own version string */
    uint64_t flags;          /* v1: FRONTIER_Q_* */
    size_t n_configs;        /* v1 */
    const frontier_config *configs; /* v1: n_configs entries */

    /* v1, required: exact size in bits of everything a checkpoint stores for
     * a rows x cols tensor under cfg (codes, scales, zero points, globals). */
    int (*size_bits)(const frontier_config *cfg, int64_t rows, int64_t cols,
                     uint64_t *total_bits, frontier_call *call);

    /* v1, required: quantize-dequantize on the CPU. w and w_hat are host
     * rows x cols float32, row-major; calib is NULL without statistics. */
    int (*quantize_cpu)(const frontier_config *cfg, const float *w, float *w_hat,
                        int64_t rows, int64_t cols, const frontier_calib *calib,
                        frontier_call *call);

    /* v1, optional: quantize-dequantize on the GPU. w is a device pointer of
     * `dtype` (enum frontier_dtype), w_hat a device float32 buffer, stream a
     * cudaStream_t. Work is enqueued on stream; the host synchronises. */
    int (*quantize_cuda)(const frontier_config *cfg, const void *w, int dtype,
                         float *w_hat, int64_t rows, int64_t cols,
                         const frontier_calib *calib, void *stream,
                         frontier_call *call);

    /* v1, optional: fused GPU sweep: evaluates n_cfgs configurations of this
     * quantizer with one pass over w (device pointer of `dtype`) and writes
     * one frontier_error_sums per configuration into sums (host memory) once
     * the stream has been synchronised by the function itself. Must give the
     * same sums as quantize_cuda followed by the host's metric reduction. */
    int (*sweep_cuda)(const frontier_config *const *cfgs, size_t n_cfgs,
                      const void *w, int dtype, int64_t rows, int64_t cols,
                      const frontier_calib *calib, frontier_error_sums *sums,
                      void *stream, frontier_call *call);

    /* v2, optional: the traits of one of its configurations (see
     * frontier_config_traits). Called once per configuration at
     * registration, with a call for set_error; a failure refuses the
     * quantizer. NULL (or a v1 descriptor): nothing known, so the host
     * runs every configuration on whole tensors and writes it only as
     * dequantized weights. */
    int (*config_traits)(const frontier_config *cfg, frontier_config_traits *traits,
                         frontier_call *call);
} frontier_quantizer;

/* The entry point a plugin exports. Returns NULL on failure (after logging why). */
typedef const frontier_quantizer *(*frontier_plugin_entry_fn)(const frontier_host_api *host);

/* Declared here so the compiler checks a plugin's definition against
 * frontier_plugin_entry_fn. The host never calls it by name: it looks the
 * symbol up in each shared object (docs/plugins.md). A plugin defines it as
 *   FRONTIER_PLUGIN_EXPORT const frontier_quantizer *
 *   frontier_plugin_entry(const frontier_host_api *host) { ... } */
FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *host);

#ifdef __cplusplus
}
#endif

#endif /* FRONTIER_PLUGIN_H */
