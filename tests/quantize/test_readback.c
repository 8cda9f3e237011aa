/*
 * Read-back of `frontier quantize` (docs/quantize.md): every checkpoint is
 * written by fr_quantize, opened again with the tool's own readers, decoded
 * with the layout decoder, and compared bit for bit with the registry's
 * quantize-dequantize of the input (after the cast to the input dtype for
 * dequantized output; with the shared global scale of the fused group for
 * NVFP4, recomputed here from the docs/formats.md definition). Copied tensors
 * must be byte-identical. Runs on data/stories260K (F32) and on a BF16 copy
 * of it made here, single-file and sharded.
 *
 * usage: test_readback DATA_DIR WORK_DIR
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/call.h"
#include "core/safetensors_write.h"
#include "core/source.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/checkpoint/quantize_ct.h"
#include "frontier/model/fused_scale.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/exec/builtins.h"
#include "quantizers/nvfp4_group.h"
#include "source_util.h"

static fr_registry reg;

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The registry's Q(W): what the sweep measures. */
static float *quantize_ref(const char *config, const float *w, int64_t rows, int64_t cols,
                           const char *name)
{
    float *w_hat = malloc((size_t)(rows * cols) * sizeof *w_hat);
    fr_test_quantize(&reg, config, w, w_hat, rows, cols, name);
    return w_hat;
}

/* NVFP4 with a given global scale, from the definition (docs/formats.md). */
static void nvfp4_with_scale(const float *w, float *w_hat, int64_t rows, int64_t cols, float gs)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c0 = 0; c0 < cols; c0 += FR_NVFP4_GROUP) {
            const float *x = w + r * cols + c0;
            float amax = 0.0f;
            for (int i = 0; i < FR_NVFP4_GROUP; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            float s = fr_nvfp4_group_scale(amax, gs);
            for (int i = 0; i < FR_NVFP4_GROUP; i++)
                w_hat[r * cols + c0 + i] = fr_nvfp4_dequant(x[i], s, gs);
        }
}

static int same(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            *at = i;
            return 0;
        }
    return 1;
}

typedef struct qcase {
    const char *label, *config, *exclude;
    fr_qformat format;
    int fused;                /* -1 default */
    uint64_t shard_bytes;
    const char *include;      /* --include REGEX, or NULL: the default selection */
} qcase;

/* Joint amax of the NVFP4 members of the fused group of tensor `name` in `in`. */
static float fused_gs(const fr_source *in, const char *name)
{
    char group[512], other[512];
    if (!fr_quantize_fused_group(name, group, sizeof group))
        return NAN;
    float amax = 0.0f;
    int members = 0;
    for (size_t i = 0; i < in->n_tensors; i++) {
        if (!fr_quantize_fused_group(in->tensors[i].name, other, sizeof other) ||
            strcmp(group, other))
            continue;
        float *w = fr_test_load(in, &in->tensors[i]);
        float a = fr_ct_amax(w, in->tensors[i].numel);
        amax = a > amax ? a : amax;
        members++;
        free(w);
    }
    return members > 1 ? fr_nvfp4_global_scale(amax) : NAN;
}

