/*
 * llama.cpp's block types on the GPU over an 8B Llama-shaped model
 * (docs/gpu.md, "ggml- and imat-ggml- on the GPU"; docs/benchmarks.md):
 *
 *   bench_ggml [--layers N] [--types q4_k,iq4_xs,...] [--no-imat]
 *              [--dtype bf16|f16|f32] [--dist gaussian|laplace|student-t3|outliers]
 *              [--check-rows R] [--peer LLAMA.json] [--json FILE]
 *
 * The weights of N layers (default 32) of Llama-3-8B's shapes: q and o
 * 4096 x 4096, k and v 1024 x 4096, gate and up 14336 x 4096, down 4096 x
 * 14336, generated on the device (one tensor per shape, seed 1; 6.98e9
 * weights for 32 layers). For each type, ggml-<type> and (without
 * --no-imat) imat-ggml-<type> with a random importance per column: every
 * tensor of every layer through the family's quantize_cuda (the call the
 * CUDA executor makes: the non-finite check, the importance upload and the
 * blocks), each call timed by CUDA events; the sum is the model's time. A
 * warm-up call per configuration comes first (module loading).
 *
 * --check-rows R (default 8): the first and the last R rows of each shape's
 * last timed output against quantize_cpu, bit for bit (NaN equal to NaN).
 * --peer: bench/peers/llama_quantize.py's JSON (llama-quantize --pure on
 * the same shapes): its seconds scaled to this run's weights, and the
 * speedup. Prints a table; --json writes every figure.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/call.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/synthetic.h"
#include "frontier/exec/builtins.h"
#include "kernels/launchers.h"

#define FR(expr)                                                                              \
    do {                                                                                      \
        fr_error e_;                                                                          \
        fr_error_clear(&e_);                                                                  \
        if ((expr) != FR_OK) {                                                                \
            fprintf(stderr, "bench_ggml: %s failed at line %d: %s\n", #expr, __LINE__,       \
                    e_.msg);                                                                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define E (&e_)

static const char *all_types[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "mxfp4", "q2_k",
                                  "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs"};
#define N_ALL (sizeof all_types / sizeof all_types[0])

/* Llama-3-8B's matrices per layer: shape and how many of it */
static const struct {
    const char *what;
    int64_t rows, cols;
    int per_layer;
} shapes[] = {{"q,o", 4096, 4096, 2}, {"k,v", 1024, 4096, 2}, {"gate,up", 14336, 4096, 2},
              {"down", 4096, 14336, 1}};
#define N_SHAPES 4

typedef struct opts {
    int layers, imat, check_rows, dtype, fr_dtype, dist;
    const char *types, *peer, *json;
} opts;

typedef struct result {
    char config[48];
    double seconds, shape_s[N_SHAPES];
    int64_t checked, differ;
    double peer_s; /* llama-quantize's, scaled to this run's weights; < 0: none */
} result;

static void usage(void)
{
    fprintf(stderr, "usage: bench_ggml [--layers N] [--types LIST] [--no-imat] [--dtype bf16|f16|f32]"
                    " [--dist NAME] [--check-rows R] [--peer FILE] [--json FILE]\n");
    exit(2);
}

static int dist_of(const char *name)
{
    for (int d = 0; d < FR_SYN_COUNT; d++)
        if (!strcmp(fr_synthetic_dist_name(d), name))
            return d;
    return -1;
}

static void parse(int argc, char **argv, opts *o)
{
    *o = (opts){.layers = 32, .imat = 1, .check_rows = 8, .dtype = FRONTIER_DTYPE_BF16,
                .fr_dtype = FR_DTYPE_BF16, .dist = FR_SYN_GAUSSIAN};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-imat")) {
            o->imat = 0;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--layers"))
            o->layers = atoi(v);
        else if (!strcmp(a, "--types"))
            o->types = v;
        else if (!strcmp(a, "--check-rows"))
            o->check_rows = atoi(v);
        else if (!strcmp(a, "--peer"))
            o->peer = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else if (!strcmp(a, "--dist") && (o->dist = dist_of(v)) >= 0)
            continue;
        else if (!strcmp(a, "--dtype") && !strcmp(v, "bf16"))
            continue;
        else if (!strcmp(a, "--dtype") && !strcmp(v, "f16")) {
            o->dtype = FRONTIER_DTYPE_F16;
            o->fr_dtype = FR_DTYPE_F16;
        } else if (!strcmp(a, "--dtype") && !strcmp(v, "f32")) {
            o->dtype = FRONTIER_DTYPE_F32;
            o->fr_dtype = FR_DTYPE_F32;
        } else
            usage();
    }
    if (o->layers < 1 || o->check_rows < 0)
        usage();
}

