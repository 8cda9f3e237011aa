/*
 * Calibration statistics files (calib.h, docs/calibration.md): the
 * safetensors reader lists and maps the tensors; this file groups them by
 * module, checks the layout, and matches modules to weights.
 */
#include "calib.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imatrix.h"
#include "philox.h"
#include "readers.h"
#include "source.h"

/* The tensors a module may have, by the suffix after its name. */
enum calib_part { PART_HESSIAN, PART_ABS_MEAN, PART_SQ_MEAN, PART_SENSITIVITY, PART_COUNT };

static const char *const part_names[PART_COUNT] = {
    [PART_HESSIAN] = "hessian",
    [PART_ABS_MEAN] = "act_abs_mean",
    [PART_SQ_MEAN] = "act_sq_mean",
    [PART_SENSITIVITY] = "sensitivity",
};

struct calib_module {
    char *name;
    long tensor[PART_COUNT]; /* index into src->tensors, or -1 */
    int64_t in;              /* input dimension; 0 when only a sensitivity is stored */
    int values_checked;      /* check_module_values passed */
    float *copy[PART_COUNT]; /* aligned copies of tensors the file misaligns, else NULL */
    float *owned_sq;         /* an importance matrix's act_sq_mean (imatrix.h), owned */
    int64_t n_experts;       /* a leading expert axis of E (hessian [E, in, in]); 0: none */
    int64_t *expert_tokens;  /* [n_experts]: __metadata__.<module>.expert_token_counts */
    float *fallback[PART_COUNT]; /* the token-weighted mean over the experts that had
                                    tokens, for those that had none (computed on use) */
};

/* Synthetic statistics of one input width (fr_calib_open "synthetic"). */
struct calib_synth {
    int64_t cols;
    float *hessian, *abs_mean, *sq_mean;
};

struct fr_calib_file {
    fr_source *src;
    int64_t token_count;
    size_t n_modules;
    size_t modules_cap;           /* entries allocated (names past n_modules freed on close) */
    struct calib_module *modules; /* sorted by name */
    fr_imatrix_format imatrix;    /* FR_IMATRIX_NONE: the safetensors layout */
    int synthetic;                /* 1: generated statistics, no file */
    uint64_t synth_seed;
    size_t n_synth;
    struct calib_synth *synth;    /* one per input width looked up */
};

#define PREFIX "cannot read calibration '%s': "

/* ---- opening ---- */

static int by_module_name(const void *a, const void *b)
{
    return strcmp(((const struct calib_module *)a)->name, ((const struct calib_module *)b)->name);
}

/* The module whose name is key[0..len), or NULL. */
static struct calib_module *find_module(const fr_calib_file *cf, const char *key, size_t len)
{
    size_t lo = 0, hi = cf->n_modules;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *name = cf->modules[mid].name;
        int c = strncmp(name, key, len);
        if (c == 0 && name[len] != '\0')
            c = 1;
        if (c == 0)
            return &cf->modules[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* token_count: a string of decimal digits as safetensors metadata requires,
 * or (from lenient writers) a JSON integer; positive either way. */
static fr_status read_token_count(fr_calib_file *cf, fr_error *err)
{
    const char *path = cf->src->path;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(cf->src->metadata, "__metadata__");
    const cJSON *item = meta ? cJSON_GetObjectItemCaseSensitive(meta, "token_count") : NULL;
    if (!item)
        return fr_fail(err, FR_E_FORMAT, PREFIX "__metadata__ has no token_count", path);
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (d >= 1.0 && d < 9007199254740992.0 && d == (double)(int64_t)d) {
            cf->token_count = (int64_t)d;
            return FR_OK;
        }
        return fr_fail(err, FR_E_FORMAT, PREFIX "token_count %g is not a positive integer", path, d);
    }
    if (!cJSON_IsString(item))
        return fr_fail(err, FR_E_FORMAT, PREFIX "token_count is not a string", path);
    const char *s = item->valuestring;
    int digits_only = s[0] != '\0';
    for (const char *p = s; *p; p++)
        digits_only &= *p >= '0' && *p <= '9';
    errno = 0;
    long long v = digits_only ? strtoll(s, NULL, 10) : 0;
    if (!digits_only || errno == ERANGE || v < 1)
        return fr_fail(err, FR_E_FORMAT, PREFIX "token_count '%.64s' is not a positive integer", path,
                       s);
    cf->token_count = v;
    return FR_OK;
}

/* One tensor name into its module and part; 0 when it is none of the parts. */
static int split_name(const char *name, size_t *module_len, enum calib_part *part)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return 0;
    for (int p = 0; p < PART_COUNT; p++) {
        if (!strcmp(dot + 1, part_names[p])) {
            *module_len = (size_t)(dot - name);
            *part = (enum calib_part)p;
            return 1;
        }
    }
    return 0;
}

/* Groups the tensors into modules (sorted by name). */
static fr_status build_modules(fr_calib_file *cf, fr_error *err)
{
    const fr_source *src = cf->src;
    const char *path = src->path;
    if (src->n_tensors == 0)
        return FR_OK;
    cf->modules = calloc(src->n_tensors, sizeof *cf->modules);
    if (!cf->modules)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    cf->modules_cap = src->n_tensors;
    /* one entry per tensor first, then merge the entries of one name */
    for (size_t i = 0; i < src->n_tensors; i++) {
        const char *name = src->tensors[i].name;
        size_t len;
        enum calib_part part;
        if (!split_name(name, &len, &part))
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "tensor '%s' is not <module>.hessian, .act_abs_mean, "
                                  ".act_sq_mean or .sensitivity",
                           path, name);
        struct calib_module *m = &cf->modules[cf->n_modules++];
        for (int p = 0; p < PART_COUNT; p++)
            m->tensor[p] = -1;
        m->tensor[part] = (long)i;
        m->name = strndup(name, len);
        if (!m->name)
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    }
    qsort(cf->modules, cf->n_modules, sizeof *cf->modules, by_module_name);
    size_t kept = 0;
    for (size_t i = 0; i < cf->n_modules; i++) {
        struct calib_module *m = &cf->modules[i];
        if (kept && !strcmp(cf->modules[kept - 1].name, m->name)) {
            struct calib_module *into = &cf->modules[kept - 1];
            for (int p = 0; p < PART_COUNT; p++) {
                if (m->tensor[p] < 0)
                    continue;
                if (into->tensor[p] >= 0)
                    return fr_fail(err, FR_E_FORMAT, PREFIX "tensor '%s' appears twice", path,
                                   src->tensors[m->tensor[p]].name);
                into->tensor[p] = m->tensor[p];
            }
            free(m->name);
            m->name = NULL;
            continue;
        }
        cf->modules[kept++] = *m;
        if (kept - 1 != i)
            m->name = NULL;
    }
    cf->n_modules = kept;
    return FR_OK;
}

