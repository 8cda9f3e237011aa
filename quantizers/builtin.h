/*
 * The built-in quantizer families (the table is quantizers/families.h).
 * Each has the same entry type as a plugin (frontier_plugin_entry_fn) and is
 * registered through the same code path (core/registry.h), tagged with its
 * family so the GPU dispatch can find its kernels without comparing names;
 * fr_registry_init (frontier/exec/builtins.h) does it, with the GPU functions
 * kernels/ lists for the family. The descriptors here have none.
 */
#ifndef FR_BUILTIN_H
#define FR_BUILTIN_H

#include <stddef.h>

#include "core/error.h"
#include "core/registry.h"
#include "families.h"

/* The entries of fr_builtin_families in table order (each returns NULL
 * when the host services are unusable: NULL or an older ABI). */
extern const frontier_plugin_entry_fn fr_builtin_entries[FR_FAMILY_COUNT];
extern const size_t fr_n_builtin_entries;

/* NVFP4's quantize-dequantize (quantizers/nvfp4.c), the one implementation
 * of `nvfp4` and `nvfp4-fused`: the global scale from the tensor's own
 * amax (joint_amax NULL) or from *joint_amax, the amax over its fused
 * group, which must be at least the tensor's own. Rejects non-finite
 * weights. */
int fr_nvfp4_qdq(const float *w, float *w_hat, int64_t rows, int64_t cols,
                 const float *joint_amax, frontier_call *call);

#endif
