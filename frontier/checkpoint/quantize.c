/*
 * frontier quantize (docs/quantize.md): plan, refuse, write under a
 * temporary name, check, rename.
 *
 * 1. select: the recipe's tensor -> configuration map, or one --config over
 *    the tensors --include / --exclude pick; every refusal is made here.
 * 2. fused groups: NVFP4 members of q/k/v and gate/up take one global scale
 *    from their joint amax (vLLM loads them as one matrix with one scale).
 * 3. plan: the output tensors (names, dtypes, shapes, bytes) and shards.
 * 4. write: each tensor is quantized by the registry (the measured Q(W)),
 *    encoded, decoded again and compared with Q(W) bit for bit before its
 *    bytes go out; the rel_err of what was written goes to the report.
 * 5. the other files of the folder, config.json, the index, the report;
 *    then the temporary folder or file is renamed to OUT.
 */
#include "frontier/checkpoint/quantize.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/calib.h"
#include "core/call.h"
#include "core/log.h"
#include "core/pattern.h"
#include "core/safetensors_write.h"
#include "frontier/dataset/dataset_file.h"
#include "frontier/dataset/keep_rows.h"
#include "core/source.h"
#include "frontier/model/block_source.h"
#include "frontier/model/calib_attach.h"
#include "frontier/model/fused_scale.h"
#include "frontier/exec/metrics.h"
#include "frontier/checkpoint/quantize_gguf.h"
#include "frontier/checkpoint/quantize_ct.h"
#include "frontier/checkpoint/storable.h"
#include "frontier/model/tensors.h"
#include "frontier/recipe/recipe.h"
#include "quantizers/families.h"
#include "quantizers/nvfp4_group.h" /* the nvfp4-pack-quantized global scale */

#define MAX_LISTED 6 /* names quoted in one refusal; the rest are counted */

/* ---- the plan ---- */

typedef struct qtensor {
    const fr_tensor *t;
    const fr_config_ref *ref; /* NULL: copied as it is */
    int keep;                 /* the recipe says `keep` (copied as it is, reported) */
    fr_ct_scheme scheme;
    int64_t rows, cols;       /* one expert's matrix for an expert stack */
    int64_t experts;          /* E of an expert stack [E, out, in] (docs/formats.md), else 1 */
    int group;                /* index into plan.groups, -1 */
    float global_scale;       /* NVFP4 override (fused), NAN: the tensor's own */
    int has_group_amax;       /* traits.needs_group_amax: group_amax, its group's joint amax */
    float group_amax;         /* (frontier/model/fused_scale.h), handed to the quantizer */
    size_t first_entry, n_entries;
    int shard;
    double recipe_rel_err;    /* NAN when the recipe does not say */
    fr_metrics written, measured;
    double *expert_rel_err;   /* expert stacks: [2 x experts], written then measured, or NULL */
    int same_as_measured;
    int has_stats;            /* calib holds the tensor's statistics (--calib) */
    frontier_calib calib;     /* pointers into plan.calib's mapping (an expert stack: expert 0's) */
    frontier_calib *expert_calib; /* an expert stack under --calib: [experts], each expert's
                                     statistics (core/calib.h), or NULL */
    char stats_why[FR_CALIB_REASON_MAX]; /* why a lookup found none */
} qtensor;

typedef struct fused_group {
    char name[512];
    float amax;
    size_t n_members;
    int mixed;                /* members with different configurations */
} fused_group;

typedef struct plan {
    const fr_registry *reg;
    const fr_quantize_options *opt;
    fr_source *src;
    fr_calib_file *calib;     /* --calib, or NULL */
    int folder;               /* the model is a folder (OUT is one too) */
    char model_dir[PATH_MAX];
    qtensor *qt;
    size_t n_qt;
    fused_group *groups;
    size_t n_groups;
    int fused;                /* fused global scales in effect */
    fr_st_entry *entries;
    char **entry_names;
    size_t n_entries;
    int n_shards;
    char tmp[PATH_MAX + 32];
    char **shard_names;
    double err_sum, norm_sum;
} plan;

static void plan_free(plan *p)
{
    for (size_t i = 0; i < p->n_entries; i++)
        free(p->entry_names[i]);
    free(p->entry_names);
    free(p->entries);
    for (int i = 0; i < p->n_shards && p->shard_names; i++)
        free(p->shard_names[i]);
    free(p->shard_names);
    for (size_t i = 0; p->qt && i < p->n_qt; i++) {
        free(p->qt[i].expert_rel_err);
        free(p->qt[i].expert_calib);
    }
    free(p->qt);
    free(p->groups);
    if (p->calib)
        fr_calib_close(p->calib);
    if (p->src)
        fr_source_close(p->src);
}

/* "a, b, c (and 7 more)" of a list of names, into buf. */
typedef struct name_list {
    char text[2048];
    size_t n;
} name_list;

static void list_add(name_list *l, const char *name)
{
    size_t len = strlen(l->text);
    if (l->n < MAX_LISTED && len + strlen(name) + 8 < sizeof l->text)
        snprintf(l->text + len, sizeof l->text - len, "%s'%s'", l->n ? ", " : "", name);
    l->n++;
}

static const char *list_text(name_list *l)
{
    size_t len = strlen(l->text);
    if (l->n > MAX_LISTED)
        snprintf(l->text + len, sizeof l->text - len, " (and %zu more)", l->n - MAX_LISTED);
    return l->text;
}

static int needs_statistics(const plan *p, const fr_config_ref *ref)
{
    return (fr_config_quantizer(p->reg, ref)->flags &
            (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)) != 0;
}

/* What a calibrated configuration lacks to be computed on q (NULL:
 * nothing): the sweep's rule (frontier/sweep/sweep_plan.c missing_statistics), so a
 * tensor is written under a configuration exactly when the sweep measured
 * it under that configuration with the same file. */
static const char *missing_statistics(const plan *p, const qtensor *q, char *buf, size_t len)
{
    uint64_t flags = fr_config_quantizer(p->reg, q->ref)->flags;
    if (!p->calib)
        return "needs calibration statistics: give --calib FILE (the file the sweep measured "
               "it with)";
    if (!q->has_stats) {
        snprintf(buf, len, "needs calibration statistics: '%.300s' has none for it (%.500s)",
                 fr_calib_path(p->calib), q->stats_why);
        return buf;
    }
    if ((flags & FRONTIER_Q_NEEDS_HESSIAN) && !q->calib.hessian)
        return "needs a Hessian: this tensor's statistics have none (diagonal only)";
    if ((flags & FRONTIER_Q_NEEDS_ACT_STATS) && !q->calib.act_mean_abs && !q->calib.act_mean_sq)
        return "needs per-channel activation statistics: this tensor's statistics have none";
    return NULL;
}

/* Why a configuration has no writer in the format (NULL: it has one): the
 * format's rule (frontier/checkpoint/storable.c), then the statistics a
 * calibrated configuration needs. */
static const char *no_writer(const plan *p, const qtensor *q, char *buf, size_t len)
{
    const char *why = fr_storable_refusal(p->reg, p->opt->format, p->src, q->t, q->rows, q->cols,
                                          q->experts, q->ref, buf, len);
    if (!why && needs_statistics(p, q->ref))
        why = missing_statistics(p, q, buf, len);
    return why;
}

/* Whether the format has a writer for configuration ref (by its traits;
 * the encoders cannot store what a calibrated method chose). */
static int has_writer(const plan *p, const fr_config_ref *ref)
{
    if (p->opt->format == FR_QFORMAT_DEQUANTIZED)
        return 1;
    if (needs_statistics(p, ref))
        return 0;
    if (p->opt->format == FR_QFORMAT_GGUF)
        return fr_gguf_type_name(p->reg, ref) != NULL;
    fr_ct_scheme s;
    return fr_ct_scheme_of(p->reg, ref, &s) != FR_CT_NONE;
}

/* The configurations with a writer in the format, as a refusal lists them:
 * per quantizer, their names, or how many when there are more than
 * MAX_NAMED_WRITERS; into buf. */
#define MAX_NAMED_WRITERS 8
static const char *supported_configs(const plan *p, char *buf, size_t len)
{
    if (p->opt->format == FR_QFORMAT_DEQUANTIZED)
        return "every configuration of 'frontier quantizers' (those that need calibration "
               "statistics with --calib FILE holding them)";
    size_t used = 0;
    buf[0] = '\0';
#define PUT(...)                                                                             \
    do {                                                                                     \
        if (used < len) {                                                                    \
            int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                          \
            used = n_ < 0 ? len : used + (size_t)n_;                                         \
        }                                                                                    \
    } while (0)
    size_t c = 0;
    for (size_t e = 0; e < p->reg->n_entries; e++) {
        const frontier_quantizer *q = p->reg->entries[e].q;
        const fr_config_ref *first = &p->reg->configs[c];
        size_t n = 0;
        for (size_t k = 0; k < q->n_configs; k++)
            n += has_writer(p, &first[k]);
        c += q->n_configs;
        if (!n)
            continue;
        PUT("%s%s: ", used ? "; " : "", q->name);
        if (n > MAX_NAMED_WRITERS) {
            PUT("%zu of %zu configurations", n, q->n_configs);
            continue;
        }
        for (size_t k = 0, i = 0; k < q->n_configs; k++)
            if (has_writer(p, &first[k]))
                PUT("%s%s", i++ ? ", " : "", first[k].cfg->name);
    }
    if (!used)
        PUT("none");
    PUT(" (%s)", p->opt->format == FR_QFORMAT_GGUF
                     ? "on rows that are a multiple of the type's block, 32 or 256 elements; "
                       "calibrated ones with --calib"
                     : "each configuration's storage: 'frontier quantizers --json'");
#undef PUT
    return buf;
}

