#include "frontier/model/fused_scale.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

int fr_quantize_fused_group(const char *tensor, char *buf, size_t size)
{
    /* vLLM's packed_modules_mapping (qkv_proj, gate_up_proj) and the fused
     * names of llm-compressor's observers/helpers.py */
    static const struct {
        const char *suffix, *group;
    } members[] = {
        {".q_proj.weight", ".qkv"},      {".k_proj.weight", ".qkv"},
        {".v_proj.weight", ".qkv"},      {".gate_proj.weight", ".gate_up"},
        {".up_proj.weight", ".gate_up"}, {".w1.weight", ".w13"},
        {".w3.weight", ".w13"},          {".q_a_proj.weight", ".qa_kva"},
        {".kv_a_proj_with_mqa.weight", ".qa_kva"},
    };
    size_t len = strlen(tensor);
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        size_t l = strlen(members[i].suffix);
        if (len > l && !strcmp(tensor + len - l, members[i].suffix)) {
            snprintf(buf, size, "%.*s%s", (int)(len - l), tensor, members[i].group);
            return 1;
        }
    }
    return 0;
}

void fr_fused_scan_free(fr_fused_scan *s)
{
    free(s->group);
    free(s->amax);
    free(s->members);
    free(s->name);
    memset(s, 0, sizeof *s);
}

fr_status fr_fused_scan_source(const fr_source *src, fr_fused_scan *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n = src->n_tensors;
    out->n_tensors = n;
    out->group = malloc((n ? n : 1) * sizeof *out->group);
    out->amax = calloc(n ? n : 1, sizeof *out->amax);
    out->members = calloc(n ? n : 1, sizeof *out->members);
    out->name = calloc(n ? n : 1, sizeof *out->name);
    if (!out->group || !out->amax || !out->members || !out->name) {
        fr_fused_scan_free(out);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    float *w = NULL;
    size_t cap = 0;
    fr_status st = FR_OK;
    for (size_t i = 0; i < n && st == FR_OK; i++) {
        const fr_tensor *t = &src->tensors[i];
        char name[512];
        out->group[i] = -1;
        if (t->ndim != 2 || !fr_dtype_is_float(t->dtype) || t->numel <= 0 ||
            !fr_quantize_fused_group(t->name, name, sizeof name))
            continue;
        size_t g = 0;
        while (g < out->n_groups && strcmp(out->name[g], name))
            g++;
        if (g == out->n_groups) {
            snprintf(out->name[g], sizeof out->name[g], "%s", name);
            out->n_groups++;
        }
        if ((size_t)t->numel > cap) {
            free(w);
            cap = (size_t)t->numel;
            if (!(w = malloc(cap * sizeof *w))) {
                st = fr_fail(err, FR_E_NOMEM, "out of memory loading '%s'", t->name);
                break;
            }
        }
        if ((st = fr_tensor_load_f32(src, t, w, err)) != FR_OK)
            break;
        fr_tensor_release(src, t);
        float a = 0.0f;
        for (int64_t k = 0; k < t->numel; k++)
            if (fabsf(w[k]) > a && isfinite(w[k]))
                a = fabsf(w[k]);
        out->group[i] = (int)g;
        out->amax[g] = a > out->amax[g] ? a : out->amax[g];
        out->members[g]++;
    }
    free(w);
    if (st != FR_OK)
        fr_fused_scan_free(out);
    return st;
}

int fr_fused_scan_amax(const fr_fused_scan *s, size_t t, float *amax, const char **group)
{
    if (t >= s->n_tensors || s->group[t] < 0 || s->members[s->group[t]] < 2)
        return 0;
    *amax = s->amax[s->group[t]];
    if (group)
        *group = s->name[s->group[t]];
    return 1;
}
