/*
 * The plan of a sweep (frontier/sweep/sweep_plan.h): resume checks, the
 * items and their configurations, expert stacks, calibration statistics,
 * the fused groups' joint amax, and the pairs that cannot be measured.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/classify.h"
#include "core/log.h"
#include "frontier/dataset/source_identity.h"
#include "frontier/exec/blocked.h"
#include "frontier/model/calib_attach.h"
#include "frontier/model/fused_scale.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep_plan.h"

/* Index of tensors by (source_id, name), for resume lookups. */
typedef struct tensor_index {
    const fr_dataset *ds;
    size_t *order;
} tensor_index;

/* What building a plan works on, and carries from one tensor to the next. */
typedef struct builder {
    fr_sweep_plan *p;
    const fr_plan_scope *sc;
    fr_dataset *ds;
    fr_sweep_stats *stats;
    int resuming;
    tensor_index ix;          /* the resumed tensors, sorted for find_tensor */
    size_t n_old;             /* tensors of the resumed dataset */
    uint8_t *done;            /* [max_tensor_id x max_config_id]: rows that exist */
    uint32_t max_tensor_id, max_config_id;
    size_t n_flat;            /* entries of p->item_configs used */
} builder;

static const char *config_params(const frontier_config *cfg)
{
    return cfg->params_json ? cfg->params_json : "{}";
}

/* Sources: identities, checked against the output when resuming. */
static fr_status plan_sources(builder *b, fr_error *err)
{
    if (b->resuming && b->ds->n_sources != b->sc->n_sources)
        return fr_fail(err, FR_E_MISMATCH,
                       "cannot resume '%s': it was made from %zu source(s), this run has %zu",
                       b->sc->output, b->ds->n_sources, b->sc->n_sources);
    for (size_t i = 0; i < b->sc->n_sources; i++) {
        const fr_source *src = b->sc->sources[i];
        char sha[65];
        uint64_t bytes = 0;
        for (size_t f = 0; f < src->n_files; f++)
            bytes += src->files[f].size;
        /* hashing reads the whole checkpoint once (about 1 s per GB) */
        if (bytes > ((uint64_t)1 << 30))
            fr_info("computing the sha256 of '%s' (%.1f GB) to identify it in the dataset",
                    src->path, (double)bytes / 1e9);
        fr_ds_source row = {.source_id = (uint32_t)i, .path = src->path,
                            .kind = (char *)(uintptr_t)fr_source_kind_name(src->kind),
                            .sha256 = sha, .n_tensors = (uint32_t)src->n_tensors};
        fr_status st = fr_source_identity(src, sha, &row.size, &row.mtime, err);
        if (st != FR_OK)
            return st;
        for (size_t t = 0; t < src->n_tensors; t++)
            row.n_params += (uint64_t)src->tensors[t].numel;
        if (b->resuming) {
            const fr_ds_source *old = &b->ds->sources[i];
            if (!fr_source_identity_same(old, &row, 0))
                return fr_fail(err, FR_E_MISMATCH,
                               "cannot resume '%s': it was made from another model ('%s' %s, "
                               "this run's '%s' %s)",
                               b->sc->output, old->path,
                               old->sha256[0] ? old->sha256 : "(size+mtime)", row.path,
                               row.sha256[0] ? row.sha256 : "(size+mtime)");
            if (old->source_id != (uint32_t)i)
                return fr_fail(err, FR_E_FORMAT, "'%s': /sources ids are not 0..n-1", b->sc->output);
        } else if ((st = fr_dataset_add_source(b->ds, &row, err)) != FR_OK) {
            return st;
        }
    }
    return FR_OK;
}