/* The header-level checks of one module: dtypes, ranks, shapes agreeing.
 * hessian [in, in] and vectors [in], or, per expert (a leading expert axis
 * of E, docs/calibration.md "Mixture-of-experts statistics"), [E, in, in] and [E, in]; all
 * parts of a module one way or the other, with one E. */
static fr_status check_module_layout(const fr_calib_file *cf, struct calib_module *m, fr_error *err)
{
    const fr_source *src = cf->src;
    const char *path = src->path;
    char shape[256], other[256];
    int first = -1; /* the first of hessian, act_abs_mean, act_sq_mean: sets in and E */
    for (int p = 0; p < PART_COUNT; p++) {
        if (m->tensor[p] < 0)
            continue;
        const fr_tensor *t = &src->tensors[m->tensor[p]];
        if (t->dtype != FR_DTYPE_F32)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': %s is %s, not F32", path, m->name,
                           part_names[p], t->dtype_name);
        fr_shape_text(t->shape, t->ndim, shape, sizeof shape);
        if (p == PART_SENSITIVITY) {
            if (t->ndim != 1 || t->shape[0] < 1 || t->shape[0] > 2)
                return fr_fail(err, FR_E_FORMAT,
                               PREFIX "module '%s': sensitivity is %s, not [1] or [2]", path,
                               m->name, shape);
            continue;
        }
        int base = p == PART_HESSIAN ? 2 : 1;
        if (p == PART_HESSIAN &&
            ((t->ndim != 2 && t->ndim != 3) || t->shape[t->ndim - 1] != t->shape[t->ndim - 2]))
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': hessian is %s, not square [in, in] (or [E, in, in] "
                                  "per expert)",
                           path, m->name, shape);
        if (p != PART_HESSIAN && t->ndim != 1 && t->ndim != 2)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': %s is %s, not [in] (or [E, in] per expert)", path,
                           m->name, part_names[p], shape);
        int64_t experts = t->ndim == base + 1 ? t->shape[0] : 0;
        int64_t in = t->shape[t->ndim - 1];
        if (in == 0 || (t->ndim == base + 1 && experts == 0))
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': %s is %s, empty", path, m->name,
                           part_names[p], shape);
        if (first < 0) {
            first = p;
            m->in = in;
            m->n_experts = experts;
            continue;
        }
        const fr_tensor *f = &src->tensors[m->tensor[first]];
        fr_shape_text(f->shape, f->ndim, other, sizeof other);
        if ((experts > 0) != (m->n_experts > 0))
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s': %s is %s, the %s is %s: one has a leading expert "
                                  "axis, the other not",
                           path, m->name, part_names[p], shape, part_names[first], other);
        if (in != m->in || experts != m->n_experts)
            return fr_fail(err, FR_E_FORMAT, PREFIX "module '%s': %s is %s, the %s is %s", path,
                           m->name, part_names[p], shape, part_names[first], other);
    }
    return FR_OK;
}

/* __metadata__.<module>.expert_token_counts of every per-expert module: a
 * JSON list of E non-negative integers (a string, as safetensors requires
 * metadata values to be; a JSON array from a lenient writer too), none
 * above token_count; and no such key for a module without an expert axis. */
static fr_status read_expert_tokens(fr_calib_file *cf, fr_error *err)
{
    static const char suffix[] = ".expert_token_counts";
    const size_t k = sizeof suffix - 1;
    const char *path = cf->src->path;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(cf->src->metadata, "__metadata__");
    const cJSON *item;
    cJSON_ArrayForEach(item, meta)
    {
        size_t n = item->string ? strlen(item->string) : 0;
        if (n <= k || strcmp(item->string + n - k, suffix))
            continue;
        struct calib_module *m = find_module(cf, item->string, n - k);
        if (!m || m->n_experts == 0)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "__metadata__ '%s': '%.*s' %s", path, item->string,
                           (int)(n - k), item->string,
                           m ? "has no per-expert statistics (no leading expert axis)"
                             : "is no module of the file");
    }
    for (size_t i = 0; i < cf->n_modules; i++) {
        struct calib_module *m = &cf->modules[i];
        if (m->n_experts == 0)
            continue;
        char key[FR_CALIB_REASON_MAX];
        snprintf(key, sizeof key, "%s%s", m->name, suffix);
        item = meta ? cJSON_GetObjectItemCaseSensitive(meta, key) : NULL;
        if (!item)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "module '%s' has per-expert statistics (%lld experts) but "
                                  "__metadata__ has no '%s' (the token count of each expert)",
                           path, m->name, (long long)m->n_experts, key);
        cJSON *parsed = NULL;
        const cJSON *list = item;
        if (cJSON_IsString(item))
            list = parsed = cJSON_Parse(item->valuestring);
        int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
        if (n != m->n_experts) {
            cJSON_Delete(parsed);
            if (n < 0)
                return fr_fail(err, FR_E_FORMAT,
                               PREFIX "__metadata__ '%s' is not a JSON list of token counts", path,
                               key);
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "__metadata__ '%s' has %d token counts, the module's "
                                  "statistics have %lld experts",
                           path, key, n, (long long)m->n_experts);
        }
        m->expert_tokens = calloc((size_t)n, sizeof *m->expert_tokens);
        if (!m->expert_tokens) {
            cJSON_Delete(parsed);
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        }
        for (int e = 0; e < n; e++) {
            const cJSON *c = cJSON_GetArrayItem(list, e);
            double d = cJSON_IsNumber(c) ? c->valuedouble : -1;
            if (!(d >= 0 && d <= (double)cf->token_count && d == (double)(int64_t)d)) {
                char text[64];
                if (cJSON_IsNumber(c))
                    snprintf(text, sizeof text, "%g", d);
                else
                    snprintf(text, sizeof text, "not a number");
                cJSON_Delete(parsed);
                return fr_fail(err, FR_E_FORMAT,
                               PREFIX "__metadata__ '%s': expert %d's token count %s is not an "
                                      "integer in 0..token_count (%lld)",
                               path, key, e, text, (long long)cf->token_count);
            }
            m->expert_tokens[e] = (int64_t)d;
        }
        cJSON_Delete(parsed);
    }
    return FR_OK;
}