static qtensor *find_qt(plan *p, const char *name)
{
    for (size_t i = 0; i < p->n_qt; i++)
        if (!strcmp(p->qt[i].t->name, name))
            return &p->qt[i];
    return NULL;
}

/* Step 1 from a recipe JSON (frontier allocate -o; frontier/recipe/recipe.h). */
static fr_status select_recipe(plan *p, fr_error *err)
{
    const char *path = p->opt->recipe;
    fr_recipe recipe;
    fr_status st = fr_recipe_read(path, 0, &recipe, err);
    if (st != FR_OK)
        return st;
    name_list missing = {{0}, 0}, unknown = {{0}, 0}, unquantizable = {{0}, 0};
    for (size_t i = 0; i < recipe.n_tensors; i++) {
        const fr_recipe_tensor *item = &recipe.tensors[i];
        qtensor *q = find_qt(p, item->name);
        const fr_config_ref *ref =
            item->config ? fr_registry_find_config(p->reg, item->config) : NULL;
        char buf[256];
        if (!q) {
            list_add(&missing, item->name);
        } else if (fr_dataset_is_keep(item->config)) {
            q->keep = 1; /* as the source stores it: copied byte for byte */
        } else if (!ref) {
            list_add(&unknown, item->config ? item->config : "(not a string)");
        } else if (fr_sweep_skip_reason(q->t, 0, buf, sizeof buf)) {
            list_add(&unquantizable, item->name);
        } else {
            q->ref = ref;
        }
        if (q && !isnan(item->error))
            q->recipe_rel_err = item->error;
    }
    if (missing.n)
        st = fr_fail(err, FR_E_USAGE, "recipe '%s' names %zu tensor%s that '%s' does not have: %s",
                     path, missing.n, missing.n == 1 ? "" : "s", p->opt->model, list_text(&missing));
    else if (unknown.n)
        st = fr_fail(err, FR_E_USAGE,
                     "recipe '%s' names %zu unknown configuration%s: %s (see 'frontier quantizers')",
                     path, unknown.n, unknown.n == 1 ? "" : "s", list_text(&unknown));
    else if (unquantizable.n)
        st = fr_fail(err, FR_E_USAGE,
                     "recipe '%s' quantizes %zu tensor%s that cannot be quantized: %s (see "
                     "'frontier inspect')",
                     path, unquantizable.n, unquantizable.n == 1 ? "" : "s",
                     list_text(&unquantizable));
    if (st == FR_OK) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_qt; i++)
            n += p->qt[i].ref != NULL || p->qt[i].keep;
        if (!n)
            st = fr_fail(err, FR_E_USAGE, "recipe '%s' quantizes no tensor", path);
    }
    fr_recipe_free(&recipe);
    return st;
}

/* Step 1 from --config [--include] [--exclude]. */
static fr_status select_config(plan *p, fr_error *err)
{
    const fr_config_ref *ref = fr_registry_find_config(p->reg, p->opt->config);
    if (!ref)
        return fr_fail(err, FR_E_USAGE, "unknown configuration '%s' (see 'frontier quantizers')",
                       p->opt->config);
    regex_t inc, exc;
    int have_inc = 0, have_exc = 0;
    fr_status st = FR_OK;
    if (p->opt->include) {
        if ((st = fr_pattern_compile(&inc, p->opt->include, "--include", err)) != FR_OK)
            return st;
        have_inc = 1;
    }
    if (p->opt->exclude) {
        if ((st = fr_pattern_compile(&exc, p->opt->exclude, "--exclude", err)) != FR_OK)
            goto done;
        have_exc = 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        char buf[256];
        if (fr_sweep_skip_reason(q->t, 0, buf, sizeof buf))
            continue;
        if (have_inc ? regexec(&inc, q->t->name, 0, NULL, 0) != 0
                     : (q->t->cls == FR_CLASS_EMBED || q->t->cls == FR_CLASS_LM_HEAD ||
                        q->t->cls == FR_CLASS_NORM))
            continue;
        if (have_exc && regexec(&exc, q->t->name, 0, NULL, 0) == 0)
            continue;
        q->ref = ref;
        n++;
    }
    if (!n)
        st = fr_fail(err, FR_E_USAGE, "no tensor of '%s' is selected%s", p->opt->model,
                     have_inc || have_exc ? " by --include / --exclude" : "");
done:
    if (have_inc)
        regfree(&inc);
    if (have_exc)
        regfree(&exc);
    return st;
}

/* --calib: each tensor under a configuration that needs statistics gets
 * them as the sweep attaches them (frontier/model/calib_attach.h). A malformed
 * module is an error; a tensor without statistics is refused by
 * check_writers, with every other such tensor. */
static fr_status attach_statistics(plan *p, fr_error *err)
{
    size_t n_need = 0, n_found = 0;
    for (size_t i = 0; i < p->n_qt; i++)
        n_need += p->qt[i].ref && needs_statistics(p, p->qt[i].ref);
    if (!p->opt->calib)
        return FR_OK;
    fr_status st = fr_calib_open(p->opt->calib, &p->calib, err);
    if (st != FR_OK)
        return st;
    if (!n_need) {
        fr_info("'%s' is not used: no selected configuration needs calibration statistics",
                p->opt->calib);
        return FR_OK;
    }
    int has_lm_head = fr_calib_has_lm_head(p->src->tensors, p->src->n_tensors);
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (!q->ref || !needs_statistics(p, q->ref))
            continue;
        fr_calib_stats cs;
        if (q->experts > 1) {
            /* each expert its own statistics, as the sweep measured it
             * (frontier/sweep/sweep_plan.c; docs/calibration.md) */
            q->expert_calib = calloc((size_t)q->experts, sizeof *q->expert_calib);
            if (!q->expert_calib)
                return fr_fail(err, FR_E_NOMEM, "out of memory");
            int64_t e = 0;
            for (; e < q->experts; e++) {
                if ((st = fr_calib_lookup_expert_weight(p->calib, q->t, e, q->experts, q->cols,
                                                        0, &cs, err)) != FR_OK)
                    return st;
                if (!cs.found) {
                    snprintf(q->stats_why, sizeof q->stats_why, "expert %lld: %.400s", (long long)e,
                             cs.skip_reason);
                    break;
                }
                q->expert_calib[e] = cs.calib;
            }
            if (e == q->experts) {
                q->calib = q->expert_calib[0];
                q->has_stats = 1;
                n_found++;
            }
            continue;
        }
        if ((st = fr_calib_lookup_weight(p->calib, q->t, q->cols, has_lm_head, 0, &cs, NULL, err)) !=
            FR_OK)
            return st;
        if (cs.found) {
            q->calib = cs.calib;
            q->has_stats = 1;
            n_found++;
        } else {
            snprintf(q->stats_why, sizeof q->stats_why, "%s", cs.skip_reason);
        }
    }
    fr_info("calibration statistics '%s' (%lld tokens): %zu of the %zu tensors under a "
            "calibrated configuration",
            fr_calib_path(p->calib), (long long)fr_calib_token_count(p->calib), n_found, n_need);
    return FR_OK;
}

/* Every selected configuration has a writer in the format, or nothing is written. */
static fr_status check_writers(plan *p, fr_error *err)
{
    name_list bad = {{0}, 0};
    const char *first_why = NULL;
    char why_buf[1024];
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (!q->ref)
            continue;
        char buf[1024];
        const char *why = no_writer(p, q, buf, sizeof buf);
        if (why) {
            char item[600];
            snprintf(item, sizeof item, "%s (%s)", q->t->name, q->ref->cfg->name);
            list_add(&bad, item);
            if (!first_why) {
                snprintf(why_buf, sizeof why_buf, "%s", why);
                first_why = why_buf;
            }
        }
        if (p->opt->format == FR_QFORMAT_COMPRESSED_TENSORS)
            fr_ct_scheme_of(p->reg, q->ref, &q->scheme);
    }
    if (!bad.n)
        return FR_OK;
    char supported_buf[2048];
    const char *supported = supported_configs(p, supported_buf, sizeof supported_buf);
    return fr_fail(err, FR_E_USAGE,
                   "%zu tensor%s cannot be written as %s: %s: %s%s; configurations with a %s "
                   "writer: %s",
                   bad.n, bad.n == 1 ? "" : "s", fr_qformat_name(p->opt->format),
                   list_text(&bad), first_why,
                   p->opt->config ? " (leave them out with --exclude REGEX)" : "",
                   fr_qformat_name(p->opt->format), supported);
}

static int needs_group_amax(const qtensor *q)
{
    return q->ref && fr_config_traits_of(q->ref)->needs_group_amax;
}

/* Tensors under a configuration that needs its fused group's joint amax
 * (traits.needs_group_amax: nvfp4-fused): the joint amax over every member
 * of their group in MODEL, whatever the members' configurations (the scan
 * the sweep's --fused-global-scale uses, so the tensor written is the row
 * measured), with or without --fused-global-scale; a tensor outside a
 * group of two or more is refused. */
