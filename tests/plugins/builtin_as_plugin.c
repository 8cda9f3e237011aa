/*
 * A built-in quantizer family as a plugin: this file plus the static
 * libfrontier (where the family's own source, e.g. quantizers/nf4.c, is
 * compiled) make a shared object whose entry point hands out the built-in
 * descriptor named FR_WRAPPED_FAMILY. It proves that a built-in and a plugin
 * are the same thing to the registry: the loader takes it like any plugin
 * (tests/plugins/test_builtin_plugin.c).
 *
 * The family is found by name through the built-in table rather than by its
 * entry function's C name, so this file does not depend on how the family's
 * source names its symbols.
 */
#include <string.h>

#include "quantizers/builtin.h"

#ifndef FR_WRAPPED_FAMILY
#error "define FR_WRAPPED_FAMILY to the built-in family's name, e.g. \"nf4\""
#endif

FRONTIER_PLUGIN_EXPORT const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *host)
{
    for (size_t i = 0; i < fr_n_builtin_entries; i++) {
        const frontier_quantizer *q = fr_builtin_entries[i](host);
        if (q && q->name && !strcmp(q->name, FR_WRAPPED_FAMILY))
            return q;
    }
    if (host && host->log)
        host->log(NULL, FRONTIER_LOG_ERROR, "no built-in quantizer family named '%s'",
                  FR_WRAPPED_FAMILY);
    return NULL;
}
