/*
 * The registration of the built-in families, above both halves of a
 * family: its descriptor comes from quantizers/ (the family table,
 * quantizers/builtin.h), its GPU functions from kernels/' table
 * (kernels/gpu_entries.h, in a build with CUDA). Neither of those layers
 * sees the other at link time; this one puts them together.
 */
#ifndef FR_BUILTINS_H
#define FR_BUILTINS_H

#include "core/error.h"
#include "core/registry.h"
#include "frontier/plugin.h"
#include "quantizers/builtin.h"

/* Family `family`'s descriptor (enum fr_family) into *out: the quantizers/
 * one, plus, with CUDA, kernels/' quantize_cuda / sweep_cuda for the
 * family and FRONTIER_Q_HAS_CUDA when it has either. Returns 0 when the
 * family's entry fails (host unusable, out of memory). */
int fr_builtin_descriptor(int family, const frontier_host_api *host, frontier_quantizer *out);

/* Registers every built-in family, in table order, into an empty registry
 * (on failure the registry is left empty). A built-in that fails
 * validation is a bug of this program: FR_E_FAIL, not FR_E_PLUGIN. */
fr_status fr_registry_init(fr_registry *reg, fr_error *err);

#endif