/* An importance matrix (imatrix.h) as modules holding only act_sq_mean. */
static fr_status open_imatrix(fr_calib_file *cf, const fr_mapped_file *f, fr_imatrix_format format,
                              fr_error *err)
{
    fr_imatrix im;
    fr_status st = fr_imatrix_read(cf->src->path, f->base, f->size, format, &im, err);
    if (st != FR_OK)
        return st;
    cf->imatrix = format;
    cf->token_count = im.token_count;
    cf->modules = calloc(im.n, sizeof *cf->modules);
    if (!cf->modules) {
        fr_imatrix_free(&im);
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", cf->src->path);
    }
    cf->modules_cap = im.n;
    for (size_t i = 0; i < im.n; i++) { /* sorted by module already */
        struct calib_module *m = &cf->modules[cf->n_modules++];
        for (int p = 0; p < PART_COUNT; p++)
            m->tensor[p] = -1;
        m->name = im.entries[i].module;
        m->in = im.entries[i].in;
        m->owned_sq = im.entries[i].sq_mean;
        m->values_checked = 1; /* checked while reading */
        im.entries[i].module = NULL;
        im.entries[i].sq_mean = NULL;
        if (im.entries[i].n_mat > 1) {
            /* an expert stack's entry: per-expert statistics with each
             * expert's tokens (llama.cpp counts are float32 token counts;
             * a positive count never reads as 0 tokens) */
            m->n_experts = im.entries[i].n_mat;
            m->expert_tokens = calloc((size_t)m->n_experts, sizeof *m->expert_tokens);
            if (!m->expert_tokens) {
                fr_imatrix_free(&im);
                return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", cf->src->path);
            }
            for (int64_t e = 0; e < m->n_experts; e++) {
                double c = im.entries[i].counts[e];
                m->expert_tokens[e] = c <= 0 ? 0 : c < 1 ? 1 : c < 9e15 ? (int64_t)llround(c) : INT64_MAX;
            }
        }
    }
    fr_imatrix_free(&im);
    return FR_OK;
}

/* The checks and grouping of the file in src->files[0], by its content:
 * the safetensors layout, a GGUF importance matrix, a legacy .dat. */
static fr_status open_mapped(fr_calib_file *cf, fr_error *err)
{
    fr_source *src = cf->src;
    const char *path = src->path;
    const fr_mapped_file *f = &src->files[0];
    if (f->size >= 10 && fr_safetensors_sniff(f->base, f->size)) {
        /* the safetensors layout */
    } else {
        fr_imatrix_format format = fr_imatrix_sniff(f->base, f->size, path);
        if (format != FR_IMATRIX_NONE)
            return open_imatrix(cf, f, format, err);
        /* a GGUF or ONNX file would otherwise read as a lying header length */
        if (f->size >= 10)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "not a safetensors file nor a llama.cpp importance matrix "
                                  "(imatrix .gguf or .dat)",
                           path);
    }
    fr_status st = fr_safetensors_read(src, 0, err);
    if (st != FR_OK)
        return st;
    if ((st = read_token_count(cf, err)) != FR_OK || (st = build_modules(cf, err)) != FR_OK)
        return st;
    for (size_t i = 0; i < cf->n_modules; i++)
        if ((st = check_module_layout(cf, &cf->modules[i], err)) != FR_OK)
            return st;
    return read_expert_tokens(cf, err);
}

static fr_calib_file *new_calib(const char *path, fr_error *err)
{
    fr_calib_file *cf = calloc(1, sizeof *cf);
    fr_source *src = cf ? calloc(1, sizeof *src) : NULL;
    if (!src) {
        free(cf);
        fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        return NULL;
    }
    cf->src = src;
    src->kind = FR_SOURCE_SAFETENSORS;
    src->path = strdup(path);
    src->metadata = cJSON_CreateObject();
    if (!src->path || !src->metadata) {
        fr_calib_close(cf);
        fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", path);
        return NULL;
    }
    return cf;
}

/* ---- synthetic statistics ---- */

/* "synthetic" or "synthetic:SEED" (decimal), else 0. */
static int synthetic_spec(const char *path, uint64_t *seed)
{
    *seed = 1;
    if (!strcmp(path, "synthetic"))
        return 1;
    if (strncmp(path, "synthetic:", 10) != 0)
        return 0;
    const char *d = path + 10;
    if (!*d)
        return -1;
    uint64_t v = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*d - '0');
    }
    *seed = v;
    return 1;
}

/* Uniform (0, 1) from 32 random bits. */
static double unit_open(uint32_t bits)
{
    return ((double)bits + 0.5) / 4294967296.0;
}

/*
 * The statistics of width cols (docs/calibration.md, "Synthetic
 * statistics"): tokens whose features follow an AR(1) process of
 * correlation 0.9 along the input dimension, scaled per feature by
 * s_j = exp(0.5 z_j), times 8 for about 1% of the features (outlier
 * channels), have the expected second moments H_ij = s_i s_j 0.9^|i-j|
 * (a Kac-Murdock-Szego matrix, positive definite), act_sq_mean = diag H
 * and, for Gaussian features, act_abs_mean = s_j sqrt(2 / pi). z_j and the
 * outlier draw come from Philox4x32-10 at counter j, key seed. H in
 * float32, each element rounded once from double.
 */
