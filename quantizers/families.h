/*
 * The table of built-in quantizer families: one line per family.
 *
 *   X(ID, name, ggml)
 *
 * ID names the family in the enum below (FR_FAMILY_<ID>); `name` is the
 * stem of its files and functions: quantizers/<name>.c defines the
 * descriptor and fr_<name>_entry(), kernels/<name>.cu(h) its kernel spec
 * builder fr_kspec_<name>(), its variants (FR_KVARIANTS_<name>) and its GPU
 * functions fr_<name>_quantize_cuda / fr_<name>_sweep_cuda, which kernels/
 * lists in its table (kernels/gpu_entries.h) and the registration of the
 * built-ins attaches to the descriptor (frontier/exec/builtins.h);
 * `ggml` is FR_GGML(<name>) when some of its configurations have the
 * storage of a GGML type (fr_<name>_ggml_types in quantizers/<name>.c),
 * FR_NO_GGML otherwise. Everything that enumerates the built-ins (the
 * registry, the GPU dispatch, the tests) expands this list, so adding a
 * family is this one line plus the family's own files
 * (docs/adding-a-quantizer.md).
 *
 * The order is the registration order: `frontier quantizers` lists them
 * so, and configuration ids in a dataset follow it.
 */
#ifndef FR_FAMILIES_H
#define FR_FAMILIES_H

#include <stddef.h>
#include <stdint.h>

#include "frontier/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FR_BUILTIN_FAMILIES(X)                                                               \
    X(INT, int, FR_GGML(int))                                                                \
    X(FP8, fp8, FR_NO_GGML)                                                                  \
    X(NVFP4, nvfp4, FR_NO_GGML)                                                              \
    X(MX, mx, FR_GGML(mx))                                                                   \
    X(NF4, nf4, FR_NO_GGML)

/*
 * The families implemented on the host only: no fused GPU kernels, so no
 * kernel spec builder and no kernels/<name>.cuh (kernels/ never expands
 * this list); the GPU functions some of them have are rows of kernels/'
 * table too (kernels/gpu_entries.c). Same columns; they come after the
 * list above in the registration order. The calibrated and optimised
 * variants of docs/formats.md wrap a base configuration of the families
 * above (quantizers/wrap.h).
 */
#define FR_HOST_FAMILIES(X)                                                                  \
    X(MSE, mse, FR_NO_GGML)                                                                  \
    X(HQQ, hqq, FR_NO_GGML)                                                                  \
    X(IMAT, imat, FR_NO_GGML)                                                                \
    X(AWQ, awq, FR_NO_GGML)                                                                  \
    X(GPTQ, gptq, FR_NO_GGML)                                                                \
    X(RHT, rht, FR_NO_GGML)                                                                  \
    X(RHT_GPTQ, rht_gptq, FR_NO_GGML)                                                        \
    X(GGML, ggml, FR_GGML(ggml))                                                             \
    X(NVFP4_FUSED, nvfp4_fused, FR_NO_GGML)                                                  \
    X(GGML_IMAT, ggml_imat, FR_GGML(ggml_imat))

/* Every built-in family: the kernel families, then the host ones. */
#define FR_ALL_FAMILIES(X) FR_BUILTIN_FAMILIES(X) FR_HOST_FAMILIES(X)

enum fr_family {
#define FR_FAMILY_ENUM(ID, name, ggml) FR_FAMILY_##ID,
    FR_ALL_FAMILIES(FR_FAMILY_ENUM)
#undef FR_FAMILY_ENUM
    FR_FAMILY_COUNT,
    FR_FAMILY_NONE = -1 /* a plugin */
};

/* How many families have kernels: they are the first rows of the enum. */
enum {
#define FR_FAMILY_ONE(ID, name, ggml) +1
    FR_KERNEL_FAMILY_COUNT = 0 FR_BUILTIN_FAMILIES(FR_FAMILY_ONE)
#undef FR_FAMILY_ONE
};

/* A configuration with the block layout of a GGML type (ggml-common.h);
 * lists end with {NULL, NULL}. */
typedef struct fr_ggml_type {
    const char *config; /* "int4-g32-sym" */
    const char *ggml;   /* "q4_0", as llama-quantize --tensor-type spells it */
} fr_ggml_type;

/* What the table says of one family. */
typedef struct fr_builtin_family {
    const char *name;                  /* file stem, and the descriptor's name */
    frontier_plugin_entry_fn entry;    /* returns the descriptor */
    const fr_ggml_type *ggml_types;    /* NULL when none */
} fr_builtin_family;

/* Indexed by enum fr_family (quantizers/builtin.c). */
extern const fr_builtin_family fr_builtin_families[FR_FAMILY_COUNT];

/* Declarations every line of the table implies. */
#define FR_GGML(name) fr_##name##_ggml_types
#define FR_NO_GGML NULL
#define FR_FAMILY_DECLARE(ID, name, ggml)                                                    \
    const frontier_quantizer *fr_##name##_entry(const frontier_host_api *host);               \
    extern const fr_ggml_type fr_##name##_ggml_types[];
FR_ALL_FAMILIES(FR_FAMILY_DECLARE)
#undef FR_FAMILY_DECLARE

/* The GGML type with the storage of built-in configuration `config`, or
 * NULL (docs/analysis.md says how close the rounding rules are). */
const char *fr_builtin_ggml_type(const char *config);

/* Every such configuration, "int8-g32-sym, int4-g32-sym, ..." in table
 * order, into buf (truncated to size); returns buf. */
char *fr_builtin_ggml_configs(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