static fr_status plan_fused_config(plan *p, fr_error *err)
{
    int any = 0;
    for (size_t i = 0; i < p->n_qt; i++)
        any |= needs_group_amax(&p->qt[i]);
    if (!any)
        return FR_OK;
    fr_fused_scan scan;
    fr_status st = fr_fused_scan_source(p->src, &scan, err);
    if (st != FR_OK)
        return st;
    name_list bad = {{0}, 0};
    const fr_config_ref *bad_ref = NULL;
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (!needs_group_amax(q))
            continue;
        if (!fr_fused_scan_amax(&scan, i, &q->group_amax, NULL)) {
            list_add(&bad, q->t->name);
            bad_ref = bad_ref ? bad_ref : q->ref;
            continue;
        }
        q->has_group_amax = 1;
        /* nvfp4-pack-quantized's global scale from the same joint amax, the
         * encoder's override (whole groups of 16 only; a dequantized tensor
         * with a short last group is the quantizer's Q(W) as it is) */
        fr_ct_scheme s;
        if (fr_ct_scheme_of(p->reg, q->ref, &s) == FR_CT_NVFP4 && q->cols % FR_NVFP4_GROUP == 0)
            q->global_scale = fr_nvfp4_global_scale(q->group_amax);
    }
    fr_fused_scan_free(&scan);
    if (bad.n) {
        const char *companion = fr_config_traits_of(bad_ref)->fused_companion_of;
        return fr_fail(err, FR_E_USAGE,
                       "%zu tensor%s cannot be written as %s: %s: not a member of a fused group "
                       "(q/k/v, gate/up, w1/w3, q_a/kv_a) with two or more members in '%s'%s%s%s",
                       bad.n, bad.n == 1 ? "" : "s", bad_ref->cfg->name, list_text(&bad),
                       p->opt->model, companion ? " (use " : "", companion ? companion : "",
                       companion ? ")" : "");
    }
    return FR_OK;
}

/* Configurations stored as nvfp4-pack-quantized (nvfp4, nvfp4-fused) are
 * one format to vLLM. */
static int both_nvfp4(const plan *p, const fr_config_ref *a, const fr_config_ref *b)
{
    fr_ct_scheme sa, sb;
    return a && b && fr_ct_scheme_of(p->reg, a, &sa) == FR_CT_NVFP4 &&
           fr_ct_scheme_of(p->reg, b, &sb) == FR_CT_NVFP4;
}

/* Step 2: the fused groups and their joint amax (a pass over their weights). */
static fr_status plan_fused(plan *p, fr_error *err)
{
    p->groups = calloc(p->n_qt ? p->n_qt : 1, sizeof *p->groups);
    if (!p->groups)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        char name[512];
        q->group = -1;
        if (!fr_quantize_fused_group(q->t->name, name, sizeof name))
            continue;
        size_t g = 0;
        while (g < p->n_groups && strcmp(p->groups[g].name, name))
            g++;
        if (g == p->n_groups) {
            snprintf(p->groups[g].name, sizeof p->groups[g].name, "%s", name);
            p->n_groups++;
        }
        q->group = (int)g;
        p->groups[g].n_members++;
    }
    /* a group whose members differ: warn (vLLM loads them into one matrix) */
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_config_ref *first = NULL;
        int seen = 0;
        for (size_t i = 0; i < p->n_qt; i++) {
            if (p->qt[i].group != (int)g)
                continue;
            if (!seen) {
                first = p->qt[i].ref;
                seen = 1;
            } else if (p->qt[i].ref != first && !both_nvfp4(p, p->qt[i].ref, first)) {
                p->groups[g].mixed = 1;
            }
        }
        if (p->groups[g].mixed && p->groups[g].n_members > 1) {
            char list[1024] = "";
            size_t used = 0;
            for (size_t i = 0; i < p->n_qt; i++)
                if (p->qt[i].group == (int)g && used < sizeof list - 1)
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s=%s",
                                             used ? ", " : "", p->qt[i].t->name,
                                             p->qt[i].ref ? p->qt[i].ref->cfg->name
                                                          : "unquantized");
            fr_log(FRONTIER_LOG_WARN,
                   "fused group '%s' has members in different formats (%s): vLLM loads them as "
                   "one matrix and needs one format",
                   p->groups[g].name, list);
        }
    }
    fr_status fst = plan_fused_config(p, err);
    if (fst != FR_OK || !p->fused)
        return fst;
    float *w = NULL;
    size_t cap = 0;
    fr_status st = FR_OK;
    for (size_t i = 0; i < p->n_qt && st == FR_OK; i++) {
        qtensor *q = &p->qt[i];
        if (q->group < 0 || !q->ref)
            continue;
        fr_ct_scheme s;
        if (fr_ct_scheme_of(p->reg, q->ref, &s) != FR_CT_NVFP4 || q->cols % FR_NVFP4_GROUP)
            continue;
        if ((size_t)q->t->numel > cap) {
            free(w);
            cap = (size_t)q->t->numel;
            if (!(w = malloc(cap * sizeof *w))) {
                st = fr_fail(err, FR_E_NOMEM, "out of memory loading '%s'", q->t->name);
                break;
            }
        }
        if ((st = fr_tensor_load_f32(p->src, q->t, w, err)) != FR_OK)
            break;
        float a = fr_ct_amax(w, q->t->numel);
        fused_group *fg = &p->groups[q->group];
        fg->amax = a > fg->amax ? a : fg->amax;
        fr_tensor_release(p->src, q->t);
    }
    free(w);
    if (st != FR_OK)
        return st;
    /* the shared divisor: gs = 448 * 6 / joint amax, for NVFP4 members of
     * groups with at least two NVFP4 members */
    for (size_t g = 0; g < p->n_groups; g++) {
        size_t n_nvfp4 = 0;
        for (size_t i = 0; i < p->n_qt; i++) {
            fr_ct_scheme s;
            if (p->qt[i].group == (int)g && p->qt[i].ref && p->qt[i].cols % FR_NVFP4_GROUP == 0 &&
                fr_ct_scheme_of(p->reg, p->qt[i].ref, &s) == FR_CT_NVFP4)
                n_nvfp4++;
        }
        if (n_nvfp4 < 2)
            continue;
        for (size_t i = 0; i < p->n_qt; i++) {
            fr_ct_scheme s;
            if (p->qt[i].group == (int)g && p->qt[i].ref && p->qt[i].cols % FR_NVFP4_GROUP == 0 &&
                fr_ct_scheme_of(p->reg, p->qt[i].ref, &s) == FR_CT_NVFP4 &&
                !p->qt[i].has_group_amax) /* one with its own joint amax keeps it */
                p->qt[i].global_scale = fr_nvfp4_global_scale(p->groups[g].amax);
        }
    }
    return FR_OK;
}

/* The parts of an expert stack [E, out, in] from one expert's parts
 * (docs/quantize.md, "Expert stacks"): each part gets a leading dimension
 * E, expert e's bytes at slice e, except weight_shape, which holds the
 * stack's three dimensions. Returns n. */
static size_t stack_parts(const qtensor *q, fr_ct_part *parts, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        fr_ct_part *pt = &parts[k];
        if (!strcmp(pt->suffix, "weight_shape")) {
            pt->shape[0] = 3;
            pt->nbytes = 3 * 8;
            continue;
        }
        for (int d = pt->ndim; d > 0; d--)
            pt->shape[d] = pt->shape[d - 1];
        pt->shape[0] = q->experts;
        pt->ndim++;
        pt->nbytes *= (uint64_t)q->experts;
    }
    return n;
}

