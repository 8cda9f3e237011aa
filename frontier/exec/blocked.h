/*
 * Row blocks (`frontier sweep --max-memory SIZE`, docs/sweep.md "Bounded
 * memory"): which configurations give, on a block of whole rows, exactly
 * the rows of the whole-tensor result, and how large a block may be.
 *
 * Only configurations whose traits say they are row-local
 * (frontier_config_traits.row_multiple, include/frontier/plugin.h; built-in
 * or plugin alike) are blocked: among the built-ins, int groups and rows,
 * fp8 channels and 128x128 tiles (blocks of a multiple of 128 rows), mx and
 * nf4 blocks (without double quantization). The configurations whose only
 * tensor-wide state is the tensor's range (traits.needs_range:
 * int*-tensor-*, fp8-*-tensor, nvfp4's global scale) get it from a first
 * pass over the blocks, handed over as two extra rows (one holding the
 * tensor's minimum, one its maximum) appended to each block and dropped
 * from the result: the range the quantizer computes is then the tensor's,
 * and every other row is quantized as in the whole tensor. Everything else
 * (configurations that declare no row multiple, calibrated statistics)
 * needs the whole tensor and is skipped on an oversized tensor with a
 * reason in /skipped.
 */
#ifndef FR_BLOCKED_H
#define FR_BLOCKED_H

#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "frontier/exec/executor.h"

typedef struct fr_block_rule {
    int64_t row_multiple; /* blocks start at multiples of this many rows; 0: cannot block */
    int needs_range;      /* needs the tensor's minimum and maximum (two extra rows) */
    char reason[320];     /* why not, when row_multiple == 0 */
} fr_block_rule;

/* Bytes per element a tensor's configurations hold at once on the CPU:
 * its float32 copy and one float32 output. */
#define FR_BLOCK_BYTES_PER_ELEMENT 8

/* The block rule of a configuration. */
void fr_block_rule_of(const fr_registry *reg, const fr_config_ref *ref, fr_block_rule *rule);

/* Nonzero when an item's working set exceeds max_memory (0: no limit). */
int fr_block_needed(const fr_sweep_item *it, size_t max_memory);

/* Why configuration ref cannot be evaluated on item it under max_memory
 * (a static string or buf), or NULL when it can (not oversized, or
 * row-local). */
const char *fr_block_skip_reason(const fr_registry *reg, const fr_config_ref *ref,
                                 const fr_sweep_item *it, size_t max_memory, char *buf,
                                 size_t len);

/* Rows per block: a multiple of row_multiple and of the rows that make a
 * whole number of 65,536-element error-sum chunks (so the sums are bit for
 * bit those of the whole tensor), as many as max_memory allows, at least
 * one such multiple, at most rows. */
int64_t fr_block_rows(int64_t rows, int64_t cols, int64_t row_multiple, size_t max_memory);

#endif