static fr_status plan_configs(builder *b, fr_error *err)
{
    b->p->config_ids = calloc(b->sc->n_configs, sizeof *b->p->config_ids);
    if (!b->p->config_ids)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t j = 0; j < b->sc->n_configs; j++) {
        const fr_config_ref *ref = b->sc->configs[j];
        const fr_qentry *entry = &b->sc->reg->entries[ref->quantizer];
        const char *params = config_params(ref->cfg);
        const fr_ds_config *found = NULL;
        for (size_t c = 0; c < b->ds->n_configs && !found; c++)
            if (!strcmp(b->ds->configs[c].name, ref->cfg->name))
                found = &b->ds->configs[c];
        if (found) {
            if (strcmp(found->family, entry->q->name) || strcmp(found->params, params) ||
                strcmp(found->origin, entry->origin) || found->nominal_bits != ref->cfg->nominal_bits)
                return fr_fail(err, FR_E_MISMATCH,
                               "cannot resume '%s': configuration '%s' there (%s from '%s', %s) "
                               "differs from the registered one (%s from '%s', %s)",
                               b->sc->output, found->name, found->family, found->origin,
                               found->params, entry->q->name, entry->origin, params);
            b->p->config_ids[j] = found->config_id;
            continue;
        }
        uint32_t id = 0;
        for (size_t c = 0; c < b->ds->n_configs; c++)
            if (b->ds->configs[c].config_id >= id)
                id = b->ds->configs[c].config_id + 1;
        fr_ds_config row = {.config_id = id, .name = (char *)(uintptr_t)ref->cfg->name,
                            .family = (char *)(uintptr_t)entry->q->name,
                            .nominal_bits = ref->cfg->nominal_bits,
                            .params = (char *)(uintptr_t)params, .origin = entry->origin};
        fr_status st = fr_dataset_add_config(b->ds, &row, err);
        if (st != FR_OK)
            return st;
        b->p->config_ids[j] = id;
    }
    return FR_OK;
}

static const fr_dataset *sort_ds; /* qsort has no context argument in C11 */

static int cmp_tensor_key(uint32_t sa, const char *na, uint32_t sb, const char *nb)
{
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return strcmp(na, nb);
}

static int cmp_tensor_order(const void *a, const void *b)
{
    const fr_ds_tensor *x = &sort_ds->tensors[*(const size_t *)a];
    const fr_ds_tensor *y = &sort_ds->tensors[*(const size_t *)b];
    return cmp_tensor_key(x->source_id, x->name, y->source_id, y->name);
}

static long find_tensor(const tensor_index *ix, size_t n, uint32_t source_id, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const fr_ds_tensor *t = &ix->ds->tensors[ix->order[mid]];
        int c = cmp_tensor_key(t->source_id, t->name, source_id, name);
        if (c == 0)
            return (long)ix->order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static void shape_text(const fr_tensor *t, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int d = 0; d < t->ndim && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, d ? "x" : "", t->shape[d]);
}

/* Drops skipped rows this run will produce again: whole-tensor entries of
 * tensors it considers, and failures of its configurations on them. */
static void drop_stale_skipped(builder *b, const uint8_t *considered_source)
{
    size_t kept = 0;
    for (size_t k = 0; k < b->ds->n_skipped; k++) {
        fr_ds_skipped *s = &b->ds->skipped[k];
        int stale = 0;
        if (s->source_id < b->sc->n_sources && considered_source[s->source_id]) {
            const fr_source *src = b->sc->sources[s->source_id];
            for (size_t t = 0; t < src->n_tensors && !stale; t++) {
                if (strcmp(src->tensors[t].name, s->name) != 0)
                    continue;
                if (!s->config[0]) {
                    stale = 1;
                } else {
                    for (size_t j = 0; j < b->sc->n_configs && !stale; j++)
                        stale = !strcmp(b->sc->configs[j]->cfg->name, s->config);
                }
            }
        }
        if (stale) {
            free(s->name);
            free(s->reason);
            free(s->config);
        } else {
            b->ds->skipped[kept++] = *s;
        }
    }
    b->ds->n_skipped = kept;
}

/* The rows a resumed dataset already has, as a bitmap over its tensor ids x
 * config ids (empty for a new output). */
static fr_status plan_existing_rows(builder *b, fr_error *err)
{
    for (size_t c = 0; c < b->ds->n_configs; c++)
        if (b->ds->configs[c].config_id + 1 > b->max_config_id)
            b->max_config_id = b->ds->configs[c].config_id + 1;
    for (size_t t = 0; t < b->n_old; t++)
        if (b->ds->tensors[t].tensor_id + 1 > b->max_tensor_id)
            b->max_tensor_id = b->ds->tensors[t].tensor_id + 1;
    if ((uint64_t)b->max_tensor_id * b->max_config_id > ((uint64_t)1 << 34))
        return fr_fail(err, FR_E_NOMEM, "'%s': too many tensors x configurations",
                       b->sc->output);
    b->done = calloc((size_t)b->max_tensor_id * b->max_config_id + 1, 1);
    if (!b->done)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t r = 0; r < b->ds->n_results; r++) {
        const fr_ds_result *row = &b->ds->results[r];
        if (row->tensor_id < b->max_tensor_id && row->config_id < b->max_config_id)
            b->done[(size_t)row->tensor_id * b->max_config_id + row->config_id] = 1;
    }
    b->stats->n_rows_resumed = b->ds->n_results;
    return FR_OK;
}