/* Step 3: the output tensors and their shards. */
static fr_status plan_entries(plan *p, fr_error *err)
{
    size_t cap = p->n_qt * (FR_CT_MAX_MEMBERS > FR_CT_MAX_PARTS ? FR_CT_MAX_MEMBERS : FR_CT_MAX_PARTS) + 1;
    p->entries = calloc(cap, sizeof *p->entries);
    p->entry_names = calloc(cap, sizeof *p->entry_names);
    if (!p->entries || !p->entry_names)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        q->first_entry = p->n_entries;
        if (q->ref && p->opt->format == FR_QFORMAT_COMPRESSED_TENSORS) {
            fr_ct_part parts[FR_CT_MAX_PARTS];
            size_t n = fr_ct_parts(&q->scheme, q->rows, q->cols, q->t->dtype, parts, err);
            /* "<module>.weight" -> "<module>.weight_packed"; a stack named
             * after its parameter ("experts.gate_up_proj") -> "experts.gate_up_proj_packed" */
            size_t len = strlen(q->t->name);
            int dot_weight = len >= 7 && !strcmp(q->t->name + len - 7, ".weight");
            size_t base = dot_weight ? len - strlen("weight") : len;
            if (q->experts > 1)
                n = stack_parts(q, parts, n);
            for (size_t k = 0; k < n; k++) {
                fr_st_entry *e = &p->entries[p->n_entries];
                const char *suffix = dot_weight ? parts[k].suffix
                                                : parts[k].suffix + strlen("weight");
                char *name = malloc(base + strlen(suffix) + 1);
                if (!name)
                    return fr_fail(err, FR_E_NOMEM, "out of memory");
                memcpy(name, q->t->name, base);
                strcpy(name + base, suffix);
                p->entry_names[p->n_entries++] = name;
                e->name = name;
                e->dtype = parts[k].dtype;
                e->ndim = parts[k].ndim;
                for (int d = 0; d < parts[k].ndim; d++)
                    e->shape[d] = parts[k].shape[d];
                e->nbytes = parts[k].nbytes;
            }
        } else if (q->t->encoding == FR_ENC_MEMBERS) {
            /* a compressed-tensors weight of the release, copied: its members as stored */
            size_t nm = 0;
            const fr_tensor *m = fr_ct_source_members(p->src, q->t, &nm);
            if (!m || p->opt->format != FR_QFORMAT_COMPRESSED_TENSORS)
                return fr_fail(err, FR_E_USAGE,
                               "tensor '%s' (%s, %s) can be copied only to compressed-tensors "
                               "output; select it or write --format compressed-tensors",
                               q->t->name, q->t->dtype_name, fr_tensor_source_format(q->t));
            for (size_t k = 0; k < nm; k++) {
                fr_st_entry *e = &p->entries[p->n_entries];
                char *name = strdup(m[k].name);
                if (!name)
                    return fr_fail(err, FR_E_NOMEM, "out of memory");
                p->entry_names[p->n_entries++] = name;
                e->name = name;
                e->dtype = m[k].dtype_name;
                e->ndim = m[k].ndim;
                memcpy(e->shape, m[k].shape, sizeof e->shape);
                e->nbytes = m[k].nbytes;
            }
        } else {
            fr_st_entry *e = &p->entries[p->n_entries];
            char *name = strdup(q->t->name);
            if (!name)
                return fr_fail(err, FR_E_NOMEM, "out of memory");
            p->entry_names[p->n_entries++] = name;
            e->name = name;
            e->dtype = fr_dtype_name(q->t->dtype);
            e->ndim = q->t->ndim;
            memcpy(e->shape, q->t->shape, sizeof e->shape);
            e->nbytes = q->t->nbytes;
            if (q->t->encoding != FR_ENC_RAW || !fr_st_dtype_size(e->dtype))
                return fr_fail(err, FR_E_USAGE, "tensor '%s' (%s) cannot be copied to safetensors",
                               q->t->name, q->t->dtype_name);
        }
        q->n_entries = p->n_entries - q->first_entry;
    }
    /* shards: whole source tensors, a new one when the next would pass the limit */
    uint64_t limit = p->opt->max_shard_bytes ? p->opt->max_shard_bytes
                                             : FR_QUANTIZE_DEFAULT_SHARD_BYTES;
    uint64_t in_shard = 0;
    int shard = 0;
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        uint64_t bytes = fr_st_plan_data_bytes(p->entries + q->first_entry, q->n_entries);
        if (p->folder && in_shard && in_shard + bytes > limit) {
            shard++;
            in_shard = 0;
        }
        q->shard = shard;
        in_shard += bytes;
    }
    p->n_shards = shard + 1;
    p->shard_names = calloc((size_t)p->n_shards, sizeof *p->shard_names);
    if (!p->shard_names)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (int s = 0; s < p->n_shards; s++) {
        char name[64];
        if (p->n_shards == 1)
            snprintf(name, sizeof name, "model.safetensors");
        else
            snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, p->n_shards);
        if (!(p->shard_names[s] = strdup(name)))
            return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    return FR_OK;
}

/* ---- writing ---- */

static int same_bits(const float *a, const float *b, int64_t n, int64_t *where)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i] && !(isnan(a[i]) && isnan(b[i]))) { /* -0 == +0 */
            *where = i;
            return 0;
        }
    return 1;
}

static void metrics_of(const float *w, const float *w_hat, int64_t n, fr_metrics *m,
                       frontier_error_sums *sums)
{
    fr_error e = {0};
    fr_error_sums_init(sums);
    fr_error_sums_accumulate(w, w_hat, n, NULL, sums, &e);
    fr_metrics_from_sums(sums, m);
}

/* The metrics of W against W_hat for an expert stack of `experts`
 * matrices of `per` elements: each expert's sums as for one tensor, added
 * in expert order (max_abs_err the maximum), as the sweep makes a stack's
 * row (frontier/sweep/sweep_sink.c sum_experts); one expert: metrics_of. */
static void stack_metrics_of(const float *w, const float *w_hat, int64_t experts, int64_t per,
                             fr_metrics *m, frontier_error_sums *sums, double *expert_rel_err)
{
    if (experts <= 1) {
        metrics_of(w, w_hat, per, m, sums);
        return;
    }
    frontier_error_sums total;
    fr_error_sums_init(&total);
    for (int64_t e = 0; e < experts; e++) {
        frontier_error_sums x;
        fr_metrics mx;
        metrics_of(w + e * per, w_hat + e * per, per, &mx, &x);
        if (expert_rel_err)
            expert_rel_err[e] = mx.rel_err;
        total.sq_err += x.sq_err;
        total.sq_ref += x.sq_ref;
        total.sq_hat += x.sq_hat;
        total.dot += x.dot;
        if (x.max_abs_err > total.max_abs_err || e == 0)
            total.max_abs_err = x.max_abs_err;
    }
    *sums = total;
    fr_metrics_from_sums(sums, m);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* One quantized tensor: the registry's Q(W), the bytes, the check. An
 * expert stack is quantized, encoded and checked expert by expert (the
 * sweep's E matrices); its parts hold expert e at slice e (stack_parts). */
/* The layout's bytes of a quantized tensor (compressed-tensors, or a
 * shared global scale that changes the values): each expert encoded,
 * decoded into dec and held to the quantizer's Q(W) bit for bit, then the
 * parts written (compressed-tensors only). *written becomes dec. */
static fr_status encode_layout(plan *p, qtensor *q, fr_st_writer *wr, const float *w,
                               const float *w_hat, float *dec, const float **written,
                               frontier_call *call, fr_error *err)
{
    const int64_t experts = q->experts > 1 ? q->experts : 1;
    const int64_t per = q->rows * q->cols;
    const fr_dtype dt = q->t->dtype;
    const int overridden = !isnan(q->global_scale);
    fr_status st = FR_OK;
    uint8_t *bufs[FR_CT_MAX_PARTS] = {0}, *stack[FR_CT_MAX_PARTS] = {0};
    float *own_scale = NULL, *own_zero = NULL;
    fr_ct_scheme s = q->scheme;
    fr_ct_part parts[FR_CT_MAX_PARTS];
    if (p->opt->format != FR_QFORMAT_COMPRESSED_TENSORS)
        fr_ct_scheme_of(p->reg, q->ref, &s);
    size_t np = fr_ct_parts(&s, q->rows, q->cols, dt, parts, err);
    if (!np) {
        st = FR_E_USAGE;
        goto cleanup;
    }
    for (size_t k = 0; k < np; k++) {
        size_t sb = experts > 1 && !strcmp(parts[k].suffix, "weight_shape")
                        ? 24
                        : (size_t)parts[k].nbytes * (size_t)experts;
        if (!(bufs[k] = calloc(1, parts[k].nbytes ? parts[k].nbytes : 1)) ||
            !(stack[k] = calloc(1, sb ? sb : 1))) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory encoding '%s'", q->t->name);
            goto cleanup;
        }
    }
    /* scales the configuration chose itself (traits.storage_scales) */
    const frontier_config_traits *traits = fr_config_traits_of(q->ref);
    const int own_scales = s.kind == FR_CT_PACK && traits->storage_scales;
    const int64_t n_groups =
        q->rows * (s.group_size ? (q->cols + s.group_size - 1) / s.group_size : 1);
    if (own_scales && (!(own_scale = malloc((size_t)n_groups * sizeof *own_scale)) ||
                       !(own_zero = malloc((size_t)n_groups * sizeof *own_zero)))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory encoding '%s'", q->t->name);
        goto cleanup;
    }
    for (int64_t e = 0; e < experts; e++) {
        float *de = dec + e * per;
        fr_ct_scales own = {own_scale, s.symmetric ? NULL : own_zero};
        if (own_scales) {
            fr_call_release(call);
            fr_call_init(call, NULL, 0, q->t->name, q->ref->cfg->name);
            call->has_group_amax = q->has_group_amax;
            call->group_amax = q->group_amax;
            if ((st = fr_quantizer_storage_scales(p->reg, q->ref, w + e * per, q->rows,
                                                  q->cols, own_scale, own_zero, q->t->name,
                                                  call, err)) != FR_OK) {
                if (experts > 1)
                    fr_error_prefix(err, "expert %lld: ", (long long)e);
                goto cleanup;
            }
        }
        if ((st = fr_ct_encode(&s, w + e * per, q->rows, q->cols, dt, q->global_scale,
                               own_scales ? &own : NULL, bufs, err)) != FR_OK ||
            (st = fr_ct_decode(&s, (const uint8_t *const *)bufs, q->rows, q->cols, dt, de,
                               err)) != FR_OK) {
            if (experts > 1)
                fr_error_prefix(err, "expert %lld: ", (long long)e);
            goto cleanup;
        }
        int64_t at;
        /* a shared scale is not plain nvfp4's Q(W); a configuration that
         * needs the joint amax (nvfp4-fused) has it in its Q(W) */
        if ((!overridden || q->has_group_amax) && !same_bits(de, w_hat + e * per, per, &at)) {
            st = fr_fail(err, FR_E_FAIL,
                         "internal error: '%s' as %s decodes to %.9g at element %lld, the "
                         "quantizer gives %.9g",
                         q->t->name, q->ref->cfg->name, de[at], (long long)(e * per + at),
                         w_hat[e * per + at]);
            goto cleanup;
        }
        for (size_t k = 0; k < np; k++)
            if (experts == 1 || strcmp(parts[k].suffix, "weight_shape"))
                memcpy(stack[k] + (size_t)e * parts[k].nbytes, bufs[k], parts[k].nbytes);
    }
    *written = dec;
    if (p->opt->format == FR_QFORMAT_COMPRESSED_TENSORS) {
        if (experts > 1)
            np = stack_parts(q, parts, np);
        for (size_t k = 0; k < np && st == FR_OK; k++) {
            if (experts > 1 && !strcmp(parts[k].suffix, "weight_shape")) {
                /* the stack's shape [E, out, in] */
                put_le64(stack[k], (uint64_t)experts);
                put_le64(stack[k] + 8, (uint64_t)q->rows);
                put_le64(stack[k] + 16, (uint64_t)q->cols);
            }
            st = fr_st_writer_write(wr, stack[k], parts[k].nbytes, err);
        }
    }
cleanup:
    for (size_t k = 0; k < FR_CT_MAX_PARTS; k++) {
        free(bufs[k]);
        free(stack[k]);
    }
    free(own_scale);
    free(own_zero);
    return st;
}

static fr_status emit_quantized(plan *p, qtensor *q, fr_st_writer *wr, fr_error *err)
{
    const int64_t experts = q->experts > 1 ? q->experts : 1;
    const int64_t per = q->rows * q->cols, n = per * experts;
    const fr_dtype dt = q->t->dtype;
    fr_status st = FR_OK;
    float *w = malloc((size_t)n * sizeof *w);
    float *w_hat = malloc((size_t)n * sizeof *w_hat);
    float *dec = malloc((size_t)n * sizeof *dec);
    frontier_call call;
    fr_call_init(&call, NULL, 0, q->t->name, q->ref->cfg->name);
    if (!w || !w_hat || !dec) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory quantizing '%s'", q->t->name);
        goto done;
    }
    if ((st = fr_tensor_load_f32(p->src, q->t, w, err)) != FR_OK)
        goto done;
    fr_tensor_release(p->src, q->t);
    /* what the sweep measured: the registry's checked call, per expert */
    for (int64_t e = 0; e < experts; e++) {
        fr_call_release(&call);
        fr_call_init(&call, NULL, 0, q->t->name, q->ref->cfg->name);
        call.has_group_amax = q->has_group_amax; /* traits.needs_group_amax */
        call.group_amax = q->group_amax;
        if ((st = fr_quantizer_quantize_cpu(p->reg, q->ref, w + e * per, w_hat + e * per, q->rows,
                                            q->cols, !q->has_stats      ? NULL
                                            : q->expert_calib ? &q->expert_calib[e]
                                                              : &q->calib,
                                            q->t->name,
                                            &call, err)) != FR_OK) {
            if (st == FR_E_PLUGIN)
                st = FR_E_FORMAT; /* a built-in refuses only bad weights (non-finite) */
            if (experts > 1)
                fr_error_prefix(err, "expert %lld: ", (long long)e);
            goto done;
        }
    }
    const int overridden = !isnan(q->global_scale);
    const float *written = w_hat;
    if ((p->opt->format == FR_QFORMAT_COMPRESSED_TENSORS || overridden) &&
        (st = encode_layout(p, q, wr, w, w_hat, dec, &written, &call, err)) != FR_OK)
        goto done;
    if (p->opt->format == FR_QFORMAT_DEQUANTIZED && st == FR_OK) {
        /* Q(W) in the input's dtype; the report measures the stored values */
        unsigned es = fr_dtype_size(dt);
        uint8_t *out = malloc((size_t)n * es);
        if (!out) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", q->t->name);
            goto done;
        }
        fr_store_f32_as(dt, written, (size_t)n, out);
        for (int64_t i = 0; i < n; i++)
            dec[i] = fr_load_as_f32(dt, out + (size_t)i * es);
        written = dec;
        st = fr_st_writer_write(wr, out, (size_t)n * es, err);
        free(out);
    }
    if (st == FR_OK) {
        frontier_error_sums sums;
        if (experts > 1 && !q->expert_rel_err &&
            !(q->expert_rel_err = calloc(2 * (size_t)experts, sizeof *q->expert_rel_err))) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
            goto done;
        }
        stack_metrics_of(w, w_hat, experts, per, &q->measured, &sums,
                         q->expert_rel_err ? q->expert_rel_err + experts : NULL);
        stack_metrics_of(w, written, experts, per, &q->written, &sums, q->expert_rel_err);
        p->err_sum += sums.sq_err;
        p->norm_sum += sums.sq_ref;
        int64_t at;
        q->same_as_measured = same_bits(written, w_hat, n, &at);
    }
