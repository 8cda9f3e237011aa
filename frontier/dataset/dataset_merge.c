/* Joining frontier datasets (frontier/dataset/dataset_merge.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/call.h"
#include "frontier/dataset/dataset_merge.h"
#include "frontier/dataset/source_identity.h"

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

typedef struct expert_key {
    const fr_dataset *out;
    uint32_t tensor_id, config_id, expert;
} expert_key;

static int same_expert_result(const void *ctx, size_t index)
{
    const expert_key *k = ctx;
    const fr_ds_expert_result *r = &k->out->expert_results[index];
    return r->row.tensor_id == k->tensor_id && r->row.config_id == k->config_id &&
           r->expert == k->expert;
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
    /* numeric flags: 0 is "not examined" (an older file, or an executor
     * that does not report them), which any examined value completes */
    if (a->flags && b->flags && a->flags != b->flags) {
        *va = (double)a->flags;
        *vb = (double)b->flags;
        return "flags";
    }
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

/* A merge in progress: the output, maps from the rows of the input being
 * merged to output ids, and hash maps from identities to output rows. */
typedef struct merge {
    fr_dataset *out;
    fr_merge_stats *stats;
    hmap tensors, configs, results, skipped, experts;
    uint32_t *source_map, *tensor_map, *config_map; /* by row of the input: the out id */
    const char **tensor_from; /* input name where each out tensor came from */
    const char **config_from;
    const char **result_from;
} merge;

/* Tables sized for the largest input (maps) and for all inputs together
 * (rows). Returns 0 when out of memory; merge_free frees what there is. */
static int merge_init(merge *m, const fr_dataset *in, size_t n)
{
    size_t total_tensors = 0, total_configs = 0, total_results = 0, total_skipped = 0;
    size_t total_experts = 0;
    size_t max_sources = 0, max_tensors = 0, max_configs = 0;
    for (size_t i = 0; i < n; i++) {
        total_tensors += in[i].n_tensors;
        total_configs += in[i].n_configs;
        total_results += in[i].n_results;
        total_skipped += in[i].n_skipped;
        total_experts += in[i].n_expert_results;
        if (in[i].n_sources > max_sources)
            max_sources = in[i].n_sources;
        if (in[i].n_tensors > max_tensors)
            max_tensors = in[i].n_tensors;
        if (in[i].n_configs > max_configs)
            max_configs = in[i].n_configs;
    }
    m->source_map = calloc(max_sources + 1, sizeof *m->source_map);
    m->tensor_map = calloc(max_tensors + 1, sizeof *m->tensor_map);
    m->config_map = calloc(max_configs + 1, sizeof *m->config_map);
    m->tensor_from = calloc(total_tensors + 1, sizeof *m->tensor_from);
    m->config_from = calloc(total_configs + 1, sizeof *m->config_from);
    m->result_from = calloc(total_results + 1, sizeof *m->result_from);
    return m->source_map && m->tensor_map && m->config_map && m->tensor_from && m->config_from &&
           m->result_from && !hmap_init(&m->tensors, total_tensors) &&
           !hmap_init(&m->configs, total_configs) && !hmap_init(&m->results, total_results) &&
           !hmap_init(&m->skipped, total_skipped) && !hmap_init(&m->experts, total_experts);
}

static void merge_free(merge *m)
{
    hmap_free(&m->tensors);
    hmap_free(&m->configs);
    hmap_free(&m->results);
    hmap_free(&m->skipped);
    hmap_free(&m->experts);
    free(m->source_map);
    free(m->tensor_map);
    free(m->config_map);
    free(m->tensor_from);
    free(m->config_from);
    free(m->result_from);
}

/* The root attributes of a dataset made here and now. */
static fr_status merge_root(fr_dataset *out, fr_error *err)
{
    char created[32], host[256] = "";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    out->schema_version = FR_SCHEMA_VERSION;
    fr_status st;
    if ((st = fr_dataset_set_string(&out->format, "frontier", err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->tool_version, FRONTIER_VERSION, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->created, created, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->host, host, err)) != FR_OK ||
        (st = fr_dataset_set_string(&out->devices, "", err)) != FR_OK)
        return st;
    return FR_OK;
}

/* The out source identical to src, out->n_sources when there is none. */
static size_t find_source(const fr_dataset *out, const fr_ds_source *src)
{
    size_t k = 0;
    while (k < out->n_sources && !fr_source_identity_same(&out->sources[k], src, 1))
        k++;
    return k;
}

