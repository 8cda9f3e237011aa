/* Which tensors are quantized by default, and how they are seen as matrices. */
#include "frontier/model/tensors.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/dtype.h"

const char *fr_sweep_skip_reason(const fr_tensor *t, int64_t min_numel, char *buf, size_t len)
{
    if (t->skip_reason && t->block_elems) {
        /* a block type: the reason does not name it */
        snprintf(buf, len, "%s: %s", t->dtype_name, t->skip_reason);
        return buf;
    }
    if (t->skip_reason)
        return t->skip_reason;
    if (!fr_dtype_is_float(t->dtype) && !fr_tensor_is_block_quantized(t)) {
        snprintf(buf, len, "not a floating-point tensor (%s)", t->dtype_name);
        return buf;
    }
    if (t->ndim < 2) {
        snprintf(buf, len, "%d-D tensor: only tensors with 2 or more dimensions are quantized",
                 t->ndim);
        return buf;
    }
    if (t->numel == 0)
        return "empty tensor";
    if (t->numel < min_numel) {
        snprintf(buf, len, "%" PRId64 " elements, fewer than --min-numel %" PRId64, t->numel,
                 min_numel);
        return buf;
    }
    return NULL;
}

void fr_sweep_matrix(const fr_tensor *t, int64_t *rows, int64_t *cols)
{
    if (t->ndim <= 1) {
        *rows = 1;
        *cols = t->ndim == 1 ? t->shape[0] : 1;
        return;
    }
    *rows = t->shape[0];
    *cols = t->shape[0] ? t->numel / t->shape[0] : 0;
}

int fr_sweep_expert_stack(const fr_tensor *t)
{
    /* the experts' bytes are consecutive slices of the stack: raw elements
     * only (not generated, not varint-encoded), or a folded stack whose
     * decoder reads expert e of a view (fr_sweep_expert_view) */
    return t->cls == FR_CLASS_EXPERT && t->ndim == 3 &&
           ((t->encoding == FR_ENC_RAW && t->nbytes % (uint64_t)t->shape[0] == 0) ||
            t->encoding == FR_ENC_MEMBERS) &&
           t->shape[0] >= 1 && t->shape[1] >= 1 && t->shape[2] >= 1 &&
           t->shape[0] <= UINT32_MAX;
}

void fr_sweep_expert_view(const fr_tensor *t, uint32_t e, fr_tensor *v)
{
    uint64_t per_expert = t->nbytes / (uint64_t)t->shape[0];
    *v = *t;
    v->ndim = 2;
    v->shape[0] = t->shape[1];
    v->shape[1] = t->shape[2];
    for (int d = 2; d < FR_MAX_DIMS; d++)
        v->shape[d] = 0;
    v->numel = t->shape[1] * t->shape[2];
    /* a folded stack's view says its expert by its offset (the stack's is 0;
     * its members hold the bytes), and stores about 1/E of the members */
    v->offset = t->encoding == FR_ENC_MEMBERS ? e : t->offset + per_expert * e;
    v->nbytes = per_expert;
}