done:
    if (st != FR_OK && q->t)
        fr_error_prefix(err, "quantizing '%s' as %s: ", q->t->name, q->ref->cfg->name);
    fr_call_release(&call);
    free(w);
    free(w_hat);
    free(dec);
    return st;
}

static fr_status copy_bytes(plan *p, const fr_tensor *t, fr_st_writer *wr, fr_error *err)
{
    const void *raw = fr_tensor_raw(p->src, t);
    if (!raw && t->nbytes)
        return fr_fail(err, FR_E_IO, "cannot read tensor '%s' of '%s'", t->name, p->opt->model);
    fr_status st = fr_st_writer_write(wr, raw, (size_t)t->nbytes, err);
    fr_tensor_release(p->src, t);
    return st;
}

static fr_status emit_copy(plan *p, const qtensor *q, fr_st_writer *wr, fr_error *err)
{
    if (q->t->encoding != FR_ENC_MEMBERS)
        return copy_bytes(p, q->t, wr, err);
    /* a compressed-tensors weight of the release: its members byte for byte */
    size_t nm = 0;
    const fr_tensor *m = fr_ct_source_members(p->src, q->t, &nm);
    fr_status st = FR_OK;
    for (size_t k = 0; k < nm && st == FR_OK; k++)
        st = copy_bytes(p, &m[k], wr, err);
    return st;
}

/* --format gguf: the whole file (frontier/checkpoint/quantize_gguf.c) at p->tmp. */
static fr_status write_gguf(plan *p, uint64_t *data_bytes, fr_error *err)
{
    fr_gguf_item *items = calloc(p->n_qt ? p->n_qt : 1, sizeof *items);
    if (!items)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (q->ref && q->experts > 1 && !q->expert_rel_err &&
            !(q->expert_rel_err = calloc(2 * (size_t)q->experts, sizeof *q->expert_rel_err))) {
            free(items);
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        }
        items[i] = (fr_gguf_item){.t = q->t, .ref = q->ref, .rows = q->rows * q->experts,
                                  .cols = q->cols, .experts = q->experts,
                                  .expert_rel_err = q->ref ? q->expert_rel_err : NULL,
                                  .calib = q->has_stats ? &q->calib : NULL,
                                  .expert_calib = q->has_stats ? q->expert_calib : NULL};
    }
    fr_status st = fr_gguf_write(p->reg, p->src, items, p->n_qt, p->tmp, data_bytes, err);
    for (size_t i = 0; i < p->n_qt && st == FR_OK; i++) {
        if (!items[i].ref)
            continue;
        p->qt[i].written = items[i].written;
        p->qt[i].measured = items[i].measured;
        p->qt[i].same_as_measured = items[i].same_as_measured;
        p->err_sum += items[i].sums.sq_err;
        p->norm_sum += items[i].sums.sq_ref;
    }
    free(items);
    return st;
}

static void path_join(char *buf, size_t size, const char *dir, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static fr_status write_shards(plan *p, fr_error *err)
{
    static const char *const meta[] = {"format", "pt"};
    for (int s = 0; s < p->n_shards; s++) {
        size_t e0 = SIZE_MAX, e1 = 0;
        for (size_t i = 0; i < p->n_qt; i++)
            if (p->qt[i].shard == s) {
                e0 = p->qt[i].first_entry < e0 ? p->qt[i].first_entry : e0;
                e1 = p->qt[i].first_entry + p->qt[i].n_entries;
            }
        char path[PATH_MAX + 128];
        if (p->folder)
            path_join(path, sizeof path, p->tmp, p->shard_names[s]);
        else
            snprintf(path, sizeof path, "%s", p->tmp);
        fr_st_writer *wr;
        fr_status st = fr_st_writer_begin(path, p->entries + e0, e1 - e0, meta, 1, &wr, err);
        if (st != FR_OK)
            return st;
        for (size_t i = 0; i < p->n_qt && st == FR_OK; i++) {
            qtensor *q = &p->qt[i];
            if (q->shard != s)
                continue;
            st = q->ref ? emit_quantized(p, q, wr, err) : emit_copy(p, q, wr, err);
        }
        if (st != FR_OK) {
            fr_st_writer_abort(wr);
            return st;
        }
        if ((st = fr_st_writer_finish(wr, err)) != FR_OK)
            return st;
    }
    return FR_OK;
}

static fr_status write_json(const char *path, const cJSON *root, fr_error *err)
{
    char *text = cJSON_Print(root);
    char why[128];
    if (!text)
        return fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
    FILE *f = fopen(path, "wb");
    if (!f) {
        cJSON_free(text);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, why, sizeof why));
    }
    fputs(text, f);
    fputc('\n', f);
    cJSON_free(text);
    int bad = ferror(f) || fr_file_sync(f) != 0;
    if (fclose(f) != 0 || bad)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno ? errno : EIO, why, sizeof why));
    return FR_OK;
}