/* The row of d's source with that id, d->n_sources when there is none. */
static size_t source_row(const fr_dataset *d, uint32_t source_id)
{
    size_t s = 0;
    while (s < d->n_sources && d->sources[s].source_id != source_id)
        s++;
    return s;
}

/* Afterwards every source of d is in out (a new one added) and
 * source_map[row] is its out id. */
static fr_status merge_sources(merge *m, const fr_dataset *d, fr_error *err)
{
    fr_status st;
    for (size_t s = 0; s < d->n_sources; s++) {
        const fr_ds_source *src = &d->sources[s];
        size_t k = find_source(m->out, src);
        if (k == m->out->n_sources) {
            fr_ds_source row = *src;
            row.source_id = (uint32_t)k;
            if ((st = fr_dataset_add_source(m->out, &row, err)) != FR_OK)
                return st;
        }
        m->source_map[s] = (uint32_t)k;
    }
    return FR_OK;
}

/* Afterwards every configuration of d is in out and config_map[row] is
 * its out id; one of the same name that differs fails with FR_E_MISMATCH. */
static fr_status merge_configs(merge *m, const fr_dataset *d, const char *name, fr_error *err)
{
    fr_status st;
    fr_dataset *out = m->out;
    for (size_t c = 0; c < d->n_configs; c++) {
        const fr_ds_config *cfg = &d->configs[c];
        config_key key = {out, cfg->name};
        uint64_t h = fr_hash64(cfg->name, 0);
        size_t slot = 0;
        long at = hmap_find(&m->configs, h, same_config, &key, &slot);
        if (at >= 0) {
            const fr_ds_config *o = &out->configs[at];
            if (strcmp(o->family, cfg->family) || strcmp(o->origin, cfg->origin) ||
                strcmp(o->params, cfg->params) || o->nominal_bits != cfg->nominal_bits)
                return fr_fail(err, FR_E_MISMATCH,
                               "configuration '%s' differs between '%s' (%s from '%s', %s) and "
                               "'%s' (%s from '%s', %s)",
                               cfg->name, m->config_from[at], o->family, o->origin, o->params,
                               name, cfg->family, cfg->origin, cfg->params);
        } else {
            fr_ds_config row = *cfg;
            row.config_id = (uint32_t)out->n_configs;
            if ((st = fr_dataset_add_config(out, &row, err)) != FR_OK)
                return st;
            at = (long)out->n_configs - 1;
            m->config_from[at] = name;
            hmap_put(&m->configs, slot, h, (size_t)at);
        }
        m->config_map[c] = out->configs[at].config_id;
    }
    return FR_OK;
}

/* Afterwards every tensor of d is in out and tensor_map[row] is its out
 * id; the same tensor with another dtype, shape or sq_norm fails with
 * FR_E_MISMATCH. A sq_norm the out tensor lacks is taken from d. */
static fr_status merge_tensors(merge *m, const fr_dataset *d, const char *name, fr_error *err)
{
    fr_status st;
    fr_dataset *out = m->out;
    for (size_t t = 0; t < d->n_tensors; t++) {
        const fr_ds_tensor *ten = &d->tensors[t];
        size_t s = source_row(d, ten->source_id);
        if (s == d->n_sources)
            return fr_fail(err, FR_E_FORMAT, "'%s': tensor '%s' has no source", name, ten->name);
        tensor_key key = {out, m->source_map[s], ten->name};
        uint64_t h = mix(fr_hash64(ten->name, 0), m->source_map[s]);
        size_t slot = 0;
        long at = hmap_find(&m->tensors, h, same_tensor, &key, &slot);
        if (at >= 0) {
            fr_ds_tensor *o = &out->tensors[at];
            if (strcmp(o->shape, ten->shape) || strcmp(o->dtype, ten->dtype) ||
                o->numel != ten->numel)
                return fr_fail(err, FR_E_MISMATCH,
                               "tensor '%s' is %s %s in '%s' but %s %s in '%s'", ten->name,
                               o->dtype, o->shape, m->tensor_from[at], ten->dtype, ten->shape,
                               name);
            /* how the source stores it: files from before the fields lack it */
            if (!o->stored_bits)
                o->stored_bits = ten->stored_bits;
            if (!o->source_format[0] && ten->source_format[0] &&
                (st = fr_dataset_set_string(&o->source_format, ten->source_format, err)) != FR_OK)
                return st;
            /* the output error's basis: a tensor's rows of two runs must not
             * mix a Hessian's traces with a diagonal's ("" has none, or is
             * from before the field) */
            if (o->out_error[0] && ten->out_error[0] && strcmp(o->out_error, ten->out_error))
                return fr_fail(err, FR_E_MISMATCH,
                               "tensor '%s' has its output error from the %s in '%s' but from "
                               "the %s in '%s' (sweep both with or both without "
                               "--diagonal-output-error)",
                               ten->name, o->out_error, m->tensor_from[at], ten->out_error, name);
            if (!o->out_error[0] && ten->out_error[0] &&
                (st = fr_dataset_set_string(&o->out_error, ten->out_error, err)) != FR_OK)
                return st;
            if (isnan(o->sq_norm))
                o->sq_norm = ten->sq_norm;
            else if (!isnan(ten->sq_norm) && !fr_metric_agrees(o->sq_norm, ten->sq_norm))
                return fr_fail(err, FR_E_MISMATCH,
                               "tensor '%s' has sq_norm %.17g in '%s' but %.17g in '%s'",
                               ten->name, o->sq_norm, m->tensor_from[at], ten->sq_norm, name);
        } else {
            fr_ds_tensor row = *ten;
            row.tensor_id = (uint32_t)out->n_tensors;
            row.source_id = m->source_map[s];
            if ((st = fr_dataset_add_tensor(out, &row, err)) != FR_OK)
                return st;
            at = (long)out->n_tensors - 1;
            m->tensor_from[at] = name;
            hmap_put(&m->tensors, slot, h, (size_t)at);
        }
        m->tensor_map[t] = out->tensors[at].tensor_id;
    }
    return FR_OK;
}

