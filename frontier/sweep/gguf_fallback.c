/*
 * Rows a configuration's GGUF type cannot hold (frontier/sweep/gguf_fallback.h).
 */
#include "frontier/sweep/gguf_fallback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "quantizers/ggml_blocks.h" /* llama-quantize's fallback rule */

const char *fr_gguf_fallback_type(const fr_config_ref *ref, int64_t cols)
{
    const fr_ggml_params *p = fr_ggml_params_by_name(fr_config_traits_of(ref)->gguf_type);
    const fr_ggml_params *stored = p ? fr_ggml_stored_type(p, cols) : NULL;
    return stored && stored != p ? stored->name : NULL;
}

/* A row length with fallbacks: its tensors and its (configuration, type) pairs. */
typedef struct row_length {
    int64_t cols;
    size_t n_tensors;
    const char *example, *last; /* the first tensor's name, the last one counted */
    size_t n_pairs;
    const char **config, **stored;
} row_length;

static int add_pair(row_length *r, const char *config, const char *stored)
{
    for (size_t i = 0; i < r->n_pairs; i++)
        if (!strcmp(r->config[i], config))
            return 1;
    const char **c = realloc(r->config, (r->n_pairs + 1) * sizeof *c);
    if (c)
        r->config = c;
    const char **s = realloc(r->stored, (r->n_pairs + 1) * sizeof *s);
    if (s)
        r->stored = s;
    if (!c || !s)
        return 0;
    r->config[r->n_pairs] = config;
    r->stored[r->n_pairs++] = stored;
    return 1;
}

/* The row length of cols in lengths[0..*n), appended when new (NULL: no memory). */
static row_length *length_of(row_length **lengths, size_t *n, int64_t cols)
{
    for (size_t i = 0; i < *n; i++)
        if ((*lengths)[i].cols == cols)
            return &(*lengths)[i];
    row_length *more = realloc(*lengths, (*n + 1) * sizeof *more);
    if (!more)
        return NULL;
    *lengths = more;
    more[*n] = (row_length){.cols = cols};
    return &more[(*n)++];
}

/* "ggml-q2_k, ggml-q3_k as q4_0; ggml-q4_k as q5_0" into buf: the pairs
 * grouped by type, in the order the types first appear. */
static void describe_pairs(const row_length *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_pairs && used < len; i++) {
        int first = 1;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(r->stored[k], r->stored[i]) != 0;
        if (!first)
            continue;
        for (size_t j = i; j < r->n_pairs && used < len; j++)
            if (!strcmp(r->stored[j], r->stored[i]))
                used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                         j == i ? (used ? "; " : "") : ", ", r->config[j]);
        if (used < len)
            used += (size_t)snprintf(buf + used, len - used, " as %s", r->stored[i]);
    }
}

void fr_gguf_fallback_report(const fr_sweep_item *items, size_t n_items)
{
    row_length *lengths = NULL;
    size_t n = 0;
    int ok = 1;
    for (size_t k = 0; k < n_items && ok; k++) {
        const fr_sweep_item *it = &items[k];
        for (size_t c = 0; c < it->n_configs && ok; c++) {
            const char *stored = fr_gguf_fallback_type(it->configs[c], it->cols);
            if (!stored)
                continue;
            row_length *r = length_of(&lengths, &n, it->cols);
            ok = r && add_pair(r, it->configs[c]->cfg->name, stored);
            /* an expert stack's items are consecutive and share the name */
            if (ok && (!r->last || strcmp(r->last, it->tensor->name))) {
                r->n_tensors++;
                r->last = it->tensor->name;
                if (!r->example)
                    r->example = it->tensor->name;
            }
        }
    }
    for (size_t i = 0; i < n && ok; i++) {
        char pairs[1536];
        describe_pairs(&lengths[i], pairs, sizeof pairs);
        fr_info("%zu tensor%s of %lld columns (e.g. '%s') stored as llama-quantize's fallback: "
                "%s; their rows measure that type",
                lengths[i].n_tensors, lengths[i].n_tensors == 1 ? "" : "s",
                (long long)lengths[i].cols, lengths[i].example, pairs);
    }
    for (size_t i = 0; i < n; i++) {
        free(lengths[i].config);
        free(lengths[i].stored);
    }
    free(lengths);
}
