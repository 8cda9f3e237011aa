/* Joining frontier datasets (frontier/merge.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/call.h"
#include "frontier/merge.h"

#define METRIC_TOLERANCE 1e-12

int fr_metric_agrees(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= METRIC_TOLERANCE * scale;
}

/* ---- a small open-addressing hash map: 64-bit key hash -> index ---- */

typedef struct hmap {
    size_t cap; /* power of two */
    uint64_t *hash;
    size_t *value; /* index + 1; 0 = empty */
} hmap;

static int hmap_init(hmap *m, size_t expected)
{
    m->cap = 64;
    while (m->cap < expected * 2 + 2)
        m->cap *= 2;
    m->hash = calloc(m->cap, sizeof *m->hash);
    m->value = calloc(m->cap, sizeof *m->value);
    return m->hash && m->value ? 0 : -1;
}

static void hmap_free(hmap *m)
{
    free(m->hash);
    free(m->value);
}

/* Walks the slots of hash h; `same(ctx, index)` confirms a candidate.
 * Returns the index, or -1 and *slot = the empty slot to insert into. */
static long hmap_find(const hmap *m, uint64_t h, int (*same)(const void *, size_t), const void *ctx,
                      size_t *slot)
{
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->value[i]) {
            *slot = i;
            return -1;
        }
        if (m->hash[i] == h && same(ctx, m->value[i] - 1))
            return (long)(m->value[i] - 1);
    }
}

static void hmap_put(hmap *m, size_t slot, uint64_t h, size_t index)
{
    m->hash[slot] = h;
    m->value[slot] = index + 1;
}

/* ---- identities ---- */

static int same_source(const fr_ds_source *a, const fr_ds_source *b)
{
    if (strcmp(a->kind, b->kind) != 0)
        return 0;
    if (!strcmp(a->kind, "synthetic"))
        return !strcmp(a->path, b->path);
    if (a->sha256[0] && b->sha256[0])
        return !strcmp(a->sha256, b->sha256) && a->size == b->size;
    return !strcmp(a->path, b->path) && a->size == b->size && a->mtime == b->mtime;
}

typedef struct tensor_key {
    const fr_dataset *out;
    uint32_t source_id;
    const char *name;
} tensor_key;

static int same_tensor(const void *ctx, size_t index)
{
    const tensor_key *k = ctx;
    const fr_ds_tensor *t = &k->out->tensors[index];
    return t->source_id == k->source_id && !strcmp(t->name, k->name);
}

typedef struct config_key {
    const fr_dataset *out;
    const char *name;
} config_key;

static int same_config(const void *ctx, size_t index)
{
    const config_key *k = ctx;
    return !strcmp(k->out->configs[index].name, k->name);
}

typedef struct result_key {
    const fr_dataset *out;
    uint32_t tensor_id, config_id;
} result_key;

static int same_result(const void *ctx, size_t index)
{
    const result_key *k = ctx;
    const fr_ds_result *r = &k->out->results[index];
    return r->tensor_id == k->tensor_id && r->config_id == k->config_id;
}

typedef struct skipped_key {
    const fr_dataset *out;
    const fr_ds_skipped *row;
} skipped_key;