static fr_status synth_width(fr_calib_file *cf, int64_t cols, struct calib_synth **out,
                             fr_error *err)
{
    for (size_t i = 0; i < cf->n_synth; i++)
        if (cf->synth[i].cols == cols) {
            *out = &cf->synth[i];
            return FR_OK;
        }
    if (cols <= 0 || cols > ((int64_t)1 << 17))
        return fr_fail(err, FR_E_USAGE, "synthetic statistics: %lld inputs is out of range "
                       "(1..131072)", (long long)cols);
    struct calib_synth *grown = realloc(cf->synth, (cf->n_synth + 1) * sizeof *grown);
    if (!grown)
        return fr_fail(err, FR_E_NOMEM, "out of memory for synthetic statistics");
    cf->synth = grown;
    struct calib_synth *w = &cf->synth[cf->n_synth];
    const size_t n = (size_t)cols;
    w->cols = cols;
    w->hessian = malloc(n * n * sizeof *w->hessian);
    w->abs_mean = malloc(n * sizeof *w->abs_mean);
    w->sq_mean = malloc(n * sizeof *w->sq_mean);
    double *sc = malloc(n * sizeof *sc), *pw = malloc(n * sizeof *pw);
    if (!w->hessian || !w->abs_mean || !w->sq_mean || !sc || !pw) {
        free(w->hessian);
        free(w->abs_mean);
        free(w->sq_mean);
        free(sc);
        free(pw);
        return fr_fail(err, FR_E_NOMEM, "out of memory for synthetic statistics of %lld inputs "
                       "(%.1f GB)", (long long)cols, (double)(n * n * 4) / 1e9);
    }
    const double two_pi = 6.283185307179586, abs_factor = 0.7978845608028654; /* sqrt(2/pi) */
    for (size_t j = 0; j < n; j++) {
        fr_philox_words r = fr_philox4x32_10((uint32_t)j, (uint32_t)((uint64_t)j >> 32), 0, 0,
                                             (uint32_t)cf->synth_seed,
                                             (uint32_t)(cf->synth_seed >> 32));
        double z = sqrt(-2.0 * log(unit_open(r.w[0]))) * cos(two_pi * unit_open(r.w[1]));
        sc[j] = exp(0.5 * z) * (unit_open(r.w[2]) < 0.01 ? 8.0 : 1.0);
    }
    pw[0] = 1.0;
    for (size_t d = 1; d < n; d++)
        pw[d] = pw[d - 1] * 0.9;
    for (size_t i = 0; i < n; i++) {
        float *row = w->hessian + i * n;
        for (size_t j = 0; j < n; j++)
            row[j] = (float)(sc[i] * sc[j] * pw[i > j ? i - j : j - i]);
        w->sq_mean[i] = row[i];
        w->abs_mean[i] = (float)(sc[i] * abs_factor);
    }
    free(sc);
    free(pw);
    cf->n_synth++;
    *out = w;
    return FR_OK;
}

fr_status fr_calib_open(const char *path, fr_calib_file **out, fr_error *err)
{
    size_t file;
    *out = NULL;
    uint64_t seed = 1;
    int syn = synthetic_spec(path, &seed);
    if (syn < 0)
        return fr_fail(err, FR_E_USAGE, "'%s': synthetic statistics are 'synthetic' or "
                       "'synthetic:SEED' (a decimal seed); a file of that name is './%s'",
                       path, path);
    fr_calib_file *cf = new_calib(path, err);
    if (!cf)
        return FR_E_NOMEM;
    if (syn) {
        cf->synthetic = 1;
        cf->synth_seed = seed;
        *out = cf;
        return FR_OK;
    }
    fr_status st = fr_source_add_file(cf->src, path, &file, err);
    if (st == FR_OK)
        st = open_mapped(cf, err);
    if (st != FR_OK) {
        fr_calib_close(cf);
        return st;
    }
    *out = cf;
    return FR_OK;
}

fr_status fr_calib_open_memory(const void *data, size_t size, const char *name,
                               fr_calib_file **out, fr_error *err)
{
    *out = NULL;
    fr_calib_file *cf = new_calib(name, err);
    if (!cf)
        return FR_E_NOMEM;
    fr_source *src = cf->src;
    fr_status st = FR_OK;
    src->files = calloc(1, sizeof *src->files);
    if (!src->files || !(src->files[0].path = strdup(name))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory opening '%s'", name);
    } else {
        src->n_files = 1;
        src->files[0].base = size ? data : NULL;
        src->files[0].size = size;
        src->files[0].borrowed = 1;
        if (size == 0)
            st = fr_fail(err, FR_E_FORMAT, "cannot read '%s': empty file", name);
        else
            st = open_mapped(cf, err);
    }
    if (st != FR_OK) {
        fr_calib_close(cf);
        return st;
    }
    *out = cf;
    return FR_OK;
}

static void free_copies(struct calib_module *m)
{
    for (int p = 0; p < PART_COUNT; p++) {
        free(m->copy[p]);
        m->copy[p] = NULL;
        free(m->fallback[p]);
        m->fallback[p] = NULL;
    }
}

void fr_calib_close(fr_calib_file *cf)
{
    if (!cf)
        return;
    /* build_modules may have failed half-way: names past n_modules too */
    size_t n = cf->modules ? cf->modules_cap : 0;
    for (size_t i = 0; i < n; i++) {
        free(cf->modules[i].name);
        if (i < cf->n_modules)
            free_copies(&cf->modules[i]);
        free(cf->modules[i].owned_sq);
        free(cf->modules[i].expert_tokens);
    }
    free(cf->modules);
    for (size_t i = 0; i < cf->n_synth; i++) {
        free(cf->synth[i].hessian);
        free(cf->synth[i].abs_mean);
        free(cf->synth[i].sq_mean);
    }
    free(cf->synth);
    fr_source_close(cf->src);
    free(cf);
}

