/*
 * The built-in quantizer families. Each has the same entry type as a plugin
 * (frontier_plugin_entry_fn) and is registered through the same code path.
 */
#ifndef FR_BUILTIN_H
#define FR_BUILTIN_H

#include <stddef.h>

#include "frontier/plugin.h"

extern const frontier_plugin_entry_fn fr_builtin_entries[];
extern const size_t fr_n_builtin_entries;

/* One entry per family (quantizers/<family>.c); each returns NULL when the
 * host services are unusable (NULL or an older ABI). */
const frontier_quantizer *fr_int_entry(const frontier_host_api *host);
const frontier_quantizer *fr_fp8_entry(const frontier_host_api *host);
const frontier_quantizer *fr_nvfp4_entry(const frontier_host_api *host);
const frontier_quantizer *fr_mx_entry(const frontier_host_api *host);
const frontier_quantizer *fr_nf4_entry(const frontier_host_api *host);

#endif
