/* Quantized tensors of a released checkpoint as their dequantized values
 * (frontier/model/block_source.h). */
#include "frontier/model/block_source.h"

#include <stdio.h>

#include "frontier/model/ct_source.h"
#include "quantizers/ggml_blocks.h"

/* The types fr_ggml_block_types holds (the ggml family's). */
#define DECODED_TYPES "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, Q2_K..Q6_K, IQ4_NL, IQ4_XS"

const char *fr_block_source_types(void)
{
    return DECODED_TYPES;
}

/* The family's row of ggml type id `type` whose block geometry is the
 * tensor's, or NULL. */
static const fr_ggml_params *decoded_type(const fr_tensor *t)
{
    for (int i = 0; i < FR_GGML_N_TYPES; i++) {
        const fr_ggml_params *p = &fr_ggml_block_types[i];
        if ((uint32_t)p->type == t->block_type)
            return p->block == t->block_elems && p->block_bytes == t->block_bytes ? p : NULL;
    }
    return NULL;
}

static fr_status decode_ggml(const fr_tensor *t, const uint8_t *blocks, int64_t n, float *dst,
                             fr_error *err)
{
    const fr_ggml_params *p = decoded_type(t);
    if (!p)
        return fr_fail(err, FR_E_FAIL, "tensor '%s': no decoder for %s", t->name, t->dtype_name);
    /* n is whole blocks (core/source.c checks it): decode_row's short last
     * block never arises */
    fr_ggml_decode_row(p->type, blocks, n, dst);
    return FR_OK;
}

void fr_block_source_attach(fr_source *src)
{
    if (src->kind != FR_SOURCE_GGUF)
        return;
    int any = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        fr_tensor *t = &src->tensors[i];
        if (t->dtype != FR_DTYPE_QUANT || !t->block_elems)
            continue;
        if (decoded_type(t)) {
            t->skip_reason = NULL;
            any = 1;
        } else {
            t->skip_reason = "ggml type not decoded by frontier (it decodes " DECODED_TYPES ")";
        }
    }
    if (any)
        src->decode_blocks = decode_ggml;
}

fr_status fr_block_source_open(const char *path, fr_source **out, fr_error *err)
{
    fr_status st = fr_source_open(path, out, err);
    if (st != FR_OK)
        return st;
    fr_block_source_attach(*out);
    /* a compressed-tensors checkpoint's quantized weights, one tensor each */
    if ((st = fr_ct_source_attach(*out, err)) != FR_OK) {
        fr_source_close(*out);
        *out = NULL;
    }
    return st;
}