/* Afterwards every result of d is in out under the out ids (the maps are
 * by row position, so ids are looked up); a row out already has must agree
 * with it (FR_E_MISMATCH otherwise) and is counted as a duplicate. */
static fr_status merge_results(merge *m, const fr_dataset *d, const char *name, fr_error *err)
{
    fr_status st;
    fr_dataset *out = m->out;
    for (size_t r = 0; r < d->n_results; r++) {
        const fr_ds_result *row = &d->results[r];
        const fr_ds_tensor *t = fr_dataset_tensor(d, row->tensor_id);
        const fr_ds_config *c = fr_dataset_config(d, row->config_id);
        if (!t || !c)
            return fr_fail(err, FR_E_FORMAT, "'%s': /results row %zu has unknown ids", name, r);
        fr_ds_result mapped = *row;
        mapped.tensor_id = m->tensor_map[t - d->tensors];
        mapped.config_id = m->config_map[c - d->configs];
        result_key key = {out, mapped.tensor_id, mapped.config_id};
        uint64_t h = mix(mix(0, mapped.tensor_id), mapped.config_id);
        size_t slot = 0;
        long at = hmap_find(&m->results, h, same_result, &key, &slot);
        if (at >= 0) {
            double va = 0, vb = 0;
            const char *field = row_disagreement(&out->results[at], &mapped, &va, &vb);
            if (field)
                return fr_fail(err, FR_E_MISMATCH,
                               "'%s' on '%s' disagrees: %s is %.17g in '%s' but %.17g in '%s'",
                               c->name, t->name, field, va, m->result_from[at], vb, name);
            if (!out->results[at].flags)
                out->results[at].flags = mapped.flags;
            if (m->stats)
                m->stats->n_duplicate_rows++;
            continue;
        }
        if ((st = fr_dataset_add_result(out, &mapped, err)) != FR_OK)
            return st;
        m->result_from[out->n_results - 1] = name;
        hmap_put(&m->results, slot, h, out->n_results - 1);
    }
    return FR_OK;
}

/* The same for /expert_results (--split-experts): rows keyed by (tensor,
 * configuration, expert); one out already has must agree with it. */
