/*
 * compressed-tensors checkpoints as sources (docs/quantized-sources.md,
 * "compressed-tensors"): each format is written from data/stories260K (and
 * data/tiny-moe for 3-D expert stacks and per-expert 2-D tensors) by
 * fr_quantize, the writer checked against compressed-tensors' own loader;
 * opened again with fr_block_source_open, every quantized weight is one
 * tensor whose values are the registry's Q(W) of the original bit for bit
 * (whole, by row ranges, by expert views), its members are not listed, its
 * stored bits are all its members' bytes x 8; a partial release keeps its
 * float tensors as they were. Bad files (a member missing, a config that
 * lies about the shapes) fail with FR_E_FORMAT naming the file and tensor.
 *
 * usage: test_ct_source DATA_DIR WORK_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "core/safetensors_write.h"
#include "core/source.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/exec/builtins.h"
#include "frontier/model/block_source.h"
#include "frontier/model/ct_source.h"
#include "frontier/model/tensors.h"
#include "source_util.h"

static fr_registry reg;

/* Equal values (an integer code stores no sign of zero: Q(W)'s -0 reads
 * back as 0, as in the writer's own check). */
static int same_bits(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])))) {
            *at = i;
            return 0;
        }
    return 1;
}

static int is_member_name(const char *name)
{
    static const char *const sfx[] = {"_packed", "_scale", "_global_scale", "_zero_point",
                                      "_g_idx", "_shape"};
    size_t l = strlen(name);
    for (size_t k = 0; k < sizeof sfx / sizeof sfx[0]; k++) {
        size_t s = strlen(sfx[k]);
        if (l > s && !strcmp(name + l - s, sfx[k]))
            return 1;
    }
    return 0;
}

typedef struct ccase {
    const char *label, *model, *config, *exclude, *include, *format;
    int quantized; /* tensors expected folded */
    uint64_t shard_bytes; /* --max-shard-size, 0: one file */
} ccase;