/* The plan's arrays, sized for every tensor of every source x every
 * selected configuration. */
static fr_status plan_alloc(builder *b, size_t n_planned_max, fr_error *err)
{
    if ((uint64_t)n_planned_max * b->sc->n_configs > ((uint64_t)1 << 34))
        return fr_fail(err, FR_E_NOMEM, "too many tensors x configurations");
    fr_sweep_plan *p = b->p;
    p->items = calloc(n_planned_max + 1, sizeof *p->items);
    p->entries = calloc(n_planned_max + 1, sizeof *p->entries);
    p->item_configs = calloc(n_planned_max * b->sc->n_configs + 1, sizeof *p->item_configs);
    p->item_config_ids = calloc(n_planned_max * b->sc->n_configs + 1, sizeof *p->item_config_ids);
    if (!p->items || !p->entries || !p->item_configs || !p->item_config_ids)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    return FR_OK;
}

/* The /tensors row of a selected tensor: the resumed one (its shape must
 * not have changed) or a new one with the next free id. *at is its index. */
static fr_status plan_tensor_row(builder *b, size_t s, const fr_tensor *t, long *at,
                                 fr_error *err)
{
    int64_t rows, cols;
    fr_sweep_matrix(t, &rows, &cols);
    char shape[160];
    shape_text(t, shape, sizeof shape);
    *at = b->resuming ? find_tensor(&b->ix, b->n_old, (uint32_t)s, t->name) : -1;
    if (*at >= 0) {
        const fr_ds_tensor *old = &b->ds->tensors[*at];
        if (old->numel != (uint64_t)t->numel || strcmp(old->shape, shape) != 0)
            return fr_fail(err, FR_E_MISMATCH,
                           "cannot resume '%s': tensor '%s' has shape %s there, %s now",
                           b->sc->output, t->name, old->shape, shape);
        return FR_OK;
    }
    uint32_t id = 0;
    if (b->ds->n_tensors)
        id = b->ds->tensors[b->ds->n_tensors - 1].tensor_id + 1;
    for (size_t k = 0; k < b->n_old; k++)
        if (b->ds->tensors[k].tensor_id >= id)
            id = b->ds->tensors[k].tensor_id + 1;
    fr_ds_tensor row = {.tensor_id = id, .source_id = (uint32_t)s,
                        .name = t->name,
                        .cls = (char *)(uintptr_t)fr_class_name(t->cls),
                        .dtype = (char *)(uintptr_t)(t->dtype_name[0] ? t->dtype_name : fr_dtype_name(t->dtype)),
                        .shape = shape, .numel = (uint64_t)t->numel, .rows = rows,
                        .cols = cols, .sq_norm = NAN,
                        .source_format = (char *)(uintptr_t)fr_tensor_source_format(t),
                        .stored_bits = fr_tensor_stored_bits(t)};
    fr_status st = fr_dataset_add_tensor(b->ds, &row, err);
    *at = (long)b->ds->n_tensors - 1;
    return st;
}

/* An expert stack [E, out, in] (docs/formats.md "Expert tensors"): E items,
 * expert e on a view of rows e*out .. (e+1)*out of the stack (a 2-D tensor
 * [out, in] at its own offset in the file), each with its own copy of the
 * configurations still to measure (those of b->n_flat - first at first). */
