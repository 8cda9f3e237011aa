/* What a checkpoint format can store (frontier/checkpoint/storable.h). */
#include "frontier/checkpoint/storable.h"

#include <stdio.h>
#include <string.h>

#include "core/classify.h"
#include "frontier/checkpoint/quantize_ct.h"
#include "frontier/checkpoint/quantize_gguf.h"
#include "frontier/model/calib_attach.h"

int fr_qformat_from_name(const char *name)
{
    if (!strcmp(name, "dequantized"))
        return FR_QFORMAT_DEQUANTIZED;
    if (!strcmp(name, "compressed-tensors"))
        return FR_QFORMAT_COMPRESSED_TENSORS;
    if (!strcmp(name, "gguf"))
        return FR_QFORMAT_GGUF;
    return -1;
}

const char *fr_qformat_name(fr_qformat f)
{
    switch (f) {
    case FR_QFORMAT_COMPRESSED_TENSORS: return "compressed-tensors";
    case FR_QFORMAT_GGUF: return "gguf";
    default: return "dequantized";
    }
}

int fr_storable_tied_embedding(const fr_source *src, const fr_tensor *t)
{
    /* the sweep's rule for a tied embedding's statistics, too */
    return t->cls == FR_CLASS_EMBED && !fr_calib_has_lm_head(src->tensors, src->n_tensors);
}

static int calibrated(const fr_registry *reg, const fr_config_ref *ref)
{
    return (fr_config_quantizer(reg, ref)->flags &
            (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)) != 0;
}

static const char *ct_refusal(const fr_registry *reg, const fr_source *src, const fr_tensor *t,
                              int64_t rows, int64_t cols, int64_t experts,
                              const fr_config_ref *ref, char *buf, size_t len)
{
    fr_ct_scheme s;
    if (fr_ct_scheme_of(reg, ref, &s) == FR_CT_NONE)
        return "compressed-tensors has no layout for it";
    if (t->ndim != 2 && experts <= 1) {
        snprintf(buf, len,
                 "compressed-tensors quantizes 2-D Linear weights and frontier expert stacks "
                 "[E, out, in], this is %d-D",
                 t->ndim);
        return buf;
    }
    size_t l = strlen(t->name);
    if (experts <= 1 && (l < 7 || strcmp(t->name + l - 7, ".weight")))
        return "compressed-tensors quantizes '<module>.weight' tensors";
    /* measured with transformers 5.17 + compressed-tensors 0.20.1: a
     * quantized embedding that is also the output layer does not load
     * ('Embedding' object has no attribute 'weight') */
    if (fr_storable_tied_embedding(src, t))
        return "the embedding is tied to the output layer (no lm_head.weight), and "
               "transformers + compressed-tensors do not load it quantized: keep it as it is";
    fr_ct_part parts[FR_CT_MAX_PARTS];
    fr_error e = {0};
    if (!fr_ct_parts(&s, rows, cols, t->dtype, parts, &e)) {
        snprintf(buf, len, "%.200s", e.msg);
        return buf;
    }
    return NULL;
}

const char *fr_storable_refusal(const fr_registry *reg, fr_qformat fmt, const fr_source *src,
                                const fr_tensor *t, int64_t rows, int64_t cols, int64_t experts,
                                const fr_config_ref *ref, char *buf, size_t len)
{
    /* the compressed-tensors and GGUF encoders derive codes and scales from
     * W by the base's rule: they cannot store the ones a calibrated method
     * chose, and decode(encode) would not be Q(W) */
    if (calibrated(reg, ref) && fmt != FR_QFORMAT_DEQUANTIZED &&
        !(fmt == FR_QFORMAT_GGUF && fr_gguf_writes_calibrated(reg, ref))) {
        snprintf(buf, len,
                 "a calibrated configuration: the %s encoder cannot store the codes and scales "
                 "it chose exactly (write it with --format dequantized)",
                 fr_qformat_name(fmt));
        return buf;
    }
    switch (fmt) {
    case FR_QFORMAT_GGUF: return fr_gguf_no_writer(reg, ref, t, buf, len);
    case FR_QFORMAT_DEQUANTIZED:
        if (t->dtype != FR_DTYPE_F32 && t->dtype != FR_DTYPE_F16 && t->dtype != FR_DTYPE_BF16) {
            snprintf(buf, len,
                     "dequantized output keeps the dtype, and %s is not F32, F16 or BF16",
                     t->dtype_name);
            return buf;
        }
        return NULL;
    case FR_QFORMAT_COMPRESSED_TENSORS:
        return ct_refusal(reg, src, t, rows, cols, experts, ref, buf, len);
    }
    return "unknown format";
}
