/*
 * The sweep engine (frontier/sweep/sweep.h): selection, plan, rows, commits.
 *
 * Crash safety: the dataset lives in memory and is committed as a whole
 * file with fr_dataset_write (tmp + fsync + rename) right after planning and
 * then every commit interval, so the output always holds every row up to
 * the last commit. --resume reads it back, checks it was made from the same
 * sources and configurations, and plans only the missing (tensor,
 * configuration) pairs. Rows are ordered by (tensor_id, config_id) at every
 * commit, so a resumed run writes the same rows as an uninterrupted one.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/calib.h"
#include "core/call.h"
#include "core/classify.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/synthetic.h"
#include "frontier/exec/blocked.h"
#include "frontier/model/calib_attach.h"
#include "frontier/dataset/dataset_write.h"
#include "frontier/dataset/source_identity.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/executor.h"
#include "frontier/model/fused_scale.h"
#include "frontier/exec/metrics.h"
#include "frontier/exec/numeric_flags.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/gguf_fallback.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_select.h"
#include "quantizers/families.h"
#include "frontier/dataset/dataset_schema.h"

#ifdef FRONTIER_HAVE_CUDA
#include "kernels/launchers.h" /* fr_cuda_device_count */
#define FR_SWEEP_HAVE_CUDA 1
#endif

/* Default seconds between commits; adaptively at least 10x the time the
 * last commit took, so rewriting a large file never costs more than ~10%
 * (an interval asked for, --commit-interval, is used as it is). */
#define FR_COMMIT_INTERVAL 2.0
#define FR_COMMIT_COST_FACTOR 10.0
/* Warnings per configuration before further failures go to /skipped only. */
#define FR_WARNINGS_PER_CONFIG 3
#define NO_GROUP ((size_t)-1)

/* One expert's outcome of one configuration, kept until every expert of
 * the stack has reported: the tensor's row sums them in expert order, so
 * it does not depend on the order outcomes arrive in. */
typedef struct expert_slot {
    frontier_error_sums sums;
    double out_sq_err, out_sq_ref, seconds;
    uint32_t flags; /* FR_ROW_* of this expert */
    char device[16];
} expert_slot;

/* An expert stack: the items of its experts and what they reported. */
typedef struct expert_group {
    size_t ds_tensor;        /* index into ds.tensors */
    uint32_t n_experts;
    int64_t rows, cols;      /* one expert's matrix */
    size_t n_configs;        /* of each expert's item (set by the first outcome) */
    expert_slot *slots;      /* [n_configs x n_experts], while configurations are open */
    uint32_t *arrived;       /* per config: experts reported */
    uint8_t *failed;         /* per config: some expert failed (recorded once) */
    size_t n_closed;         /* configurations whose row is written or dropped */
    double *norms;           /* per expert: sum w^2 */
    uint32_t n_norms;
    int skipped;             /* some expert was skipped: the tensor is (recorded once) */
} expert_group;

struct fr_sweep {
    const fr_registry *reg;
    fr_sweep_options opt;
    const fr_config_ref **configs; /* selected */
    size_t n_configs;
    regex_t include_re, exclude_re;
    int has_include, has_exclude;
    int device;                    /* -1: CPU, else the CUDA device index */
    const fr_source **sources;
    size_t n_sources;
    int output_exists;

    fr_dataset ds;
    fr_sweep_stats stats;

    /* the plan */
    fr_sweep_item *items;
    size_t n_items;
    size_t *item_tensor;           /* index into ds.tensors */
    uint32_t *item_source_id;
    const fr_config_ref **item_configs; /* all items' configs, flattened */
    uint32_t *item_config_ids;          /* their config_ids, parallel */
    size_t *item_first_config;          /* offset of each item's configs */
    uint32_t *config_ids;               /* ds config_id of each selected config */
    size_t *warnings;                   /* per selected config */
    fr_calib_file *calib;               /* --calib, or NULL */
    frontier_calib *item_calib;         /* per item: its statistics (items[k].calib) */
    /* expert stacks (docs/formats.md "Expert tensors"): a rank-3 tensor of
     * class expert is E items, one per expert, each on its own view of the
     * tensor's bytes; their outcomes are summed into the tensor's row */
    fr_tensor *views;                   /* every expert's view, all stacks */
    size_t n_views;
    size_t *item_group;                 /* per item: index into groups, or NO_GROUP */
    uint32_t *item_expert;              /* per item: its expert in the group */
    struct expert_group *groups;
    size_t n_groups;

    /* commits */
    double interval, last_commit;
    int fixed_interval;
    int committed;
    fr_status write_status;
    fr_error write_err;
    fr_progress *progress;
    uint64_t items_done, bytes_done;

    /* numeric edge cases (frontier/exec/numeric_flags.h): per (item, config)
     * of the flat plan, the outcome's flags and scale quotients, gathered
     * for the item's warning lines */
    uint32_t *item_flags;
    fr_scale_detail *item_scale;
    size_t n_item_flags;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- device ---- */

static fr_status parse_device(const char *text, int *device, fr_error *err)
{
    const char *d = text ? text : "auto";
    int want_cuda = -2; /* -2: auto */
    if (!strcmp(d, "cpu")) {
        *device = -1;
        return FR_OK;
    }
    if (!strcmp(d, "cuda")) {
        want_cuda = 0;
    } else if (!strncmp(d, "cuda:", 5)) {
        char *end = NULL;
        errno = 0;
        long n = strtol(d + 5, &end, 10);
        if (errno || end == d + 5 || *end || n < 0 || n > 1024)
            return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (auto, cpu, cuda or cuda:N)", d);
        want_cuda = (int)n;
    } else if (strcmp(d, "auto") != 0) {
        return fr_fail(err, FR_E_USAGE, "invalid --device '%s' (auto, cpu, cuda or cuda:N)", d);
    }
#ifdef FR_SWEEP_HAVE_CUDA
    int count = fr_cuda_device_count();
    if (want_cuda == -2) {
        *device = count > 0 ? 0 : -1;
        return FR_OK;
    }
    if (count <= 0)
        return fr_fail(err, FR_E_DEVICE, "--device %s: no CUDA device is available", d);
    if (want_cuda >= count)
        return fr_fail(err, FR_E_DEVICE, "--device %s: there are only %d CUDA devices", d, count);
    *device = want_cuda;
    return FR_OK;
#else
    if (want_cuda == -2) {
        *device = -1;
        return FR_OK;
    }
    return fr_fail(err, FR_E_DEVICE, "--device %s: this frontier was built without CUDA", d);
#endif
}

/* ---- creation ---- */

static fr_status compile_regex(regex_t *re, const char *pattern, const char *option, fr_error *err)
{
    int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, re, msg, sizeof msg);
        regfree(re);
        /* regerror messages are capitalised ("Unmatched ( or \\(") */
        if (msg[0] >= 'A' && msg[0] <= 'Z')
            msg[0] = (char)(msg[0] - 'A' + 'a');
        return fr_fail(err, FR_E_USAGE, "invalid %s regex '%s': %s", option, pattern, msg);
    }
    return FR_OK;
}

/* Whether a configuration of quantizer `name` is among the first n selected. */
static int quantizer_selected(const fr_sweep *sw, size_t n, const char *name)
{
    for (size_t j = 0; j < n; j++)
        if (!strcmp(fr_config_quantizer(sw->reg, sw->configs[j])->name, name))
            return 1;
    return 0;
}

/* --fused-global-scale: after the selection, every configuration that needs
 * its fused group's joint amax (traits.needs_group_amax) and whose companion
 * quantizer is selected (traits.fused_companion_of: nvfp4-fused next to
 * nvfp4), in registration order. */