static void plan_expert_stack(builder *b, size_t s, const fr_tensor *t, size_t at, size_t first)
{
    fr_sweep_plan *p = b->p;
    uint32_t n_experts = (uint32_t)t->shape[0];
    size_t n_cfg = b->n_flat - first;
    size_t stack = p->n_stacks++;
    p->stacks[stack] = (fr_plan_stack){.ds_tensor = at, .n_experts = n_experts,
                                       .rows = t->shape[1], .cols = t->shape[2]};
    for (uint32_t e = 0; e < n_experts; e++) {
        size_t from = first;
        if (e > 0) {
            from = b->n_flat;
            for (size_t c = 0; c < n_cfg; c++) {
                p->item_configs[b->n_flat] = p->item_configs[first + c];
                p->item_config_ids[b->n_flat] = p->item_config_ids[first + c];
                b->n_flat++;
            }
        }
        size_t k = p->n_items++;
        p->entries[k] = (fr_plan_entry){.ds_tensor = at, .source_id = (uint32_t)s,
                                        .first_config = from, .stack = stack, .expert = e};
        p->items[k] = (fr_sweep_item){.n_configs = n_cfg};
        fr_sweep_plan_item_on(&p->items[k], b->sc->sources[s], t, e + 1, &p->views[p->n_views++]);
        b->stats->bytes += p->items[k].tensor->nbytes;
    }
}

/* One tensor of source s: excluded, skipped (recorded in /skipped), or
 * registered and queued with the configurations it has no row for yet. */
static fr_status plan_one_tensor(builder *b, size_t s, const fr_tensor *t, fr_error *err)
{
    char why[160];
    b->stats->n_tensors++;
    if (!fr_tensor_filter_selects(b->sc->filter, t->name)) {
        b->stats->n_excluded++;
        return FR_OK;
    }
    const char *reason = fr_sweep_skip_reason(t, b->sc->min_numel, why, sizeof why);
    if (reason) {
        fr_ds_skipped row = {.source_id = (uint32_t)s, .name = t->name,
                             .reason = (char *)(uintptr_t)reason, .config = ""};
        b->stats->n_skipped++;
        return fr_dataset_add_skipped(b->ds, &row, err);
    }
    b->stats->n_selected++;
    long at;
    fr_status st = plan_tensor_row(b, s, t, &at, err);
    if (st != FR_OK)
        return st;
    uint32_t tensor_id = b->ds->tensors[at].tensor_id;
    size_t first = b->n_flat;
    for (size_t j = 0; j < b->sc->n_configs; j++) {
        uint32_t cid = b->p->config_ids[j];
        if (tensor_id < b->max_tensor_id && cid < b->max_config_id &&
            b->done[(size_t)tensor_id * b->max_config_id + cid])
            continue;
        b->p->item_configs[b->n_flat] = b->sc->configs[j];
        b->p->item_config_ids[b->n_flat] = cid;
        b->n_flat++;
    }
    if (b->n_flat == first)
        return FR_OK; /* complete already */
    if (fr_sweep_expert_stack(t)) {
        plan_expert_stack(b, s, t, (size_t)at, first);
        return FR_OK;
    }
    size_t k = b->p->n_items++;
    b->p->entries[k] = (fr_plan_entry){.ds_tensor = (size_t)at, .source_id = (uint32_t)s,
                                       .first_config = first, .stack = FR_PLAN_NO_STACK};
    b->p->items[k] = (fr_sweep_item){.n_configs = b->n_flat - first};
    fr_sweep_plan_item_on(&b->p->items[k], b->sc->sources[s], t, 0, NULL);
    b->stats->bytes += t->nbytes;
    return FR_OK;
}

/* The plan: every selected tensor of every source with the configurations
 * still to measure on it (all of them for a new output). */