const char *fr_calib_path(const fr_calib_file *cf)
{
    return cf->src->path;
}

int64_t fr_calib_token_count(const fr_calib_file *cf)
{
    return cf->token_count;
}

size_t fr_calib_module_count(const fr_calib_file *cf)
{
    return cf->n_modules;
}

int fr_calib_is_imatrix(const fr_calib_file *cf)
{
    return cf->imatrix;
}

int64_t fr_calib_module_in(const fr_calib_file *cf, const char *module)
{
    const struct calib_module *m = find_module(cf, module, strlen(module));
    return m ? m->in : -1;
}

/* ---- values ---- */

/* The float32 elements of a module's part: mapped when the file aligns
 * them (safetensors writers pad the header to 8 bytes), else a copy. */
static fr_status part_data(fr_calib_file *cf, struct calib_module *m, int p, const float **data,
                           fr_error *err)
{
    *data = NULL;
    if (p == PART_SQ_MEAN && m->owned_sq) {
        *data = m->owned_sq;
        return FR_OK;
    }
    if (m->tensor[p] < 0)
        return FR_OK;
    const fr_tensor *t = &cf->src->tensors[m->tensor[p]];
    const void *raw = fr_tensor_raw(cf->src, t);
    if (!raw)
        return fr_fail(err, FR_E_FAIL, PREFIX "module '%s': %s is not mapped", cf->src->path,
                       m->name, part_names[p]);
    if ((uintptr_t)raw % _Alignof(float) == 0) {
        *data = raw;
        return FR_OK;
    }
    if (!m->copy[p]) {
        m->copy[p] = malloc(t->nbytes ? t->nbytes : 1);
        if (!m->copy[p])
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", cf->src->path);
        memcpy(m->copy[p], raw, t->nbytes);
    }
    *data = m->copy[p];
    return FR_OK;
}

/* Index text of element k of a part: "[3]" or "[3, 5]". */
static const char *index_text(int64_t k, int64_t in, int matrix, char *buf, size_t len)
{
    if (matrix)
        snprintf(buf, len, "[%lld, %lld]", (long long)(k / in), (long long)(k % in));
    else
        snprintf(buf, len, "[%lld]", (long long)k);
    return buf;
}

/* The module named in a message: "module 'M'" or, for expert e of a
 * per-expert module, "module 'M': expert e". */
static const char *who(const struct calib_module *m, int64_t expert, char *buf, size_t len)
{
    if (expert < 0)
        snprintf(buf, len, "module '%s'", m->name);
    else
        snprintf(buf, len, "module '%s': expert %lld", m->name, (long long)expert);
    return buf;
}

/* Every element finite; vectors and the diagonal not negative (one
 * expert's slices, or the whole module: expert -1). */
static fr_status check_finite_signs(const fr_calib_file *cf, const struct calib_module *m,
                                    int64_t expert, const float *const data[PART_COUNT],
                                    fr_error *err)
{
    const char *path = cf->src->path;
    char at[64], name[FR_CALIB_REASON_MAX];
    who(m, expert, name, sizeof name);
    for (int p = 0; p < PART_COUNT; p++) {
        if (!data[p])
            continue;
        int64_t n = p == PART_HESSIAN ? m->in * m->in : p == PART_SENSITIVITY
                                                           ? cf->src->tensors[m->tensor[p]].numel
                                                           : m->in;
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(data[p][k]))
                return fr_fail(err, FR_E_FORMAT, PREFIX "%s: %s%s is %g", path, name, part_names[p],
                               index_text(k, m->in, p == PART_HESSIAN, at, sizeof at),
                               (double)data[p][k]);
    }
    if (data[PART_HESSIAN])
        for (int64_t j = 0; j < m->in; j++)
            if (data[PART_HESSIAN][j * m->in + j] < 0)
                return fr_fail(err, FR_E_FORMAT, PREFIX "%s: hessian[%lld, %lld] = %g is negative",
                               path, name, (long long)j, (long long)j,
                               (double)data[PART_HESSIAN][j * m->in + j]);
    for (int p = PART_ABS_MEAN; p <= PART_SQ_MEAN; p++) {
        if (!data[p])
            continue;
        for (int64_t j = 0; j < m->in; j++)
            if (data[p][j] < 0)
                return fr_fail(err, FR_E_FORMAT, PREFIX "%s: %s[%lld] = %g is negative", path, name,
                               part_names[p], (long long)j, (double)data[p][j]);
    }
    return FR_OK;
}

/* |H_ij - H_ji| <= FR_CALIB_SYMMETRY_TOL * max|H|, in tiles so both
 * triangles stay in cache. */
static fr_status check_symmetric(const fr_calib_file *cf, const struct calib_module *m,
                                 int64_t expert, const float *h, fr_error *err)
{
    const int64_t in = m->in, tile = 64;
    double max_abs = 0;
    for (int64_t k = 0; k < in * in; k++)
        max_abs = fmax(max_abs, fabs((double)h[k]));
    double tol = FR_CALIB_SYMMETRY_TOL * max_abs;
    char name[FR_CALIB_REASON_MAX];
    for (int64_t bi = 0; bi < in; bi += tile)
        for (int64_t bj = bi; bj < in; bj += tile)
            for (int64_t i = bi; i < bi + tile && i < in; i++)
                for (int64_t j = bj > i + 1 ? bj : i + 1; j < bj + tile && j < in; j++) {
                    double a = h[i * in + j], b = h[j * in + i];
                    if (fabs(a - b) > tol)
                        return fr_fail(err, FR_E_FORMAT,
                                       PREFIX "%s: hessian is not symmetric: [%lld, %lld] "
                                              "= %g, [%lld, %lld] = %g (tolerance %g x max|H| = %g)",
                                       cf->src->path, who(m, expert, name, sizeof name),
                                       (long long)i, (long long)j, a, (long long)j, (long long)i, b,
                                       FR_CALIB_SYMMETRY_TOL, tol);
                }
    return FR_OK;
}

