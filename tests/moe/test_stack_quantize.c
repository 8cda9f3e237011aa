/*
 * `frontier quantize` of expert stacks (docs/quantize.md, "Expert stacks")
 * read back with the tool's own readers: every stack [E, out, in] of
 * data/tiny-moe written as compressed-tensors (each part with a leading
 * dimension E, expert e at slice e) and as dequantized; each expert's slice
 * decoded (fr_ct_decode on the slices, or the stored values) must equal the
 * registry's quantize-dequantize of that expert alone (the sweep's
 * per-expert matrix) bit for bit, and the per-expert scales must be the
 * experts' own (NVFP4: four different global scales, the experts having
 * scales 1, 0.25, 4 and 0.05).
 *
 * usage: test_stack_quantize DATA_DIR WORK_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "core/call.h"
#include "core/source.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/checkpoint/quantize_ct.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/exec/builtins.h"
#include "source_util.h"

static fr_registry reg;

static void check_case(const char *model, const char *work, const char *config, fr_qformat format)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s-%s", work, config, fr_qformat_name(format));
    fr_quantize_options o = {.model = model, .out = out, .config = config,
                             .include = "layers\\.0\\.mlp\\.experts", .format = format,
                             .force = 1, .fused_global_scale = -1};
    fr_quantize_summary sum;
    fr_error err = {0};
    fr_status st = fr_quantize(&reg, &o, &sum, &err);
    CHECK_MSG(st == FR_OK, "%s %s: %s", config, fr_qformat_name(format), err.msg);
    if (st != FR_OK)
        return;
    CHECK_MSG(sum.n_quantized == 2, "%s: %zu quantized", config, sum.n_quantized);
    fr_source *in = NULL, *back = NULL;
    char file[4200];
    snprintf(file, sizeof file, "%s/model.safetensors", out);
    if (fr_source_open(model, &in, &err) != FR_OK || fr_source_open(file, &back, &err) != FR_OK) {
        CHECK_MSG(0, "reopening: %s", err.msg);
        fr_source_close(in);
        return;
    }
    const fr_config_ref *ref = fr_registry_find_config(&reg, config);
    CHECK(ref != NULL);
    size_t n_stacks = 0;
    for (size_t i = 0; ref && i < in->n_tensors; i++) {
        const fr_tensor *t = &in->tensors[i];
        if (!fr_sweep_expert_stack(t))
            continue;
        n_stacks++;
        const int64_t E = t->shape[0], rows = t->shape[1], cols = t->shape[2], per = rows * cols;
        float *w = malloc((size_t)(E * per) * sizeof *w);
        float *want = malloc((size_t)per * sizeof *want);
        float *got = malloc((size_t)per * sizeof *got);
        CHECK_OK(fr_tensor_load_f32(in, t, w, &err), err);
        fr_ct_scheme s;
        fr_ct_scheme_of(&reg, ref, &s);
        fr_ct_part parts[FR_CT_MAX_PARTS];
        size_t np = format == FR_QFORMAT_COMPRESSED_TENSORS
                        ? fr_ct_parts(&s, rows, cols, t->dtype, parts, &err) : 0;
        const uint8_t *base[FR_CT_MAX_PARTS] = {0};
        for (size_t k = 0; k < np; k++) {
            char name[512];
            const char *suffix = parts[k].suffix + strlen("weight"); /* "_packed" */
            snprintf(name, sizeof name, "%s%s", t->name, suffix);
            long j = fr_test_find(back, name);
            CHECK_MSG(j >= 0, "%s: no '%s' in the output", config, name);
            if (j < 0)
                goto next;
            const fr_tensor *pt = &back->tensors[j];
            if (!strcmp(parts[k].suffix, "weight_shape")) {
                CHECK(pt->ndim == 1 && pt->shape[0] == 3);
                const uint8_t *b = fr_tensor_raw(back, pt);
                int64_t d[3];
                memcpy(d, b, sizeof d);
                CHECK_MSG(d[0] == E && d[1] == rows && d[2] == cols, "%s: weight_shape", name);
                base[k] = NULL;
                continue;
            }
            /* [E, part's shape] */
            CHECK_MSG(pt->ndim == parts[k].ndim + 1 && pt->shape[0] == E &&
                          pt->nbytes == parts[k].nbytes * (uint64_t)E,
                      "%s: ndim %d shape[0] %lld", name, pt->ndim, (long long)pt->shape[0]);
            for (int d = 0; d < parts[k].ndim; d++)
                CHECK(pt->shape[d + 1] == parts[k].shape[d]);
            base[k] = fr_tensor_raw(back, pt);
        }
        float *deq = NULL;
        if (format == FR_QFORMAT_DEQUANTIZED) {
            long j = fr_test_find(back, t->name);
            CHECK(j >= 0 && back->tensors[j].ndim == 3 && back->tensors[j].shape[0] == E);
            deq = malloc((size_t)(E * per) * sizeof *deq);
            CHECK_OK(fr_tensor_load_f32(back, &back->tensors[j], deq, &err), err);
        }
        float gs_prev = NAN;
        int gs_distinct = 1;
        for (int64_t e = 0; e < E; e++) {
            frontier_call call;
            fr_call_init(&call, NULL, 0, t->name, config);
            CHECK_OK(fr_quantizer_quantize_cpu(&reg, ref, w + e * per, want, rows, cols, NULL,
                                               t->name, &call, &err), err);
            fr_call_release(&call);
            if (deq) {
                /* stored in the model's dtype: Q(W) rounded to it */
                uint8_t *tmp = malloc((size_t)per * 4);
                fr_store_f32_as(t->dtype, want, (size_t)per, tmp);
                for (int64_t x = 0; x < per; x++)
                    want[x] = fr_load_as_f32(t->dtype, tmp + (size_t)x * fr_dtype_size(t->dtype));
                free(tmp);
                memcpy(got, deq + e * per, (size_t)per * sizeof *got);
            } else {
                uint8_t *slices[FR_CT_MAX_PARTS] = {0};
                uint8_t shape_buf[16];
                for (size_t k = 0; k < np; k++) {
                    if (!strcmp(parts[k].suffix, "weight_shape")) {
                        int64_t d[2] = {rows, cols};
                        memcpy(shape_buf, d, sizeof d);
                        slices[k] = shape_buf;
                    } else {
                        slices[k] = (uint8_t *)base[k] + (size_t)e * parts[k].nbytes;
                    }
                }
                CHECK_OK(fr_ct_decode(&s, (const uint8_t *const *)slices, rows, cols, t->dtype,
                                      got, &err), err);
                if (s.kind == FR_CT_NVFP4) {
                    float gs;
                    memcpy(&gs, slices[2], sizeof gs);
                    gs_distinct &= gs != gs_prev;
                    gs_prev = gs;
                }
            }
            int64_t bad = -1;
            for (int64_t x = 0; x < per && bad < 0; x++)
                if (got[x] != want[x])
                    bad = x;
            CHECK_MSG(bad < 0, "%s %s %s expert %lld: element %lld reads %.9g, Q(W) of the "
                               "expert is %.9g",
                      config, fr_qformat_name(format), t->name, (long long)e, (long long)bad,
                      bad >= 0 ? got[bad] : 0.0, bad >= 0 ? want[bad] : 0.0);
        }
        if (s.kind == FR_CT_NVFP4 && format == FR_QFORMAT_COMPRESSED_TENSORS)
            CHECK_MSG(gs_distinct, "%s: the experts share a global scale", t->name);
        free(deq);
    next:
        free(w);
        free(want);
        free(got);
    }
    CHECK_MSG(n_stacks == 2, "%zu stacks", n_stacks);
    fr_source_close(in);
    fr_source_close(back);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_stack_quantize DATA_DIR WORK_DIR\n");
        return 2;
    }
    char model[4096];
    snprintf(model, sizeof model, "%s/tiny-moe", argv[1]);
    mkdir(argv[2], 0777);
    fr_error err;
    CHECK_OK(fr_registry_init(&reg, &err), err);
    static const char *ct[] = {"nvfp4", "int4-gC-sym", "int4-g32-asym", "int8-g64-sym",
                               "int3-gC-asym", "fp8-e4m3-tensor", "fp8-e4m3-channel",
                               "fp8-e4m3-block128"};
    for (size_t i = 0; i < sizeof ct / sizeof ct[0]; i++) {
        check_case(model, argv[2], ct[i], FR_QFORMAT_COMPRESSED_TENSORS);
        check_case(model, argv[2], ct[i], FR_QFORMAT_DEQUANTIZED);
    }
    check_case(model, argv[2], "nf4-g64", FR_QFORMAT_DEQUANTIZED);
    check_case(model, argv[2], "int4-tensor-sym", FR_QFORMAT_DEQUANTIZED);
    fr_registry_free(&reg);
    return fr_test_finish("test_stack_quantize");
}
