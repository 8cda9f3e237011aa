/* The keep rows (frontier/dataset/keep_rows.h). */
#include "frontier/dataset/keep_rows.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int fr_dataset_is_keep(const char *config)
{
    return config && !strcmp(config, FR_KEEP_CONFIG);
}

const char *fr_dataset_keep_type(const char *source_format, char *buf, size_t len)
{
    if (!source_format || !source_format[0] || len == 0)
        return NULL;
    size_t i = 0;
    for (; source_format[i] && i + 1 < len; i++)
        buf[i] = (char)tolower((unsigned char)source_format[i]);
    buf[i] = '\0';
    return buf;
}

static int wants_keep(const fr_ds_tensor *t)
{
    return t->source_format && t->source_format[0] && t->stored_bits > 0 && t->numel > 0 &&
           isfinite(t->sq_norm);
}

/* The keep configuration's id: found (and checked) or added. */
static fr_status keep_config(fr_dataset *ds, const char *out, uint32_t *id, fr_error *err)
{
    uint32_t next = 0;
    for (size_t c = 0; c < ds->n_configs; c++) {
        const fr_ds_config *cf = &ds->configs[c];
        if (cf->config_id >= next)
            next = cf->config_id + 1;
        if (!fr_dataset_is_keep(cf->name))
            continue;
        if (strcmp(cf->family, FR_KEEP_FAMILY) || strcmp(cf->params, FR_KEEP_PARAMS) ||
            strcmp(cf->origin, "builtin") || cf->nominal_bits != 0.0)
            return fr_fail(err, FR_E_MISMATCH,
                           "'%s': configuration '%s' there (%s from '%s', %s) is not frontier's "
                           "'%s' (the tensor as its source stores it)",
                           out, cf->name, cf->family, cf->origin, cf->params, FR_KEEP_CONFIG);
        *id = cf->config_id;
        return FR_OK;
    }
    fr_ds_config row = {.config_id = next, .name = FR_KEEP_CONFIG, .family = FR_KEEP_FAMILY,
                        .nominal_bits = 0.0, .params = FR_KEEP_PARAMS, .origin = "builtin"};
    *id = next;
    return fr_dataset_add_config(ds, &row, err);
}

/* Per tensor id (below n_ids): 1 where a keep row exists; out_sq_ref[id]
 * the tensor's tr(W H W^T) from any of its rows that has one (the same W
 * and statistics for every configuration), else NaN. */
static void scan_rows(const fr_dataset *ds, uint32_t keep_id, uint32_t n_ids, uint8_t *has_keep,
                      double *out_sq_ref)
{
    for (uint32_t i = 0; i < n_ids; i++)
        out_sq_ref[i] = NAN;
    for (size_t r = 0; r < ds->n_results; r++) {
        const fr_ds_result *row = &ds->results[r];
        if (row->tensor_id >= n_ids)
            continue;
        if (row->config_id == keep_id)
            has_keep[row->tensor_id] = 1;
        else if (isnan(out_sq_ref[row->tensor_id]) && !isnan(row->out_sq_ref))
            out_sq_ref[row->tensor_id] = row->out_sq_ref;
    }
}

static fr_ds_result keep_row(const fr_ds_tensor *t, uint32_t keep_id, double out_sq_ref)
{
    /* Q(W) = W: every error sum is 0; the metrics fr_metrics_from_sums gives
     * an exact reconstruction (cosine 1, also for an all-zero tensor) */
    fr_ds_result row = {
        .tensor_id = t->tensor_id,
        .config_id = keep_id,
        .bits_per_weight = (double)t->stored_bits / (double)t->numel,
        .total_bits = t->stored_bits,
        .rel_err = 0.0,
        .sqnr_db = INFINITY,
        .max_abs_err = 0.0,
        .cosine = 1.0,
        .out_rel_err = isnan(out_sq_ref) ? NAN : 0.0,
        .sq_err = 0.0,
        .out_sq_err = isnan(out_sq_ref) ? NAN : 0.0,
        .out_sq_ref = out_sq_ref,
        .seconds = 0.0,
        .flags = 0, /* not examined: nothing was quantized */
    };
    return row;
}

