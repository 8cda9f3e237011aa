/*
 * Allocation units (docs/analysis.md, "Expert units"):
 * frontier/analysis/units.c.
 */
#ifndef FR_UNITS_H
#define FR_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "frontier/dataset/dataset.h"

/* The tensors pareto and allocate give one configuration each. By default
 * every stored tensor is a unit of its own; with expert units the 2-D
 * tensors of class expert whose name has an expert index right after a
 * component ending in "experts" (`mlp.experts.7.gate_proj.weight`,
 * `block_sparse_moe.experts.7.w1.weight`) form one unit per name with the
 * index replaced by '*' (`mlp.experts.*.gate_proj.weight`), members in
 * increasing expert index: one (layer, projection). Expert stacks (3-D)
 * and shared experts without an index stay units of their own. */
typedef struct fr_units {
    size_t n_units;
    size_t *first;    /* [n_units + 1]: unit u's members are member[first[u] .. first[u + 1]) */
    size_t *member;   /* positions in ds->tensors, in expert order within a unit */
    char **name;      /* [n_units]: the tensor's name, or the key with '*' */
    size_t *unit_of;  /* [ds->n_tensors]: the unit of a tensor, SIZE_MAX when not kept */
} fr_units;

/* The expert-unit key of a tensor (the name with the expert index replaced
 * by '*') and its index; 0 when it is not a member of an expert unit. */
int fr_expert_unit_key(const char *name, const char *cls, const char *shape, char *buf,
                       size_t size, uint64_t *index);

/* Units over the tensors with keep[t] != 0 (keep NULL: all), ordered by
 * their first stored member. */
fr_status fr_units_build(const fr_dataset *ds, const unsigned char *keep, int expert_units,
                         fr_units *u, fr_error *err);
void fr_units_free(fr_units *u);

#endif
