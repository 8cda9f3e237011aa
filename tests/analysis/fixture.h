/*
 * Hand-made frontier datasets for the analysis tests: the in-memory
 * fr_dataset built with the library's own fr_dataset_add_* (so its rows
 * follow the same allocation rules as a read one), without the HDF5 reader.
 */
#ifndef FR_TEST_FIXTURE_H
#define FR_TEST_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frontier/dataset/dataset.h"

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

/* The text of a file the test wrote (a recipe), at most size - 1 bytes;
 * "" when it cannot be read (the parse that follows then fails). */
static inline char *fx_read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* Exits on failure: a fixture that cannot be built is no test. */
static inline void fx_ok(fr_status st, const fr_error *err)
{
    if (st != FR_OK) {
        fprintf(stderr, "fixture: %s\n", err->msg);
        exit(1);
    }
}

/* Ids are deliberately not table positions, to catch code relying on that. */
static inline uint32_t fx_tensor(fr_dataset *ds, const char *name, const char *cls, uint64_t numel,
                                 double sq_norm)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%llu", (unsigned long long)numel);
    fr_ds_tensor t = {
        .tensor_id = 100 + 7 * (uint32_t)ds->n_tensors,
        .name = (char *)name,
        .cls = (char *)cls,
        .dtype = "F32",
        .shape = shape,
        .numel = numel,
        .rows = 1,
        .cols = (int64_t)numel,
        .sq_norm = sq_norm,
    };
    fr_error err = {0};
    fx_ok(fr_dataset_add_tensor(ds, &t, &err), &err);
    return t.tensor_id;
}

static inline uint32_t fx_config(fr_dataset *ds, const char *name, const char *family,
                                 double nominal_bits)
{
    fr_ds_config c = {
        .config_id = 50 + 3 * (uint32_t)ds->n_configs,
        .name = (char *)name,
        .family = (char *)family,
        .nominal_bits = nominal_bits,
        .params = "{}",
        .origin = "builtin",
    };
    fr_error err = {0};
    fx_ok(fr_dataset_add_config(ds, &c, &err), &err);
    return c.config_id;
}

/* A result row; out terms NaN (no calibration) unless out_sq_ref > 0. */
static inline void fx_result_out(fr_dataset *ds, uint32_t tensor_id, uint32_t config_id,
                                 uint64_t total_bits, double sq_err, double out_sq_err,
                                 double out_sq_ref)
{
    const fr_ds_tensor *t = fr_dataset_tensor(ds, tensor_id);
    fr_ds_result r = {
        .tensor_id = tensor_id,
        .config_id = config_id,
        .total_bits = total_bits,
        .bits_per_weight = t ? (double)total_bits / (double)t->numel : NAN,
        .sq_err = sq_err,
        .rel_err = t && t->sq_norm > 0 ? sqrt(sq_err / t->sq_norm) : NAN,
        .max_abs_err = sqrt(sq_err),
        .out_sq_err = out_sq_err,
        .out_sq_ref = out_sq_ref,
        .out_rel_err = out_sq_ref > 0 ? sqrt(out_sq_err / out_sq_ref) : NAN,
        .seconds = 0.001,
        .device = "cpu",
    };
    r.sqnr_db = -20 * log10(r.rel_err);
    r.cosine = 1 - r.rel_err * r.rel_err / 2;
    fr_error err = {0};
    fx_ok(fr_dataset_add_result(ds, &r, &err), &err);
}

static inline void fx_result(fr_dataset *ds, uint32_t tensor_id, uint32_t config_id,
                             uint64_t total_bits, double sq_err)
{
    fx_result_out(ds, tensor_id, config_id, total_bits, sq_err, NAN, NAN);
}

#endif