static fr_status write_index(plan *p, fr_error *err)
{
    if (!p->folder || p->n_shards == 1)
        return FR_OK;
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    uint64_t total = fr_st_plan_data_bytes(p->entries, p->n_entries);
    cJSON_AddNumberToObject(meta, "total_size", (double)total);
    cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
    for (size_t i = 0; i < p->n_qt; i++)
        for (size_t k = 0; k < p->qt[i].n_entries; k++)
            cJSON_AddStringToObject(map, p->entries[p->qt[i].first_entry + k].name,
                                    p->shard_names[p->qt[i].shard]);
    char path[PATH_MAX + 128];
    path_join(path, sizeof path, p->tmp, "model.safetensors.index.json");
    fr_status st = write_json(path, root, err);
    cJSON_Delete(root);
    return st;
}

/* QuantizationArgs of a scheme (compressed-tensors quant_args.py). */
static cJSON *quant_args(const fr_ct_scheme *s, fr_dtype model_dtype)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "num_bits", s->bits);
    cJSON_AddStringToObject(a, "type", s->kind == FR_CT_PACK ? "int" : "float");
    cJSON_AddBoolToObject(a, "symmetric", s->kind != FR_CT_PACK || s->symmetric);
    const char *strategy;
    int group = 0;
    switch (s->kind) {
    case FR_CT_NVFP4:
        strategy = "tensor_group";
        group = FR_NVFP4_GROUP;
        break;
    case FR_CT_PACK:
        strategy = s->group_size ? "group" : "channel";
        group = s->group_size;
        break;
    case FR_CT_MXFP4: /* the MXFP4A16 preset of quant_scheme.py */
        strategy = "group";
        group = s->group_size;
        break;
    default:
        strategy = s->fp8_granularity == FRONTIER_FP8_TENSOR    ? "tensor"
                   : s->fp8_granularity == FRONTIER_FP8_CHANNEL ? "channel"
                                                                : "block";
        break;
    }
    if (group)
        cJSON_AddNumberToObject(a, "group_size", group);
    else
        cJSON_AddNullToObject(a, "group_size");
    cJSON_AddStringToObject(a, "strategy", strategy);
    if (s->kind == FR_CT_FP8 && s->fp8_granularity == FRONTIER_FP8_BLOCK128) {
        cJSON *b = cJSON_AddArrayToObject(a, "block_structure");
        cJSON_AddItemToArray(b, cJSON_CreateNumber(128));
        cJSON_AddItemToArray(b, cJSON_CreateNumber(128));
    } else {
        cJSON_AddNullToObject(a, "block_structure");
    }
    cJSON_AddBoolToObject(a, "dynamic", 0);
    cJSON_AddNullToObject(a, "actorder");
    const char *scale = s->kind == FR_CT_NVFP4 ? "torch.float8_e4m3fn"
                        : s->kind == FR_CT_MXFP4 ? "torch.uint8" /* E8M0 exponents */
                        : s->kind == FR_CT_FP8 ? "torch.float32"
                        : fr_ct_pack_scale_dtype(model_dtype) == FR_DTYPE_F32 ? "torch.float32"
                                                                               : "torch.float16";
    cJSON_AddStringToObject(a, "scale_dtype", scale);
    if (s->kind == FR_CT_PACK && !s->symmetric)
        cJSON_AddStringToObject(a, "zp_dtype", "torch.int8");
    else
        cJSON_AddNullToObject(a, "zp_dtype");
    cJSON_AddStringToObject(a, "observer", "minmax");
    cJSON_AddObjectToObject(a, "observer_kwargs");
    return a;
}

/* Adds a weight's module to a config group's targets (once): the name
 * before ".weight", or before the parameter of an expert stack
 * ("mlp.experts" of "mlp.experts.gate_up_proj"). */
static void add_target(cJSON *grp, const char *tensor)
{
    cJSON *targets = cJSON_GetObjectItemCaseSensitive(grp, "targets");
    const char *last = strrchr(tensor, '.');
    size_t base = last ? (size_t)(last - tensor) : strlen(tensor);
    char *module = strndup(tensor, base);
    int listed = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, targets)
        listed |= module && cJSON_IsString(it) && !strcmp(it->valuestring, module);
    if (!listed)
        cJSON_AddItemToArray(targets, cJSON_CreateString(module ? module : ""));
    free(module);
}

static fr_status write_config_json(plan *p, fr_error *err)
{
    char in[PATH_MAX + 32], out[PATH_MAX + 128];
    path_join(in, sizeof in, p->model_dir, "config.json");
    path_join(out, sizeof out, p->tmp, "config.json");
    FILE *f = fopen(in, "rb");
    if (!f)
        return fr_fail(err, FR_E_IO, "cannot open '%s'", in);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = len > 0 ? malloc((size_t)len) : NULL;
    size_t got = text ? fread(text, 1, (size_t)len, f) : 0;
    fclose(f);
    cJSON *root = text ? cJSON_ParseWithLength(text, got) : NULL;
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': not a JSON object", in);
    }
    /* the release's own groups, for the weights copied as released */
    cJSON *released = cJSON_DetachItemFromObjectCaseSensitive(root, "quantization_config");
    cJSON *qc = cJSON_AddObjectToObject(root, "quantization_config");
    cJSON_AddStringToObject(qc, "quant_method", "compressed-tensors");
    cJSON *groups = cJSON_CreateObject();
    /* one config group per distinct scheme, in the order tensors first use it */
    fr_ct_scheme seen[64];
    size_t n_seen = 0;
    const char *formats[64] = {"dense"};
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (!q->ref)
            continue;
        size_t g = 0;
        while (g < n_seen && !fr_ct_scheme_equal(&seen[g], &q->scheme))
            g++;
        if (g == n_seen) {
            if (n_seen == 64) {
                cJSON_Delete(groups);
                cJSON_Delete(root);
                return fr_fail(err, FR_E_USAGE, "more than 64 distinct schemes in one checkpoint");
            }
            seen[n_seen] = q->scheme;
            formats[n_seen++] = fr_ct_format_name(q->scheme.kind);
            char name[32];
            snprintf(name, sizeof name, "group_%zu", g);
            cJSON *grp = cJSON_AddObjectToObject(groups, name);
            cJSON_AddArrayToObject(grp, "targets");
            cJSON_AddItemToObject(grp, "weights", quant_args(&q->scheme, q->t->dtype));
            cJSON_AddNullToObject(grp, "input_activations");
            cJSON_AddNullToObject(grp, "output_activations");
            cJSON_AddStringToObject(grp, "format", formats[g]);
        }
        char name[32];
        snprintf(name, sizeof name, "group_%zu", g);
        add_target(cJSON_GetObjectItemCaseSensitive(groups, name), q->t->name);
    }
    int mixed = 0;
    for (size_t g = 1; g < n_seen; g++)
        mixed |= strcmp(formats[g], formats[0]) != 0;
    /* weights copied as released keep their release's group (its
     * QuantizationArgs, activations and format), targets narrowed to them */
    const cJSON *old_groups = cJSON_GetObjectItemCaseSensitive(released, "config_groups");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        fr_ct_kind kind;
        const char *from;
        if (q->ref || !fr_ct_source_origin(p->src, q->t, &kind, &from))
            continue;
        char name[160];
        snprintf(name, sizeof name, "released_%.120s", from ? from : "group");
        cJSON *grp = cJSON_GetObjectItemCaseSensitive(groups, name);
        if (!grp) {
            const cJSON *og = from ? cJSON_GetObjectItemCaseSensitive(old_groups, from) : NULL;
            grp = og ? cJSON_Duplicate(og, 1) : cJSON_CreateObject();
            cJSON_DeleteItemFromObjectCaseSensitive(grp, "targets");
            cJSON_AddArrayToObject(grp, "targets");
            cJSON_DeleteItemFromObjectCaseSensitive(grp, "format");
            cJSON_AddStringToObject(grp, "format", fr_ct_format_name(kind));
            cJSON_AddItemToObject(groups, name, grp);
            if (n_seen == 0 && !mixed) {
                formats[0] = fr_ct_format_name(kind);
                n_seen = 1;
            }
            mixed |= strcmp(fr_ct_format_name(kind), formats[0]) != 0;
        }
        add_target(grp, q->t->name);
    }
    cJSON_Delete(released);
    cJSON_AddStringToObject(qc, "format", mixed ? "mixed-precision" : formats[0]);
    cJSON_AddItemToObject(qc, "config_groups", groups);
    /* modules a target regex might reach but that stay dense: 2-D weights not quantized */
    cJSON *ignore = cJSON_AddArrayToObject(qc, "ignore");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        size_t l = strlen(q->t->name);
        if (q->ref || q->t->ndim != 2 || q->t->cls == FR_CLASS_EMBED || l < 7 ||
            q->t->encoding == FR_ENC_MEMBERS ||
            strcmp(q->t->name + l - 7, ".weight"))
            continue;
        char *module = strndup(q->t->name, l - 7);
        cJSON_AddItemToArray(ignore, cJSON_CreateString(module ? module : ""));
        free(module);
    }
    cJSON_AddStringToObject(qc, "quantization_status", "compressed");
    cJSON_AddNullToObject(qc, "kv_cache_scheme");
    fr_status st = write_json(out, root, err);
    cJSON_Delete(root);
    return st;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t l = strlen(s), k = strlen(suffix);
    return l >= k && !strcmp(s + l - k, suffix);
}