static fr_status select_fused(fr_sweep *sw, fr_error *err)
{
    const size_t n_selected = sw->n_configs;
    char wanted[512] = "", companions[512] = "";
    size_t n_fused = 0;
    for (size_t i = 0; i < sw->reg->n_configs; i++) {
        const fr_config_ref *ref = &sw->reg->configs[i];
        const frontier_config_traits *t = fr_config_traits_of(ref);
        if (!t->needs_group_amax || !t->fused_companion_of)
            continue;
        n_fused++;
        if (!quantizer_selected(sw, n_selected, t->fused_companion_of)) {
            size_t u = strlen(wanted), v = strlen(companions);
            snprintf(wanted + u, sizeof wanted - u, "%s%s next to %s", u ? ", " : "",
                     ref->cfg->name, t->fused_companion_of);
            snprintf(companions + v, sizeof companions - v, "%s%s", v ? " or " : "",
                     t->fused_companion_of);
            continue;
        }
        const fr_config_ref **grown = realloc(sw->configs, (sw->n_configs + 1) * sizeof *grown);
        if (!grown)
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        sw->configs = grown;
        sw->configs[sw->n_configs++] = ref;
    }
    if (!n_fused)
        return fr_fail(err, FR_E_USAGE,
                       "--fused-global-scale: no registered configuration needs a fused group's "
                       "joint amax");
    if (sw->n_configs == n_selected)
        return fr_fail(err, FR_E_USAGE,
                       "--fused-global-scale measures %s, and %s is not selected (add it to "
                       "--quantizers, or check --bits)",
                       wanted, companions);
    return FR_OK;
}

fr_status fr_sweep_create(const fr_registry *reg, const fr_sweep_options *opt, fr_sweep **out,
                          fr_error *err)
{
    fr_status st = FR_OK;
    *out = NULL;
    if (!opt->output || !*opt->output)
        return fr_fail(err, FR_E_USAGE, "no output file (-o FILE.h5)");
    if (opt->min_numel < 0)
        return fr_fail(err, FR_E_USAGE, "--min-numel must not be negative");
    fr_sweep *sw = calloc(1, sizeof *sw);
    if (!sw)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    sw->reg = reg;
    sw->opt = *opt;
    sw->device = -1;
    if ((st = fr_sweep_select_configs(reg, opt->bits, opt->quantizers, opt->calib != NULL, &sw->configs,
                                      &sw->n_configs, err)) != FR_OK)
        goto fail;
    if (opt->fused_global_scale && (st = select_fused(sw, err)) != FR_OK)
        goto fail;
    if (opt->include && (st = compile_regex(&sw->include_re, opt->include, "--include", err)) != FR_OK)
        goto fail;
    sw->has_include = opt->include != NULL;
    if (opt->exclude && (st = compile_regex(&sw->exclude_re, opt->exclude, "--exclude", err)) != FR_OK)
        goto fail;
    sw->has_exclude = opt->exclude != NULL;
    if ((st = parse_device(opt->device, &sw->device, err)) != FR_OK)
        goto fail;
    /* the output: refused early, before any work, when it exists and
     * --resume was not given; left untouched either way */
    struct stat sb;
    if (stat(opt->output, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = fr_fail(err, FR_E_OUTPUT, "'%s' is a folder; -o names the dataset file to write",
                     opt->output);
        goto fail;
    }
    sw->output_exists = access(opt->output, F_OK) == 0;
    if (sw->output_exists && !opt->resume) {
        st = fr_fail(err, FR_E_OUTPUT,
                     "'%s' already exists; use --resume to continue it, or choose another output",
                     opt->output);
        goto fail;
    }
    sw->stats.n_configs = sw->n_configs;
    *out = sw;
    return FR_OK;
fail:
    fr_sweep_destroy(sw);
    return st;
}

fr_status fr_sweep_add_source(fr_sweep *sw, const fr_source *src, fr_error *err)
{
    const fr_source **grown = realloc(sw->sources, sizeof *grown * (sw->n_sources + 1));
    if (!grown)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    sw->sources = grown;
    sw->sources[sw->n_sources++] = src;
    return FR_OK;
}

void fr_sweep_destroy(fr_sweep *sw)
{
    if (!sw)
        return;
    if (sw->has_include)
        regfree(&sw->include_re);
    if (sw->has_exclude)
        regfree(&sw->exclude_re);
    free(sw->configs);
    free(sw->sources);
    fr_dataset_free(&sw->ds);
    free(sw->items);
    free(sw->item_tensor);
    free(sw->item_source_id);
    free(sw->item_configs);
    free(sw->item_config_ids);
    free(sw->item_first_config);
    free(sw->config_ids);
    free(sw->warnings);
    free(sw->item_calib);
    free(sw->item_flags);
    free(sw->item_scale);
    for (size_t g = 0; g < sw->n_groups; g++) {
        free(sw->groups[g].slots);
        free(sw->groups[g].arrived);
        free(sw->groups[g].failed);
        free(sw->groups[g].norms);
    }
    free(sw->groups);
    free(sw->views);
    free(sw->item_group);
    free(sw->item_expert);
    fr_calib_close(sw->calib);
    free(sw);
}

const fr_dataset *fr_sweep_dataset(const fr_sweep *sw)
{
    return &sw->ds;
}

const fr_sweep_stats *fr_sweep_get_stats(const fr_sweep *sw)
{
    return &sw->stats;
}

/* ---- resume and plan ---- */

static const char *config_params(const frontier_config *cfg)
{
    return cfg->params_json ? cfg->params_json : "{}";
}

/* Sources: identities, checked against the output when resuming. */
static fr_status plan_sources(fr_sweep *sw, int resuming, fr_error *err)
{
    if (resuming && sw->ds.n_sources != sw->n_sources)
        return fr_fail(err, FR_E_MISMATCH,
                       "cannot resume '%s': it was made from %zu source(s), this run has %zu",
                       sw->opt.output, sw->ds.n_sources, sw->n_sources);
    for (size_t i = 0; i < sw->n_sources; i++) {
        const fr_source *src = sw->sources[i];
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
        if (resuming) {
            const fr_ds_source *old = &sw->ds.sources[i];
            if (!fr_source_identity_same(old, &row, 0))
                return fr_fail(err, FR_E_MISMATCH,
                               "cannot resume '%s': it was made from another model ('%s' %s, "
                               "this run's '%s' %s)",
                               sw->opt.output, old->path,
                               old->sha256[0] ? old->sha256 : "(size+mtime)", row.path,
                               row.sha256[0] ? row.sha256 : "(size+mtime)");
            if (old->source_id != (uint32_t)i)
                return fr_fail(err, FR_E_FORMAT, "'%s': /sources ids are not 0..n-1", sw->opt.output);
        } else if ((st = fr_dataset_add_source(&sw->ds, &row, err)) != FR_OK) {
            return st;
        }
    }
    return FR_OK;
}

static fr_status plan_configs(fr_sweep *sw, fr_error *err)
{
    sw->config_ids = calloc(sw->n_configs, sizeof *sw->config_ids);
    sw->warnings = calloc(sw->n_configs, sizeof *sw->warnings);
    if (!sw->config_ids || !sw->warnings)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t j = 0; j < sw->n_configs; j++) {
        const fr_config_ref *ref = sw->configs[j];
        const fr_qentry *entry = &sw->reg->entries[ref->quantizer];
        const char *params = config_params(ref->cfg);
        const fr_ds_config *found = NULL;
        for (size_t c = 0; c < sw->ds.n_configs && !found; c++)
            if (!strcmp(sw->ds.configs[c].name, ref->cfg->name))
                found = &sw->ds.configs[c];
        if (found) {
            if (strcmp(found->family, entry->q->name) || strcmp(found->params, params) ||
                strcmp(found->origin, entry->origin) || found->nominal_bits != ref->cfg->nominal_bits)
                return fr_fail(err, FR_E_MISMATCH,
                               "cannot resume '%s': configuration '%s' there (%s from '%s', %s) "
                               "differs from the registered one (%s from '%s', %s)",
                               sw->opt.output, found->name, found->family, found->origin,
                               found->params, entry->q->name, entry->origin, params);
            sw->config_ids[j] = found->config_id;
            continue;
        }
        uint32_t id = 0;
        for (size_t c = 0; c < sw->ds.n_configs; c++)
            if (sw->ds.configs[c].config_id >= id)
                id = sw->ds.configs[c].config_id + 1;
        fr_ds_config row = {.config_id = id, .name = (char *)(uintptr_t)ref->cfg->name,
                            .family = (char *)(uintptr_t)entry->q->name,
                            .nominal_bits = ref->cfg->nominal_bits,
                            .params = (char *)(uintptr_t)params, .origin = entry->origin};
        fr_status st = fr_dataset_add_config(&sw->ds, &row, err);
        if (st != FR_OK)
            return st;
        sw->config_ids[j] = id;
    }
    return FR_OK;
}

