/*
 * The sweep engine (frontier/sweep/sweep.h): it validates the options and
 * holds the selection (frontier/sweep/sweep_select.h), the dataset and
 * one of each of the units it runs in turn: the plan
 * (frontier/sweep/sweep_plan.h), the row sink (frontier/sweep/sweep_sink.h)
 * and the committer (frontier/sweep/sweep_commit.h).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/parallel.h"
#include "frontier/dataset/keep_rows.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/exec_cuda.h"
#include "frontier/exec/executor.h"
#include "frontier/sweep/gguf_fallback.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_commit.h"
#include "frontier/sweep/sweep_plan.h"
#include "frontier/sweep/sweep_select.h"
#include "frontier/sweep/sweep_sink.h"

#ifdef FRONTIER_HAVE_CUDA
#include "kernels/launchers.h" /* fr_cuda_device_count */
#define FR_SWEEP_HAVE_CUDA 1
#endif

struct fr_sweep {
    const fr_registry *reg;
    fr_sweep_options opt;
    const fr_config_ref **configs; /* selected */
    size_t n_configs;
    fr_tensor_filter filter;       /* --include, --exclude */
    int device;                    /* -1: CPU, else the CUDA device index */
    const fr_source **sources;
    size_t n_sources;

    fr_dataset ds;
    fr_sweep_stats stats;

    fr_sweep_plan plan;            /* the items, their tensors and configurations */
    fr_row_sink rows;              /* outcomes into rows */
    fr_sweep_committer committer;  /* commits, progress, the first failure */
};

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
    if (opt->fused_global_scale &&
        (st = fr_sweep_select_fused(reg, &sw->configs, &sw->n_configs, err)) != FR_OK)
        goto fail;
    if ((st = fr_tensor_filter_compile(&sw->filter, opt->include, opt->exclude, err)) != FR_OK)
        goto fail;
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
    if (access(opt->output, F_OK) == 0 && !opt->resume) {
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
    fr_tensor_filter_free(&sw->filter);
    free(sw->configs);
    free(sw->sources);
    fr_dataset_free(&sw->ds);
    fr_row_sink_free(&sw->rows);
    fr_sweep_plan_free(&sw->plan);
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
    fr_sweep_sink sink = fr_row_sink_callbacks(&sw->rows);
    fr_executor_options xopt = {.threads = sw->opt.threads,
                                .device = sw->device,
                                .seed = sw->opt.seed,
                                .cpu_batch_bytes = sw->opt.cpu_batch_bytes,
                                .cpu_parallel_bytes = sw->opt.cpu_parallel_bytes,
                                .max_memory = sw->opt.max_memory,
                                .cuda_buffer_bytes = sw->opt.cuda_buffer_bytes,
                                .cuda_stats = sw->opt.cuda_stats,
                                .cuda_tf32 = sw->opt.cuda_tf32,
                                .diagonal_output_error = sw->opt.diagonal_output_error};
    fr_sweep_commit_run_start(&sw->committer, sw->plan.n_items, sw->stats.bytes, sw->opt.quiet);
    fr_status xst;
    if (sw->opt.executor)
        xst = sw->opt.executor->run(sw->opt.executor->ctx, sw->reg, sw->plan.items,
                                    sw->plan.n_items, &xopt, &sink, xerr);
    else
#ifdef FR_SWEEP_HAVE_CUDA
    if (sw->device >= 0)
        xst = fr_exec_cuda(sw->reg, sw->plan.items, sw->plan.n_items, &xopt, &sink, xerr);
    else
#endif
        xst = fr_exec_cpu(sw->reg, sw->plan.items, sw->plan.n_items, &xopt, &sink, xerr);
    sw->stats.seconds = fr_sweep_commit_run_end(&sw->committer);
    return xst;
}

fr_status fr_sweep_execute(fr_sweep *sw, fr_error *err)
{
    fr_status st = FR_OK;
    int resuming = 0;
    if (sw->n_sources == 0)
        return fr_fail(err, FR_E_USAGE, "no model to sweep");

    /* a calibration file that cannot be read stops the run before the
     * output is touched */
    fr_plan_scope scope = {.reg = sw->reg, .configs = sw->configs, .n_configs = sw->n_configs,
                           .sources = sw->sources, .n_sources = sw->n_sources,
                           .filter = &sw->filter, .min_numel = sw->opt.min_numel,
                           .max_memory = sw->opt.max_memory,
                           .fused_global_scale = sw->opt.fused_global_scale,
                           .diagonal_output_error = sw->opt.diagonal_output_error,
                           .output = sw->opt.output};
    if ((st = fr_sweep_plan_open(&sw->plan, &scope, sw->opt.calib, err)) != FR_OK)
        return st;
    if ((st = open_output(sw, &resuming, err)) != FR_OK)
        return st;
    /* a resumed output is replaced by each commit, a new one created */
    fr_sweep_commit_init(&sw->committer, sw->opt.output, &sw->ds, &sw->stats,
                         sw->opt.commit_interval, resuming);

    if ((st = fr_sweep_plan_build(&sw->plan, &sw->ds, resuming, &sw->stats, err)) != FR_OK)
        return st;
    if ((st = fr_row_sink_init(&sw->rows, &sw->plan, &sw->ds, &sw->stats, &sw->committer,
                               &sw->opt, err)) != FR_OK)
        return st;

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
                sw->stats.n_rows_resumed, sw->plan.n_items);
    fr_info("measuring %zu tensors x %zu configurations on %s; %zu tensors skipped%s",
            sw->stats.n_selected, sw->n_configs, sw->stats.device, sw->stats.n_skipped,
            sw->stats.n_excluded ? ", others excluded by --include/--exclude" : "");

    if (sw->stats.n_selected == 0)
        fr_warn("no tensor is selected for measurement (see /skipped in '%s')", sw->opt.output);
    fr_gguf_fallback_report(sw->plan.items, sw->plan.n_items);

    /* the first commit creates the output before any work, so an
     * unwritable path fails now, not after hours */
    if ((st = fr_sweep_commit(&sw->committer, err)) != FR_OK)
        return st;

    fr_error xerr = {0};
    fr_status xst = run_executor(sw, &xerr);

    /* a quantized source's tensors as released (frontier/dataset/keep_rows.h) */
    fr_error kerr = {0};
    fr_status kst = fr_dataset_add_keep_rows(&sw->ds, sw->opt.output, NULL, &kerr);
    /* the final commit, whatever happened: every row measured is kept */
    fr_status cst = fr_sweep_commit_final(&sw->committer, err);
    if (cst != FR_OK)
        return cst;
    if (kst != FR_OK) {
        *err = kerr;
        return kst;
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