static fr_status copy_file(const char *from, const char *to, fr_error *err)
{
    char why[128];
    FILE *in = fopen(from, "rb");
    if (!in)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", from,
                       fr_errno_text(errno, why, sizeof why));
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", to,
                       fr_errno_text(errno, why, sizeof why));
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            break;
    int bad_in = ferror(in), bad_out = ferror(out) || fr_file_sync(out) != 0;
    fclose(in);
    if (fclose(out) != 0 || bad_out)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", to,
                       fr_errno_text(errno ? errno : EIO, why, sizeof why));
    if (bad_in)
        return fr_fail(err, FR_E_IO, "cannot read '%s'", from);
    return FR_OK;
}

/* The folder's other files: tokenizer, generation config, ... Other
 * .safetensors files are left behind: a runtime without an index would
 * load them as weights. */
static fr_status copy_other_files(plan *p, fr_quantize_summary *sum, fr_error *err)
{
    DIR *d = opendir(p->model_dir);
    if (!d)
        return fr_fail(err, FR_E_IO, "cannot read folder '%s'", p->model_dir);
    fr_status st = FR_OK;
    struct dirent *de;
    while (st == FR_OK && (de = readdir(d))) {
        const char *name = de->d_name;
        char from[PATH_MAX + 256], to[PATH_MAX + 300];
        struct stat sb;
        if (name[0] == '.')
            continue;
        path_join(from, sizeof from, p->model_dir, name);
        if (stat(from, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            fr_log(FRONTIER_LOG_INFO, "not copied: '%s' (not a regular file)", from);
            continue;
        }
        if (ends_with(name, ".safetensors") || !strcmp(name, "model.safetensors.index.json")) {
            int is_model = 0;
            for (size_t f = 0; f < p->src->n_files; f++) {
                const char *base = strrchr(p->src->files[f].path, '/');
                is_model |= !strcmp(base ? base + 1 : p->src->files[f].path, name);
            }
            if (!is_model && strcmp(name, "model.safetensors.index.json"))
                fr_log(FRONTIER_LOG_INFO, "not copied: '%s' (a safetensors file that is not "
                                          "part of the model)", from);
            continue;
        }
        if (!strcmp(name, "config.json") && p->opt->format == FR_QFORMAT_COMPRESSED_TENSORS)
            continue; /* rewritten */
        path_join(to, sizeof to, p->tmp, name);
        st = copy_file(from, to, err);
        sum->n_files_copied += st == FR_OK;
    }
    closedir(d);
    return st;
}

/* A number printed so that it reads back as the same double (%.17g; cJSON's
 * own printing may drop the last digits), null when not finite. */
static cJSON *num_or_null(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return cJSON_CreateRaw(buf);
}

/* A tensor the recipe keeps (`keep`): its bytes copied, no error added. */
static void report_kept(cJSON *arr, const qtensor *q)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, t);
    cJSON_AddStringToObject(t, "name", q->t->name);
    cJSON_AddStringToObject(t, "config", FR_KEEP_CONFIG);
    cJSON_AddStringToObject(t, "layout", fr_tensor_source_format(q->t)[0]
                                             ? fr_tensor_source_format(q->t)
                                             : q->t->dtype_name);
    cJSON_AddNumberToObject(t, "rel_err", 0);
    cJSON_AddNumberToObject(t, "max_abs_err", 0);
    cJSON_AddNumberToObject(t, "rel_err_quantizer", 0);
    cJSON_AddItemToObject(t, "rel_err_recipe", num_or_null(q->recipe_rel_err));
    cJSON_AddBoolToObject(t, "equals_quantizer", 1);
}

static fr_status write_report(plan *p, const char *path, fr_quantize_summary *sum, fr_error *err)
{
    const fr_quantize_options *o = p->opt;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "frontier-quantize-report");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "tool_version", FRONTIER_VERSION);
    cJSON_AddStringToObject(root, "model", o->model);
    cJSON_AddStringToObject(root, "output", o->out);
    cJSON_AddStringToObject(root, "checkpoint_format", fr_qformat_name(o->format));
    cJSON_AddItemToObject(root, "recipe", o->recipe ? cJSON_CreateString(o->recipe) : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "config", o->config ? cJSON_CreateString(o->config) : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "calib", o->calib ? cJSON_CreateString(o->calib) : cJSON_CreateNull());
    cJSON_AddBoolToObject(root, "fused_global_scale", p->fused);
    cJSON_AddNumberToObject(root, "n_quantized", (double)sum->n_quantized);
    cJSON_AddNumberToObject(root, "n_copied", (double)sum->n_copied);
    cJSON_AddNumberToObject(root, "n_shards", p->n_shards);
    cJSON_AddItemToObject(root, "rel_err", num_or_null(sum->rel_err));
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (q->keep)
            report_kept(arr, q);
        if (!q->ref)
            continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, t);
        cJSON_AddStringToObject(t, "name", q->t->name);
        cJSON_AddStringToObject(t, "config", q->ref->cfg->name);
        cJSON_AddStringToObject(t, "layout", o->format == FR_QFORMAT_COMPRESSED_TENSORS
                                                 ? fr_ct_format_name(q->scheme.kind)
                                             : o->format == FR_QFORMAT_GGUF
                                                 ? fr_gguf_stored_type_name(p->reg, q->ref, q->t)
                                                 : "dequantized");
        cJSON_AddItemToObject(t, "rel_err", num_or_null(q->written.rel_err));
        cJSON_AddItemToObject(t, "max_abs_err", num_or_null(q->written.max_abs_err));
        cJSON_AddItemToObject(t, "rel_err_quantizer", num_or_null(q->measured.rel_err));
        cJSON_AddItemToObject(t, "rel_err_recipe", num_or_null(q->recipe_rel_err));
        cJSON_AddBoolToObject(t, "equals_quantizer", q->same_as_measured);
        if (q->expert_rel_err) {
            /* an expert stack: each expert's own rel_err (the sweep's
             * /expert_results rows); the tensor's is of their summed terms */
            cJSON_AddNumberToObject(t, "experts", (double)q->experts);
            cJSON *xw = cJSON_AddArrayToObject(t, "expert_rel_err");
            cJSON *xm = cJSON_AddArrayToObject(t, "expert_rel_err_quantizer");
            for (int64_t e = 0; e < q->experts; e++) {
                cJSON_AddItemToArray(xw, num_or_null(q->expert_rel_err[e]));
                cJSON_AddItemToArray(xm, num_or_null(q->expert_rel_err[q->experts + e]));
            }
        }
        if (!isnan(q->global_scale)) {
            cJSON_AddItemToObject(t, "global_scale", num_or_null(q->global_scale));
            cJSON_AddStringToObject(t, "fused_group", p->groups[q->group].name);
        }
    }
    fr_status st = write_json(path, root, err);
    cJSON_Delete(root);
    return st;
}

static void print_table(plan *p, FILE *out)
{
    size_t w = 6;
    for (size_t i = 0; i < p->n_qt; i++)
        if ((p->qt[i].ref || p->qt[i].keep) && strlen(p->qt[i].t->name) > w)
            w = strlen(p->qt[i].t->name);
    fprintf(out, "  %-*s %-18s %12s %12s  %s\n", (int)w, "tensor", "config", "rel_err",
            "quantizer", "note");
    for (size_t i = 0; i < p->n_qt; i++) {
        qtensor *q = &p->qt[i];
        if (q->keep)
            fprintf(out, "  %-*s %-18s %12.4e %12.4e  as released (%s)\n", (int)w, q->t->name,
                    FR_KEEP_CONFIG, 0.0, 0.0, q->t->dtype_name);
        if (!q->ref)
            continue;
        char note[600] = "";
        if (!isnan(q->global_scale))
            snprintf(note, sizeof note, "global scale of '%s'", p->groups[q->group].name);
        else if (!q->same_as_measured)
            snprintf(note, sizeof note, "rounded to %s", q->t->dtype_name);
        else if (p->opt->format == FR_QFORMAT_GGUF &&
                 strcmp(fr_gguf_type_name(p->reg, q->ref),
                        fr_gguf_stored_type_name(p->reg, q->ref, q->t)))
            snprintf(note, sizeof note, "stored as %s (llama-quantize's fallback: %lld columns)",
                     fr_gguf_stored_type_name(p->reg, q->ref, q->t),
                     (long long)q->t->shape[q->t->ndim - 1]);
        fprintf(out, "  %-*s %-18s %12.4e %12.4e  %s\n", (int)w, q->t->name, q->ref->cfg->name,
                q->written.rel_err, q->measured.rel_err, note);
    }
}

/* ---- temporary names, replacing, removing ---- */

/* A checkpoint folder holds only files: that is what --force may remove. */
static int only_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int ok = 1;
    struct dirent *de;
    while (ok && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char path[PATH_MAX + 256];
        struct stat sb;
        path_join(path, sizeof path, dir, de->d_name);
        ok = lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    }
    closedir(d);
    return ok;
}

