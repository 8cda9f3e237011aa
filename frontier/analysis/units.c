/*
 * Allocation units (docs/analysis.md, "Expert units"): by default every
 * stored tensor is one unit; with expert units, the 2-D experts of one
 * (layer, projection), `...mlp.experts.<N>.gate_proj.weight` for every N,
 * are one unit whose members are taken in expert order.
 */
#include "frontier/analysis/units.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The number of dimensions of a "4x64x64" shape string. */
static int shape_dims(const char *shape)
{
    if (!shape || !*shape)
        return 0;
    int n = 1;
    for (const char *p = shape; *p; p++)
        n += *p == 'x';
    return n;
}

int fr_expert_unit_key(const char *name, const char *cls, const char *shape, char *buf,
                       size_t size, uint64_t *index)
{
    if (!name || !cls || strcmp(cls, "expert") || shape_dims(shape) != 2)
        return 0;
    /* the first dotted component of digits right after one ending in "experts" */
    for (const char *p = strstr(name, "experts."); p; p = strstr(p + 1, "experts.")) {
        const char *d = p + strlen("experts.");
        const char *e = d;
        while (isdigit((unsigned char)*e))
            e++;
        if (e == d || (*e != '.' && *e != '\0') || e - d > 18)
            continue;
        size_t pre = (size_t)(d - name), len = strlen(name);
        if (pre + 1 + (len - (size_t)(e - name)) + 1 > size)
            return 0;
        memcpy(buf, name, pre);
        buf[pre] = '*';
        strcpy(buf + pre + 1, e);
        *index = strtoull(d, NULL, 10);
        return 1;
    }
    return 0;
}

typedef struct unit_entry {
    const char *key;   /* the unit key: the tensor's name when it is alone */
    uint64_t index;    /* expert index */
    size_t tensor;     /* position in ds->tensors */
    size_t first;      /* smallest tensor position of its unit (second pass) */
} unit_entry;

static int cmp_key(const void *a, const void *b)
{
    const unit_entry *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

static int cmp_first(const void *a, const void *b)
{
    const unit_entry *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

fr_status fr_units_build(const fr_dataset *ds, const unsigned char *keep, int expert_units,
                         fr_units *u, fr_error *err)
{
    memset(u, 0, sizeof *u);
    size_t n = 0;
    for (size_t t = 0; t < ds->n_tensors; t++)
        n += !keep || keep[t];
    unit_entry *e = calloc(n + 1, sizeof *e);
    char **keys = calloc(n + 1, sizeof *keys);
    u->first = calloc(n + 2, sizeof *u->first);
    u->member = calloc(n + 1, sizeof *u->member);
    u->name = calloc(n + 1, sizeof *u->name);
    u->unit_of = malloc((ds->n_tensors + 1) * sizeof *u->unit_of);
    if (!e || !keys || !u->first || !u->member || !u->name || !u->unit_of)
        goto nomem;
    size_t k = 0;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        u->unit_of[t] = SIZE_MAX;
        if (keep && !keep[t])
            continue;
        const fr_ds_tensor *ten = &ds->tensors[t];
        char buf[1024];
        e[k] = (unit_entry){ten->name, 0, t, t};
        if (expert_units &&
            fr_expert_unit_key(ten->name, ten->cls, ten->shape, buf, sizeof buf, &e[k].index)) {
            if (!(keys[k] = strdup(buf)))
                goto nomem;
            e[k].key = keys[k];
        }
        k++;
    }
    qsort(e, n, sizeof *e, cmp_key);
    /* a unit is placed where its first stored member is */
    for (size_t i = 0; i < n;) {
        size_t j = i, first = e[i].tensor;
        while (j < n && !strcmp(e[j].key, e[i].key)) {
            if (e[j].tensor < first)
                first = e[j].tensor;
            j++;
        }
        for (size_t x = i; x < j; x++)
            e[x].first = first;
        i = j;
    }
    qsort(e, n, sizeof *e, cmp_first);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || e[i].first != e[i - 1].first) {
            u->first[u->n_units] = i;
            if (!(u->name[u->n_units] = strdup(e[i].key)))
                goto nomem;
            u->n_units++;
        }
        u->member[i] = e[i].tensor;
        u->unit_of[e[i].tensor] = u->n_units - 1;
    }
    u->first[u->n_units] = n;
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(e);
    return FR_OK;
nomem:
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    free(e);
    fr_units_free(u);
    return fr_fail(err, FR_E_NOMEM, "out of memory");
}

void fr_units_free(fr_units *u)
{
    for (size_t i = 0; u->name && i < u->n_units; i++)
        free(u->name[i]);
    free(u->name);
    free(u->first);
    free(u->member);
    free(u->unit_of);
    memset(u, 0, sizeof *u);
}