/* Whether `type` is in the comma-separated list (NULL: all). */
static int wanted(const char *list, const char *type)
{
    size_t n = strlen(type);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        if (!strncmp(p, type, n) && (p[n] == ',' || p[n] == 0))
            return 1;
    return list == NULL;
}

/* llama-quantize's seconds for `type` from the peer JSON, scaled to
 * `params` weights; -1 when it has none. */
static double peer_seconds(const cJSON *peer, const char *type, int imat, double params)
{
    const cJSON *runs = cJSON_GetObjectItem(peer, imat ? "imatrix" : "types");
    const cJSON *t = cJSON_GetObjectItem(runs, type);
    const cJSON *s = cJSON_GetObjectItem(t, "seconds");
    const cJSON *p = cJSON_GetObjectItem(peer, "params");
    if (!cJSON_IsNumber(s) || !cJSON_IsNumber(p) || p->valuedouble <= 0)
        return -1.0;
    return s->valuedouble * params / p->valuedouble;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_ggml: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "bench_ggml: cannot read %s\n", path);
        exit(1);
    }
    text[n] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        fprintf(stderr, "bench_ggml: %s is not JSON\n", path);
        exit(1);
    }
    return j;
}

/* splitmix64 to a uniform in (0, 1) */
static double uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

/* The device tensors: one per shape, generated there, and their outputs. */
typedef struct model {
    void *w[N_SHAPES];
    float *w_hat[N_SHAPES];
    size_t esize;
    int bf16;
    frontier_calib calib[N_SHAPES]; /* act_sq_mean per column, for imat-ggml- */
    float *act[N_SHAPES];
    double params;
} model;

