/* Row blocks of oversized tensors (frontier/exec/blocked.h). */
#include <stdio.h>
#include <string.h>

#include "core/error_sums.h"
#include "frontier/exec/blocked.h"

void fr_block_rule_of(const fr_registry *reg, const fr_config_ref *ref, fr_block_rule *rule)
{
    const fr_qentry *e = &reg->entries[ref->quantizer];
    const frontier_config_traits *t = fr_config_traits_of(ref);
    const int plugin = !e->origin || strcmp(e->origin, FR_ORIGIN_BUILTIN) != 0;
    const int calibrated =
        (e->q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)) != 0;
    rule->row_multiple = 0;
    rule->needs_range = 0;
    rule->reason[0] = '\0';
    if (t->row_multiple > 0 && !calibrated) {
        /* the configuration's own word (frontier_config_traits) */
        rule->row_multiple = t->row_multiple;
        rule->needs_range = t->needs_range;
        return;
    }
    if (plugin && !t->row_multiple && !t->whole_tensor_reason)
        snprintf(rule->reason, sizeof rule->reason, "%s",
                 "plugin configuration on a tensor over --max-memory: its quantize_cpu may use "
                 "statistics of the whole tensor, so it is not run in row blocks: needs the "
                 "whole tensor; raise --max-memory");
    else if (calibrated)
        snprintf(rule->reason, sizeof rule->reason, "%s",
                 "calibrated configuration on a tensor over --max-memory: not run in row "
                 "blocks: needs the whole tensor; raise --max-memory");
    else if (t->whole_tensor_reason)
        snprintf(rule->reason, sizeof rule->reason,
                 "%s: needs the whole tensor; raise --max-memory", t->whole_tensor_reason);
    else
        snprintf(rule->reason, sizeof rule->reason, "%s",
                 "not known to be row-local (a host family or an unknown scope): needs the "
                 "whole tensor; raise --max-memory");
}

int fr_block_needed(const fr_sweep_item *it, size_t max_memory)
{
    if (!max_memory)
        return 0;
    uint64_t n = (uint64_t)(it->rows * it->cols);
    return n > (uint64_t)max_memory / FR_BLOCK_BYTES_PER_ELEMENT;
}

const char *fr_block_skip_reason(const fr_registry *reg, const fr_config_ref *ref,
                                 const fr_sweep_item *it, size_t max_memory, char *buf,
                                 size_t len)
{
    if (!fr_block_needed(it, max_memory))
        return NULL;
    if (it->tensor->encoding != FR_ENC_RAW && it->tensor->encoding != FR_ENC_SYNTHETIC &&
        it->tensor->encoding != FR_ENC_MEMBERS)
        return "tensor over --max-memory whose encoding (ONNX int32_data) cannot be read by "
               "rows: needs the whole tensor; raise --max-memory";
    fr_block_rule rule;
    fr_block_rule_of(reg, ref, &rule);
    if (rule.row_multiple)
        return NULL;
    snprintf(buf, len, "%s", rule.reason);
    return buf;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int64_t fr_block_rows(int64_t rows, int64_t cols, int64_t row_multiple, size_t max_memory)
{
    if (rows <= 0 || cols <= 0)
        return rows > 0 ? rows : 1;
    int64_t chunk_rows = FR_ERROR_SUMS_CHUNK / gcd64(cols, FR_ERROR_SUMS_CHUNK);
    int64_t m = row_multiple > 0 ? row_multiple : 1;
    int64_t unit = m / gcd64(m, chunk_rows) * chunk_rows;
    uint64_t fit = (uint64_t)max_memory / FR_BLOCK_BYTES_PER_ELEMENT / (uint64_t)cols;
    int64_t r = (int64_t)(fit / (uint64_t)unit) * unit;
    if (r < unit)
        r = unit;
    return r < rows ? r : rows;
}
