/* Row blocks of oversized tensors (frontier/exec/blocked.h). */
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error_sums.h"
#include "frontier/exec/blocked.h"
#include "quantizers/families.h"

static const char *json_string(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

void fr_block_rule_of(const fr_registry *reg, const fr_config_ref *ref, fr_block_rule *rule)
{
    const fr_qentry *e = &reg->entries[ref->quantizer];
    rule->row_multiple = 0;
    rule->needs_range = 0;
    rule->reason = NULL;
    if (e->family < 0 || !e->origin || strcmp(e->origin, FR_ORIGIN_BUILTIN) != 0) {
        rule->reason = "plugin configuration on a tensor over --max-memory: its quantize_cpu "
                       "may use statistics of the whole tensor, so it is not run in row "
                       "blocks: needs the whole tensor; raise --max-memory";
        return;
    }
    if (e->q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)) {
        rule->reason = "calibrated configuration on a tensor over --max-memory: not run in "
                       "row blocks: needs the whole tensor; raise --max-memory";
        return;
    }
    cJSON *p = cJSON_Parse(ref->cfg->params_json ? ref->cfg->params_json : "");
    const char *gran = json_string(p, "granularity");
    switch (e->family) {
    case FR_FAMILY_INT:
        if (!strcmp(gran, "group") || !strcmp(gran, "row"))
            rule->row_multiple = 1;
        else if (!strcmp(gran, "tensor"))
            rule->row_multiple = 1, rule->needs_range = 1;
        break;
    case FR_FAMILY_FP8:
        if (!strcmp(gran, "channel"))
            rule->row_multiple = 1;
        else if (!strcmp(gran, "block128"))
            rule->row_multiple = 128;
        else if (!strcmp(gran, "tensor"))
            rule->row_multiple = 1, rule->needs_range = 1;
        break;
    case FR_FAMILY_NVFP4:
        /* groups of 16 in a row; the fp32 global scale is the tensor's amax's */
        if (!strcmp(json_string(p, "global_scale_dtype"), "fp32"))
            rule->row_multiple = 1, rule->needs_range = 1;
        break;
    case FR_FAMILY_MX:
        rule->row_multiple = 1;
        break;
    case FR_FAMILY_NF4: {
        const cJSON *dq = cJSON_GetObjectItemCaseSensitive(p, "double_quant");
        if (cJSON_IsFalse(dq))
            rule->row_multiple = 1;
        break;
    }
    default:
        break;
    }
    cJSON_Delete(p);
    if (!rule->row_multiple)
        rule->reason = e->family == FR_FAMILY_NF4
                           ? "tensor-wide scale (nf4 double quantization subtracts the mean "
                             "of the tensor's block scales): needs the whole tensor; raise "
                             "--max-memory"
                           : "not known to be row-local (a host family or an unknown scope): "
                             "needs the whole tensor; raise --max-memory";
}

int fr_block_needed(const fr_sweep_item *it, size_t max_memory)
{
    if (!max_memory)
        return 0;
    uint64_t n = (uint64_t)(it->rows * it->cols);
    return n > (uint64_t)max_memory / FR_BLOCK_BYTES_PER_ELEMENT;
}

const char *fr_block_skip_reason(const fr_registry *reg, const fr_config_ref *ref,
                                 const fr_sweep_item *it, size_t max_memory)
{
    if (!fr_block_needed(it, max_memory))
        return NULL;
    if (it->tensor->encoding != FR_ENC_RAW && it->tensor->encoding != FR_ENC_SYNTHETIC)
        return "tensor over --max-memory whose encoding (ONNX int32_data) cannot be read by "
               "rows: needs the whole tensor; raise --max-memory";
    fr_block_rule rule;
    fr_block_rule_of(reg, ref, &rule);
    return rule.row_multiple ? NULL : rule.reason;
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
