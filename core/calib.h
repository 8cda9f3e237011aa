/*
 * Calibration statistics (docs/calibration.md):
 * one safetensors file per model and calibration set holding, per linear
 * layer input, <module>.hessian [in, in], <module>.act_abs_mean [in],
 * <module>.act_sq_mean [in] and optionally <module>.sensitivity [1] or [2],
 * all float32, with __metadata__.token_count. A fused expert stack's module
 * holds them per expert, with a leading expert axis ([E, in, in], [E, in])
 * and __metadata__.<module>.expert_token_counts (fr_calib_lookup_expert).
 *
 * llama.cpp importance matrices (GGUF imatrix, legacy .dat; core/imatrix.h)
 * open through the same fr_calib_open, recognised by content: each weight's
 * module then holds only act_sq_mean (checked when the file is opened).
 *
 * Opening checks everything the header tells (names, dtypes, shapes,
 * token_count) without touching the data. The values of a module (NaN/Inf,
 * symmetry, signs, act_sq_mean = diag(H)) are checked the first time a
 * weight looks it up, or all at once by fr_calib_check_values: a hessian of
 * a 14336-input layer is 822 MB, and the sweep should not read a whole file
 * before it starts. Tensors stay memory-mapped (copied only when the file
 * misaligns them); fr_calib_release returns a module's pages.
 *
 * A problem of the file itself is an error (FR_E_FORMAT naming the file and
 * module); a file that simply has nothing fitting one weight gives that
 * weight a skip reason. One thread at a time: a lookup records what it
 * checked in the file handle.
 */
#ifndef FR_CALIB_H
#define FR_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frontier/plugin.h"

typedef struct fr_calib_file fr_calib_file;

#define FR_CALIB_REASON_MAX 512

/* What a lookup found for one weight. */
typedef struct fr_calib_stats {
    int found;                /* 1: calib is filled; 0: skip_reason says why not */
    frontier_calib calib;     /* cols and float32 host pointers into the file; a
                                 pointer is NULL where the module lacks that tensor */
    const char *module;       /* the module the statistics are stored under (the
                                 q_proj of a block for its k_proj); owned by the file */
    int n_sensitivity;        /* 0 (absent), 1 (alpha) or 2 (alpha, fit's relative residual) */
    int64_t expert;           /* fr_calib_lookup_expert: the expert; else -1 */
    int64_t expert_tokens;    /* that expert's token count; -1 without an expert axis */
    int fallback;             /* 1: the expert had no tokens, calib holds the token-weighted
                                 mean of the other experts' statistics */
    float sensitivity[2];
    char skip_reason[FR_CALIB_REASON_MAX]; /* "" when found */
} fr_calib_stats;

/* Opens and checks the header of a calibration file. Errors: FR_E_IO (cannot
 * open or map), FR_E_FORMAT (not safetensors, or a layout problem), FR_E_NOMEM. */
fr_status fr_calib_open(const char *path, fr_calib_file **out, fr_error *err);
void fr_calib_close(fr_calib_file *cf);

/* The same from memory (the fuzz targets): data[0..size) stays the caller's
 * and must outlive the handle; name stands for the path in messages and
 * decides, by a ".dat" ending, content that is recognised by nothing else. */
fr_status fr_calib_open_memory(const void *data, size_t size, const char *name,
                               fr_calib_file **out, fr_error *err);

const char *fr_calib_path(const fr_calib_file *cf);
int64_t fr_calib_token_count(const fr_calib_file *cf);
size_t fr_calib_module_count(const fr_calib_file *cf);

/* Nonzero (an fr_imatrix_format of core/imatrix.h) when the file is a
 * llama.cpp importance matrix: diagonal statistics only, and a token count
 * of 0 for a legacy .dat (which records none). */
int fr_calib_is_imatrix(const fr_calib_file *cf);

/* The input dimension of module (0: only a sensitivity), -1 when absent. */
int64_t fr_calib_module_in(const fr_calib_file *cf, const char *module);

/* "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj"
 * into buf (a name without ".weight" is kept whole); returns buf, or NULL
 * when buf is too small. */
const char *fr_calib_module_of(const char *weight_name, char *buf, size_t len);

/* The statistics for weight_name, a weight whose input dimension is cols.
 * FR_OK with out->found 1, or FR_OK with out->found 0 and a skip reason
 * (no statistics, or their input dimension is not cols); an error
 * (FR_E_FORMAT) when the module's values are malformed. */
fr_status fr_calib_lookup(fr_calib_file *cf, const char *weight_name, int64_t cols,
                          fr_calib_stats *out, fr_error *err);

/* Expert e of an expert stack of n_experts experts, each [out, cols]
 * (docs/formats.md "Expert tensors"): the statistics of the stack's module
 * with a leading expert axis (hessian [E, in, in], vectors [E, in],
 * __metadata__.<module>.expert_token_counts), expert e's slices as an
 * ordinary 2-D view. An expert with no tokens gets the token-weighted mean
 * of the experts that had some (out->fallback 1); when none had any, a skip
 * reason. A legacy .dat stores a stack as one entry of n_experts x cols
 * values and no token counts: it is split on the first such lookup, an
 * expert whose values are all 1 (llama.cpp's mark of no tokens) takes the
 * plain mean of the others, and expert_tokens is -1 (0 for that one).
 * The lookup rules, value checks and skip reasons are
 * fr_calib_lookup's; errors (FR_E_FORMAT, naming file, module and tensor):
 * statistics of another expert count, or statistics without an expert
 * axis. fr_calib_lookup of a module with an expert axis gives a skip
 * reason (the tensor is not measured per expert). */
fr_status fr_calib_lookup_expert(fr_calib_file *cf, const char *weight_name, int64_t cols,
                                 int64_t expert, int64_t n_experts, fr_calib_stats *out,
                                 fr_error *err);

/* The expert count of module's statistics: 0 without an expert axis, -1
 * when the file has no such module. */
int64_t fr_calib_module_experts(const fr_calib_file *cf, const char *module);

/* Returns the mapped pages (and any aligned copy) of the module behind stats;
 * the pointers in stats are invalid afterwards until the next lookup. */
void fr_calib_release(fr_calib_file *cf, const fr_calib_stats *stats);

/* Checks the values of every module (reads the whole file); the first
 * problem is the error. */
fr_status fr_calib_check_values(fr_calib_file *cf, fr_error *err);

/* The modules of the file that none of weight_names[0..n) looks up (by the
 * matching rules, regardless of dimensions), sorted by name: *names is a
 * malloc'd array of *n_names pointers owned by the file (free the array
 * only; NULL when there are none). */
fr_status fr_calib_unmatched(const fr_calib_file *cf, const char *const *weight_names,
                             size_t n_weights, const char ***names, size_t *n_names,
                             fr_error *err);

/* The documented tolerances (docs/calibration.md, "Checks"). */
#define FR_CALIB_SYMMETRY_TOL 1e-4 /* |H_ij - H_ji| <= tol * max|H| */
#define FR_CALIB_DIAG_REL_TOL 1e-3 /* |s_j - H_jj| <= rel * max(|s_j|, |H_jj|) */
#define FR_CALIB_DIAG_ABS_TOL 1e-6 /*                 + abs * max_k H_kk */

#endif
