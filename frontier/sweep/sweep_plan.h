/*
 * The plan of a sweep (frontier/sweep/sweep_plan.c): the items handed to an
 * executor (frontier/exec/executor.h), and what the row sink
 * (frontier/sweep/sweep_sink.h) needs to know of each.
 *
 * Building it fills the dataset's /sources, /configs and /tensors (checked
 * against the output when resuming) and records whole-tensor and
 * unmeasurable pairs in /skipped; then every selected tensor of every
 * source is one item with the configurations it has no row for yet, and an
 * expert stack [E, out, in] (docs/formats.md "Expert tensors") is E items,
 * one per expert, each on its own view of the stack's bytes. Each item gets
 * its calibration statistics (--calib) and its fused group's joint amax
 * (--fused-global-scale); pairs a tensor cannot be measured with (missing
 * statistics, over --max-memory and not row-local, no fused group) leave it.
 *
 * The item helpers at the end are the plan's own rules for one item, shared
 * with the ranks of an MPI job (frontier/sweep/sweep_mpi.c), which rebuild
 * rank 0's items from (source, tensor, expert).
 */
#ifndef FR_SWEEP_PLAN_H
#define FR_SWEEP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/calib.h"
#include "core/error.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/dataset/dataset.h"
#include "frontier/exec/executor.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_select.h"

#define FR_PLAN_NO_STACK ((size_t)-1)

/* What a plan is made of; the caller's, and it outlives the plan. */
typedef struct fr_plan_scope {
    const fr_registry *reg;
    const fr_config_ref *const *configs; /* the selected configurations */
    size_t n_configs;
    const fr_source *const *sources;
    size_t n_sources;
    const fr_tensor_filter *filter;      /* --include, --exclude */
    int64_t min_numel;                   /* smaller tensors are skipped */
    size_t max_memory;                   /* --max-memory (frontier/exec/blocked.h), 0: none */
    int fused_global_scale;              /* attach the fused groups' joint amax */
    int diagonal_output_error;           /* statistics without a Hessian give the
                                          * output error of their diagonal */
    const char *output;                  /* the dataset file, named in messages */
} fr_plan_scope;

/* Where an item comes from, parallel to the items. */
typedef struct fr_plan_entry {
    size_t ds_tensor;         /* index into the dataset's tensors */
    uint32_t source_id;
    size_t first_config;      /* offset of the item's configurations in item_configs */
    size_t stack;             /* index into stacks, or FR_PLAN_NO_STACK */
    uint32_t expert;          /* in a stack: the item's expert */
    frontier_calib calib;     /* its statistics, when items[k].calib points here */
} fr_plan_entry;

/* An expert stack: n_experts items, whose outcomes make the stack's rows. */
typedef struct fr_plan_stack {
    size_t ds_tensor;         /* index into the dataset's tensors */
    uint32_t n_experts;
    int64_t rows, cols;       /* one expert's matrix */
} fr_plan_stack;

typedef struct fr_sweep_plan {
    fr_plan_scope scope;
    fr_calib_file *calib;               /* --calib, or NULL */
    fr_sweep_item *items;               /* for the executor */
    fr_plan_entry *entries;             /* per item */
    size_t n_items;
    const fr_config_ref **item_configs; /* every item's configurations, flattened */
    uint32_t *item_config_ids;          /* their config_ids, parallel */
    uint32_t *config_ids;               /* per selected configuration: its config_id */
    fr_tensor *views;                   /* every expert's view, all stacks */
    size_t n_views;
    fr_plan_stack *stacks;
    size_t n_stacks;
} fr_sweep_plan;

/* An empty plan of scope; opens the calibration statistics when calib is
 * not NULL (a file that cannot be read fails here, before the output is
 * touched). The plan is fr_sweep_plan_free's to free, also on failure. */
fr_status fr_sweep_plan_open(fr_sweep_plan *p, const fr_plan_scope *scope, const char *calib,
                             fr_error *err);
/* Plans into ds: a new dataset, or (resuming) the output read back, whose
 * sources, configurations and tensor shapes must be this run's. Counts the
 * tensors into stats (n_tensors, n_selected, n_skipped, n_excluded, n_items,
 * n_rows_resumed, bytes). */
fr_status fr_sweep_plan_build(fr_sweep_plan *p, fr_dataset *ds, int resuming,
                              fr_sweep_stats *stats, fr_error *err);
void fr_sweep_plan_free(fr_sweep_plan *p);

/* Item it on tensor t of src: t itself (expert 0), or expert e of the
 * expert stack t (expert e + 1) on *view (fr_sweep_expert_view); with its
 * matrix view. Its configurations, statistics and joint amax are left as
 * they are. */
void fr_sweep_plan_item_on(fr_sweep_item *it, const fr_source *src, const fr_tensor *t,
                           uint32_t expert, fr_tensor *view);
/* The inverse: the index of its tensor among it->src's tensors and its
 * expert (0, or e + 1 on a view of expert e of that stack). FR_E_FAIL when
 * the item's tensor is neither one of its source's nor a view of one. */
fr_status fr_sweep_plan_item_origin(const fr_sweep_item *it, uint64_t *tensor, uint32_t *expert,
                                    fr_error *err);
/* The calibration statistics of item it (expert as above, of n_experts):
 * an expert its slice of the stack's, any other tensor its own module's
 * (a tied embedding: lm_head's, when has_lm_head is 0), by the rules of
 * frontier/model/calib_attach.h. *matched (may be NULL): the name they were
 * found under. quiet: no info or warning lines. */
fr_status fr_sweep_plan_item_calib(fr_calib_file *cf, const fr_sweep_item *it, uint32_t expert,
                                   uint32_t n_experts, int has_lm_head, int quiet,
                                   fr_calib_stats *out, const char **matched, fr_error *err);

#endif