/* Index of tensors by (source_id, name), for resume lookups. */
typedef struct tensor_index {
    const fr_dataset *ds;
    size_t *order;
} tensor_index;

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
static void drop_stale_skipped(fr_sweep *sw, const uint8_t *considered_source)
{
    size_t kept = 0;
    for (size_t k = 0; k < sw->ds.n_skipped; k++) {
        fr_ds_skipped *s = &sw->ds.skipped[k];
        int stale = 0;
        if (s->source_id < sw->n_sources && considered_source[s->source_id]) {
            const fr_source *src = sw->sources[s->source_id];
            for (size_t t = 0; t < src->n_tensors && !stale; t++) {
                if (strcmp(src->tensors[t].name, s->name) != 0)
                    continue;
                if (!s->config[0]) {
                    stale = 1;
                } else {
                    for (size_t j = 0; j < sw->n_configs && !stale; j++)
                        stale = !strcmp(sw->configs[j]->cfg->name, s->config);
                }
            }
        }
        if (stale) {
            free(s->name);
            free(s->reason);
            free(s->config);
        } else {
            sw->ds.skipped[kept++] = *s;
        }
    }
    sw->ds.n_skipped = kept;
}

static int regex_selects(const fr_sweep *sw, const char *name)
{
    if (sw->has_include && regexec(&sw->include_re, name, 0, NULL, 0) != 0)
        return 0;
    if (sw->has_exclude && regexec(&sw->exclude_re, name, 0, NULL, 0) == 0)
        return 0;
    return 1;
}

/* What planning the tensors carries from one tensor to the next. */
typedef struct plan_state {
    int resuming;
    tensor_index ix;          /* the resumed tensors, sorted for find_tensor */
    size_t n_old;             /* tensors of the resumed dataset */
    uint8_t *done;            /* [max_tensor_id x max_config_id]: rows that exist */
    uint32_t max_tensor_id, max_config_id;
    size_t n_flat;            /* entries of sw->item_configs used */
} plan_state;

/* The rows a resumed dataset already has, as a bitmap over its tensor ids x
 * config ids (empty for a new output). */
static fr_status plan_existing_rows(fr_sweep *sw, plan_state *ps, fr_error *err)
{
    for (size_t c = 0; c < sw->ds.n_configs; c++)
        if (sw->ds.configs[c].config_id + 1 > ps->max_config_id)
            ps->max_config_id = sw->ds.configs[c].config_id + 1;
    for (size_t t = 0; t < ps->n_old; t++)
        if (sw->ds.tensors[t].tensor_id + 1 > ps->max_tensor_id)
            ps->max_tensor_id = sw->ds.tensors[t].tensor_id + 1;
    if ((uint64_t)ps->max_tensor_id * ps->max_config_id > ((uint64_t)1 << 34))
        return fr_fail(err, FR_E_NOMEM, "'%s': too many tensors x configurations",
                       sw->opt.output);
    ps->done = calloc((size_t)ps->max_tensor_id * ps->max_config_id + 1, 1);
    if (!ps->done)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t r = 0; r < sw->ds.n_results; r++) {
        const fr_ds_result *row = &sw->ds.results[r];
        if (row->tensor_id < ps->max_tensor_id && row->config_id < ps->max_config_id)
            ps->done[(size_t)row->tensor_id * ps->max_config_id + row->config_id] = 1;
    }
    sw->stats.n_rows_resumed = sw->ds.n_results;
    return FR_OK;
}

/* The plan's arrays, sized for every tensor of every source x every
 * selected configuration. */
static fr_status plan_alloc(fr_sweep *sw, size_t n_planned_max, fr_error *err)
{
    if ((uint64_t)n_planned_max * sw->n_configs > ((uint64_t)1 << 34))
        return fr_fail(err, FR_E_NOMEM, "too many tensors x configurations");
    sw->items = calloc(n_planned_max + 1, sizeof *sw->items);
    sw->item_tensor = calloc(n_planned_max + 1, sizeof *sw->item_tensor);
    sw->item_source_id = calloc(n_planned_max + 1, sizeof *sw->item_source_id);
    sw->item_first_config = calloc(n_planned_max + 1, sizeof *sw->item_first_config);
    sw->item_configs = calloc(n_planned_max * sw->n_configs + 1, sizeof *sw->item_configs);
    sw->item_config_ids = calloc(n_planned_max * sw->n_configs + 1, sizeof *sw->item_config_ids);
    sw->item_group = calloc(n_planned_max + 1, sizeof *sw->item_group);
    sw->item_expert = calloc(n_planned_max + 1, sizeof *sw->item_expert);
    if (!sw->items || !sw->item_tensor || !sw->item_source_id || !sw->item_first_config ||
        !sw->item_configs || !sw->item_config_ids || !sw->item_group || !sw->item_expert)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    return FR_OK;
}

/* The /tensors row of a selected tensor: the resumed one (its shape must
 * not have changed) or a new one with the next free id. *at is its index. */
static fr_status plan_tensor_row(fr_sweep *sw, plan_state *ps, size_t s, const fr_tensor *t,
                                 long *at, fr_error *err)
{
    int64_t rows, cols;
    fr_sweep_matrix(t, &rows, &cols);
    char shape[160];
    shape_text(t, shape, sizeof shape);
    *at = ps->resuming ? find_tensor(&ps->ix, ps->n_old, (uint32_t)s, t->name) : -1;
    if (*at >= 0) {
        const fr_ds_tensor *old = &sw->ds.tensors[*at];
        if (old->numel != (uint64_t)t->numel || strcmp(old->shape, shape) != 0)
            return fr_fail(err, FR_E_MISMATCH,
                           "cannot resume '%s': tensor '%s' has shape %s there, %s now",
                           sw->opt.output, t->name, old->shape, shape);
        return FR_OK;
    }
    uint32_t id = 0;
    if (sw->ds.n_tensors)
        id = sw->ds.tensors[sw->ds.n_tensors - 1].tensor_id + 1;
    for (size_t k = 0; k < ps->n_old; k++)
        if (sw->ds.tensors[k].tensor_id >= id)
            id = sw->ds.tensors[k].tensor_id + 1;
    fr_ds_tensor row = {.tensor_id = id, .source_id = (uint32_t)s,
                        .name = t->name,
                        .cls = (char *)(uintptr_t)fr_class_name(t->cls),
                        .dtype = (char *)(uintptr_t)(t->dtype_name[0] ? t->dtype_name : fr_dtype_name(t->dtype)),
                        .shape = shape, .numel = (uint64_t)t->numel, .rows = rows,
                        .cols = cols, .sq_norm = NAN};
    fr_status st = fr_dataset_add_tensor(&sw->ds, &row, err);
    *at = (long)sw->ds.n_tensors - 1;
    return st;
}

/* An expert stack [E, out, in] (docs/formats.md "Expert tensors"): E items,
 * expert e on a view of rows e*out .. (e+1)*out of the stack (a 2-D tensor
 * [out, in] at its own offset in the file), each with its own copy of the
 * configurations still to measure (those of ps->n_flat - first at first). */