static void check_case(const char *data, const char *work, const ccase *cc)
{
    char model[4096], out[4096];
    snprintf(model, sizeof model, "%s/%s", data, cc->model);
    snprintf(out, sizeof out, "%s/%s", work, cc->label);
    fr_quantize_options o = {.model = model, .out = out, .config = cc->config,
                             .exclude = cc->exclude, .include = cc->include,
                             .format = FR_QFORMAT_COMPRESSED_TENSORS, .force = 1,
                             .fused_global_scale = 0, .max_shard_bytes = cc->shard_bytes};
    fr_quantize_summary sum;
    fr_error err = {0};
    fr_status st = fr_quantize(&reg, &o, &sum, &err);
    CHECK_MSG(st == FR_OK, "%s: %s", cc->label, err.msg);
    if (st != FR_OK)
        return;
    fr_source *in = NULL, *back = NULL, *raw = NULL;
    if (fr_source_open(model, &in, &err) != FR_OK ||
        fr_block_source_open(out, &back, &err) != FR_OK ||
        fr_source_open(out, &raw, &err) != FR_OK) {
        CHECK_MSG(0, "%s: reopening: %s", cc->label, err.msg);
        fr_source_close(in);
        fr_source_close(back);
        return;
    }
    CHECK_MSG(!cc->shard_bytes || back->n_files > 1, "%s: %zu file(s), not sharded", cc->label,
              back->n_files);
    size_t folded = 0;
    for (size_t i = 0; i < back->n_tensors; i++) {
        const fr_tensor *t = &back->tensors[i];
        CHECK_MSG(!is_member_name(t->name), "%s: member '%s' listed", cc->label, t->name);
        long j = fr_test_find(in, t->name);
        CHECK_MSG(j >= 0, "%s: '%s' is no tensor of the original", cc->label, t->name);
        if (j < 0)
            continue;
        const fr_tensor *u = &in->tensors[j];
        CHECK_MSG(t->ndim == u->ndim && !memcmp(t->shape, u->shape, sizeof t->shape),
                  "%s: '%s' shape differs", cc->label, t->name);
        if (t->encoding != FR_ENC_MEMBERS) {
            CHECK_MSG(!fr_tensor_source_format(t)[0], "%s: '%s' has a source format", cc->label,
                      t->name);
            continue;
        }
        folded++;
        CHECK_MSG(fr_tensor_is_block_quantized(t), "%s: '%s' not readable", cc->label, t->name);
        CHECK_MSG(!strcmp(fr_tensor_source_format(t), cc->format), "%s: '%s' format '%s', not '%s'",
                  cc->label, t->name, fr_tensor_source_format(t), cc->format);
        /* stored bits: all members' bytes */
        size_t nm = 0;
        const fr_tensor *m = fr_ct_source_members(back, t, &nm);
        uint64_t bytes = 0;
        for (size_t k = 0; k < nm; k++) {
            long r = fr_test_find(raw, m[k].name);
            CHECK_MSG(r >= 0 && raw->tensors[r].nbytes == m[k].nbytes, "%s: member '%s'",
                      cc->label, m[k].name);
            bytes += m[k].nbytes;
        }
        CHECK_MSG(nm >= 2 && fr_tensor_stored_bits(t) == bytes * 8,
                  "%s: '%s' stores %llu bits, its %zu members %llu", cc->label, t->name,
                  (unsigned long long)fr_tensor_stored_bits(t), nm,
                  (unsigned long long)(bytes * 8));
        /* W = Q(W_original), expert by expert for a stack */
        float *w = fr_test_load(in, u), *got = fr_test_load(back, t);
        float *want = malloc((size_t)t->numel * sizeof *want);
        int64_t experts = t->ndim == 3 ? t->shape[0] : 1;
        int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1], per = rows * cols;
        for (int64_t e = 0; e < experts; e++)
            fr_test_quantize(&reg, cc->config, w + e * per, want + e * per, rows, cols, t->name);
        int64_t at = 0;
        CHECK_MSG(same_bits(got, want, t->numel, &at), "%s: '%s' element %lld: %.9g, Q(W) %.9g",
                  cc->label, t->name, (long long)at, got[at], want[at]);
        /* by ranges of 3 rows, as the blocked executor reads */
        float *part = malloc((size_t)t->numel * sizeof *part);
        for (int64_t b = 0; b < t->numel; b += 3 * cols) {
            int64_t n = t->numel - b < 3 * cols ? t->numel - b : 3 * cols;
            CHECK_OK(fr_tensor_load_f32_range(back, t, b, n, part + b, &err), err);
        }
        CHECK_MSG(same_bits(part, want, t->numel, &at), "%s: '%s' by rows, element %lld",
                  cc->label, t->name, (long long)at);
        CHECK_MSG(fr_tensor_load_f32_range(back, t, 1, cols, part, &err) == FR_E_FAIL &&
                      strstr(err.msg, t->name),
                  "%s: a range that cuts a row loads", cc->label);
        /* expert views */
        if (experts > 1) {
            CHECK_MSG(fr_sweep_expert_stack(t), "%s: '%s' is no expert stack", cc->label, t->name);
            for (int64_t e = 0; e < experts; e++) {
                fr_tensor v;
                fr_sweep_expert_view(t, (uint32_t)e, &v);
                float *ge = fr_test_load(back, &v);
                CHECK_MSG(same_bits(ge, want + e * per, per, &at), "%s: '%s' expert %lld",
                          cc->label, t->name, (long long)e);
                free(ge);
            }
        }
        free(part);
        free(w);
        free(got);
        free(want);
    }
    CHECK_MSG(folded == (size_t)cc->quantized && folded == sum.n_quantized,
              "%s: %zu tensors folded, %zu quantized, %d expected", cc->label, folded,
              sum.n_quantized, cc->quantized);
    CHECK_MSG(back->n_tensors == sum.n_quantized + sum.n_copied, "%s: %zu tensors listed",
              cc->label, back->n_tensors);
    fr_source_close(in);
    fr_source_close(back);
    fr_source_close(raw);
}