/* act_sq_mean is diag(H) measured on the same tokens. */
static fr_status check_diagonal(const fr_calib_file *cf, const struct calib_module *m,
                                int64_t expert, const float *h, const float *sq, fr_error *err)
{
    const int64_t in = m->in;
    double max_diag = 0;
    char name[FR_CALIB_REASON_MAX];
    for (int64_t j = 0; j < in; j++)
        max_diag = fmax(max_diag, (double)h[j * in + j]);
    for (int64_t j = 0; j < in; j++) {
        double d = h[j * in + j], s = sq[j];
        double tol = FR_CALIB_DIAG_REL_TOL * fmax(d, s) + FR_CALIB_DIAG_ABS_TOL * max_diag;
        if (fabs(d - s) > tol)
            return fr_fail(err, FR_E_FORMAT,
                           PREFIX "%s: act_sq_mean[%lld] = %g differs from hessian[%lld, "
                                  "%lld] = %g (act_sq_mean is diag(H))",
                           cf->src->path, who(m, expert, name, sizeof name), (long long)j, s,
                           (long long)j, (long long)j, d);
    }
    return FR_OK;
}

/* The parts of expert e (e < 0: a module without an expert axis) of data. */
static void expert_slices(const struct calib_module *m, const float *const data[PART_COUNT],
                          int64_t e, const float *out[PART_COUNT])
{
    for (int p = 0; p < PART_COUNT; p++) {
        out[p] = data[p];
        if (!data[p] || e < 0 || p == PART_SENSITIVITY)
            continue;
        out[p] = data[p] + (size_t)e * (size_t)(p == PART_HESSIAN ? m->in * m->in : m->in);
    }
}

static fr_status check_module_values(fr_calib_file *cf, struct calib_module *m, fr_error *err)
{
    if (m->values_checked)
        return FR_OK;
    const float *data[PART_COUNT];
    fr_status st = FR_OK;
    for (int p = 0; p < PART_COUNT && st == FR_OK; p++)
        st = part_data(cf, m, p, &data[p], err);
    /* each expert of a per-expert module is checked as a module of its own */
    int64_t first = m->n_experts ? 0 : -1, last = m->n_experts ? m->n_experts - 1 : -1;
    for (int64_t e = first; e <= last && st == FR_OK; e++) {
        const float *x[PART_COUNT];
        expert_slices(m, data, e, x);
        if (e > 0)
            x[PART_SENSITIVITY] = NULL; /* the module's, checked with expert 0 */
        st = check_finite_signs(cf, m, e, x, err);
        if (st == FR_OK && x[PART_HESSIAN])
            st = check_symmetric(cf, m, e, x[PART_HESSIAN], err);
        if (st == FR_OK && x[PART_HESSIAN] && x[PART_SQ_MEAN])
            st = check_diagonal(cf, m, e, x[PART_HESSIAN], x[PART_SQ_MEAN], err);
    }
    m->values_checked = st == FR_OK;
    return st;
}

fr_status fr_calib_check_values(fr_calib_file *cf, fr_error *err)
{
    for (size_t i = 0; i < cf->n_modules; i++) {
        struct calib_module *m = &cf->modules[i];
        int was_checked = m->values_checked;
        fr_status st = check_module_values(cf, m, err);
        if (st != FR_OK)
            return st;
        if (!was_checked) {
            /* a whole-file check must not keep the whole file resident */
            for (int p = 0; p < PART_COUNT; p++)
                if (m->tensor[p] >= 0)
                    fr_tensor_release(cf->src, &cf->src->tensors[m->tensor[p]]);
            free_copies(m);
        }
    }
    return FR_OK;
}

/* ---- matching ---- */

const char *fr_calib_module_of(const char *weight_name, char *buf, size_t len)
{
    size_t n = strlen(weight_name), suffix = sizeof ".weight" - 1;
    if (n > suffix && !strcmp(weight_name + n - suffix, ".weight"))
        n -= suffix;
    if (n + 1 > len)
        return NULL;
    memcpy(buf, weight_name, n);
    buf[n] = '\0';
    return buf;
}

/* convert_hf_to_gguf.py's names of the Llama layout (gguf-py
 * tensor_mapping.py, MODEL_ARCH.LLAMA; the same table as
 * frontier/analysis/allocate_output.c), for the weights an importance
 * matrix has statistics of. */