static fr_status plan_expert_stack(fr_sweep *sw, plan_state *ps, size_t s, const fr_tensor *t,
                                   size_t at, size_t first, fr_error *err)
{
    uint32_t n_experts = (uint32_t)t->shape[0];
    size_t n_cfg = ps->n_flat - first;
    expert_group *g = &sw->groups[sw->n_groups];
    *g = (expert_group){.ds_tensor = at, .n_experts = n_experts, .rows = t->shape[1],
                        .cols = t->shape[2]};
    g->norms = calloc(n_experts, sizeof *g->norms);
    if (!g->norms)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    size_t group = sw->n_groups++;
    for (uint32_t e = 0; e < n_experts; e++) {
        fr_tensor *v = &sw->views[sw->n_views++];
        fr_sweep_expert_view(t, e, v);
        size_t from = first;
        if (e > 0) {
            from = ps->n_flat;
            for (size_t c = 0; c < n_cfg; c++) {
                sw->item_configs[ps->n_flat] = sw->item_configs[first + c];
                sw->item_config_ids[ps->n_flat] = sw->item_config_ids[first + c];
                ps->n_flat++;
            }
        }
        size_t k = sw->n_items++;
        sw->item_tensor[k] = at;
        sw->item_source_id[k] = (uint32_t)s;
        sw->item_first_config[k] = from;
        sw->item_group[k] = group;
        sw->item_expert[k] = e;
        sw->items[k] = (fr_sweep_item){.src = sw->sources[s], .tensor = v, .rows = v->shape[0],
                                       .cols = v->shape[1], .n_configs = n_cfg, .calib = NULL};
        sw->stats.bytes += v->nbytes;
    }
    return FR_OK;
}

/* One tensor of source s: excluded, skipped (recorded in /skipped), or
 * registered and queued with the configurations it has no row for yet. */
static fr_status plan_one_tensor(fr_sweep *sw, plan_state *ps, size_t s, const fr_tensor *t,
                                 fr_error *err)
{
    char why[160];
    sw->stats.n_tensors++;
    if (!regex_selects(sw, t->name)) {
        sw->stats.n_excluded++;
        return FR_OK;
    }
    const char *reason = fr_sweep_skip_reason(t, sw->opt.min_numel, why, sizeof why);
    if (reason) {
        fr_ds_skipped row = {.source_id = (uint32_t)s, .name = t->name,
                             .reason = (char *)(uintptr_t)reason, .config = ""};
        sw->stats.n_skipped++;
        return fr_dataset_add_skipped(&sw->ds, &row, err);
    }
    sw->stats.n_selected++;
    long at;
    fr_status st = plan_tensor_row(sw, ps, s, t, &at, err);
    if (st != FR_OK)
        return st;
    uint32_t tensor_id = sw->ds.tensors[at].tensor_id;
    size_t first = ps->n_flat;
    for (size_t j = 0; j < sw->n_configs; j++) {
        uint32_t cid = sw->config_ids[j];
        if (tensor_id < ps->max_tensor_id && cid < ps->max_config_id &&
            ps->done[(size_t)tensor_id * ps->max_config_id + cid])
            continue;
        sw->item_configs[ps->n_flat] = sw->configs[j];
        sw->item_config_ids[ps->n_flat] = cid;
        ps->n_flat++;
    }
    if (ps->n_flat == first)
        return FR_OK; /* complete already */
    if (fr_sweep_expert_stack(t))
        return plan_expert_stack(sw, ps, s, t, (size_t)at, first, err);
    int64_t rows, cols;
    fr_sweep_matrix(t, &rows, &cols);
    size_t k = sw->n_items++;
    sw->item_tensor[k] = (size_t)at;
    sw->item_source_id[k] = (uint32_t)s;
    sw->item_first_config[k] = first;
    sw->item_group[k] = NO_GROUP;
    sw->items[k] = (fr_sweep_item){.src = sw->sources[s], .tensor = t, .rows = rows,
                                   .cols = cols, .n_configs = ps->n_flat - first, .calib = NULL};
    sw->stats.bytes += t->nbytes;
    return FR_OK;
}

/* The plan: every selected tensor of every source with the configurations
 * still to measure on it (all of them for a new output). */
static fr_status plan_tensors(fr_sweep *sw, int resuming, fr_error *err)
{
    fr_status st = FR_OK;
    plan_state ps = {.resuming = resuming, .ix = {&sw->ds, NULL}, .n_old = sw->ds.n_tensors};
    uint8_t *considered = NULL;
    size_t n_planned_max = 0;

    size_t n_stacks = 0, n_views = 0;
    for (size_t s = 0; s < sw->n_sources; s++) {
        n_planned_max += sw->sources[s]->n_tensors;
        for (size_t ti = 0; ti < sw->sources[s]->n_tensors; ti++) {
            const fr_tensor *t = &sw->sources[s]->tensors[ti];
            if (fr_sweep_expert_stack(t)) {
                n_stacks++;
                n_views += (size_t)t->shape[0];
                n_planned_max += (size_t)t->shape[0] - 1;
            }
        }
    }
    sw->views = calloc(n_views + 1, sizeof *sw->views);
    sw->groups = calloc(n_stacks + 1, sizeof *sw->groups);
    considered = calloc(sw->n_sources + 1, 1);
    ps.ix.order = calloc(ps.n_old + 1, sizeof *ps.ix.order);
    if (!considered || !ps.ix.order || !sw->views || !sw->groups) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < ps.n_old; i++)
        ps.ix.order[i] = i;
    sort_ds = &sw->ds;
    qsort(ps.ix.order, ps.n_old, sizeof *ps.ix.order, cmp_tensor_order);
    if ((st = plan_existing_rows(sw, &ps, err)) != FR_OK ||
        (st = plan_alloc(sw, n_planned_max, err)) != FR_OK)
        goto done;
    if (resuming) {
        for (size_t s = 0; s < sw->n_sources; s++)
            considered[s] = 1;
        drop_stale_skipped(sw, considered);
    }
    for (size_t s = 0; s < sw->n_sources; s++)
        for (size_t ti = 0; ti < sw->sources[s]->n_tensors; ti++)
            if ((st = plan_one_tensor(sw, &ps, s, &sw->sources[s]->tensors[ti], err)) != FR_OK)
                goto done;
    /* item config pointers, now that the flat array is final */
    for (size_t k = 0; k < sw->n_items; k++)
        sw->items[k].configs = &sw->item_configs[sw->item_first_config[k]];
    sw->stats.n_items = sw->n_items;
done:
    free(ps.done);
    free(considered);
    free(ps.ix.order);
    return st;
}

/* ---- calibration statistics (--calib) ---- */

/* Each planned tensor's statistics from the calibration file (core/calib.h:
 * its name rules and checks). A tensor without statistics keeps NaN in
 * out_rel_err; a malformed module stops the run before any work. The
 * modules that no planned tensor uses are listed in one warning. */