static void check_case(const char *model, const char *work, const qcase *qc)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", work, qc->label);
    fr_quantize_options o = {
        .model = model, .out = out, .config = qc->config, .exclude = qc->exclude,
        .format = qc->format, .force = 1, .max_shard_bytes = qc->shard_bytes,
        .fused_global_scale = qc->fused, .include = qc->include,
    };
    regex_t include_re;
    if (qc->include && regcomp(&include_re, qc->include, REG_EXTENDED | REG_NOSUB)) {
        CHECK_MSG(0, "%s: bad regex", qc->label);
        return;
    }
    /* nvfp4-fused: always its fused group's global scale */
    const int fused_cfg = !strcmp(qc->config, "nvfp4-fused");
    fr_quantize_summary sum;
    fr_error err = {0};
    fr_status st = fr_quantize(&reg, &o, &sum, &err);
    CHECK_MSG(st == FR_OK, "%s: %s", qc->label, err.msg);
    if (st != FR_OK)
        return;
    fr_source *in = NULL, *back = NULL;
    if (fr_source_open(model, &in, &err) != FR_OK || fr_source_open(out, &back, &err) != FR_OK) {
        CHECK_MSG(0, "%s: reopening: %s", qc->label, err.msg);
        fr_source_close(in);
        return;
    }
    if (qc->shard_bytes)
        CHECK_MSG(back->kind == FR_SOURCE_SAFETENSORS_SHARDED && back->n_files > 1,
                  "%s: expected a sharded output, got %zu file(s)", qc->label, back->n_files);
    const int fused = qc->fused >= 0 ? qc->fused : qc->format == FR_QFORMAT_COMPRESSED_TENSORS;
    size_t n_quantized = 0, n_fused = 0;
    for (size_t i = 0; i < in->n_tensors; i++) {
        const fr_tensor *t = &in->tensors[i];
        char why[256];
        int selected = !fr_sweep_skip_reason(t, 0, why, sizeof why) &&
                       (qc->include ? !regexec(&include_re, t->name, 0, NULL, 0)
                                    : t->cls != FR_CLASS_EMBED && t->cls != FR_CLASS_NORM &&
                                          t->cls != FR_CLASS_LM_HEAD) &&
                       !(qc->exclude && strstr(t->name, qc->exclude));
        if (!selected) {
            long j = fr_test_find(back, t->name);
            CHECK_MSG(j >= 0, "%s: copied tensor '%s' missing", qc->label, t->name);
            if (j < 0)
                continue;
            const fr_tensor *u = &back->tensors[j];
            CHECK_MSG(u->nbytes == t->nbytes && u->dtype == t->dtype &&
                          !memcmp(fr_tensor_raw(in, t), fr_tensor_raw(back, u), t->nbytes),
                      "%s: copied tensor '%s' differs", qc->label, t->name);
            continue;
        }
        n_quantized++;
        int64_t rows, cols;
        fr_sweep_matrix(t, &rows, &cols);
        float *w = fr_test_load(in, t);
        /* nvfp4-fused needs the joint amax the tool hands it: computed below
         * from the definition instead */
        float *want = fused_cfg ? malloc((size_t)t->numel * sizeof *want)
                                : quantize_ref(qc->config, w, rows, cols, t->name);
        float *got = malloc((size_t)t->numel * sizeof *got);
        const fr_config_ref *ref = fr_registry_find_config(&reg, qc->config);
        fr_ct_scheme s;
        fr_ct_kind kind = fr_ct_scheme_of(&reg, ref, &s);
        float gs = (fused || fused_cfg) && kind == FR_CT_NVFP4 ? fused_gs(in, t->name) : NAN;
        CHECK_MSG(!fused_cfg || !isnan(gs), "%s: '%s' is not in a fused group", qc->label,
                  t->name);
        if (!isnan(gs)) {
            nvfp4_with_scale(w, want, rows, cols, gs);
            n_fused++;
        }
        if (qc->format == FR_QFORMAT_DEQUANTIZED) {
            long j = fr_test_find(back, t->name);
            CHECK_MSG(j >= 0 && back->tensors[j].dtype == t->dtype &&
                          back->tensors[j].ndim == t->ndim &&
                          !memcmp(back->tensors[j].shape, t->shape, sizeof t->shape),
                      "%s: '%s' lost its name, dtype or shape", qc->label, t->name);
            if (j < 0)
                goto next;
            float *g = fr_test_load(back, &back->tensors[j]);
            memcpy(got, g, (size_t)t->numel * sizeof *got);
            free(g);
            /* Q(W) after the cast to the input dtype */
            uint8_t *bytes = malloc((size_t)t->numel * 4);
            fr_store_f32_as(t->dtype, want, (size_t)t->numel, bytes);
            for (int64_t k = 0; k < t->numel; k++)
                want[k] = fr_load_as_f32(t->dtype, bytes + (size_t)k * fr_dtype_size(t->dtype));
            free(bytes);
        } else {
            fr_ct_part parts[FR_CT_MAX_PARTS];
            size_t np = fr_ct_parts(&s, rows, cols, t->dtype, parts, &err);
            const uint8_t *bufs[FR_CT_MAX_PARTS] = {0};
            char module[1024];
            snprintf(module, sizeof module, "%.*s", (int)(strlen(t->name) - 7), t->name);
            for (size_t k = 0; k < np; k++) {
                char name[1100];
                snprintf(name, sizeof name, "%s.%s", module, parts[k].suffix);
                long j = fr_test_find(back, name);
                CHECK_MSG(j >= 0 && back->tensors[j].nbytes == parts[k].nbytes &&
                              !strcmp(back->tensors[j].dtype_name, parts[k].dtype),
                          "%s: '%s' missing or not %s of %llu bytes", qc->label, name,
                          parts[k].dtype, (unsigned long long)parts[k].nbytes);
                if (j < 0)
                    goto next;
                bufs[k] = fr_tensor_raw(back, &back->tensors[j]);
            }
            if (kind != FR_CT_FP8) /* float-quantized keeps the name "weight" (as E4M3) */
                CHECK_MSG(fr_test_find(back, t->name) < 0, "%s: '%s' is still dense", qc->label, t->name);
            if (kind == FR_CT_NVFP4 && !isnan(gs))
                CHECK_MSG(fr_bits_to_f32(le32(bufs[2])) == gs,
                          "%s: '%s' global scale is not the fused group's", qc->label, t->name);
            CHECK_OK(fr_ct_decode(&s, bufs, rows, cols, t->dtype, got, &err), err);
            if (kind == FR_CT_MXFP4) {
                /* by hand, independently of fr_ct_decode: the scale byte of a
                 * block is floor(log2 amax) - 2 + 127, element 2j the low
                 * nibble of byte j, W = +-E2M1[nibble & 7] 2^(byte - 127) */
                static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t b = 0; b < cols / 32; b++) {
                        float amax = 0.0f;
                        for (int64_t c = 0; c < 32; c++)
                            amax = fmaxf(amax, fabsf(w[r * cols + b * 32 + c]));
                        int e = amax > 0 ? (int)floor(log2((double)amax)) - 2 : -127;
                        e = e < -127 ? -127 : e;
                        uint8_t byte = bufs[1][r * (cols / 32) + b];
                        CHECK_MSG(byte == e + 127, "%s: '%s' row %lld block %lld scale byte %u, "
                                  "expected %d", qc->label, t->name, (long long)r, (long long)b,
                                  byte, e + 127);
                        for (int64_t c = 0; c < 32; c++) {
                            int64_t el = r * cols + b * 32 + c;
                            uint8_t nib = el % 2 ? bufs[0][el / 2] >> 4 : bufs[0][el / 2] & 15;
                            float v = ldexpf(e2m1[nib & 7], (int)byte - 127) * (nib & 8 ? -1 : 1);
                            if (v != want[el]) {
                                CHECK_MSG(0, "%s: '%s' element %lld by hand %.9g, Q(W) %.9g",
                                          qc->label, t->name, (long long)el, v, want[el]);
                                r = rows;
                                break;
                            }
                        }
                    }
            }
        }
        int64_t at = 0;
        CHECK_MSG(same(got, want, t->numel, &at), "%s: '%s' element %lld reads %.9g, Q(W) is %.9g",
                  qc->label, t->name, (long long)at, got[at], want[at]);
    next:
        free(w);
        free(want);
        free(got);
    }
    CHECK_MSG(n_quantized == sum.n_quantized, "%s: %zu quantized, the summary says %zu",
              qc->label, n_quantized, sum.n_quantized);
    if ((fused && !strcmp(qc->config, "nvfp4")) || fused_cfg)
        CHECK_MSG(n_fused > 0, "%s: no fused group was checked", qc->label);
    if (qc->include)
        regfree(&include_re);
    fr_source_close(in);
    fr_source_close(back);
}