static const struct {
    const char *hf, *gguf;
} gguf_names[] = {
    {"self_attn.q_proj", "attn_q"},     {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},     {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},      {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

/* The GGUF module name of a Hugging Face Llama-layout module name
 * (name[0..n)) into buf: model.layers.3.self_attn.q_proj -> blk.3.attn_q,
 * lm_head -> output, model.embed_tokens -> token_embd; 0 when none. */
static int gguf_module_name(const char *name, size_t n, char *buf, size_t len)
{
    static const char layers[] = "model.layers.";
    const size_t k = sizeof layers - 1;
    if (n == 7 && !memcmp(name, "lm_head", 7))
        return snprintf(buf, len, "output") < (int)len;
    if (n == 18 && !memcmp(name, "model.embed_tokens", 18))
        return snprintf(buf, len, "token_embd") < (int)len;
    if (n <= k || memcmp(name, layers, k))
        return 0;
    size_t d = k;
    while (d < n && d - k < 9 && name[d] >= '0' && name[d] <= '9')
        d++;
    if (d == k || d >= n || name[d] != '.')
        return 0;
    const char *rest = name + d + 1;
    size_t rest_len = n - d - 1;
    for (size_t i = 0; i < sizeof gguf_names / sizeof gguf_names[0]; i++)
        if (strlen(gguf_names[i].hf) == rest_len && !memcmp(rest, gguf_names[i].hf, rest_len))
            return snprintf(buf, len, "blk.%.*s.%s", (int)(d - k), name + k, gguf_names[i].gguf) <
                   (int)len;
    return 0;
}

/* The module a weight's statistics are stored under: its own name, else,
 * for q_proj, k_proj and v_proj, one of its block's three (docs/calibration.md,
 * "Matching weights to statistics": they see the same input), else, for an importance
 * matrix with GGUF names, the GGUF name of a Hugging Face Llama name. */
static struct calib_module *resolve(const fr_calib_file *cf, const char *weight_name)
{
    size_t n = strlen(weight_name), suffix = sizeof ".weight" - 1;
    if (n > suffix && !strcmp(weight_name + n - suffix, ".weight"))
        n -= suffix;
    struct calib_module *m = find_module(cf, weight_name, n);
    if (m)
        return m;
    char gguf[128];
    if (cf->imatrix && gguf_module_name(weight_name, n, gguf, sizeof gguf) &&
        (m = find_module(cf, gguf, strlen(gguf))))
        return m;
    static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"};
    const size_t k = 6; /* strlen of each */
    if (n < k || (n > k && weight_name[n - k - 1] != '.'))
        return NULL;
    int is_qkv = 0;
    for (int i = 0; i < 3; i++)
        is_qkv |= !strncmp(weight_name + n - k, qkv[i], k);
    if (!is_qkv)
        return NULL;
    char *name = strndup(weight_name, n);
    if (!name)
        return NULL;
    for (int i = 0; i < 3 && !m; i++) {
        memcpy(name + n - k, qkv[i], k);
        m = find_module(cf, name, n);
    }
    free(name);
    return m;
}

/* A legacy .dat keeps an expert stack's vectors as one entry of
 * n_experts x in values with one call count for all (llama.cpp's
 * save_imatrix_legacy, which stores an expert that received no token as
 * all ones). The first per-expert lookup of the stack splits the module
 * into n_experts experts of in / n_experts columns: each counts as 1
 * token (the file records none, so the fallback weighs the experts with
 * tokens equally) or as 0 when every value of its vector is 1. */
static fr_status split_dat_stack(fr_calib_file *cf, struct calib_module *m, int64_t n_experts,
                                 fr_error *err)
{
    int64_t in = m->in / n_experts;
    int64_t *tokens = calloc((size_t)n_experts, sizeof *tokens);
    if (!tokens)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", cf->src->path);
    for (int64_t e = 0; e < n_experts; e++) {
        const float *v = m->owned_sq + (size_t)e * (size_t)in;
        int64_t j = 0;
        while (j < in && v[j] == 1.0f)
            j++;
        tokens[e] = j < in;
    }
    m->expert_tokens = tokens;
    m->n_experts = n_experts;
    m->in = in;
    return FR_OK;
}

/* The token-weighted mean over the experts of m that had tokens, of each
 * part (the rule for an expert that received none,
 * docs/calibration.md): sum_e n_e X_e / sum_e n_e in double, stored float. */
static fr_status make_fallback(fr_calib_file *cf, struct calib_module *m,
                               const float *const data[PART_COUNT], fr_error *err)
{
    double total = 0;
    for (int64_t e = 0; e < m->n_experts; e++)
        total += (double)m->expert_tokens[e];
    for (int p = PART_HESSIAN; p <= PART_SQ_MEAN; p++) {
        if (!data[p] || m->fallback[p])
            continue;
        size_t n = (size_t)(p == PART_HESSIAN ? m->in * m->in : m->in);
        float *fb = malloc(n * sizeof *fb);
        if (!fb)
            return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", cf->src->path);
        for (size_t k = 0; k < n; k++) {
            double sum = 0;
            for (int64_t e = 0; e < m->n_experts; e++)
                if (m->expert_tokens[e] > 0)
                    sum += (double)m->expert_tokens[e] * (double)data[p][(size_t)e * n + k];
            fb[k] = (float)(sum / total);
        }
        m->fallback[p] = fb;
    }
    return FR_OK;
}

/* fr_calib_lookup (expert < 0) and fr_calib_lookup_expert. */
static fr_status lookup(fr_calib_file *cf, const char *weight_name, int64_t cols, int64_t expert,
                        int64_t n_experts, fr_calib_stats *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->calib.cols = cols;
    out->expert = expert;
    out->expert_tokens = -1;
    if (cf->synthetic) {
        /* every weight (every expert) gets the statistics of its width */
        (void)n_experts;
        struct calib_synth *w = NULL;
        fr_status sst = synth_width(cf, cols, &w, err);
        if (sst != FR_OK)
            return sst;
        out->found = 1;
        out->calib.hessian = w->hessian;
        out->calib.act_mean_abs = w->abs_mean;
        out->calib.act_mean_sq = w->sq_mean;
        return FR_OK;
    }
    struct calib_module *m = resolve(cf, weight_name);
    size_t n = strlen(weight_name), suffix = sizeof ".weight" - 1;
    if (n > suffix && !strcmp(weight_name + n - suffix, ".weight"))
        n -= suffix;
    if (!m) {
        snprintf(out->skip_reason, sizeof out->skip_reason, "no statistics for '%.*s'", (int)n,
                 weight_name);
        return FR_OK;
    }
    out->module = m->name;
    fr_status st = check_module_values(cf, m, err);
    if (st != FR_OK)
        return st;
    const float *data[PART_COUNT];
    for (int p = 0; p < PART_COUNT; p++) {
        st = part_data(cf, m, p, &data[p], err);
        if (st != FR_OK)
            return st;
    }
    if (data[PART_SENSITIVITY]) {
        out->n_sensitivity = (int)cf->src->tensors[m->tensor[PART_SENSITIVITY]].numel;
        memcpy(out->sensitivity, data[PART_SENSITIVITY],
               (size_t)out->n_sensitivity * sizeof out->sensitivity[0]);
    }
    if (m->in == 0) {
        snprintf(out->skip_reason, sizeof out->skip_reason,
                 "'%s' has only a sensitivity, no input statistics", m->name);
        return FR_OK;
    }
    if (expert >= 0 && m->n_experts == 0 && cf->imatrix == FR_IMATRIX_DAT && cols > 0 &&
        n_experts > 0 && m->in % cols == 0 && m->in / cols == n_experts &&
        (st = split_dat_stack(cf, m, n_experts, err)) != FR_OK)
        return st;
    int pfirst = m->tensor[PART_HESSIAN] >= 0 ? PART_HESSIAN
                 : m->tensor[PART_ABS_MEAN] >= 0 ? PART_ABS_MEAN
                                                 : PART_SQ_MEAN;
    char shape[256];
    if (m->owned_sq) {
        const int64_t dims[2] = {m->n_experts, m->in};
        fr_shape_text(m->n_experts ? dims : &m->in, m->n_experts ? 2 : 1, shape, sizeof shape);
    } else {
        const fr_tensor *t = &cf->src->tensors[m->tensor[pfirst]];
        fr_shape_text(t->shape, t->ndim, shape, sizeof shape);
    }
    /* an expert axis on one side only, or two expert counts */
    if (expert < 0 && m->n_experts > 0) {
        snprintf(out->skip_reason, sizeof out->skip_reason,
                 "%s of '%s' is %s: per-expert statistics, for a tensor handled expert by expert; "
                 "'%.*s' is handled here as one matrix",
                 part_names[pfirst], m->name, shape, (int)n, weight_name);
        return FR_OK;
    }
    if (expert >= 0 && m->n_experts == 0)
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "module '%s': %s is %s, without an expert axis: the expert stack "
                              "'%.*s' of %lld experts needs per-expert statistics (%s [E, in%s])",
                       cf->src->path, m->name, part_names[pfirst], shape, (int)n, weight_name,
                       (long long)n_experts, part_names[pfirst],
                       pfirst == PART_HESSIAN ? ", in" : "");
    if (expert >= 0 && m->n_experts != n_experts)
        return fr_fail(err, FR_E_FORMAT,
                       PREFIX "module '%s': %s is %s, statistics of %lld experts; the tensor "
                              "'%.*s' has %lld experts",
                       cf->src->path, m->name, part_names[pfirst], shape, (long long)m->n_experts,
                       (int)n, weight_name, (long long)n_experts);
    if (m->in != cols) {
        snprintf(out->skip_reason, sizeof out->skip_reason,
                 "%s of '%s' is %s, the weight has %lld input columns", part_names[pfirst], m->name,
                 shape, (long long)cols);
        return FR_OK;
    }
    const float *x[PART_COUNT];
    expert_slices(m, data, expert, x);
    if (expert >= 0) {
        out->expert_tokens = m->expert_tokens[expert];
        if (cf->imatrix == FR_IMATRIX_DAT && out->expert_tokens > 0)
            out->expert_tokens = -1; /* had tokens; a .dat does not say how many */
        if (out->expert_tokens == 0) {
            int64_t with_tokens = 0;
            for (int64_t e = 0; e < m->n_experts; e++)
                with_tokens += m->expert_tokens[e] > 0;
            if (with_tokens == 0) {
                snprintf(out->skip_reason, sizeof out->skip_reason,
                         "no expert of '%s' received a token (%s)", m->name,
                         cf->imatrix == FR_IMATRIX_DAT ? "a legacy .dat: every expert's values "
                                                         "are all 1"
                                                       : "expert_token_counts all 0");
                return FR_OK;
            }
            if ((st = make_fallback(cf, m, data, err)) != FR_OK)
                return st;
            for (int p = PART_HESSIAN; p <= PART_SQ_MEAN; p++)
                x[p] = data[p] ? m->fallback[p] : NULL;
            out->fallback = 1;
        }
    }
    out->found = 1;
    out->calib.hessian = x[PART_HESSIAN];
    out->calib.act_mean_abs = x[PART_ABS_MEAN];
    out->calib.act_mean_sq = x[PART_SQ_MEAN];
    return FR_OK;
}

fr_status fr_calib_lookup(fr_calib_file *cf, const char *weight_name, int64_t cols,
                          fr_calib_stats *out, fr_error *err)
{
    return lookup(cf, weight_name, cols, -1, 0, out, err);
}

fr_status fr_calib_lookup_expert(fr_calib_file *cf, const char *weight_name, int64_t cols,
                                 int64_t expert, int64_t n_experts, fr_calib_stats *out,
                                 fr_error *err)
{
    if (expert < 0 || expert >= n_experts)
        return fr_fail(err, FR_E_USAGE, "expert %lld of '%s' is not in 0..%lld", (long long)expert,
                       weight_name, (long long)n_experts - 1);
    return lookup(cf, weight_name, cols, expert, n_experts, out, err);
}

int64_t fr_calib_module_experts(const fr_calib_file *cf, const char *module)
{
    const struct calib_module *m = find_module(cf, module, strlen(module));
    return m ? m->n_experts : -1;
}

void fr_calib_release(fr_calib_file *cf, const fr_calib_stats *stats)
{
    if (!stats->module)
        return;
    struct calib_module *m = find_module(cf, stats->module, strlen(stats->module));
    if (!m)
        return;
    for (int p = 0; p < PART_COUNT; p++)
        if (m->tensor[p] >= 0)
            fr_tensor_release(cf->src, &cf->src->tensors[m->tensor[p]]);
    free_copies(m);
}

fr_status fr_calib_unmatched(const fr_calib_file *cf, const char *const *weight_names,
                             size_t n_weights, const char ***names, size_t *n_names, fr_error *err)
{
    *names = NULL;
    *n_names = 0;
    if (cf->n_modules == 0)
        return FR_OK;
    unsigned char *matched = calloc(cf->n_modules, 1);
    if (!matched)
        return fr_fail(err, FR_E_NOMEM, "out of memory matching '%s'", cf->src->path);
    for (size_t i = 0; i < n_weights; i++) {
        const struct calib_module *m = resolve(cf, weight_names[i]);
        if (m)
            matched[m - cf->modules] = 1;
    }
    size_t count = 0;
    for (size_t i = 0; i < cf->n_modules; i++)
        count += !matched[i];
    if (count) {
        *names = malloc(count * sizeof **names);
        if (!*names) {
            free(matched);
            return fr_fail(err, FR_E_NOMEM, "out of memory matching '%s'", cf->src->path);
        }
        for (size_t i = 0; i < cf->n_modules; i++)
            if (!matched[i])
                (*names)[(*n_names)++] = cf->modules[i].name;
    }
    free(matched);
    return FR_OK;
}
