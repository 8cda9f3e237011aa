/*
 * PLACEHOLDER table of the built-in quantizer families, so that the registry
 * links and runs before the families land (they come from the branch that
 * writes quantizers/int.c, nvfp4.c, ...; take that branch's builtin.c when
 * merging). C11 forbids an empty initializer list, hence the one NULL that
 * fr_n_builtin_entries = 0 keeps out of reach.
 */
#include "builtin.h"

const frontier_plugin_entry_fn fr_builtin_entries[] = {NULL};
const size_t fr_n_builtin_entries = 0;
