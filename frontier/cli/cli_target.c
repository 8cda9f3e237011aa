/* allocate --target FORMAT (frontier/cli/cli_target.h). */
#include "frontier/cli/cli_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/readers.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/checkpoint/storable.h"
#include "frontier/dataset/keep_rows.h"
#include "frontier/exec/builtins.h"
#include "frontier/model/block_source.h"
#include "frontier/model/tensors.h"

/* The pairs of tensor t (position ti) of ds, whose model tensor is mt in src. */
static void mark_tensor(const fr_registry *reg, fr_qformat fmt, const fr_dataset *ds, size_t ti,
                        const fr_source *src, const fr_tensor *mt, cli_target *tg)
{
    int64_t rows, cols, experts = 1;
    fr_sweep_matrix(mt, &rows, &cols);
    if (fr_sweep_expert_stack(mt)) {
        experts = mt->shape[0];
        rows = mt->shape[1];
        cols = mt->shape[2];
    }
    int hit = 0;
    for (size_t c = 0; c < ds->n_configs; c++) {
        const char *name = ds->configs[c].name;
        const char *why = NULL;
        char buf[512];
        if (!fr_dataset_is_keep(name)) { /* keep: the tensor as released, copied */
            const fr_config_ref *ref = fr_registry_find_config(reg, name);
            why = ref ? fr_storable_refusal(reg, fmt, src, mt, rows, cols, experts, ref, buf,
                                            sizeof buf)
                      : "not a built-in configuration (a plugin's: its writer is unknown here)";
        }
        tg->storable[ti * ds->n_configs + c] = why == NULL;
        if (!why)
            continue;
        if (!tg->n_refused)
            snprintf(tg->example, sizeof tg->example, "'%s' under '%s': %s", mt->name, name,
                     why);
        tg->n_refused++;
        hit = 1;
    }
    tg->n_tensors_hit += hit;
}

fr_status cli_target_build(const char *format, const fr_dataset *ds, const char *model,
                           cli_target *tg, fr_error *err)
{
    memset(tg, 0, sizeof *tg);
    int fmt = fr_qformat_from_name(format);
    if (fmt < 0)
        return fr_fail(err, FR_E_USAGE,
                       "unknown --target '%s' (gguf, compressed-tensors or dequantized)", format);
    if (model && ds->n_sources != 1)
        return fr_fail(err, FR_E_USAGE, "--model names one model, and the dataset has %zu sources",
                       ds->n_sources);
    tg->storable = calloc(ds->n_tensors * ds->n_configs + 1, 1);
    if (!tg->storable)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fr_registry reg;
    fr_status st = fr_registry_init(&reg, err);
    if (st != FR_OK)
        return st;
    for (size_t s = 0; s < ds->n_sources && st == FR_OK; s++) {
        const char *path = model ? model : ds->sources[s].path;
        fr_source *src = NULL;
        if ((st = fr_block_source_open(path, &src, err)) != FR_OK) {
            fr_error inner = *err;
            st = fr_fail(err, st,
                         "--target reads the model the dataset was swept from (each tensor's "
                         "shape and whether the embedding is tied; --model names another "
                         "copy): %s",
                         inner.msg);
            break;
        }
        size_t *sorted = fr_source_sorted_by_name(src);
        if (!sorted && src->n_tensors)
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
        for (size_t t = 0; t < ds->n_tensors && st == FR_OK; t++) {
            if (ds->tensors[t].source_id != ds->sources[s].source_id)
                continue;
            long at = fr_source_find_tensor(src, sorted, ds->tensors[t].name);
            const fr_tensor *mt = at >= 0 ? &src->tensors[at] : NULL;
            if (!mt)
                st = fr_fail(err, FR_E_MISMATCH, "'%s' has no tensor '%s', which the dataset has",
                             path, ds->tensors[t].name);
            else
                mark_tensor(&reg, (fr_qformat)fmt, ds, t, src, mt, tg);
        }
        free(sorted);
        fr_source_close(src);
    }
    fr_registry_free(&reg);
    return st;
}

void cli_target_free(cli_target *tg)
{
    free(tg->storable);
    tg->storable = NULL;
}