static fr_status plan_tensors(builder *b, fr_error *err)
{
    fr_status st = FR_OK;
    b->ix = (tensor_index){b->ds, NULL};
    b->n_old = b->ds->n_tensors;
    uint8_t *considered = NULL;
    size_t n_planned_max = 0;

    size_t n_stacks = 0, n_views = 0;
    for (size_t s = 0; s < b->sc->n_sources; s++) {
        n_planned_max += b->sc->sources[s]->n_tensors;
        for (size_t ti = 0; ti < b->sc->sources[s]->n_tensors; ti++) {
            const fr_tensor *t = &b->sc->sources[s]->tensors[ti];
            if (fr_sweep_expert_stack(t)) {
                n_stacks++;
                n_views += (size_t)t->shape[0];
                n_planned_max += (size_t)t->shape[0] - 1;
            }
        }
    }
    b->p->views = calloc(n_views + 1, sizeof *b->p->views);
    b->p->stacks = calloc(n_stacks + 1, sizeof *b->p->stacks);
    considered = calloc(b->sc->n_sources + 1, 1);
    b->ix.order = calloc(b->n_old + 1, sizeof *b->ix.order);
    if (!considered || !b->ix.order || !b->p->views || !b->p->stacks) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < b->n_old; i++)
        b->ix.order[i] = i;
    sort_ds = b->ds;
    qsort(b->ix.order, b->n_old, sizeof *b->ix.order, cmp_tensor_order);
    if ((st = plan_existing_rows(b, err)) != FR_OK ||
        (st = plan_alloc(b, n_planned_max, err)) != FR_OK)
        goto done;
    if (b->resuming) {
        for (size_t s = 0; s < b->sc->n_sources; s++)
            considered[s] = 1;
        drop_stale_skipped(b, considered);
    }
    for (size_t s = 0; s < b->sc->n_sources; s++)
        for (size_t ti = 0; ti < b->sc->sources[s]->n_tensors; ti++)
            if ((st = plan_one_tensor(b, s, &b->sc->sources[s]->tensors[ti], err)) != FR_OK)
                goto done;
    /* item config pointers, now that the flat array is final */
    for (size_t k = 0; k < b->p->n_items; k++)
        b->p->items[k].configs = &b->p->item_configs[b->p->entries[k].first_config];
    b->stats->n_items = b->p->n_items;
done:
    free(b->done);
    free(considered);
    free(b->ix.order);
    b->done = NULL;
    b->ix.order = NULL;
    return st;
}

/* ---- calibration statistics (--calib) ---- */

/* Records on a /tensors row what its output error is computed with. A
 * resumed row that says otherwise stops the run: its rows would mix a
 * Hessian's traces with a diagonal's. */
static fr_status set_out_error(builder *b, fr_ds_tensor *row, const char *basis, fr_error *err)
{
    if (!strcmp(row->out_error, basis))
        return FR_OK;
    if (row->out_error[0] && basis[0])
        return fr_fail(err, FR_E_MISMATCH,
                       "cannot resume '%s': tensor '%s' has its output error from the %s "
                       "there, from the %s now (resume with the same --calib and "
                       "--diagonal-output-error)",
                       b->sc->output, row->name, row->out_error, basis);
    if (!basis[0])
        return FR_OK; /* no output error now: the rows there keep theirs */
    return fr_dataset_set_string(&row->out_error, basis, err);
}

/* Each planned tensor's statistics from the calibration file (core/calib.h:
 * its name rules and checks). A tensor without statistics keeps NaN in
 * out_rel_err; a malformed module stops the run before any work. The
 * modules that no planned tensor uses are listed in one warning. */