/* The /expert_results keep rows of the expert stacks measured with
 * --split-experts (some expert rows of other configurations exist) that
 * lack them: one per expert, a stack's stored bits divided evenly among its
 * experts (every expert has the same layout), out_sq_ref each expert's from
 * its rows. Two passes over the rows there, whatever the number of stacks. */
static fr_status add_expert_keep_rows(fr_dataset *ds, uint32_t keep_id, uint32_t n_ids,
                                      size_t *added, fr_error *err)
{
    const size_t n_rows = ds->n_expert_results; /* the rows added below are not read */
    uint32_t *n_experts = calloc(n_ids + 1, sizeof *n_experts);
    uint8_t *kept = calloc(n_ids + 1, 1);
    size_t *first = calloc(n_ids + 1, sizeof *first);
    double *ref = NULL;
    fr_status st = FR_OK;
    if (!n_experts || !kept || !first) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t r = 0; r < n_rows; r++) {
        const fr_ds_expert_result *x = &ds->expert_results[r];
        uint32_t id = x->row.tensor_id;
        if (id >= n_ids)
            continue;
        kept[id] |= x->row.config_id == keep_id;
        if (x->expert + 1 > n_experts[id])
            n_experts[id] = x->expert + 1;
    }
    size_t total = 0; /* ref[first[id] + e]: expert e of tensor id */
    for (uint32_t id = 0; id < n_ids; id++) {
        first[id] = total;
        total += n_experts[id];
    }
    if (!(ref = malloc((total + 1) * sizeof *ref))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < total; i++)
        ref[i] = NAN;
    for (size_t r = 0; r < n_rows; r++) {
        const fr_ds_expert_result *x = &ds->expert_results[r];
        if (x->row.tensor_id < n_ids && isnan(ref[first[x->row.tensor_id] + x->expert]))
            ref[first[x->row.tensor_id] + x->expert] = x->row.out_sq_ref;
    }
    for (size_t t = 0; t < ds->n_tensors && st == FR_OK; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        uint32_t id = ten->tensor_id, n = id < n_ids ? n_experts[id] : 0;
        if (!wants_keep(ten) || !n || kept[id] || ten->stored_bits % n)
            continue;
        fr_ds_tensor expert = *ten;
        expert.stored_bits = ten->stored_bits / n;
        expert.numel = ten->numel / n;
        for (uint32_t e = 0; e < n && st == FR_OK; e++) {
            fr_ds_result row = keep_row(&expert, keep_id, ref[first[id] + e]);
            if ((st = fr_dataset_add_expert_result(ds, &row, e, err)) == FR_OK)
                (*added)++;
        }
    }
done:
    free(n_experts);
    free(kept);
    free(first);
    free(ref);
    return st;
}

fr_status fr_dataset_add_keep_rows(fr_dataset *ds, const char *out, size_t *n_added,
                                   fr_error *err)
{
    size_t wanted = 0, added = 0;
    uint32_t n_ids = 0;
    if (n_added)
        *n_added = 0;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        wanted += wants_keep(&ds->tensors[t]);
        if (ds->tensors[t].tensor_id >= n_ids)
            n_ids = ds->tensors[t].tensor_id + 1;
    }
    if (!wanted)
        return FR_OK;
    uint32_t keep_id = 0;
    fr_status st = keep_config(ds, out, &keep_id, err);
    if (st != FR_OK)
        return st;
    uint8_t *has_keep = calloc(n_ids, 1);
    double *out_sq_ref = malloc(n_ids * sizeof *out_sq_ref);
    if (!has_keep || !out_sq_ref) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    scan_rows(ds, keep_id, n_ids, has_keep, out_sq_ref);
    for (size_t t = 0; t < ds->n_tensors && st == FR_OK; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        if (!wants_keep(ten) || has_keep[ten->tensor_id])
            continue;
        fr_ds_result row = keep_row(ten, keep_id, out_sq_ref[ten->tensor_id]);
        if ((st = fr_dataset_add_result(ds, &row, err)) == FR_OK)
            added++;
    }
    if (st == FR_OK && ds->n_expert_results)
        st = add_expert_keep_rows(ds, keep_id, n_ids, &added, err);
done:
    free(has_keep);
    free(out_sq_ref);
    if (n_added)
        *n_added = added;
    return st;
}
