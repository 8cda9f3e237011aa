/*
 * Hand-made frontier datasets for the analysis tests: the in-memory
 * fr_dataset filled directly, so the tests do not depend on the HDF5 reader.
 */
#ifndef FR_TEST_FIXTURE_H
#define FR_TEST_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/dataset.h"

static int fx_failures;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            fx_failures++;                                                               \
        }                                                                                \
    } while (0)

#define CHECK_NEAR(a, b, rel)                                                            \
    do {                                                                                 \
        double fx_a = (a), fx_b = (b);                                                   \
        if (!(fabs(fx_a - fx_b) <= (rel) * fmax(fabs(fx_a), fabs(fx_b)) + 1e-300)) {     \
            fprintf(stderr, "%s:%d: %s = %.17g, expected %s = %.17g\n", __FILE__,        \
                    __LINE__, #a, fx_a, #b, fx_b);                                       \
            fx_failures++;                                                               \
        }                                                                                \
    } while (0)

static inline void *fx_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return q;
}

static inline char *fx_strdup(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return d;
}

static inline void fx_init(fr_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    ds->format = fx_strdup("frontier");
    ds->schema_version = FR_SCHEMA_VERSION;
    ds->tool_version = fx_strdup("test");
    ds->created = fx_strdup("2025-01-01T00:00:00Z");
    ds->command_line = fx_strdup("frontier sweep test");
    ds->host = fx_strdup("test");
    ds->devices = fx_strdup("cpu");
}

/* Ids are deliberately not table positions, to catch code relying on that. */
static inline uint32_t fx_tensor(fr_dataset *ds, const char *name, const char *cls, uint64_t numel,
                                 double sq_norm)
{
    ds->tensors = fx_xrealloc(ds->tensors, (ds->n_tensors + 1) * sizeof *ds->tensors);
    fr_ds_tensor *t = &ds->tensors[ds->n_tensors];
    memset(t, 0, sizeof *t);
    t->tensor_id = 100 + 7 * (uint32_t)ds->n_tensors;
    t->name = fx_strdup(name);
    t->cls = fx_strdup(cls);
    t->dtype = fx_strdup("F32");
    char shape[64];
    snprintf(shape, sizeof shape, "%llu", (unsigned long long)numel);
    t->shape = fx_strdup(shape);
    t->numel = numel;
    t->rows = 1;
    t->cols = (int64_t)numel;
    t->sq_norm = sq_norm;
    ds->n_tensors++;
    return t->tensor_id;
}

static inline uint32_t fx_config(fr_dataset *ds, const char *name, const char *family,
                                 double nominal_bits)
{
    ds->configs = fx_xrealloc(ds->configs, (ds->n_configs + 1) * sizeof *ds->configs);
    fr_ds_config *c = &ds->configs[ds->n_configs];
    memset(c, 0, sizeof *c);
    c->config_id = 50 + 3 * (uint32_t)ds->n_configs;
    c->name = fx_strdup(name);
    c->family = fx_strdup(family);
    c->nominal_bits = nominal_bits;
    c->params = fx_strdup("{}");
    c->origin = fx_strdup("builtin");
    ds->n_configs++;
    return c->config_id;
}

static inline const fr_ds_tensor *fx_find_tensor(const fr_dataset *ds, uint32_t id)
{
    for (size_t i = 0; i < ds->n_tensors; i++)
        if (ds->tensors[i].tensor_id == id)
            return &ds->tensors[i];
    return NULL;
}

/* A result row; out terms NaN (no calibration) unless out_sq_ref > 0. */
static inline void fx_result_out(fr_dataset *ds, uint32_t tensor_id, uint32_t config_id,
                                 uint64_t total_bits, double sq_err, double out_sq_err,
                                 double out_sq_ref)
{
    const fr_ds_tensor *t = fx_find_tensor(ds, tensor_id);
    ds->results = fx_xrealloc(ds->results, (ds->n_results + 1) * sizeof *ds->results);
    fr_ds_result *r = &ds->results[ds->n_results++];
    memset(r, 0, sizeof *r);
    r->tensor_id = tensor_id;
    r->config_id = config_id;
    r->total_bits = total_bits;
    r->bits_per_weight = t ? (double)total_bits / (double)t->numel : NAN;
    r->sq_err = sq_err;
    r->rel_err = t && t->sq_norm > 0 ? sqrt(sq_err / t->sq_norm) : NAN;
    r->sqnr_db = -20 * log10(r->rel_err);
    r->max_abs_err = sqrt(sq_err);
    r->cosine = 1 - r->rel_err * r->rel_err / 2;
    r->out_sq_err = out_sq_err;
    r->out_sq_ref = out_sq_ref;
    r->out_rel_err = out_sq_ref > 0 ? sqrt(out_sq_err / out_sq_ref) : NAN;
    r->seconds = 0.001;
    snprintf(r->device, sizeof r->device, "cpu");
}

static inline void fx_result(fr_dataset *ds, uint32_t tensor_id, uint32_t config_id,
                             uint64_t total_bits, double sq_err)
{
    fx_result_out(ds, tensor_id, config_id, total_bits, sq_err, NAN, NAN);
}

static inline void fx_free(fr_dataset *ds)
{
    for (size_t i = 0; i < ds->n_tensors; i++) {
        free(ds->tensors[i].name);
        free(ds->tensors[i].cls);
        free(ds->tensors[i].dtype);
        free(ds->tensors[i].shape);
    }
    for (size_t i = 0; i < ds->n_configs; i++) {
        free(ds->configs[i].name);
        free(ds->configs[i].family);
        free(ds->configs[i].params);
        free(ds->configs[i].origin);
    }
    free(ds->tensors);
    free(ds->configs);
    free(ds->results);
    free(ds->sources);
    free(ds->skipped);
    free(ds->format);
    free(ds->tool_version);
    free(ds->created);
    free(ds->command_line);
    free(ds->host);
    free(ds->devices);
    memset(ds, 0, sizeof *ds);
}

/* splitmix64: reproducible random instances from a seed. */
static inline uint64_t fx_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double fx_uniform(uint64_t *state)
{
    return (double)(fx_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

static inline int fx_done(const char *name)
{
    if (fx_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, fx_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