static fr_status attach_calibration(builder *b, fr_error *err)
{
    fr_status st = FR_OK;
    const char **names = NULL, **unmatched = NULL;
    size_t n_unmatched = 0, n_hessian = 0, n_found = 0, n_diagonal = 0;
    names = calloc(b->p->n_items + 1, sizeof *names);
    if (!names) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    /* a checkpoint with an embedding and no output layer of its own ties
     * them (tie_word_embeddings): the embedding matrix is the output layer
     * too, and the statistics of that layer's input, stored under lm_head
     * by a capture of the running model, are the ones for it */
    int has_lm_head = 0;
    for (size_t s = 0; s < b->sc->n_sources; s++)
        has_lm_head |=
            fr_calib_has_lm_head(b->sc->sources[s]->tensors, b->sc->sources[s]->n_tensors);
    for (size_t k = 0; k < b->p->n_items; k++) {
        fr_sweep_item *it = &b->p->items[k];
        const fr_plan_entry *e = &b->p->entries[k];
        fr_calib_stats cs;
        if (e->stack != FR_PLAN_NO_STACK)
            st = fr_sweep_plan_item_calib(b->p->calib, it, e->expert + 1,
                                          b->p->stacks[e->stack].n_experts, has_lm_head, 0, &cs,
                                          &names[k], err);
        else
            st = fr_sweep_plan_item_calib(b->p->calib, it, 0, 0, has_lm_head, 0, &cs, &names[k],
                                          err);
        if (st != FR_OK)
            goto done;
        if (!cs.found) {
            fr_debug("%s", cs.skip_reason);
            continue;
        }
        b->p->entries[k].calib = cs.calib;
        it->calib = &b->p->entries[k].calib;
        n_found++;
        n_hessian += cs.calib.hessian != NULL;
        /* what its output error is computed with, on its /tensors row: the
         * executor's own rule (fr_out_basis_of) */
        const fr_out_basis kind =
            fr_out_basis_of(it->calib, it->cols, b->sc->diagonal_output_error);
        const char *basis = kind == FR_OUT_HESSIAN    ? FR_OUT_ERROR_HESSIAN
                            : kind == FR_OUT_DIAGONAL ? FR_OUT_ERROR_DIAGONAL
                                                      : "";
        n_diagonal += kind == FR_OUT_DIAGONAL;
        if ((st = set_out_error(b, &b->ds->tensors[e->ds_tensor], basis, err)) != FR_OK)
            goto done;
    }
    if ((st = fr_calib_unmatched(b->p->calib, names, b->p->n_items, &unmatched, &n_unmatched,
                                 err)) != FR_OK)
        goto done;
    if (n_unmatched) {
        char list[512];
        size_t used = 0;
        list[0] = '\0';
        for (size_t i = 0; i < n_unmatched && used + 80 < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                                     unmatched[i]);
        fr_warn("'%s': %zu module(s) match no tensor being measured: %s%s",
                fr_calib_path(b->p->calib), n_unmatched, list,
                used + 80 >= sizeof list ? ", ..." : "");
    }
    char diagonal[96] = "";
    if (b->sc->diagonal_output_error)
        snprintf(diagonal, sizeof diagonal, ", %zu with its diagonal only (out_rel_err of the "
                 "diagonal, --diagonal-output-error)", n_diagonal);
    fr_info("calibration statistics '%s' (%lld tokens): %zu of %zu tensors, %zu with a Hessian "
            "(out_rel_err)%s",
            fr_calib_path(b->p->calib), (long long)fr_calib_token_count(b->p->calib), n_found,
            b->p->n_items, n_hessian, diagonal);
done:
    free(names);
    free(unmatched);
    return st;
}

/* --fused-global-scale: each item that has a configuration to measure
 * that needs it (traits.needs_group_amax) gets the joint amax of its fused
 * group (frontier/model/fused_scale.h, the scan
 * `frontier quantize` uses); an item outside a group of two or more, or an
 * expert's view of a stack, gets none and drop_unmeasurable drops the pair
 * (no row, not a failure). */
static fr_status attach_group_amax(builder *b, fr_error *err)
{
    fr_status st = FR_OK;
    for (size_t s = 0; s < b->sc->n_sources && st == FR_OK; s++) {
        const fr_source *src = b->sc->sources[s];
        fr_fused_scan scan;
        int scanned = 0;
        for (size_t k = 0; k < b->p->n_items && st == FR_OK; k++) {
            fr_sweep_item *it = &b->p->items[k];
            if (it->src != src || b->p->entries[k].stack != FR_PLAN_NO_STACK)
                continue;
            int wants = 0;
            for (size_t c = 0; c < it->n_configs; c++)
                wants |= fr_config_traits_of(it->configs[c])->needs_group_amax;
            if (!wants)
                continue;
            if (!scanned) {
                if ((st = fr_fused_scan_source(src, &scan, err)) != FR_OK)
                    break;
                scanned = 1;
            }
            if (it->tensor < src->tensors || it->tensor >= src->tensors + src->n_tensors)
                continue; /* not one of the source's own tensors */
            size_t t = (size_t)(it->tensor - src->tensors);
            it->has_group_amax = fr_fused_scan_amax(&scan, t, &it->group_amax, NULL);
        }
        if (scanned)
            fr_fused_scan_free(&scan);
    }
    return st;
}

/* What configuration ref lacks in statistics calib (NULL: nothing). */
static const char *missing_statistics(const builder *b, const fr_config_ref *ref,
                                      const frontier_calib *calib)
{
    const frontier_quantizer *q = fr_config_quantizer(b->sc->reg, ref);
    if (!(q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)))
        return NULL;
    if (!calib)
        return "needs calibration statistics: the calibration file has none for this tensor";
    if ((q->flags & FRONTIER_Q_NEEDS_HESSIAN) && !calib->hessian)
        return "needs a Hessian: this tensor's statistics have none (diagonal only)";
    if ((q->flags & FRONTIER_Q_NEEDS_ACT_STATS) && !calib->act_mean_abs && !calib->act_mean_sq)
        return "needs per-channel activation statistics: this tensor's statistics have none";
    return NULL;
}