/* ---- quantize on a release: what it does not select is copied as released ---- */

static void check_requantize(const char *work)
{
    char rel[4096], out[4096];
    snprintf(rel, sizeof rel, "%s/moe-nvfp4", work);
    snprintf(out, sizeof out, "%s/moe-nvfp4-attn-int4", work);
    fr_quantize_options o = {.model = rel, .out = out, .config = "int4-g32-sym",
                             .include = "self_attn", .format = FR_QFORMAT_COMPRESSED_TENSORS,
                             .force = 1, .fused_global_scale = 0};
    fr_quantize_summary sum;
    fr_error err = {0};
    fr_status st = fr_quantize(&reg, &o, &sum, &err);
    CHECK_MSG(st == FR_OK && sum.n_quantized == 8, "re-quantizing a release: %s", err.msg);
    if (st != FR_OK)
        return;
    fr_source *in = NULL, *back = NULL, *in_raw = NULL, *back_raw = NULL;
    if (fr_block_source_open(rel, &in, &err) != FR_OK ||
        fr_block_source_open(out, &back, &err) != FR_OK ||
        fr_source_open(rel, &in_raw, &err) != FR_OK ||
        fr_source_open(out, &back_raw, &err) != FR_OK) {
        CHECK_MSG(0, "reopening: %s", err.msg);
        return;
    }
    size_t kept = 0, requantized = 0;
    for (size_t i = 0; i < in->n_tensors; i++) {
        const fr_tensor *t = &in->tensors[i];
        long j = fr_test_find(back, t->name);
        CHECK_MSG(j >= 0, "'%s' missing", t->name);
        if (j < 0)
            continue;
        const fr_tensor *u = &back->tensors[j];
        float *w = fr_test_load(in, t), *got = fr_test_load(back, u);
        float *want = malloc((size_t)t->numel * sizeof *want);
        int64_t at = 0;
        if (strstr(t->name, "self_attn")) {
            /* the release's bf16 attention, now int4 */
            requantized++;
            fr_test_quantize(&reg, "int4-g32-sym", w, want, t->shape[0], t->shape[1], t->name);
            CHECK_MSG(!strcmp(fr_tensor_source_format(u), "pack-quantized int4 g32 sym") &&
                          same_bits(got, want, t->numel, &at),
                      "'%s' re-quantized: element %lld", t->name, (long long)at);
        } else if (t->encoding == FR_ENC_MEMBERS) {
            /* kept: the same values, the same members byte for byte */
            kept++;
            CHECK_MSG(!strcmp(fr_tensor_source_format(u), fr_tensor_source_format(t)) &&
                          same_bits(got, w, t->numel, &at) &&
                          fr_tensor_stored_bits(u) == fr_tensor_stored_bits(t),
                      "'%s' kept: element %lld", t->name, (long long)at);
            size_t nm = 0;
            const fr_tensor *m = fr_ct_source_members(in, t, &nm);
            for (size_t k = 0; k < nm; k++) {
                long a = fr_test_find(in_raw, m[k].name), b = fr_test_find(back_raw, m[k].name);
                CHECK_MSG(a >= 0 && b >= 0 &&
                              in_raw->tensors[a].nbytes == back_raw->tensors[b].nbytes &&
                              !strcmp(in_raw->tensors[a].dtype_name, back_raw->tensors[b].dtype_name) &&
                              !memcmp(fr_tensor_raw(in_raw, &in_raw->tensors[a]),
                                      fr_tensor_raw(back_raw, &back_raw->tensors[b]),
                                      in_raw->tensors[a].nbytes),
                          "member '%s' not copied byte for byte", m[k].name);
            }
        }
        free(w);
        free(got);
        free(want);
    }
    CHECK_MSG(kept == 16 && requantized == 8, "%zu kept, %zu re-quantized", kept, requantized);
    /* the release's group beside the new one */
    fr_ct_kind kind;
    const char *group = NULL;
    long j = fr_test_find(back, "model.layers.0.mlp.experts.gate_up_proj");
    CHECK_MSG(j >= 0 && fr_ct_source_origin(back, &back->tensors[j], &kind, &group) &&
                  kind == FR_CT_NVFP4 && group && !strcmp(group, "released_group_0"),
              "the kept stack's group: %s", group ? group : "(none)");
    fr_source_close(in);
    fr_source_close(back);
    fr_source_close(in_raw);
    fr_source_close(back_raw);
}