static int same_skipped(const void *ctx, size_t index)
{
    const skipped_key *k = ctx;
    const fr_ds_skipped *s = &k->out->skipped[index];
    return s->source_id == k->row->source_id && !strcmp(s->name, k->row->name) &&
           !strcmp(s->config, k->row->config);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The first metric of two rows that disagree, or NULL. */
static const char *row_disagreement(const fr_ds_result *a, const fr_ds_result *b, double *va,
                                    double *vb)
{
#define CMP(field)                                         \
    if (!fr_metric_agrees(a->field, b->field)) {           \
        *va = a->field;                                    \
        *vb = b->field;                                    \
        return #field;                                     \
    }
    if (a->total_bits != b->total_bits) {
        *va = (double)a->total_bits;
        *vb = (double)b->total_bits;
        return "total_bits";
    }
    CMP(bits_per_weight)
    CMP(rel_err)
    CMP(sqnr_db)
    CMP(max_abs_err)
    CMP(cosine)
    CMP(out_rel_err)
    CMP(sq_err)
    CMP(out_sq_err)
    CMP(out_sq_ref)
#undef CMP
    return NULL;
}

static fr_status append_devices(fr_dataset *out, const char *devices, fr_error *err)
{
    if (!devices || !devices[0])
        return FR_OK;
    /* each input's devices may already be a "; "-joined list: add the parts
     * not present yet */
    char *copy = strdup(devices);
    if (!copy)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fr_status st = FR_OK;
    for (char *save = NULL, *part = strtok_r(copy, ";", &save); part;
         part = strtok_r(NULL, ";", &save)) {
        while (*part == ' ')
            part++;
        if (!*part || (out->devices && strstr(out->devices, part)))
            continue;
        size_t len = (out->devices ? strlen(out->devices) : 0) + strlen(part) + 3;
        char *joined = malloc(len);
        if (!joined) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
            break;
        }
        snprintf(joined, len, "%s%s%s", out->devices ? out->devices : "",
                 out->devices && out->devices[0] ? "; " : "", part);
        free(out->devices);
        out->devices = joined;
    }
    free(copy);
    return st;
}