static fr_status attach_calibration(fr_sweep *sw, fr_error *err)
{
    fr_status st = FR_OK;
    const char **names = NULL, **unmatched = NULL;
    size_t n_unmatched = 0, n_hessian = 0, n_found = 0;
    sw->item_calib = calloc(sw->n_items + 1, sizeof *sw->item_calib);
    names = calloc(sw->n_items + 1, sizeof *names);
    if (!sw->item_calib || !names) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    /* a checkpoint with an embedding and no output layer of its own ties
     * them (tie_word_embeddings): the embedding matrix is the output layer
     * too, and the statistics of that layer's input, stored under lm_head
     * by a capture of the running model, are the ones for it */
    int has_lm_head = 0;
    for (size_t s = 0; s < sw->n_sources; s++)
        has_lm_head |= fr_calib_has_lm_head(sw->sources[s]->tensors, sw->sources[s]->n_tensors);
    for (size_t k = 0; k < sw->n_items; k++) {
        fr_sweep_item *it = &sw->items[k];
        fr_calib_stats cs;
        /* an expert stack's items: expert e's slice of the stack's
         * per-expert statistics ([E, in, in], core/calib.h) */
        if (sw->item_group[k] != NO_GROUP) {
            names[k] = it->tensor->name;
            const expert_group *g = &sw->groups[sw->item_group[k]];
            if ((st = fr_calib_lookup_expert_weight(sw->calib, it->tensor, sw->item_expert[k],
                                                    g->n_experts, it->cols, 0, &cs, err)) != FR_OK)
                goto done;
        } else if ((st = fr_calib_lookup_weight(sw->calib, it->tensor, it->cols, has_lm_head, 0,
                                                &cs, &names[k], err)) != FR_OK) {
            goto done;
        }
        if (!cs.found) {
            fr_debug("%s", cs.skip_reason);
            continue;
        }
        sw->item_calib[k] = cs.calib;
        it->calib = &sw->item_calib[k];
        n_found++;
        n_hessian += cs.calib.hessian != NULL;
    }
    if ((st = fr_calib_unmatched(sw->calib, names, sw->n_items, &unmatched, &n_unmatched,
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
                fr_calib_path(sw->calib), n_unmatched, list,
                used + 80 >= sizeof list ? ", ..." : "");
    }
    fr_info("calibration statistics '%s' (%lld tokens): %zu of %zu tensors, %zu with a Hessian "
            "(out_rel_err)",
            fr_calib_path(sw->calib), (long long)fr_calib_token_count(sw->calib), n_found,
            sw->n_items, n_hessian);
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
static fr_status attach_group_amax(fr_sweep *sw, fr_error *err)
{
    fr_status st = FR_OK;
    for (size_t s = 0; s < sw->n_sources && st == FR_OK; s++) {
        const fr_source *src = sw->sources[s];
        fr_fused_scan scan;
        int scanned = 0;
        for (size_t k = 0; k < sw->n_items && st == FR_OK; k++) {
            fr_sweep_item *it = &sw->items[k];
            if (it->src != src || sw->item_group[k] != NO_GROUP)
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
static const char *missing_statistics(const fr_sweep *sw, const fr_config_ref *ref,
                                      const frontier_calib *calib)
{
    const frontier_quantizer *q = fr_config_quantizer(sw->reg, ref);
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
static fr_status drop_unmeasurable(fr_sweep *sw, fr_error *err)
{
    size_t n_pairs = 0, kept_items = 0;
    /* per registered configuration: tensors without the fused group it needs */
    size_t *unfused = calloc(sw->reg->n_configs ? sw->reg->n_configs : 1, sizeof *unfused);
    if (!unfused)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    for (size_t k = 0; k < sw->n_items; k++) {
        fr_sweep_item *it = &sw->items[k];
        size_t first = sw->item_first_config[k], keep = 0;
        for (size_t c = 0; c < it->n_configs; c++) {
            const fr_config_ref *ref = sw->item_configs[first + c];
            const char *why = missing_statistics(sw, ref, it->calib);
            char why_buf[320];
            if (!why && !it->has_group_amax && fr_config_traits_of(ref)->needs_group_amax) {
                /* not a member of a fused group of two or more: a configuration
                 * that needs its joint amax has no row for it (nvfp4-fused's
                 * own scale would be nvfp4's row); not a failure, so not in
                 * /skipped */
                unfused[ref - sw->reg->configs]++;
                continue;
            }
            if (!why) /* over --max-memory and not row-local (frontier/exec/blocked.h) */
                why = fr_block_skip_reason(sw->reg, ref, it, sw->opt.max_memory, why_buf,
                                           sizeof why_buf);
            if (!why) {
                sw->item_configs[first + keep] = ref;
                sw->item_config_ids[first + keep] = sw->item_config_ids[first + c];
                keep++;
                continue;
            }
            fr_ds_skipped row = {.source_id = sw->item_source_id[k],
                                 .name = (char *)(uintptr_t)it->tensor->name,
                                 .reason = (char *)(uintptr_t)why,
                                 .config = (char *)(uintptr_t)ref->cfg->name};
            fr_status st = fr_dataset_add_skipped(&sw->ds, &row, err);
            if (st != FR_OK) {
                free(unfused);
                return st;
            }
            n_pairs++;
        }
        it->n_configs = keep;
        if (keep == 0) {
            sw->stats.bytes -= it->tensor->nbytes;
            continue;
        }
        /* compact the plan (the statistics move with their item) */
        size_t to = kept_items++;
        if (to != k) {
            sw->items[to] = *it;
            sw->item_tensor[to] = sw->item_tensor[k];
            sw->item_source_id[to] = sw->item_source_id[k];
            sw->item_first_config[to] = sw->item_first_config[k];
            sw->item_group[to] = sw->item_group[k]; /* an expert keeps its stack */
            sw->item_expert[to] = sw->item_expert[k];
            if (sw->item_calib) {
                sw->item_calib[to] = sw->item_calib[k];
                if (sw->items[to].calib)
                    sw->items[to].calib = &sw->item_calib[to];
            }
        }
        sw->items[to].configs = &sw->item_configs[sw->item_first_config[to]];
    }
    sw->n_items = kept_items;
    sw->stats.n_items = kept_items;
    if (n_pairs)
        fr_info("%zu (tensor, configuration) pairs cannot be measured (statistics their tensor "
                "lacks, or a tensor over --max-memory): not measured, listed in /skipped with "
                "the reason",
                n_pairs);
    for (size_t i = 0; i < sw->reg->n_configs; i++)
        if (unfused[i])
            fr_info("%s: %zu tensors are not members of a fused group (q/k/v, gate/up, "
                    "w1/w3, q_a/kv_a) with two or more members: no %s row for them",
                    sw->reg->configs[i].cfg->name, unfused[i], sw->reg->configs[i].cfg->name);
    free(unfused);
    return FR_OK;
}

/* ---- commits ---- */

static fr_status commit(fr_sweep *sw, fr_error *err)
{
    double t0 = now_seconds();
    fr_dataset_sort(&sw->ds);
    fr_status st = fr_dataset_write(sw->opt.output, &sw->ds,
                                    sw->committed || sw->output_exists ? FR_DS_REPLACE : FR_DS_CREATE,
                                    err);
    double t1 = now_seconds();
    if (st == FR_OK) {
        sw->committed = 1;
        sw->stats.n_commits++;
        double base = sw->opt.commit_interval;
        if (!sw->fixed_interval && FR_COMMIT_COST_FACTOR * (t1 - t0) > base)
            base = FR_COMMIT_COST_FACTOR * (t1 - t0);
        sw->interval = base;
        sw->last_commit = t1;
        fr_debug("committed %zu rows to '%s' in %.3f s", sw->ds.n_results, sw->opt.output, t1 - t0);
    }
    return st;
}

static void maybe_commit(fr_sweep *sw)
{
    if (sw->write_status != FR_OK || now_seconds() - sw->last_commit < sw->interval)
        return;
    sw->write_status = commit(sw, &sw->write_err);
}

/* ---- the sink ---- */

static double rel_err_of(double sq_err, double sq_ref)
{
    if (sq_ref > 0)
        return sqrt(sq_err / sq_ref);
    return sq_err > 0 ? INFINITY : 0.0;
}

static void record_failure(fr_sweep *sw, size_t item, const char *config, size_t config_index,
                           const char *reason)
{
    const fr_sweep_item *it = &sw->items[item];
    fr_error err = {0};
    fr_ds_skipped row = {.source_id = sw->item_source_id[item], .name = it->tensor->name,
                         .reason = (char *)(uintptr_t)reason, .config = (char *)(uintptr_t)config};
    if (fr_dataset_add_skipped(&sw->ds, &row, &err) != FR_OK && sw->write_status == FR_OK) {
        sw->write_status = err.code;
        sw->write_err = err;
    }
    if (!config[0]) {
        fr_progress_clear(sw->progress);
        fr_warn("skipping '%s' in '%s': %s", it->tensor->name, it->src->path, reason);
        return;
    }
    sw->stats.n_failed++;
    size_t *count = &sw->warnings[config_index];
    if (*count < FR_WARNINGS_PER_CONFIG) {
        /* the reason names the configuration and the tensor already */
        fr_progress_clear(sw->progress);
        fr_warn("'%s': %s", it->src->path, reason);
    } else if (*count == FR_WARNINGS_PER_CONFIG) {
        fr_progress_clear(sw->progress);
        fr_warn("further failures of '%s' are recorded in /skipped only", config);
    }
    (*count)++;
}

static size_t selected_index(const fr_sweep *sw, const fr_config_ref *ref)
{
    for (size_t j = 0; j < sw->n_configs; j++)
        if (sw->configs[j] == ref)
            return j;
    return 0;
}

static void on_expert_outcome(fr_sweep *sw, const fr_sweep_outcome *o);

/* ---- numeric edge cases: kept per (item, config), reported per item ---- */

static void keep_numeric_flags(fr_sweep *sw, const fr_sweep_outcome *o)
{
    if (!o->flags)
        return;
    if (!sw->item_flags) {
        size_t n = 0;
        for (size_t k = 0; k < sw->n_items; k++)
            if (sw->item_first_config[k] + sw->items[k].n_configs > n)
                n = sw->item_first_config[k] + sw->items[k].n_configs;
        sw->item_flags = calloc(n + 1, sizeof *sw->item_flags);
        sw->item_scale = calloc(n + 1, sizeof *sw->item_scale);
        sw->n_item_flags = sw->item_flags && sw->item_scale ? n : 0;
    }
    size_t at = sw->item_first_config[o->item] + o->config;
    if (at < sw->n_item_flags) {
        sw->item_flags[at] = o->flags;
        sw->item_scale[at] = (fr_scale_detail){o->scale_largest, o->scale_smallest};
    }
}

static void emit_numeric_warning(void *ctx, const char *line)
{
    fr_sweep *sw = ctx;
    fr_progress_clear(sw->progress);
    fr_warn("%s", line);
}

/* One warning line per (tensor, kind of problem): the item's configurations
 * grouped by scale dtype (frontier/exec/numeric_flags.c). */
static void report_numeric_flags(fr_sweep *sw, size_t item)
{
    const fr_sweep_item *it = &sw->items[item];
    size_t first = sw->item_first_config[item], n = it->n_configs;
    if (!sw->n_item_flags || first + n > sw->n_item_flags)
        return;
    uint32_t tensor_flags = 0;
    for (size_t c = 0; c < n; c++)
        tensor_flags |= sw->item_flags[first + c];
    if (!(tensor_flags & (FR_ROW_ALL_ZERO | FR_ROW_SUBNORMAL | FR_ROW_SCALE_OVERFLOW |
                          FR_ROW_SCALE_UNDERFLOW)))
        return;
    fr_scale_rule *rules = calloc(n, sizeof *rules);
    const fr_scale_rule **refs = calloc(n, sizeof *refs);
    const char **names = calloc(n, sizeof *names);
    if (rules && refs && names) {
        for (size_t c = 0; c < n; c++) {
            fr_scale_rule_parse(it->configs[c]->cfg->params_json, &rules[c]);
            refs[c] = &rules[c];
            names[c] = it->configs[c]->cfg->name;
        }
        fr_numeric_report(it->tensor->name, tensor_flags, n, names, refs, &sw->item_flags[first],
                          &sw->item_scale[first], emit_numeric_warning, sw);
    }
    free(rules);
    free(refs);
    free(names);
}

static void on_outcome(void *ctx, const fr_sweep_outcome *o)
{
    fr_sweep *sw = ctx;
    if (o->item >= sw->n_items || o->config >= sw->items[o->item].n_configs)
        return;
    if (sw->item_group[o->item] != NO_GROUP) {
        on_expert_outcome(sw, o);
        return;
    }
    const fr_sweep_item *it = &sw->items[o->item];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(sw, ref);
    if (o->status != FR_OK) {
        record_failure(sw, o->item, ref->cfg->name, j, o->error);
        return;
    }
    /* the size comes from the quantizer's size_bits, through the registry's
     * checked call (an error code or a size outside [1, 2^63) is a failure) */
    uint64_t total_bits = 0;
    frontier_call call;
    fr_error serr = {0};
    fr_call_init(&call, NULL, sw->opt.seed, it->tensor->name, ref->cfg->name);
    fr_status st = fr_quantizer_size_bits(sw->reg, ref, it->rows, it->cols, it->tensor->name,
                                          &call, &total_bits, &serr);
    fr_call_release(&call);
    if (st != FR_OK) {
        record_failure(sw, o->item, ref->cfg->name, j, serr.msg);
        return;
    }
    fr_metrics m;
    fr_metrics_from_sums(&o->sums, &m);
    double numel = (double)(it->rows * it->cols);
    fr_ds_result row = {
        .tensor_id = sw->ds.tensors[sw->item_tensor[o->item]].tensor_id,
        .config_id = sw->item_config_ids[sw->item_first_config[o->item] + o->config],
        .bits_per_weight = (double)total_bits / numel,
        .total_bits = total_bits,
        .rel_err = m.rel_err,
        .sqnr_db = m.sqnr_db,
        .max_abs_err = m.max_abs_err,
        .cosine = m.cosine,
        .out_rel_err = isnan(o->out_sq_err) || isnan(o->out_sq_ref) ? NAN : rel_err_of(o->out_sq_err, o->out_sq_ref),
        .sq_err = o->sums.sq_err,
        .out_sq_err = o->out_sq_err,
        .out_sq_ref = o->out_sq_ref,
        .seconds = o->seconds,
        .flags = o->flags | (fr_gguf_fallback_type(ref, it->cols) ? FR_ROW_GGUF_FALLBACK : 0),
    };
    snprintf(row.device, sizeof row.device, "%s", o->device);
    keep_numeric_flags(sw, o);
    fr_error err = {0};
    if (fr_dataset_add_result(&sw->ds, &row, &err) != FR_OK) {
        if (sw->write_status == FR_OK) {
            sw->write_status = err.code;
            sw->write_err = err;
        }
        return;
    }
    sw->stats.n_rows_new++;
    maybe_commit(sw);
}

/* A row of an expert stack (expert < 0: the tensor's own row in /results;
 * else that expert's row in /expert_results, --split-experts). */
static void add_expert_row(fr_sweep *sw, uint32_t tensor_id, uint32_t config_id,
                           uint64_t total_bits, double numel, const expert_slot *x, int64_t expert)
{
    fr_metrics m;
    fr_metrics_from_sums(&x->sums, &m);
    fr_ds_result row = {
        .tensor_id = tensor_id,
        .config_id = config_id,
        .bits_per_weight = (double)total_bits / numel,
        .total_bits = total_bits,
        .rel_err = m.rel_err,
        .sqnr_db = m.sqnr_db,
        .max_abs_err = m.max_abs_err,
        .cosine = m.cosine,
        .out_rel_err = isnan(x->out_sq_err) || isnan(x->out_sq_ref)
                           ? NAN
                           : rel_err_of(x->out_sq_err, x->out_sq_ref),
        .sq_err = x->sums.sq_err,
        .out_sq_err = x->out_sq_err,
        .out_sq_ref = x->out_sq_ref,
        .seconds = x->seconds,
        .flags = x->flags,
    };
    snprintf(row.device, sizeof row.device, "%s", x->device);
    fr_error err = {0};
    fr_status st = expert < 0 ? fr_dataset_add_result(&sw->ds, &row, &err)
                              : fr_dataset_add_expert_result(&sw->ds, &row, (uint32_t)expert, &err);
    if (st != FR_OK && sw->write_status == FR_OK) {
        sw->write_status = err.code;
        sw->write_err = err;
    }
    if (st == FR_OK && expert < 0)
        sw->stats.n_rows_new++;
}

/* One expert's outcome of an expert stack. Once every expert of the stack
 * has reported a configuration, the tensor's row is their sum in expert
 * order (error sums add, max_abs_err is the max, sizes add: E x size_bits
 * of one expert), and with --split-experts each expert's own row follows.
 * A failure of any expert is recorded once and the pair has no row. */
static void on_expert_outcome(fr_sweep *sw, const fr_sweep_outcome *o)
{
    const fr_sweep_item *it = &sw->items[o->item];
    expert_group *g = &sw->groups[sw->item_group[o->item]];
    const fr_config_ref *ref = it->configs[o->config];
    size_t j = selected_index(sw, ref);
    uint32_t e = sw->item_expert[o->item];
    if (!g->slots) {
        g->n_configs = it->n_configs;
        g->slots = calloc(g->n_configs * g->n_experts, sizeof *g->slots);
        g->arrived = calloc(g->n_configs, sizeof *g->arrived);
        g->failed = calloc(g->n_configs, 1);
        if (!g->slots || !g->arrived || !g->failed) {
            if (sw->write_status == FR_OK)
                sw->write_status = fr_fail(&sw->write_err, FR_E_NOMEM, "out of memory");
            return;
        }
    }
    size_t c = o->config;
    if (c >= g->n_configs)
        return;
    if (o->status != FR_OK) {
        if (!g->failed[c]) {
            char why[FR_ERROR_MSG_MAX];
            snprintf(why, sizeof why, "expert %u: %s", e, o->error);
            record_failure(sw, o->item, ref->cfg->name, j, why);
        }
        g->failed[c] = 1;
    } else {
        expert_slot *x = &g->slots[c * g->n_experts + e];
        x->sums = o->sums;
        x->out_sq_err = o->out_sq_err;
        x->out_sq_ref = o->out_sq_ref;
        x->seconds = o->seconds;
        x->flags = o->flags | (fr_gguf_fallback_type(ref, g->cols) ? FR_ROW_GGUF_FALLBACK : 0);
        snprintf(x->device, sizeof x->device, "%s", o->device);
    }
    if (++g->arrived[c] < g->n_experts)
        return;
    if (!g->failed[c] && !g->skipped) {
        uint64_t expert_bits = 0, total_bits = 0;
        frontier_call call;
        fr_error serr = {0};
        fr_call_init(&call, NULL, sw->opt.seed, it->tensor->name, ref->cfg->name);
        fr_status st = fr_quantizer_size_bits(sw->reg, ref, g->rows, g->cols, it->tensor->name,
                                              &call, &expert_bits, &serr);
        fr_call_release(&call);
        if (st == FR_OK && __builtin_mul_overflow(expert_bits, (uint64_t)g->n_experts, &total_bits))
            st = fr_fail(&serr, FR_E_FAIL,
                         "config '%s' on tensor '%s': the size of %u experts overflows 64 bits",
                         ref->cfg->name, it->tensor->name, g->n_experts);
        if (st != FR_OK) {
            record_failure(sw, o->item, ref->cfg->name, j, serr.msg);
        } else {
            const expert_slot *xs = &g->slots[c * g->n_experts];
            expert_slot sum = xs[0];
            sum.seconds = 0.0;
            fr_error_sums_init(&sum.sums);
            sum.out_sq_err = 0.0;
            sum.out_sq_ref = 0.0;
            /* flags: a fact of any expert is the stack's; "checked" and
             * "all zero" only when they hold for every expert */
            const uint32_t all_of = FR_ROW_CHECKED | FR_ROW_ALL_ZERO;
            sum.flags = all_of;
            for (uint32_t k = 0; k < g->n_experts; k++)
                sum.flags = (sum.flags & (xs[k].flags | ~all_of)) | (xs[k].flags & ~all_of);
            for (uint32_t k = 0; k < g->n_experts; k++) {
                sum.sums.sq_err += xs[k].sums.sq_err;
                sum.sums.sq_ref += xs[k].sums.sq_ref;
                sum.sums.sq_hat += xs[k].sums.sq_hat;
                sum.sums.dot += xs[k].sums.dot;
                if (xs[k].sums.max_abs_err > sum.sums.max_abs_err || k == 0)
                    sum.sums.max_abs_err = xs[k].sums.max_abs_err;
                sum.out_sq_err += xs[k].out_sq_err;
                sum.out_sq_ref += xs[k].out_sq_ref;
                sum.seconds += xs[k].seconds;
            }
            uint32_t tensor_id = sw->ds.tensors[g->ds_tensor].tensor_id;
            uint32_t config_id = sw->item_config_ids[sw->item_first_config[o->item] + c];
            double numel = (double)(g->rows * g->cols);
            add_expert_row(sw, tensor_id, config_id, total_bits, numel * g->n_experts, &sum, -1);
            if (sw->opt.split_experts)
                for (uint32_t k = 0; k < g->n_experts; k++)
                    add_expert_row(sw, tensor_id, config_id, expert_bits, numel, &xs[k], k);
        }
    }
    if (++g->n_closed == g->n_configs) {
        free(g->slots);
        free(g->arrived);
        free(g->failed);
        g->slots = NULL;
        g->arrived = NULL;
        g->failed = NULL;
    }
    maybe_commit(sw);
}

static void on_item_skipped(void *ctx, size_t item, fr_status status, const char *reason)
{
    fr_sweep *sw = ctx;
    (void)status;
    if (item >= sw->n_items)
        return;
    if (sw->item_group[item] != NO_GROUP) {
        /* one expert unreadable (NaN weights): the stack is skipped as a
         * whole, once; its other experts' outcomes never make a row */
        expert_group *g = &sw->groups[sw->item_group[item]];
        if (g->skipped)
            return;
        g->skipped = 1;
        char why[320];
        snprintf(why, sizeof why, "expert %u: %s", sw->item_expert[item], reason);
        sw->ds.tensors[g->ds_tensor].sq_norm = NAN;
        sw->stats.n_skipped++;
        if (sw->stats.n_selected)
            sw->stats.n_selected--;
        record_failure(sw, item, "", 0, why);
        return;
    }
    sw->ds.tensors[sw->item_tensor[item]].sq_norm = NAN;
    sw->stats.n_skipped++;
    if (sw->stats.n_selected)
        sw->stats.n_selected--;
    record_failure(sw, item, "", 0, reason);
}

static void on_item_norm(void *ctx, size_t item, double sq_norm)
{
    fr_sweep *sw = ctx;
    if (item >= sw->n_items)
        return;
    if (sw->item_group[item] != NO_GROUP) {
        /* the stack's norm: the experts' norms summed in expert order once
         * all are known (so it equals the sq_ref of its rows bit for bit) */
        expert_group *g = &sw->groups[sw->item_group[item]];
        g->norms[sw->item_expert[item]] = sq_norm;
        if (++g->n_norms == g->n_experts && !g->skipped) {
            double sum = 0.0;
            for (uint32_t e = 0; e < g->n_experts; e++)
                sum += g->norms[e];
            sw->ds.tensors[g->ds_tensor].sq_norm = sum;
        }
        return;
    }
    sw->ds.tensors[sw->item_tensor[item]].sq_norm = sq_norm;
}

static void on_item_done(void *ctx, size_t item, uint64_t bytes)
{
    fr_sweep *sw = ctx;
    if (item < sw->n_items)
        report_numeric_flags(sw, item);
    sw->items_done++;
    sw->bytes_done += bytes;
    fr_progress_update(sw->progress, sw->items_done, sw->bytes_done);
    maybe_commit(sw);
}

static int on_cancelled(void *ctx)
{
    fr_sweep *sw = ctx;
    return (sw->opt.stop && *sw->opt.stop) || sw->write_status != FR_OK;
}

/* ---- root attributes ---- */

static fr_status set_root(fr_sweep *sw, int resuming, const char *devices, fr_error *err)
{
    fr_status st;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    if ((st = fr_dataset_set_string(&sw->ds.tool_version, FRONTIER_VERSION, err)) != FR_OK)
        return st;
    sw->ds.schema_version = FR_SCHEMA_VERSION;
    if (resuming) {
        /* the first run's created/command_line/host stay; devices gathers
         * every device that contributed rows */
        if (!strstr(sw->ds.devices ? sw->ds.devices : "", devices)) {
            size_t len = strlen(sw->ds.devices ? sw->ds.devices : "") + strlen(devices) + 3;
            char *joined = malloc(len);
            if (!joined)
                return fr_fail(err, FR_E_NOMEM, "out of memory");
            snprintf(joined, len, "%s%s%s", sw->ds.devices ? sw->ds.devices : "",
                     sw->ds.devices && sw->ds.devices[0] ? "; " : "", devices);
            free(sw->ds.devices);
            sw->ds.devices = joined;
        }
        return FR_OK;
    }
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((st = fr_dataset_set_string(&sw->ds.format, "frontier", err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.created, created, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.command_line, sw->opt.command_line, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.host, host, err)) != FR_OK ||
        (st = fr_dataset_set_string(&sw->ds.devices, devices, err)) != FR_OK)
        return st;
    return FR_OK;
}

/* ---- execution ---- */

/* The output as it stands: a new file (refused if it exists without
 * --resume), or a dataset of this schema to continue, read into sw->ds.
 * Nothing is written before every check has passed. */
static fr_status open_output(fr_sweep *sw, int *resuming, fr_error *err)
{
    *resuming = 0;
    if (sw->opt.resume && access(sw->opt.output, F_OK) == 0) {
        int64_t version = 0;
        sw->output_exists = 1;
        fr_status st = fr_dataset_probe(sw->opt.output, &version, err);
        if (st != FR_OK) {
            fr_error_prefix(err, "cannot resume: ");
            return st;
        }
        if (version != FR_SCHEMA_VERSION)
            return fr_fail(err, FR_E_MISMATCH,
                           "cannot resume '%s': it has schema version %lld, this frontier writes "
                           "version %d",
                           sw->opt.output, (long long)version, FR_SCHEMA_VERSION);
        fr_dataset_free(&sw->ds);
        if ((st = fr_dataset_read(sw->opt.output, &sw->ds, err)) != FR_OK)
            return st;
        *resuming = 1;
        /* commits rewrite the file from the rows alone: tables derived from
         * the old rows would no longer match them */
        if (ds_has_derived(sw->opt.output))
            fr_warn("'%s': the derived tables under /frontier (pareto, allocate) are dropped "
                    "by --resume; run those commands again", sw->opt.output);
    } else if (sw->opt.resume) {
        sw->output_exists = 0;
        fr_info("'%s' does not exist yet: starting a new run", sw->opt.output);
    } else if (access(sw->opt.output, F_OK) == 0) {
        return fr_fail(err, FR_E_OUTPUT,
                       "'%s' already exists; use --resume to continue it, or choose another output",
                       sw->opt.output);
    }
    return FR_OK;
}

/* Runs the plan on the chosen executor; the rows reach the dataset through
 * the sink as they come. Returns the executor's status (xerr its error). */
static fr_status run_executor(fr_sweep *sw, fr_error *xerr)
{
    fr_sweep_sink sink = {.ctx = sw, .outcome = on_outcome, .item_skipped = on_item_skipped,
                          .item_done = on_item_done, .item_norm = on_item_norm,
                          .cancelled = on_cancelled};
    fr_executor_options xopt = {.threads = sw->opt.threads,
                                .device = sw->device,
                                .seed = sw->opt.seed,
                                .cpu_batch_bytes = sw->opt.cpu_batch_bytes,
                                .cpu_parallel_bytes = sw->opt.cpu_parallel_bytes,
                                .max_memory = sw->opt.max_memory,
                                .cuda_buffer_bytes = sw->opt.cuda_buffer_bytes,
                                .cuda_stats = sw->opt.cuda_stats,
                                .cuda_tf32 = sw->opt.cuda_tf32};
    double t0 = now_seconds();
    sw->progress = fr_progress_start("tensors", sw->n_items, sw->stats.bytes, sw->opt.quiet);
    fr_status xst;
    if (sw->opt.executor)
        xst = sw->opt.executor->run(sw->opt.executor->ctx, sw->reg, sw->items, sw->n_items, &xopt,
                                    &sink, xerr);
    else
#ifdef FR_SWEEP_HAVE_CUDA
    if (sw->device >= 0)
        xst = fr_exec_cuda(sw->reg, sw->items, sw->n_items, &xopt, &sink, xerr);
    else
#endif
        xst = fr_exec_cpu(sw->reg, sw->items, sw->n_items, &xopt, &sink, xerr);
    fr_progress_finish(sw->progress);
    sw->progress = NULL;
    sw->stats.seconds = now_seconds() - t0;
    return xst;
}

fr_status fr_sweep_execute(fr_sweep *sw, fr_error *err)
{
    fr_status st = FR_OK;
    int resuming = 0;
    if (sw->n_sources == 0)
        return fr_fail(err, FR_E_USAGE, "no model to sweep");

    /* an interval asked for is kept as it is; the default adapts to the
     * cost of a commit */
    sw->fixed_interval = sw->opt.commit_interval > 0;
    if (sw->opt.commit_interval <= 0)
        sw->opt.commit_interval = FR_COMMIT_INTERVAL;
    /* a calibration file that cannot be read stops the run before the
     * output is touched */
    if (sw->opt.calib && (st = fr_calib_open(sw->opt.calib, &sw->calib, err)) != FR_OK)
        return st;
    if ((st = open_output(sw, &resuming, err)) != FR_OK)
        return st;

    if ((st = plan_sources(sw, resuming, err)) != FR_OK ||
        (st = plan_configs(sw, err)) != FR_OK || (st = plan_tensors(sw, resuming, err)) != FR_OK)
        return st;
    if (sw->calib && (st = attach_calibration(sw, err)) != FR_OK)
        return st;
    if (sw->opt.fused_global_scale && (st = attach_group_amax(sw, err)) != FR_OK)
        return st;
    if ((st = drop_unmeasurable(sw, err)) != FR_OK)
        return st;
    /* tensors with work left: an expert stack's experts count once */
    for (size_t k = 0; k < sw->n_items; k++)
        if (sw->item_group[k] != NO_GROUP && sw->item_expert[k] != 0 && sw->stats.n_items)
            sw->stats.n_items--;

    int threads = sw->opt.threads > 0 ? sw->opt.threads : fr_cpu_count();
    if (sw->device < 0)
        snprintf(sw->stats.device, sizeof sw->stats.device, "cpu (%d thread%s)", threads,
                 threads == 1 ? "" : "s");
    else
        snprintf(sw->stats.device, sizeof sw->stats.device, "cuda:%d%s", sw->device,
                 sw->opt.cuda_tf32 ? " tf32" : "");
    if (sw->opt.executor && sw->opt.executor->device)
        snprintf(sw->stats.device, sizeof sw->stats.device, "%s", sw->opt.executor->device);
    if ((st = set_root(sw, resuming, sw->stats.device, err)) != FR_OK)
        return st;

    if (resuming)
        fr_info("resuming '%s': %zu rows present, %zu tensors with work left", sw->opt.output,
                sw->stats.n_rows_resumed, sw->n_items);
    fr_info("measuring %zu tensors x %zu configurations on %s; %zu tensors skipped%s",
            sw->stats.n_selected, sw->n_configs, sw->stats.device, sw->stats.n_skipped,
            sw->stats.n_excluded ? ", others excluded by --include/--exclude" : "");

    if (sw->stats.n_selected == 0)
        fr_warn("no tensor is selected for measurement (see /skipped in '%s')", sw->opt.output);
    fr_gguf_fallback_report(sw->items, sw->n_items);

    /* the first commit creates the output before any work, so an
     * unwritable path fails now, not after hours */
    if ((st = commit(sw, err)) != FR_OK)
        return st;

    fr_error xerr = {0};
    fr_status xst = run_executor(sw, &xerr);

    /* the final commit, whatever happened: every row measured is kept */
    fr_error cerr = {0};
    fr_status cst = sw->write_status == FR_OK ? commit(sw, &cerr) : sw->write_status;
    if (sw->write_status != FR_OK)
        cerr = sw->write_err;
    if (cst != FR_OK) {
        *err = cerr;
        return cst;
    }
    if (xst == FR_E_INTERRUPT || (sw->opt.stop && *sw->opt.stop))
        return fr_fail(err, FR_E_INTERRUPT,
                       "interrupted: %zu rows committed to '%s'; run again with --resume to finish",
                       sw->ds.n_results, sw->opt.output);
    if (xst != FR_OK) {
        *err = xerr;
        fr_error_prefix(err, "sweep stopped (%zu rows committed to '%s'): ", sw->ds.n_results,
                        sw->opt.output);
        return xst;
    }
    if (sw->stats.n_failed)
        return fr_fail(err, FR_E_FAIL, "%zu (tensor, configuration) pairs failed; see /skipped in '%s'",
                       sw->stats.n_failed, sw->opt.output);
    return FR_OK;
}