static void model_make(model *m, const opts *o, uint64_t *rng)
{
    m->esize = o->dtype == FRONTIER_DTYPE_F32 ? 4 : 2;
    m->bf16 = o->dtype == FRONTIER_DTYPE_BF16;
    m->params = 0.0;
    for (int s = 0; s < N_SHAPES; s++) {
        const int64_t n = shapes[s].rows * shapes[s].cols;
        FR(fr_cuda_malloc(&m->w[s], (size_t)n * m->esize, E));
        FR(fr_cuda_malloc((void **)&m->w_hat[s], (size_t)n * sizeof(float), E));
        FR(fr_cuda_synthetic(o->dist, o->fr_dtype, 1, (uint64_t)s, 0, n, m->w[s], NULL, E));
        m->act[s] = malloc((size_t)shapes[s].cols * sizeof(float));
        for (int64_t j = 0; j < shapes[s].cols; j++) { /* log-normal mean x^2, as imatrices have */
            double u1 = uniform(rng), u2 = uniform(rng);
            m->act[s][j] = (float)exp(1.5 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
        m->calib[s] = (frontier_calib){.cols = shapes[s].cols, .act_mean_sq = m->act[s]};
        m->params += (double)n * shapes[s].per_layer * o->layers;
    }
    FR(fr_cuda_sync(NULL, E));
}

static void model_free(model *m)
{
    for (int s = 0; s < N_SHAPES; s++) {
        fr_cuda_free(m->w[s]);
        fr_cuda_free(m->w_hat[s]);
        free(m->act[s]);
    }
}

/* One tensor of shape s through the configuration's quantize_cuda, as the
 * executor calls it; returns its CUDA-event seconds. */
static double quantize_one(const fr_registry *reg, const fr_config_ref *ref, const model *m,
                           int s, int imat, const opts *o, fr_pool *pool, fr_cuda_timer *timer)
{
    frontier_call call;
    double sec = 0.0;
    fr_call_init(&call, pool, 1, shapes[s].what, ref->cfg->name);
    FR(fr_cuda_timer_start(timer, E));
    FR(fr_quantizer_quantize_cuda(reg, ref, m->w[s], o->dtype, m->w_hat[s], shapes[s].rows,
                                  shapes[s].cols, imat ? &m->calib[s] : NULL, shapes[s].what,
                                  NULL, &call, E));
    FR(fr_cuda_timer_stop(timer, &sec, E));
    fr_call_release(&call);
    return sec;
}

/* rows [r0, r0 + n) of shape s's output against quantize_cpu of the same
 * rows (blocks are row-local); adds to *checked and *differ. */
static void check_rows(const fr_registry *reg, const fr_config_ref *ref, const model *m, int s,
                       int imat, int64_t r0, int64_t n, fr_pool *pool, result *r)
{
    const int64_t cols = shapes[s].cols, count = n * cols;
    void *raw = malloc((size_t)count * m->esize);
    float *x = malloc((size_t)count * sizeof *x), *cpu = malloc((size_t)count * sizeof *cpu);
    float *gpu = malloc((size_t)count * sizeof *gpu);
    FR(fr_cuda_download(raw, (const char *)m->w[s] + (size_t)(r0 * cols) * m->esize,
                        (size_t)count * m->esize, E));
    FR(fr_cuda_download(gpu, m->w_hat[s] + r0 * cols, (size_t)count * sizeof(float), E));
    for (int64_t i = 0; i < count; i++) /* the stored values, exactly */
        x[i] = m->esize == 4 ? ((const float *)raw)[i]
               : m->bf16     ? fr_bf16_to_f32(((const uint16_t *)raw)[i])
                             : fr_f16_to_f32(((const uint16_t *)raw)[i]);
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    frontier_call call;
    fr_call_init(&call, pool, 1, shapes[s].what, ref->cfg->name);
    if (q->quantize_cpu(ref->cfg, x, cpu, n, cols, imat ? &m->calib[s] : NULL, &call) !=
        FRONTIER_OK) {
        fprintf(stderr, "bench_ggml: %s: quantize_cpu: %s\n", ref->cfg->name, call.error);
        exit(1);
    }
    fr_call_release(&call);
    for (int64_t i = 0; i < count; i++) {
        uint32_t a = fr_f32_to_bits(cpu[i]), b = fr_f32_to_bits(gpu[i]);
        r->differ += !(a == b || (cpu[i] == 0.0f && gpu[i] == 0.0f) ||
                       (cpu[i] != cpu[i] && gpu[i] != gpu[i]));
    }
    r->checked += count;
    free(raw);
    free(x);
    free(cpu);
    free(gpu);
}

/* Every tensor of the model under one configuration, then the checks. */
static void run_config(const fr_registry *reg, const char *name, int imat, const model *m,
                       const opts *o, fr_pool *pool, fr_cuda_timer *timer, result *r)
{
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    if (!ref) {
        fprintf(stderr, "bench_ggml: no configuration '%s'\n", name);
        exit(1);
    }
    memset(r, 0, sizeof *r);
    snprintf(r->config, sizeof r->config, "%s", name);
    r->peer_s = -1.0;
    (void)quantize_one(reg, ref, m, 1, imat, o, pool, timer); /* warm-up: module loading */
    for (int l = 0; l < o->layers; l++)
        for (int s = 0; s < N_SHAPES; s++)
            for (int k = 0; k < shapes[s].per_layer; k++)
                r->shape_s[s] += quantize_one(reg, ref, m, s, imat, o, pool, timer);
    for (int s = 0; s < N_SHAPES; s++) {
        r->seconds += r->shape_s[s];
        const int64_t n = o->check_rows < shapes[s].rows ? o->check_rows : shapes[s].rows;
        if (n > 0) {
            check_rows(reg, ref, m, s, imat, 0, n, pool, r);
            check_rows(reg, ref, m, s, imat, shapes[s].rows - n, n, pool, r);
        }
    }
}

static void print_table(const result *res, int n, const opts *o, double params)
{
    printf("\n%d layers of Llama-3-8B's matrices (%.3g weights, %s), one quantize_cuda per "
           "tensor\n", o->layers, params, o->dtype == FRONTIER_DTYPE_BF16 ? "bf16"
                                              : o->dtype == FRONTIER_DTYPE_F16 ? "f16" : "f32");
    printf("%-20s %9s %9s %9s %9s %9s %11s %13s %9s\n", "configuration", "GPU s", "q,o",
           "k,v", "gate,up", "down", "Gweights/s", "checked", "llama s");
    double total = 0.0, peer_total = 0.0;
    int peer_all = 1;
    for (int i = 0; i < n; i++) {
        const result *r = &res[i];
        total += r->seconds;
        printf("%-20s %9.3f %9.3f %9.3f %9.3f %9.3f %11.2f %6lld %-6s", r->config, r->seconds,
               r->shape_s[0], r->shape_s[1], r->shape_s[2], r->shape_s[3],
               params / r->seconds * 1e-9, (long long)r->checked, r->differ ? "DIFFER" : "equal");
        if (r->peer_s >= 0) {
            peer_total += r->peer_s;
            printf(" %9.1f  %.0fx\n", r->peer_s, r->peer_s / r->seconds);
        } else {
            peer_all = 0;
            printf(" %9s\n", "-");
        }
    }
    printf("%-20s %9.3f", "all", total);
    if (peer_total > 0)
        printf("   llama-quantize %.1f s%s: %.0fx", peer_total,
               peer_all ? "" : " (the configurations it ran)", peer_total / total);
    printf("\n");
}

static void write_json(const char *path, const result *res, int n, const opts *o, double params)
{
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "configs");
    double total = 0.0, peer = 0.0;
    int64_t differ = 0;
    cJSON_AddNumberToObject(j, "layers", o->layers);
    cJSON_AddNumberToObject(j, "params", params);
    cJSON_AddStringToObject(j, "dist", fr_synthetic_dist_name(o->dist));
    for (int i = 0; i < n; i++) {
        const result *r = &res[i];
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "config", r->config);
        cJSON_AddNumberToObject(c, "seconds", r->seconds);
        for (int s = 0; s < N_SHAPES; s++) {
            char key[32];
            snprintf(key, sizeof key, "seconds_%s", shapes[s].what);
            cJSON_AddNumberToObject(c, key, r->shape_s[s]);
        }
        cJSON_AddNumberToObject(c, "checked", (double)r->checked);
        cJSON_AddNumberToObject(c, "differ", (double)r->differ);
        if (r->peer_s >= 0) {
            cJSON_AddNumberToObject(c, "llama_quantize_seconds", r->peer_s);
            cJSON_AddNumberToObject(c, "speedup", r->peer_s / r->seconds);
            peer += r->peer_s;
        }
        cJSON_AddItemToArray(arr, c);
        total += r->seconds;
        differ += r->differ;
    }
    cJSON_AddNumberToObject(j, "gpu_seconds", total);
    cJSON_AddNumberToObject(j, "differ", (double)differ);
    if (peer > 0) {
        cJSON_AddNumberToObject(j, "llama_quantize_seconds", peer);
        cJSON_AddNumberToObject(j, "speedup", peer / total);
    }
    char *text = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "bench_ggml: cannot write %s\n", path);
        exit(1);
    }
    free(text);
    cJSON_Delete(j);
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    if (fr_cuda_device_count() <= 0) {
        fprintf(stderr, "bench_ggml: no CUDA device\n");
        return 1;
    }
    char desc[256];
    FR(fr_cuda_select(0, E));
    FR(fr_cuda_device_describe(0, desc, sizeof desc, E));
    printf("device 0: %s\n", desc);
    fr_pool *pool;
    fr_registry reg;
    FR(fr_pool_create(0, &pool, E));
    FR(fr_registry_init(&reg, E));
    cJSON *peer = o.peer ? read_json(o.peer) : NULL;
    uint64_t rng = 20261205;
    model m;
    model_make(&m, &o, &rng);
    fr_cuda_timer *timer;
    FR(fr_cuda_timer_create(&timer, NULL, E));
    result res[2 * N_ALL];
    int n = 0;
    int64_t differ = 0;
    for (size_t t = 0; t < N_ALL; t++) {
        if (!wanted(o.types, all_types[t]))
            continue;
        for (int imat = 0; imat <= 1; imat++) {
            char name[48];
            snprintf(name, sizeof name, "%sggml-%s", imat ? "imat-" : "", all_types[t]);
            if (imat && (!o.imat || !fr_registry_find_config(&reg, name)))
                continue;
            run_config(&reg, name, imat, &m, &o, pool, timer, &res[n]);
            if (peer)
                res[n].peer_s = peer_seconds(peer, all_types[t], imat, m.params);
            printf("%-20s %8.3f s, %lld of %lld checked w^ differ from the CPU's\n", name,
                   res[n].seconds, (long long)res[n].differ, (long long)res[n].checked);
            fflush(stdout);
            differ += res[n++].differ;
        }
    }
    print_table(res, n, &o, m.params);
    if (o.json)
        write_json(o.json, res, n, &o, m.params);
    fr_cuda_timer_free(timer);
    model_free(&m);
    cJSON_Delete(peer);
    fr_registry_free(&reg);
    fr_pool_destroy(pool);
    return differ ? 1 : 0;
}
