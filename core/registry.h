/*
 * The quantizer registry: built-ins and plugins, all through the
 * frontier_quantizer descriptor of include/frontier/plugin.h.
 */
#ifndef FR_REGISTRY_H
#define FR_REGISTRY_H

#include <stddef.h>

#include "error.h"
#include "frontier/plugin.h"

typedef struct fr_qentry {
    const frontier_quantizer *q;
    char *origin;  /* "builtin" or the plugin's path */
    void *dl;      /* dlopen handle, NULL for built-ins */
} fr_qentry;

typedef struct fr_config_ref {
    size_t quantizer;           /* index into fr_registry.entries */
    const frontier_config *cfg; /* points into the descriptor */
} fr_config_ref;

typedef struct fr_registry {
    fr_qentry *entries;
    size_t n_entries;
    fr_config_ref *configs;  /* every configuration, in registration order */
    size_t n_configs;
} fr_registry;

/* Registers the built-in quantizers. */
fr_status fr_registry_init(fr_registry *reg, fr_error *err);
void fr_registry_free(fr_registry *reg);

/* Validates a descriptor (ABI version, struct size, required functions,
 * known flags, unique quantizer and config names) and adds it. */
fr_status fr_registry_add(fr_registry *reg, const frontier_quantizer *q, const char *origin,
                          void *dl, fr_error *err);

/* dlopen()s a plugin and registers its descriptor; on failure nothing is kept. */
fr_status fr_registry_load_plugin(fr_registry *reg, const char *path, fr_error *err);

/* Loads the explicit --plugin paths (a failure is an error: FR_E_PLUGIN),
 * then FRONTIER_PLUGIN_PATH (colon-separated folders or files; "none"
 * disables discovery) and the installed plugin folder; plugins found by
 * discovery that fail are reported and skipped. */
fr_status fr_registry_discover(fr_registry *reg, const char *const *explicit_paths,
                               size_t n_explicit, fr_error *err);

const fr_config_ref *fr_registry_find_config(const fr_registry *reg, const char *name);

static inline const frontier_quantizer *fr_config_quantizer(const fr_registry *reg,
                                                            const fr_config_ref *ref)
{
    return reg->entries[ref->quantizer].q;
}

#endif
