/*
 * A built-in quantizer family as a plugin: this file plus the static
 * libraries (where the family's own source, e.g. quantizers/nf4.c, and its
 * kernels are compiled) make a shared object whose entry point hands out
 * the built-in descriptor of the family FR_WRAPPED_FAMILY_ID, with the GPU
 * functions the registration of the built-ins attaches. It proves that a built-in and a plugin
 * are the same thing to the registry: the loader takes it like any plugin
 * (tests/plugins/test_builtin_plugin.c).
 *
 * The family is named by its row of the family table (FR_WRAPPED_FAMILY_ID,
 * e.g. NF4 for FR_FAMILY_NF4), so this file does not depend on how the
 * family's source names its symbols, and no name is compared.
 */
#include "frontier/exec/builtins.h"

#ifndef FR_WRAPPED_FAMILY_ID
#error "define FR_WRAPPED_FAMILY_ID to the family's table ID, e.g. NF4"
#endif

#define FR_FAMILY_INDEX_(ID) FR_FAMILY_##ID
#define FR_FAMILY_INDEX(ID) FR_FAMILY_INDEX_(ID)

static frontier_quantizer descriptor;

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *host)
{
    /* the loader calls the entry once per load, from one thread */
    return fr_builtin_descriptor(FR_FAMILY_INDEX(FR_WRAPPED_FAMILY_ID), host, &descriptor)
               ? &descriptor
               : NULL;
}
