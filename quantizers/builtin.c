#include "builtin.h"

#include <stdio.h>
#include <string.h>


const fr_builtin_family fr_builtin_families[FR_FAMILY_COUNT] = {
#define FR_FAMILY_ROW(ID, stem, ggml)                                                        \
    [FR_FAMILY_##ID] = {.name = #stem, .entry = fr_##stem##_entry, .ggml_types = ggml},
    FR_ALL_FAMILIES(FR_FAMILY_ROW)
#undef FR_FAMILY_ROW
};

const frontier_plugin_entry_fn fr_builtin_entries[FR_FAMILY_COUNT] = {
#define FR_FAMILY_ENTRY(ID, stem, ggml) [FR_FAMILY_##ID] = fr_##stem##_entry,
    FR_ALL_FAMILIES(FR_FAMILY_ENTRY)
#undef FR_FAMILY_ENTRY
};

const size_t fr_n_builtin_entries = FR_FAMILY_COUNT;

const char *fr_builtin_ggml_type(const char *config)
{
    for (int f = 0; config && f < FR_FAMILY_COUNT; f++)
        for (const fr_ggml_type *t = fr_builtin_families[f].ggml_types; t && t->config; t++)
            if (!strcmp(t->config, config))
                return t->ggml;
    return NULL;
}

char *fr_builtin_ggml_configs(char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int f = 0; f < FR_FAMILY_COUNT; f++)
        for (const fr_ggml_type *t = fr_builtin_families[f].ggml_types; t && t->config; t++) {
            int n = snprintf(buf + used, size > used ? size - used : 0, "%s%s", used ? ", " : "",
                             t->config);
            if (n < 0 || (size_t)n >= (size > used ? size - used : 0))
                return buf;
            used += (size_t)n;
        }
    return buf;
}
