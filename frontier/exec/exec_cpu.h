#ifndef FR_EXEC_CPU_H
#define FR_EXEC_CPU_H

#include <stddef.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/exec/executor.h"

/* The CPU executor (frontier/exec/exec_cpu.c). */
fr_status fr_exec_cpu(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                      const fr_executor_options *opt, const fr_sweep_sink *sink, fr_error *err);

#endif