/* ---- bad files: the nvfp4 release with one header name or config changed ---- */

static void spit(const char *path, const char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* Copies release `from` to `to` with the first `find` in the file `which`
 * (model.safetensors or config.json) replaced by `repl` (same length for
 * the safetensors header), then opens it: FR_E_FORMAT naming `names`. */
static void check_bad(const char *work, const char *from, const char *label, const char *which,
                      const char *findstr, const char *repl, const char *name1, const char *name2)
{
    char dir[4096], src[4200], dst[4200];
    snprintf(dir, sizeof dir, "%s/%s", work, label);
    mkdir(dir, 0777);
    const char *files[] = {"model.safetensors", "config.json"};
    int changed = 0;
    for (int k = 0; k < 2; k++) {
        size_t n;
        snprintf(src, sizeof src, "%s/%s", from, files[k]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[k]);
        char *b = fr_test_slurp(src, &n);
        if (!b) {
            CHECK_MSG(0, "%s: cannot read '%s'", label, src);
            return;
        }
        /* every occurrence */
        for (char *at; !strcmp(files[k], which) && (at = memmem(b, n, findstr, strlen(findstr)));) {
            size_t fl = strlen(findstr), rl = strlen(repl), off = (size_t)(at - b);
            char *nb = malloc(n - fl + rl + 1);
            memcpy(nb, b, off);
            memcpy(nb + off, repl, rl);
            memcpy(nb + off + rl, at + fl, n - off - fl);
            free(b);
            b = nb;
            n = n - fl + rl;
            changed++;
        }
        spit(dst, b, n);
        free(b);
    }
    CHECK_MSG(changed > 0, "%s: '%s' not in %s", label, findstr, which);
    fr_source *s = NULL;
    fr_error err = {0};
    fr_status st = fr_block_source_open(dir, &s, &err);
    CHECK_MSG(st == FR_E_FORMAT && !s && strstr(err.msg, "model.safetensors") &&
                  strstr(err.msg, name1) && (!name2 || strstr(err.msg, name2)),
              "%s: status %d, '%s'", label, (int)st, err.msg);
    printf("%s: %s\n", label, err.msg);
    fr_source_close(s);
}

/* The int4 release with one weight_shape saying 2^60 columns: refused on
 * open, naming the file and the tensor, nothing computed from it. */
static void check_bad_shape(const char *work)
{
    char from[4096], dir[4096], src[4200], dst[4200];
    snprintf(from, sizeof from, "%s/int4-g32-sym", work);
    snprintf(dir, sizeof dir, "%s/bad-weight-shape", work);
    mkdir(dir, 0777);
    const char *files[] = {"model.safetensors", "config.json"};
    for (int k = 0; k < 2; k++) {
        size_t n;
        snprintf(src, sizeof src, "%s/%s", from, files[k]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[k]);
        char *b = fr_test_slurp(src, &n);
        CHECK_MSG(b != NULL, "cannot read '%s'", src);
        if (!b)
            return;
        if (k == 0) {
            fr_source *raw = NULL;
            fr_error err;
            CHECK_OK(fr_source_open(src, &raw, &err), err);
            long i = raw ? fr_test_find(raw, "model.layers.0.self_attn.q_proj.weight_shape") : -1;
            CHECK_MSG(i >= 0, "no weight_shape");
            if (i >= 0) /* columns: the second int64 */
                memcpy(b + raw->tensors[i].offset + 8, "\0\0\0\0\0\0\0\x10", 8);
            fr_source_close(raw);
        }
        spit(dst, b, n);
        free(b);
    }
    fr_source *s = NULL;
    fr_error err = {0};
    fr_status st = fr_block_source_open(dir, &s, &err);
    CHECK_MSG(st == FR_E_FORMAT && !s && strstr(err.msg, "model.safetensors") &&
                  strstr(err.msg, "model.layers.0.self_attn.q_proj.weight"),
              "bad-weight-shape: status %d, '%s'", (int)st, err.msg);
    printf("bad-weight-shape: %s\n", err.msg);
    fr_source_close(s);
}

/* ---- a hand-made int3 release: 32/b values a word, g_idx, unpacked shapes ---- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Two int3 asym weights [R, C] with groups of 16, packed 10 a word
 * (compressed-tensors' pack_to_int32 of 2025), zero points packed the same
 * way along rows: "a" with an activation-order g_idx (column c in group
 * (c * 3) % G), "b" with a g_idx of -1 (column order). W is computed here
 * from the codes: (q - z) * s. */
static void check_hand_made(const char *work)
{
    enum { R = 12, C = 64, B = 3, PF = 10, G = C / 16 };
    const int64_t wpr = (C + PF - 1) / PF, zr = (R + PF - 1) / PF;
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/hand-int3", work);
    mkdir(dir, 0777);
    static uint8_t packed[2][R * ((C + PF - 1) / PF) * 4], zp[2][((R + PF - 1) / PF) * G * 4];
    static uint8_t scale[2][R * G * 2], gidx[2][C * 4], shape[2][16];
    static float want[2][R * C];
    uint64_t seed = 7;
    memset(packed, 0, sizeof packed);
    memset(zp, 0, sizeof zp);
    for (int w = 0; w < 2; w++) {
        int z[R][G];
        float sc[R][G];
        for (int r = 0; r < R; r++)
            for (int g = 0; g < G; g++) {
                z[r][g] = (int)(fr_test_splitmix64(&seed) % 8);
                /* an fp16 scale: k / 64 */
                sc[r][g] = (float)(1 + fr_test_splitmix64(&seed) % 200) / 64.0f;
                uint16_t h = 0;
                float a = sc[r][g];
                int e = 0;
                float m = frexpf(a, &e); /* normal fp16 */
                h = (uint16_t)((e - 1 + 15) << 10 | (uint16_t)((m * 2.0f - 1.0f) * 1024.0f));
                scale[w][(r * G + g) * 2] = (uint8_t)h;
                scale[w][(r * G + g) * 2 + 1] = (uint8_t)(h >> 8);
                uint8_t *wd = zp[w] + ((r / PF) * G + g) * 4;
                put32(wd, get32(wd) | (uint32_t)z[r][g] << ((r % PF) * B));
            }
        for (int c = 0; c < C; c++)
            put32(gidx[w] + 4 * c, w == 0 ? (uint32_t)((c * 3) % G) : 0xffffffffu);
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                int q = (int)(fr_test_splitmix64(&seed) % 8);
                uint8_t *wd = packed[w] + (r * wpr + c / PF) * 4;
                put32(wd, get32(wd) | (uint32_t)q << ((c % PF) * B));
                int g = w == 0 ? (c * 3) % G : c / 16;
                want[w][r * C + c] = (float)((q - 4) - (z[r][g] - 4)) * sc[r][g];
            }
        put32(shape[w], R);
        put32(shape[w] + 8, C);
    }
    static const char *const names[2] = {"model.layers.0.mlp.a_proj", "model.layers.0.mlp.b_proj"};
    char ename[2][5][96];
    fr_st_entry e[10];
    const char *sfx[5] = {"weight_packed", "weight_scale", "weight_zero_point", "weight_g_idx",
                          "weight_shape"};
    const char *dt[5] = {"I32", "F16", "I32", "I32", "I64"};
    const int64_t shp[5][2] = {{R, wpr}, {R, G}, {zr, G}, {C, 0}, {2, 0}};
    const uint64_t nb[5] = {sizeof packed[0], sizeof scale[0], sizeof zp[0], sizeof gidx[0], 16};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 5; k++) {
            snprintf(ename[w][k], sizeof ename[w][k], "%s.%s", names[w], sfx[k]);
            e[w * 5 + k] = (fr_st_entry){.name = ename[w][k], .dtype = dt[k],
                                         .ndim = shp[k][1] ? 2 : 1, .nbytes = nb[k]};
            e[w * 5 + k].shape[0] = shp[k][0];
            e[w * 5 + k].shape[1] = shp[k][1];
        }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    fr_st_writer *wr;
    fr_error err;
    CHECK_OK(fr_st_writer_begin(path, e, 10, NULL, 0, &wr, &err), err);
    const uint8_t *bufs[2][5] = {{packed[0], scale[0], zp[0], gidx[0], shape[0]},
                                 {packed[1], scale[1], zp[1], gidx[1], shape[1]}};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 5; k++)
            CHECK_OK(fr_st_writer_write(wr, bufs[w][k], nb[k], &err), err);
    CHECK_OK(fr_st_writer_finish(wr, &err), err);
    snprintf(path, sizeof path, "%s/config.json", dir);
    /* targets a class name, as llm-compressor writes them */
    static const char config[] =
        "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "
        "\"pack-quantized\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], "
        "\"weights\": {\"num_bits\": 3, \"type\": \"int\", \"symmetric\": false, "
        "\"strategy\": \"group\", \"group_size\": 16, \"actorder\": \"group\"}}}}}";
    spit(path, config, sizeof config - 1);
    fr_source *src = NULL;
    CHECK_OK(fr_block_source_open(dir, &src, &err), err);
    if (!src)
        return;
    CHECK_MSG(src->n_tensors == 2, "hand-made: %zu tensors listed", src->n_tensors);
    const char *fmt[2] = {"pack-quantized int3 g16 asym g_idx", "pack-quantized int3 g16 asym"};
    for (int w = 0; w < 2; w++) {
        char lname[128];
        snprintf(lname, sizeof lname, "%s.weight", names[w]);
        long i = fr_test_find(src, lname);
        CHECK_MSG(i >= 0, "hand-made: '%s' not listed", lname);
        if (i < 0)
            continue;
        const fr_tensor *t = &src->tensors[i];
        float *got = fr_test_load(src, t);
        int64_t at = 0;
        CHECK_MSG(!strcmp(fr_tensor_source_format(t), fmt[w]) && t->numel == R * C &&
                      same_bits(got, want[w], R * C, &at),
                  "hand-made '%s' (%s): element %lld: %g, want %g", lname,
                  fr_tensor_source_format(t), (long long)at, got[at], want[w][at]);
        uint64_t bytes = 0;
        for (int k = 0; k < 5; k++)
            bytes += nb[k];
        CHECK_EQ_U64(fr_tensor_stored_bits(t), bytes * 8);
        free(got);
    }
    fr_source_close(src);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_ct_source DATA_DIR WORK_DIR\n");
        return 2;
    }
    const char *work = argv[2];
    mkdir(work, 0777);
    fr_error err;
    CHECK_OK(fr_registry_init(&reg, &err), err);
    /* stories260K: 36 matrices, 7 of them down_proj (172 columns: no whole
     * groups of 16, 32 or 64), the embedding and output copied */
    const ccase cases[] = {
        {"nvfp4", "stories260K", "nvfp4", "down_proj", NULL, "nvfp4-pack-quantized", 30, 0},
        {"mxfp4", "stories260K", "mxfp4", "down_proj", NULL, "mxfp4-pack-quantized", 30, 0},
        {"int4-g32-sym", "stories260K", "int4-g32-sym", "down_proj", NULL,
         "pack-quantized int4 g32 sym", 30, 0},
        {"int4-g32-asym", "stories260K", "int4-g32-asym", "down_proj", NULL,
         "pack-quantized int4 g32 asym", 30, 0},
        /* sharded: model.safetensors.index.json, config.json beside it */
        {"int4-g32-asym-sharded", "stories260K", "int4-g32-asym", "down_proj", NULL,
         "pack-quantized int4 g32 asym", 30, 60000},
        {"int3-g64-sym", "stories260K", "int3-g64-sym", "down_proj", NULL,
         "pack-quantized int3 g64 sym", 30, 0},
        {"int5-gC-asym", "stories260K", "int5-gC-asym", NULL, NULL,
         "pack-quantized int5 channel asym", 35, 0},
        {"int2-g32-asym", "stories260K", "int2-g32-asym", "down_proj", NULL,
         "pack-quantized int2 g32 asym", 30, 0},
        {"int8-gC-sym", "stories260K", "int8-gC-sym", NULL, NULL, "pack-quantized int8 channel sym",
         35, 0},
        {"fp8-tensor", "stories260K", "fp8-e4m3-tensor", NULL, NULL, "float-quantized fp8 tensor",
         35, 0},
        {"fp8-channel", "stories260K", "fp8-e4m3-channel", NULL, NULL,
         "float-quantized fp8 channel", 35, 0},
        {"fp8-block128", "stories260K", "fp8-e4m3-block128", NULL, NULL,
         "float-quantized fp8 block 128x128", 35, 0},
        /* a partial release: attention quantized, the MLP as it was */
        {"int4-g32-sym-attn", "stories260K", "int4-g32-sym", NULL, "self_attn",
         "pack-quantized int4 g32 sym", 20, 0},
        /* tiny-moe: layer 0 3-D stacks, layer 1 per-expert 2-D; attention bf16 */
        {"moe-nvfp4", "tiny-moe", "nvfp4", "self_attn", NULL, "nvfp4-pack-quantized", 16, 0},
        {"moe-int4-g32-asym", "tiny-moe", "int4-g32-asym", "self_attn", NULL,
         "pack-quantized int4 g32 asym", 16, 0},
        {"moe-fp8-channel", "tiny-moe", "fp8-e4m3-channel", "self_attn", NULL,
         "float-quantized fp8 channel", 16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(argv[1], work, &cases[i]);

    check_requantize(work);
    char rel[4096];
    snprintf(rel, sizeof rel, "%s/moe-nvfp4", work);
    const char *L = "model.layers.1.mlp.experts.0.down_proj.weight";
    check_bad(work, rel, "bad-no-global", "model.safetensors",
              "model.layers.1.mlp.experts.0.down_proj.weight_global_scale",
              "model.layers.1.mlp.experts.0.down_proj.weight_global_scalX", L,
              "weight_global_scale");
    check_bad(work, rel, "bad-no-packed", "model.safetensors",
              "model.layers.1.mlp.experts.0.down_proj.weight_packed",
              "model.layers.1.mlp.experts.0.down_proj.weight_packeX", L, NULL);
    /* the config says int4 groups of 32 for an nvfp4 release */
    check_bad(work, rel, "bad-config-format", "config.json",
              "\"format\":\t\"nvfp4-pack-quantized\"", "\"format\":\t\"pack-quantized\"",
              "model.layers.0.mlp.experts.down_proj", "weight_shape");
    snprintf(rel, sizeof rel, "%s/int4-g32-sym", work);
    /* num_bits 8 where the release holds int4: weight_packed's shape lies */
    check_bad(work, rel, "bad-config-bits", "config.json", "\"num_bits\":\t4", "\"num_bits\":\t8",
              "weight_packed", "the format needs");
    check_bad(work, rel, "bad-config-group", "config.json", "\"group_size\":\t32",
              "\"group_size\":\t64", "weight_scale", "the format needs");
    check_bad_shape(work);
    check_hand_made(work);
    fr_registry_free(&reg);
    return fr_test_finish("readers.ct_source");
}
