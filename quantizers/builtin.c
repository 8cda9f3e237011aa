#include "builtin.h"

/* Registration order is the order `frontier quantizers` lists them in. */
const frontier_plugin_entry_fn fr_builtin_entries[] = {
    fr_int_entry, fr_fp8_entry, fr_nvfp4_entry, fr_mx_entry, fr_nf4_entry,
};

const size_t fr_n_builtin_entries = sizeof fr_builtin_entries / sizeof fr_builtin_entries[0];