static void remove_path(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char child[PATH_MAX + 256];
            path_join(child, sizeof child, path, de->d_name);
            unlink(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static fr_status check_output(plan *p, fr_error *err)
{
    const char *out = p->opt->out;
    struct stat sb;
    if (lstat(out, &sb) == 0) {
        if (!p->opt->force)
            return fr_fail(err, FR_E_OUTPUT, "'%s' exists (use --force to replace it)", out);
        char a[PATH_MAX], b[PATH_MAX];
        if (realpath(out, a) && realpath(p->opt->model, b)) {
            size_t la = strlen(a);
            if (!strcmp(a, b) || (!strncmp(a, b, la) && b[la] == '/') ||
                (p->folder && !strcmp(a, p->model_dir)))
                return fr_fail(err, FR_E_USAGE, "'%s' holds the model: not replacing it", out);
        }
        if (S_ISDIR(sb.st_mode) && !only_files(out))
            return fr_fail(err, FR_E_OUTPUT,
                           "'%s' is a folder with subfolders or links, not a checkpoint: not "
                           "replacing it", out);
    }
    return FR_OK;
}

static fr_status install_output(plan *p, fr_error *err)
{
    const char *out = p->opt->out;
    char why[128], old[PATH_MAX + 64];
    struct stat sb;
    int had_old = 0;
    if (lstat(out, &sb) == 0 && (S_ISDIR(sb.st_mode) || p->folder)) {
        /* rename(2) cannot replace a folder: move the old one aside first */
        snprintf(old, sizeof old, "%s.old-%ld", out, (long)getpid());
        if (rename(out, old) != 0)
            return fr_fail(err, FR_E_OUTPUT, "cannot replace '%s': %s", out,
                           fr_errno_text(errno, why, sizeof why));
        had_old = 1;
    }
    /* the temporary folder's entries on disk before the rename shows them */
    if (p->folder) {
        char inside[PATH_MAX + 160];
        snprintf(inside, sizeof inside, "%s/x", p->tmp);
        if (ds_fsync_folder(inside) != 0)
            return fr_fail(err, FR_E_OUTPUT, "cannot flush '%s': %s", p->tmp,
                           fr_errno_text(errno, why, sizeof why));
    }
    if (rename(p->tmp, out) != 0) {
        int e = errno;
        if (had_old)
            rename(old, out);
        return fr_fail(err, FR_E_OUTPUT, "cannot rename '%s' to '%s': %s", p->tmp, out,
                       fr_errno_text(e, why, sizeof why));
    }
    if (had_old)
        remove_path(old);
    /* and the rename itself (the dataset writer's rule) */
    if (ds_fsync_folder(out) != 0)
        return fr_fail(err, FR_E_OUTPUT, "cannot flush the folder of '%s': %s", out,
                       fr_errno_text(errno, why, sizeof why));
    return FR_OK;
}

/* ---- the command ---- */

static fr_status open_model(plan *p, fr_error *err)
{
    const fr_quantize_options *o = p->opt;
    struct stat sb;
    char why[128];
    if (stat(o->model, &sb) != 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", o->model,
                       fr_errno_text(errno, why, sizeof why));
    p->folder = S_ISDIR(sb.st_mode);
    if (p->folder) {
        if (!realpath(o->model, p->model_dir))
            return fr_fail(err, FR_E_IO, "cannot open '%s': %s", o->model,
                           fr_errno_text(errno, why, sizeof why));
    }
    fr_status st = fr_block_source_open(o->model, &p->src, err);
    if (st != FR_OK)
        return st;
    if (o->format == FR_QFORMAT_GGUF && p->src->kind != FR_SOURCE_GGUF)
        return fr_fail(err, FR_E_USAGE,
                       "'%s' is %s: the GGUF writer takes a GGUF model (F32, F16 or BF16 "
                       "tensors), as llama-quantize does",
                       o->model, fr_source_kind_name(p->src->kind));
    if (o->format != FR_QFORMAT_GGUF && p->src->kind != FR_SOURCE_SAFETENSORS &&
        p->src->kind != FR_SOURCE_SAFETENSORS_SHARDED)
        return fr_fail(err, FR_E_USAGE, "'%s' is %s: quantize writes %s from safetensors models",
                       o->model, fr_source_kind_name(p->src->kind), fr_qformat_name(o->format));
    if (o->format == FR_QFORMAT_COMPRESSED_TENSORS) {
        char cfg[PATH_MAX + 32];
        path_join(cfg, sizeof cfg, p->model_dir, "config.json");
        if (!p->folder || access(cfg, R_OK) != 0)
            return fr_fail(err, FR_E_USAGE,
                           "compressed-tensors is written from a Hugging Face folder with a "
                           "config.json, and '%s' is not one",
                           o->model);
    }
    p->n_qt = p->src->n_tensors;
    p->qt = calloc(p->n_qt ? p->n_qt : 1, sizeof *p->qt);
    if (!p->qt)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t i = 0; i < p->n_qt; i++) {
        p->qt[i].t = &p->src->tensors[i];
        p->qt[i].group = -1;
        p->qt[i].global_scale = NAN;
        p->qt[i].recipe_rel_err = NAN;
        fr_sweep_matrix(p->qt[i].t, &p->qt[i].rows, &p->qt[i].cols);
        p->qt[i].experts = 1;
        if (fr_sweep_expert_stack(p->qt[i].t)) {
            /* E matrices [out, in], as the sweep measures them */
            p->qt[i].experts = p->qt[i].t->shape[0];
            p->qt[i].rows = p->qt[i].t->shape[1];
            p->qt[i].cols = p->qt[i].t->shape[2];
        }
    }
    return FR_OK;
}

fr_status fr_quantize(const fr_registry *reg, const fr_quantize_options *opt,
                      fr_quantize_summary *sum, fr_error *err)
{
    plan p;
    memset(&p, 0, sizeof p);
    memset(sum, 0, sizeof *sum);
    p.reg = reg;
    p.opt = opt;
    int made_tmp = 0;
    fr_status st;
    if (!opt->recipe == !opt->config) {
        st = fr_fail(err, FR_E_USAGE, "give exactly one of --recipe and --config");
        goto done;
    }
    if ((opt->include || opt->exclude) && !opt->config) {
        st = fr_fail(err, FR_E_USAGE, "--include and --exclude go with --config (a recipe names "
                                      "its tensors)");
        goto done;
    }
    p.fused = opt->fused_global_scale >= 0 ? opt->fused_global_scale
                                           : opt->format == FR_QFORMAT_COMPRESSED_TENSORS;
    /* 1. every refusal before anything is written */
    if ((st = open_model(&p, err)) != FR_OK || (st = check_output(&p, err)) != FR_OK ||
        (st = opt->recipe ? select_recipe(&p, err) : select_config(&p, err)) != FR_OK ||
        (st = attach_statistics(&p, err)) != FR_OK || (st = check_writers(&p, err)) != FR_OK)
        goto done;
    /* 2, 3 */
    if ((st = plan_fused(&p, err)) != FR_OK ||
        (opt->format != FR_QFORMAT_GGUF && (st = plan_entries(&p, err)) != FR_OK))
        goto done;
    /* 4, 5: under a temporary name beside OUT */
    snprintf(p.tmp, sizeof p.tmp, "%s.tmp-%ld", opt->out, (long)getpid());
    remove_path(p.tmp);
    if (p.folder && mkdir(p.tmp, 0777) != 0) {
        char why[128];
        st = fr_fail(err, FR_E_OUTPUT, "cannot create '%s': %s", p.tmp,
                     fr_errno_text(errno, why, sizeof why));
        goto done;
    }
    made_tmp = 1;
    uint64_t gguf_bytes = 0;
    if (opt->format == FR_QFORMAT_GGUF) {
        p.n_shards = 1;
        if ((st = write_gguf(&p, &gguf_bytes, err)) != FR_OK)
            goto done;
    } else if ((st = write_shards(&p, err)) != FR_OK || (st = write_index(&p, err)) != FR_OK) {
        goto done;
    }
    for (size_t i = 0; i < p.n_qt; i++) {
        if (p.qt[i].ref)
            sum->n_quantized++;
        else
            sum->n_copied++;
    }
    sum->n_shards = (size_t)p.n_shards;
    sum->tensor_bytes = fr_st_plan_data_bytes(p.entries, p.n_entries) + gguf_bytes;
    sum->rel_err = p.norm_sum > 0 ? sqrt(p.err_sum / p.norm_sum) : (p.err_sum > 0 ? INFINITY : 0);
    if (p.folder) {
        if ((st = copy_other_files(&p, sum, err)) != FR_OK)
            goto done;
        if (opt->format == FR_QFORMAT_COMPRESSED_TENSORS && (st = write_config_json(&p, err)) != FR_OK)
            goto done;
        char report[PATH_MAX + 64];
        path_join(report, sizeof report, p.tmp, "quantize_report.json");
        if ((st = write_report(&p, report, sum, err)) != FR_OK)
            goto done;
        snprintf(sum->report, sizeof sum->report, "%s/quantize_report.json", opt->out);
    }
    if ((st = install_output(&p, err)) != FR_OK)
        goto done;
    made_tmp = 0;
    if (!p.folder) {
        snprintf(sum->report, sizeof sum->report, "%s.report.json", opt->out);
        if ((st = write_report(&p, sum->report, sum, err)) != FR_OK)
            goto done;
    }
    if (opt->table)
        print_table(&p, opt->table);
done:
    if (made_tmp)
        remove_path(p.tmp);
    plan_free(&p);
    return st;
}