static fr_status merge_expert_results(merge *m, const fr_dataset *d, const char *name,
                                      fr_error *err)
{
    fr_status st;
    fr_dataset *out = m->out;
    for (size_t r = 0; r < d->n_expert_results; r++) {
        const fr_ds_expert_result *row = &d->expert_results[r];
        const fr_ds_tensor *t = fr_dataset_tensor(d, row->row.tensor_id);
        const fr_ds_config *c = fr_dataset_config(d, row->row.config_id);
        if (!t || !c)
            return fr_fail(err, FR_E_FORMAT, "'%s': /expert_results row %zu has unknown ids",
                           name, r);
        fr_ds_result mapped = row->row;
        mapped.tensor_id = m->tensor_map[t - d->tensors];
        mapped.config_id = m->config_map[c - d->configs];
        expert_key key = {out, mapped.tensor_id, mapped.config_id, row->expert};
        uint64_t h = mix(mix(mix(0, mapped.tensor_id), mapped.config_id), row->expert);
        size_t slot = 0;
        long at = hmap_find(&m->experts, h, same_expert_result, &key, &slot);
        if (at >= 0) {
            double va = 0, vb = 0;
            const char *field = row_disagreement(&out->expert_results[at].row, &mapped, &va, &vb);
            if (field)
                return fr_fail(err, FR_E_MISMATCH,
                               "'%s' on '%s' expert %u disagrees: %s is %.17g in one input but "
                               "%.17g in '%s'",
                               c->name, t->name, row->expert, field, va, vb, name);
            continue;
        }
        if ((st = fr_dataset_add_expert_result(out, &mapped, row->expert, err)) != FR_OK)
            return st;
        hmap_put(&m->experts, slot, h, out->n_expert_results - 1);
    }
    return FR_OK;
}

/* Whether out has a result for the (tensor, configuration) a skipped row
 * (with its out source id) names. */
static int skipped_was_measured(const merge *m, const fr_ds_skipped *row)
{
    const fr_dataset *out = m->out;
    if (!row->config[0])
        return 0;
    tensor_key tk = {out, row->source_id, row->name};
    size_t slot = 0;
    long t = hmap_find(&m->tensors, mix(fr_hash64(row->name, 0), row->source_id), same_tensor,
                       &tk, &slot);
    config_key ck = {out, row->config};
    long c = hmap_find(&m->configs, fr_hash64(row->config, 0), same_config, &ck, &slot);
    if (t < 0 || c < 0)
        return 0;
    result_key rk = {out, out->tensors[t].tensor_id, out->configs[c].config_id};
    uint64_t h = mix(mix(0, rk.tensor_id), rk.config_id);
    return hmap_find(&m->results, h, same_result, &rk, &slot) >= 0;
}

/* Run once every result is in: afterwards the skipped rows of d are in out
 * once each, less the failures of a (tensor, configuration) that another
 * input measured and rows whose source d does not list. */
static fr_status merge_skipped(merge *m, const fr_dataset *d, fr_error *err)
{
    fr_status st;
    for (size_t s = 0; s < d->n_sources; s++)
        m->source_map[s] = (uint32_t)find_source(m->out, &d->sources[s]);
    for (size_t k = 0; k < d->n_skipped; k++) {
        fr_ds_skipped row = d->skipped[k];
        size_t s = source_row(d, row.source_id);
        if (s == d->n_sources)
            continue;
        row.source_id = m->source_map[s];
        if (skipped_was_measured(m, &row))
            continue;
        skipped_key key = {m->out, &row};
        uint64_t h = mix(mix(fr_hash64(row.name, 0), row.source_id), fr_hash64(row.config, 0));
        size_t slot = 0;
        if (hmap_find(&m->skipped, h, same_skipped, &key, &slot) >= 0)
            continue;
        if ((st = fr_dataset_add_skipped(m->out, &row, err)) != FR_OK)
            return st;
        hmap_put(&m->skipped, slot, h, m->out->n_skipped - 1);
    }
    return FR_OK;
}

fr_status fr_dataset_merge(const fr_dataset *in, const char *const *names, size_t n,
                           fr_dataset *out, fr_merge_stats *stats, fr_error *err)
{
    fr_status st = FR_OK;
    merge m;
    memset(&m, 0, sizeof m);
    m.out = out;
    m.stats = stats;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!merge_init(&m, in, n)) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if ((st = merge_root(out, err)) != FR_OK)
        goto done;
    for (size_t i = 0; i < n; i++)
        if ((st = append_devices(out, in[i].devices, err)) != FR_OK ||
            (st = merge_sources(&m, &in[i], err)) != FR_OK ||
            (st = merge_configs(&m, &in[i], names[i], err)) != FR_OK ||
            (st = merge_tensors(&m, &in[i], names[i], err)) != FR_OK ||
            (st = merge_results(&m, &in[i], names[i], err)) != FR_OK ||
            (st = merge_expert_results(&m, &in[i], names[i], err)) != FR_OK)
            goto done;
    for (size_t i = 0; i < n; i++)
        if ((st = merge_skipped(&m, &in[i], err)) != FR_OK)
            goto done;
    fr_dataset_sort(out);
done:
    merge_free(&m);
    if (st != FR_OK)
        fr_dataset_free(out);
    return st;
}