/* The configurations that need statistics a tensor lacks are not run on
 * it: each pair is recorded in /skipped with the reason (not a failure),
 * and a tensor left with nothing to measure leaves the plan. */
static fr_status drop_unmeasurable(builder *b, fr_error *err)
{
    size_t n_pairs = 0, kept_items = 0;
    /* per registered configuration: tensors without the fused group it needs */
    size_t *unfused = calloc(b->sc->reg->n_configs ? b->sc->reg->n_configs : 1, sizeof *unfused);
    if (!unfused)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t k = 0; k < b->p->n_items; k++) {
        fr_sweep_item *it = &b->p->items[k];
        size_t first = b->p->entries[k].first_config, keep = 0;
        for (size_t c = 0; c < it->n_configs; c++) {
            const fr_config_ref *ref = b->p->item_configs[first + c];
            const char *why = missing_statistics(b, ref, it->calib);
            char why_buf[320];
            if (!why && !it->has_group_amax && fr_config_traits_of(ref)->needs_group_amax) {
                /* not a member of a fused group of two or more: a configuration
                 * that needs its joint amax has no row for it (nvfp4-fused's
                 * own scale would be nvfp4's row); not a failure, so not in
                 * /skipped */
                unfused[ref - b->sc->reg->configs]++;
                continue;
            }
            if (!why) /* over --max-memory and not row-local (frontier/exec/blocked.h) */
                why = fr_block_skip_reason(b->sc->reg, ref, it, b->sc->max_memory, why_buf,
                                           sizeof why_buf);
            if (!why) {
                b->p->item_configs[first + keep] = ref;
                b->p->item_config_ids[first + keep] = b->p->item_config_ids[first + c];
                keep++;
                continue;
            }
            fr_ds_skipped row = {.source_id = b->p->entries[k].source_id,
                                 .name = (char *)(uintptr_t)it->tensor->name,
                                 .reason = (char *)(uintptr_t)why,
                                 .config = (char *)(uintptr_t)ref->cfg->name};
            fr_status st = fr_dataset_add_skipped(b->ds, &row, err);
            if (st != FR_OK) {
                free(unfused);
                return st;
            }
            n_pairs++;
        }
        it->n_configs = keep;
        if (keep == 0) {
            b->stats->bytes -= it->tensor->nbytes;
            continue;
        }
        /* compact the plan (the statistics move with their item) */
        size_t to = kept_items++;
        if (to != k) {
            b->p->items[to] = *it;
            b->p->entries[to] = b->p->entries[k]; /* an expert keeps its stack */
            if (b->p->items[to].calib)
                b->p->items[to].calib = &b->p->entries[to].calib;
        }
        b->p->items[to].configs = &b->p->item_configs[b->p->entries[to].first_config];
    }
    b->p->n_items = kept_items;
    b->stats->n_items = kept_items;
    if (n_pairs)
        fr_info("%zu (tensor, configuration) pairs cannot be measured (statistics their tensor "
                "lacks, or a tensor over --max-memory): not measured, listed in /skipped with "
                "the reason",
                n_pairs);
    for (size_t i = 0; i < b->sc->reg->n_configs; i++)
        if (unfused[i])
            fr_info("%s: %zu tensors are not members of a fused group (q/k/v, gate/up, "
                    "w1/w3, q_a/kv_a) with two or more members: no %s row for them",
                    b->sc->reg->configs[i].cfg->name, unfused[i],
                    b->sc->reg->configs[i].cfg->name);
    free(unfused);
    return FR_OK;
}

/* ---- the plan ---- */

fr_status fr_sweep_plan_open(fr_sweep_plan *p, const fr_plan_scope *scope, const char *calib,
                             fr_error *err)
{
    *p = (fr_sweep_plan){.scope = *scope};
    if (calib)
        return fr_calib_open(calib, &p->calib, err);
    return FR_OK;
}

