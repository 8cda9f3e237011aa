/*
 * The fused groups of a checkpoint and their joint amax (docs/quantize.md,
 * "The fused-scale rule"): the members of a group are the 2-D floating-point
 * tensors fr_quantize_fused_group names alike (q/k/v_proj, gate/up_proj,
 * w1/w3, q_a_proj/kv_a_proj_with_mqa of one block); the joint amax is the
 * largest finite |w| over all of them. The
 * one scan both `frontier sweep --fused-global-scale` and `frontier
 * quantize` (for nvfp4-fused) use, so the row measured is the tensor
 * written.
 */
#ifndef FR_FUSED_SCALE_H
#define FR_FUSED_SCALE_H

#include <stddef.h>

#include "core/error.h"
#include "core/source.h"

/* The fused group a tensor belongs to for vLLM's loader, by name:
 * "<prefix>.self_attn.qkv" for q_proj/k_proj/v_proj, "<prefix>.mlp.gate_up"
 * for gate_proj/up_proj, "<prefix>.w13" for w1/w3, "<prefix>.qa_kva" for
 * q_a_proj/kv_a_proj_with_mqa; 0 (buf empty) when none. */
int fr_quantize_fused_group(const char *tensor, char *buf, size_t size);

typedef struct fr_fused_scan {
    size_t n_tensors;
    int *group;       /* per tensor of the source: its group, or -1 */
    size_t n_groups;
    float *amax;      /* per group: the joint amax */
    size_t *members;  /* per group: how many members */
    char (*name)[512]; /* per group: "<prefix>.self_attn.qkv", ... */
} fr_fused_scan;

/* Reads every member of every group of src once (float32). */
fr_status fr_fused_scan_source(const fr_source *src, fr_fused_scan *out, fr_error *err);
void fr_fused_scan_free(fr_fused_scan *s);

/* 1 and *amax (and *group, when not NULL) when tensor index t of the
 * source is a member of a group of two or more members; 0 otherwise. */
int fr_fused_scan_amax(const fr_fused_scan *s, size_t t, float *amax, const char **group);

#endif