/* A BF16 copy of the F32 folder (weights rounded to nearest even). */
static void make_bf16(const char *model, const char *dir)
{
    fr_source *in;
    fr_error err;
    char path[4096];
    if (fr_source_open(model, &in, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    mkdir(dir, 0777);
    fr_st_entry *e = calloc(in->n_tensors, sizeof *e);
    for (size_t i = 0; i < in->n_tensors; i++) {
        const fr_tensor *t = &in->tensors[i];
        e[i].name = t->name;
        e[i].dtype = "BF16";
        e[i].ndim = t->ndim;
        memcpy(e[i].shape, t->shape, sizeof t->shape);
        e[i].nbytes = (uint64_t)t->numel * 2;
    }
    snprintf(path, sizeof path, "%.4000s/model.safetensors", dir);
    fr_st_writer *wr;
    if (fr_st_writer_begin(path, e, in->n_tensors, NULL, 0, &wr, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    for (size_t i = 0; i < in->n_tensors; i++) {
        float *w = fr_test_load(in, &in->tensors[i]);
        uint8_t *b = malloc((size_t)in->tensors[i].numel * 2);
        fr_store_f32_as(FR_DTYPE_BF16, w, (size_t)in->tensors[i].numel, b);
        CHECK_OK(fr_st_writer_write(wr, b, (size_t)in->tensors[i].numel * 2, &err), err);
        free(b);
        free(w);
    }
    CHECK_OK(fr_st_writer_finish(wr, &err), err);
    free(e);
    fr_source_close(in);
    /* config.json, so the folder is a Hugging Face model */
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%.4000s/config.json", model);
    snprintf(to, sizeof to, "%.4000s/config.json", dir);
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    int c;
    while (f && g && (c = fgetc(f)) != EOF)
        fputc(c, g);
    if (f)
        fclose(f);
    if (g)
        fclose(g);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_readback DATA_DIR WORK_DIR\n");
        return 2;
    }
    char model[4096], bf16[4096];
    snprintf(model, sizeof model, "%s/stories260K", argv[1]);
    snprintf(bf16, sizeof bf16, "%s/stories260K-bf16", argv[2]);
    mkdir(argv[2], 0777);
    fr_error err;
    CHECK_OK(fr_registry_init(&reg, &err), err);
    const fr_qformat CT = FR_QFORMAT_COMPRESSED_TENSORS, DQ = FR_QFORMAT_DEQUANTIZED;
    /* down_proj has 172 columns: no whole groups of 16, 32 or 64 */
    const qcase f32_cases[] = {
        {"ct-nvfp4-fused", "nvfp4", "down_proj", CT, -1, 0, NULL},
        {"ct-nvfp4-own", "nvfp4", "down_proj", CT, 0, 0, NULL},
        {"ct-int4-g32-asym-sharded", "int4-g32-asym", "down_proj", CT, -1, 60000, NULL},
        {"ct-int3-g64-sym", "int3-g64-sym", "down_proj", CT, -1, 0, NULL},
        {"ct-int5-gC-asym", "int5-gC-asym", NULL, CT, -1, 0, NULL},
        {"ct-int8-gC-sym", "int8-gC-sym", NULL, CT, -1, 0, NULL},
        {"ct-int2-g32-asym", "int2-g32-asym", "down_proj", CT, -1, 0, NULL},
        {"ct-fp8-tensor", "fp8-e4m3-tensor", NULL, CT, -1, 0, NULL},
        {"ct-fp8-channel", "fp8-e4m3-channel", NULL, CT, -1, 0, NULL},
        {"ct-fp8-block128", "fp8-e4m3-block128", NULL, CT, -1, 0, NULL},
        {"ct-mxfp4", "mxfp4", "down_proj", CT, -1, 0, NULL},
        {"ct-nvfp4-fused-config", "nvfp4-fused", NULL, CT, 0, 0, "(q|k|v|gate|up)_proj"},
        {"dq-nvfp4-fused-config", "nvfp4-fused", NULL, DQ, -1, 0, "(q|k|v|gate|up)_proj"},
        {"dq-nf4-g64", "nf4-g64", NULL, DQ, -1, 0, NULL},
        {"dq-mxfp4", "mxfp4", NULL, DQ, -1, 0, NULL},
        {"dq-nvfp4-fused", "nvfp4", NULL, DQ, 1, 0, NULL},
        {"dq-int4-g128-asym-sharded", "int4-g128-asym", NULL, DQ, -1, 100000, NULL},
    };
    for (size_t i = 0; i < sizeof f32_cases / sizeof f32_cases[0]; i++)
        check_case(model, argv[2], &f32_cases[i]);
    make_bf16(model, bf16);
    const qcase bf16_cases[] = {
        {"bf16-dq-nvfp4", "nvfp4", NULL, DQ, -1, 0, NULL},
        {"bf16-dq-int3-g32-sym", "int3-g32-sym", NULL, DQ, -1, 0, NULL},
        {"bf16-ct-int4-g32-sym", "int4-g32-sym", "down_proj", CT, -1, 0, NULL},
        {"bf16-ct-nvfp4", "nvfp4", "down_proj", CT, -1, 0, NULL},
        {"bf16-ct-fp8-channel", "fp8-e4m3-channel", NULL, CT, -1, 0, NULL},
        {"bf16-ct-mxfp4", "mxfp4", "down_proj", CT, -1, 0, NULL},
        {"bf16-ct-nvfp4-fused-config", "nvfp4-fused", NULL, CT, -1, 0, "(q|k|v|gate|up)_proj"},
    };
    for (size_t i = 0; i < sizeof bf16_cases / sizeof bf16_cases[0]; i++)
        check_case(bf16, argv[2], &bf16_cases[i]);
    fr_registry_free(&reg);
    return fr_test_finish("quantize.readback");
}