fr_status fr_sweep_plan_build(fr_sweep_plan *p, fr_dataset *ds, int resuming,
                              fr_sweep_stats *stats, fr_error *err)
{
    builder b = {.p = p, .sc = &p->scope, .ds = ds, .stats = stats, .resuming = resuming};
    fr_status st;
    if ((st = plan_sources(&b, err)) != FR_OK || (st = plan_configs(&b, err)) != FR_OK ||
        (st = plan_tensors(&b, err)) != FR_OK)
        return st;
    if (p->calib && (st = attach_calibration(&b, err)) != FR_OK)
        return st;
    if (p->scope.fused_global_scale && (st = attach_group_amax(&b, err)) != FR_OK)
        return st;
    if ((st = drop_unmeasurable(&b, err)) != FR_OK)
        return st;
    /* tensors with work left: an expert stack's experts count once */
    for (size_t k = 0; k < p->n_items; k++)
        if (p->entries[k].stack != FR_PLAN_NO_STACK && p->entries[k].expert != 0 &&
            stats->n_items)
            stats->n_items--;
    return FR_OK;
}

void fr_sweep_plan_free(fr_sweep_plan *p)
{
    free(p->items);
    free(p->entries);
    free(p->item_configs);
    free(p->item_config_ids);
    free(p->config_ids);
    free(p->views);
    free(p->stacks);
    fr_calib_close(p->calib);
    *p = (fr_sweep_plan){.scope = p->scope};
}

/* ---- one item: the rules shared with the ranks of an MPI job ---- */

void fr_sweep_plan_item_on(fr_sweep_item *it, const fr_source *src, const fr_tensor *t,
                           uint32_t expert, fr_tensor *view)
{
    it->src = src;
    it->tensor = t;
    if (expert) {
        /* expert e on a view of rows e*out .. (e+1)*out of the stack: a
         * 2-D tensor [out, in] at its own offset in the file */
        fr_sweep_expert_view(t, expert - 1, view);
        it->tensor = view;
    }
    fr_sweep_matrix(it->tensor, &it->rows, &it->cols);
}

fr_status fr_sweep_plan_item_origin(const fr_sweep_item *it, uint64_t *tensor, uint32_t *expert,
                                    fr_error *err)
{
    const fr_source *src = it->src;
    uintptr_t tp = (uintptr_t)it->tensor, t0 = (uintptr_t)src->tensors;
    *tensor = 0;
    *expert = 0;
    if (tp >= t0 && tp < t0 + src->n_tensors * sizeof *src->tensors) {
        *tensor = (uint64_t)(it->tensor - src->tensors);
        return FR_OK;
    }
    /* an expert's view lies outside the source's tensors: its stack has
     * the same name, and the view's offset says which expert it is */
    size_t t = 0;
    while (t < src->n_tensors &&
           !(src->tensors[t].name == it->tensor->name && fr_sweep_expert_stack(&src->tensors[t])))
        t++;
    if (t == src->n_tensors || it->tensor->nbytes == 0 ||
        it->tensor->offset < src->tensors[t].offset)
        return fr_fail(err, FR_E_FAIL, "'%s': an item that names no tensor of its source",
                       it->tensor->name);
    *tensor = t;
    if (it->tensor->encoding == FR_ENC_MEMBERS) /* fr_sweep_expert_view */
        *expert = (uint32_t)it->tensor->offset + 1;
    else
        *expert = (uint32_t)((it->tensor->offset - src->tensors[t].offset) / it->tensor->nbytes) + 1;
    return FR_OK;
}

fr_status fr_sweep_plan_item_calib(fr_calib_file *cf, const fr_sweep_item *it, uint32_t expert,
                                   uint32_t n_experts, int has_lm_head, int quiet,
                                   fr_calib_stats *out, const char **matched, fr_error *err)
{
    /* an expert stack's items: expert e's slice of the stack's per-expert
     * statistics ([E, in, in], core/calib.h), under the stack's name */
    if (expert) {
        if (matched)
            *matched = it->tensor->name;
        return fr_calib_lookup_expert_weight(cf, it->tensor, (int64_t)expert - 1, n_experts,
                                             it->cols, quiet, out, err);
    }
    return fr_calib_lookup_weight(cf, it->tensor, it->cols, has_lm_head, quiet, out, matched, err);
}