fr_status fr_dataset_merge(const fr_dataset *in, const char *const *names, size_t n,
                           fr_dataset *out, fr_merge_stats *stats, fr_error *err)
{
    fr_status st = FR_OK;
    hmap tensors = {0}, configs = {0}, results = {0}, skipped = {0};
    uint32_t *source_map = NULL, *tensor_map = NULL, *config_map = NULL;
    size_t total_tensors = 0, total_configs = 0, total_results = 0, total_skipped = 0;
    size_t max_sources = 0, max_tensors = 0, max_configs = 0;
    const char **tensor_from = NULL; /* input name where each out tensor came from */
    const char **config_from = NULL;
    const char **result_from = NULL;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);

    for (size_t i = 0; i < n; i++) {
        total_tensors += in[i].n_tensors;
        total_configs += in[i].n_configs;
        total_results += in[i].n_results;
        total_skipped += in[i].n_skipped;
        if (in[i].n_sources > max_sources)
            max_sources = in[i].n_sources;
        if (in[i].n_tensors > max_tensors)
            max_tensors = in[i].n_tensors;
        if (in[i].n_configs > max_configs)
            max_configs = in[i].n_configs;
    }
    source_map = calloc(max_sources + 1, sizeof *source_map);
    tensor_map = calloc(max_tensors + 1, sizeof *tensor_map);
    config_map = calloc(max_configs + 1, sizeof *config_map);
    tensor_from = calloc(total_tensors + 1, sizeof *tensor_from);
    config_from = calloc(total_configs + 1, sizeof *config_from);
    result_from = calloc(total_results + 1, sizeof *result_from);
    if (!source_map || !tensor_map || !config_map || !tensor_from || !config_from || !result_from ||
        hmap_init(&tensors, total_tensors) || hmap_init(&configs, total_configs) ||
        hmap_init(&results, total_results) || hmap_init(&skipped, total_skipped))
        goto nomem;

    char created[32], host[256] = "";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    out->schema_version = FR_SCHEMA_VERSION;
    if ((st = fr_dataset_set_string(&out->format, "frontier", err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->tool_version, FRONTIER_VERSION, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->created, created, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->host, host, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->devices, "", err)) != FR_OK)
        goto done;

    for (size_t i = 0; i < n; i++) {
        const fr_dataset *d = &in[i];
        if ((st = append_devices(out, d->devices, err)) != FR_OK)
            goto done;
        /* sources */
        for (size_t s = 0; s < d->n_sources; s++) {
            const fr_ds_source *src = &d->sources[s];
            size_t k = 0;
            while (k < out->n_sources && !same_source(&out->sources[k], src))
                k++;
            if (k == out->n_sources) {
                fr_ds_source row = *src;
                row.source_id = (uint32_t)k;
                if ((st = fr_dataset_add_source(out, &row, err)) != FR_OK)
                    goto done;
            }
            source_map[s] = (uint32_t)k;
        }
        /* configurations */
        for (size_t c = 0; c < d->n_configs; c++) {
            const fr_ds_config *cfg = &d->configs[c];
            config_key key = {out, cfg->name};
            uint64_t h = fr_hash64(cfg->name, 0);
            size_t slot = 0;
            long at = hmap_find(&configs, h, same_config, &key, &slot);
            if (at >= 0) {
                const fr_ds_config *o = &out->configs[at];
                if (strcmp(o->family, cfg->family) || strcmp(o->origin, cfg->origin) ||
                    strcmp(o->params, cfg->params) || o->nominal_bits != cfg->nominal_bits) {
                    st = fr_fail(err, FR_E_MISMATCH,
                                 "configuration '%s' differs between '%s' (%s from '%s', %s) and "
                                 "'%s' (%s from '%s', %s)",
                                 cfg->name, config_from[at], o->family, o->origin, o->params,
                                 names[i], cfg->family, cfg->origin, cfg->params);
                    goto done;
                }
            } else {
                fr_ds_config row = *cfg;
                row.config_id = (uint32_t)out->n_configs;
                if ((st = fr_dataset_add_config(out, &row, err)) != FR_OK)
                    goto done;
                at = (long)out->n_configs - 1;
                config_from[at] = names[i];
                hmap_put(&configs, slot, h, (size_t)at);
            }
            config_map[c] = out->configs[at].config_id;
        }
        /* tensors */
        for (size_t t = 0; t < d->n_tensors; t++) {
            const fr_ds_tensor *ten = &d->tensors[t];
            size_t s = 0;
            while (s < d->n_sources && d->sources[s].source_id != ten->source_id)
                s++;
            if (s == d->n_sources) {
                st = fr_fail(err, FR_E_FORMAT, "'%s': tensor '%s' has no source", names[i], ten->name);
                goto done;
            }
            tensor_key key = {out, source_map[s], ten->name};
            uint64_t h = mix(fr_hash64(ten->name, 0), source_map[s]);
            size_t slot = 0;
            long at = hmap_find(&tensors, h, same_tensor, &key, &slot);
            if (at >= 0) {
                fr_ds_tensor *o = &out->tensors[at];
                if (strcmp(o->shape, ten->shape) || strcmp(o->dtype, ten->dtype) ||
                    o->numel != ten->numel) {
                    st = fr_fail(err, FR_E_MISMATCH,
                                 "tensor '%s' is %s %s in '%s' but %s %s in '%s'", ten->name,
                                 o->dtype, o->shape, tensor_from[at], ten->dtype, ten->shape,
                                 names[i]);
                    goto done;
                }
                if (isnan(o->sq_norm)) {
                    o->sq_norm = ten->sq_norm;
                } else if (!isnan(ten->sq_norm) && !fr_metric_agrees(o->sq_norm, ten->sq_norm)) {
                    st = fr_fail(err, FR_E_MISMATCH,
                                 "tensor '%s' has sq_norm %.17g in '%s' but %.17g in '%s'",
                                 ten->name, o->sq_norm, tensor_from[at], ten->sq_norm, names[i]);
                    goto done;
                }
            } else {
                fr_ds_tensor row = *ten;
                row.tensor_id = (uint32_t)out->n_tensors;
                row.source_id = source_map[s];
                if ((st = fr_dataset_add_tensor(out, &row, err)) != FR_OK)
                    goto done;
                at = (long)out->n_tensors - 1;
                tensor_from[at] = names[i];
                hmap_put(&tensors, slot, h, (size_t)at);
            }
            tensor_map[t] = out->tensors[at].tensor_id;
        }
        /* results: the maps above are by row position; look ids up */
        for (size_t r = 0; r < d->n_results; r++) {
            const fr_ds_result *row = &d->results[r];
            const fr_ds_tensor *t = fr_dataset_tensor(d, row->tensor_id);
            const fr_ds_config *c = fr_dataset_config(d, row->config_id);
            if (!t || !c) {
                st = fr_fail(err, FR_E_FORMAT, "'%s': /results row %zu has unknown ids", names[i], r);
                goto done;
            }
            fr_ds_result mapped = *row;
            mapped.tensor_id = tensor_map[t - d->tensors];
            mapped.config_id = config_map[c - d->configs];
            result_key key = {out, mapped.tensor_id, mapped.config_id};
            uint64_t h = mix(mix(0, mapped.tensor_id), mapped.config_id);
            size_t slot = 0;
            long at = hmap_find(&results, h, same_result, &key, &slot);
            if (at >= 0) {
                double va = 0, vb = 0;
                const char *field = row_disagreement(&out->results[at], &mapped, &va, &vb);
                if (field) {
                    st = fr_fail(err, FR_E_MISMATCH,
                                 "'%s' on '%s' disagrees: %s is %.17g in '%s' but %.17g in '%s'",
                                 c->name, t->name, field, va, result_from[at], vb, names[i]);
                    goto done;
                }
                if (stats)
                    stats->n_duplicate_rows++;
                continue;
            }
            if ((st = fr_dataset_add_result(out, &mapped, err)) != FR_OK)
                goto done;
            result_from[out->n_results - 1] = names[i];
            hmap_put(&results, slot, h, out->n_results - 1);
        }
    }
    /* skipped rows, deduplicated; a failure of a (tensor, configuration)
     * that another input measured is dropped */
    for (size_t i = 0; i < n; i++) {
        const fr_dataset *d = &in[i];
        for (size_t s = 0; s < d->n_sources; s++) {
            size_t k = 0;
            while (k < out->n_sources && !same_source(&out->sources[k], &d->sources[s]))
                k++;
            source_map[s] = (uint32_t)k;
        }
        for (size_t k = 0; k < d->n_skipped; k++) {
            fr_ds_skipped row = d->skipped[k];
            size_t s = 0;
            while (s < d->n_sources && d->sources[s].source_id != row.source_id)
                s++;
            if (s == d->n_sources)
                continue;
            row.source_id = source_map[s];
            if (row.config[0]) {
                tensor_key tk = {out, row.source_id, row.name};
                size_t slot = 0;
                long t = hmap_find(&tensors, mix(fr_hash64(row.name, 0), row.source_id),
                                   same_tensor, &tk, &slot);
                config_key ck = {out, row.config};
                long c = hmap_find(&configs, fr_hash64(row.config, 0), same_config, &ck, &slot);
                if (t >= 0 && c >= 0) {
                    result_key rk = {out, out->tensors[t].tensor_id, out->configs[c].config_id};
                    uint64_t h = mix(mix(0, rk.tensor_id), rk.config_id);
                    if (hmap_find(&results, h, same_result, &rk, &slot) >= 0)
                        continue;
                }
            }
            skipped_key key = {out, &row};
            uint64_t h = mix(mix(fr_hash64(row.name, 0), row.source_id), fr_hash64(row.config, 0));
            size_t slot = 0;
            if (hmap_find(&skipped, h, same_skipped, &key, &slot) >= 0)
                continue;
            if ((st = fr_dataset_add_skipped(out, &row, err)) != FR_OK)
                goto done;
            hmap_put(&skipped, slot, h, out->n_skipped - 1);
        }
    }
    fr_dataset_sort(out);
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    hmap_free(&tensors);
    hmap_free(&configs);
    hmap_free(&results);
    hmap_free(&skipped);
    free(source_map);
    free(tensor_map);
    free(config_map);
    free(tensor_from);
    free(config_from);
    free(result_from);
    if (st != FR_OK)
        fr_dataset_free(out);
    return st;
}
