/*
 * frontier pareto RUN.h5 [--by config|family|class|tensor] [--metric ...]:
 * model-level points per configuration, the Pareto-optimal ones, printed
 * and stored under /frontier (docs/analysis.md).
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/frontier_store.h"
#include "frontier/analysis/pareto.h"
#include "frontier/analysis/allocate.h"

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier pareto RUN.h5 [--by config|family|class|tensor]\n"
            "                              [--metric rel_err|out_rel_err|sqnr_db]\n"
            "                              [--include REGEX] [--exclude REGEX] [--configs REGEX]\n"
            "                              [--frontier-only] [--verbose] [--json] [--no-store]\n"
            "                              [--calib FILE [--default-sensitivity X]]\n"
            "                              [--expert-units] [--model MODEL]\n"
            "\n"
            "Aggregates every configuration over the selected tensors (bits per weight =\n"
            "sum of bits / sum of parameters; rel_err = sqrt(sum ||dW||^2 / sum ||W||^2);\n"
            "out_rel_err likewise from the calibrated terms) and marks the Pareto-optimal\n"
            "ones: no other configuration has fewer bits and less error. Configurations\n"
            "are compared on the tensors ALL of them were measured on; the header of each\n"
            "group says how many that is.\n"
            "\n"
            "The table gives, per group, the configuration with the least error in each\n"
            "band of bits per weight (< 2, [2, 3), [3, 4), [4, 5), [5, 7), >= 7), and\n"
            "names beside it the configurations with the same rows (identical bits and\n"
            "errors on every tensor of the group, such as g64, g128 and gC on 64-column\n"
            "tensors); --verbose prints every configuration instead. --json and the\n"
            "stored table always hold every point.\n"
            "\n"
            "  --by config     one model-level table (default)\n"
            "  --by family     a frontier per quantizer family\n"
            "  --by class      a table per tensor class (attention vs MLP vs experts)\n"
            "  --by tensor     a table per tensor\n"
            "  --metric M      rel_err (default), out_rel_err (needs a calibrated sweep),\n"
            "                  sqnr_db (same frontier as rel_err, in decibels)\n"
            "  --include/--exclude REGEX   tensors by name (POSIX extended regex)\n"
            "  --configs REGEX configurations by name\n"
            "  --frontier-only print the Pareto-optimal rows only (in each band, the best\n"
            "                  of the Pareto-optimal points)\n"
            "  --verbose       every configuration, one block per group, instead of the\n"
            "                  best of each band\n"
            "  --json          print the points as JSON (and the measured rows, when the\n"
            "                  dataset has them, under measured)\n"
            "  --expert-units  count the 2-D experts of one (layer, projection)\n"
            "                  (mlp.experts.<N>.gate_proj.weight for every N) as one unit,\n"
            "                  as allocate --expert-units does: compared when all of its\n"
            "                  experts are measured, one table per unit with --by tensor\n"
            "  --no-store      do not write /frontier/pareto_<by>_<metric> into RUN.h5\n"
            "  --model MODEL   the model llama-quantize's stock mixes are worked out for\n"
            "                  (default: the dataset's source, else its tensors)\n"

            "  --calib FILE    also the predicted KL divergence of each configuration used\n"
            "                  on every selected tensor: sum alpha_t err_t^2 (err = out_rel_err\n"
            "                  with --metric out_rel_err, else rel_err; alpha_t the file's\n"
            "                  <module>.sensitivity; JSON: predicted_kl, null where a tensor\n"
            "                  lacks a sensitivity and no --default-sensitivity is given;\n"
            "                  the table's configurations, every one with --verbose)\n"
            "\n"
            "With --by config, when the dataset has the ggml-* rows they need, the table\n"
            "is followed by llama-quantize's stock mixes (Q2_K ... Q8_0, the types\n"
            "llama_tensor_get_type gives each tensor) as points of their own, each with\n"
            "the cheapest uniform configuration that beats it (docs/llama-mixes.md);\n"
            "--json lists them under llama_mixes.\n"
            "\n"
            "exit codes: 0 ok, 2 usage, 3 unreadable file, 4 not a frontier dataset or\n"
            "no usable result, 5 cannot update RUN.h5 (docs/exit-codes.md)\n");
}

static cJSON *json_number(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* --calib: the predicted KL divergence sum_t alpha_t err_t^2 of each
 * configuration used uniformly over the selected tensors (NaN when one of
 * them lacks the result or a sensitivity). */
typedef struct predict_ctx {
    const fr_dataset *ds;
    const fr_result_index *ix;
    const fr_selector *sel;
    const double *alpha;
    double default_alpha;
    fr_metric metric;
} predict_ctx;

static const predict_ctx *g_predict; /* set while printing, NULL without --calib */

static double predicted_of(const char *config)
{
    const predict_ctx *c = g_predict;
    int64_t k = fr_config_position(c->ds, config);
    size_t n;
    return k < 0 ? NAN
                 : fr_alloc_predicted_uniform(c->ds, c->ix,
                                              c->metric == FR_METRIC_OUT_REL_ERR ? c->metric
                                                                                 : FR_METRIC_REL_ERR,
                                              c->sel, c->alpha, c->default_alpha, (size_t)k, &n);
}

/* listed[c]: configuration c is a row of the compact table. */
static unsigned char *band_rows(const fr_dataset *ds, const fr_pareto *p, int frontier_only)
{
    unsigned char *listed = calloc(ds->n_configs + 1, 1);
    for (size_t g = 0; listed && g < p->n_groups; g++)
        for (int b = 0; b < FR_BPW_BANDS; b++) {
            const fr_point *pt = fr_pareto_band_best(p, g, b, frontier_only);
            if (pt)
                listed[pt->config] = 1;
        }
    return listed;
}

/* listed NULL: every selected configuration. */
static void print_predicted(const fr_dataset *ds, const unsigned char *listed)
{
    const fr_selector *sel = g_predict->sel;
    printf("\npredicted KL divergence (sum of alpha x %s^2 over the selected tensors)\n",
           g_predict->metric == FR_METRIC_OUT_REL_ERR ? "out_rel_err" : "rel_err");
    for (size_t c = 0; c < ds->n_configs; c++) {
        if (!fr_selector_config(sel, ds->configs[c].name) || (listed && !listed[c]))
            continue;
        double v = predicted_of(ds->configs[c].name);
        if (!isnan(v))
            printf("  %-34s %.6g\n", ds->configs[c].name, v);
    }
}

/* A measured row's prediction: the configuration's point in the model
 * group (pareto by config), and its predicted KL with --calib; a recipe's
 * own prediction (allocate's, kept with the measurement). */
static void predict_measured(const fr_measured *m, void *ctx, double *metric_value,
                             double *predicted_kl)
{
    const fr_pareto *p = ctx;
    if (!strcmp(m->kind, "recipe"))
        *predicted_kl = m->predicted_kl;
    if (strcmp(m->kind, "config") != 0 || p->by != FR_BY_CONFIG || p->n_groups == 0)
        return;
    const fr_pareto_group *g = &p->groups[0];
    for (size_t i = g->first_point; i < g->first_point + g->n_points; i++)
        if (!strcmp(p->points[i].config_name, m->name))
            *metric_value = fr_point_metric(&p->points[i], p->metric);
    if (g_predict)
        *predicted_kl = predicted_of(m->name);
}

/* The mixes as JSON points. */
static cJSON *mixes_json(const fr_llama_mix_result *mixes, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *q = cJSON_CreateObject();
        if (!q || !cJSON_AddItemToArray(arr, q)) {
            cJSON_Delete(q);
            cJSON_Delete(arr);
            return NULL;
        }
        cJSON_AddStringToObject(q, "mix", fr_llama_mix_name(mixes[i].mix));
        cJSON_AddItemToObject(q, "bits_per_weight", json_number(mixes[i].bits_per_weight));
        cJSON_AddNumberToObject(q, "total_bits", (double)mixes[i].total_bits);
        cJSON_AddNumberToObject(q, "numel", (double)mixes[i].numel);
        cJSON_AddItemToObject(q, fr_metric_name(mixes[i].metric), json_number(mixes[i].value));
    }
    return arr;
}

static void predict_measured(const fr_measured *m, void *ctx, double *metric_value,
                             double *predicted_kl);

static int print_json(const char *path, const fr_pareto *p, const fr_llama_mix_result *mixes,
                      size_t n_mixes)
{
    cJSON *root = cJSON_CreateObject(), *groups = cJSON_CreateArray();
    if (!root || !groups) {
        cJSON_Delete(root);
        cJSON_Delete(groups);
        return 0;
    }
    cJSON_AddStringToObject(root, "by", fr_group_by_name(p->by));
    cJSON_AddStringToObject(root, "metric", fr_metric_name(p->metric));
    cJSON_AddBoolToObject(root, "expert_units", p->expert_units);
    cJSON_AddItemToObject(root, "groups", groups);
    if (n_mixes) {
        cJSON *m = mixes_json(mixes, n_mixes);
        if (!m) {
            cJSON_Delete(root);
            return 0;
        }
        cJSON_AddItemToObject(root, "llama_mixes", m);
    }
    /* what engines measured (annotate, evaluate) beside the prediction */
    cJSON *measured = cli_measured_json(path, fr_metric_name(p->metric), predict_measured,
                                        (void *)(uintptr_t)p);
    if (measured)
        cJSON_AddItemToObject(root, "measured", measured);
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_pareto_group *grp = &p->groups[g];
        cJSON *o = cJSON_CreateObject(), *pts = cJSON_CreateArray();
        if (!o || !pts) {
            cJSON_Delete(o);
            cJSON_Delete(pts);
            cJSON_Delete(root);
            return 0;
        }
        cJSON_AddItemToArray(groups, o);
        cJSON_AddStringToObject(o, "name", grp->name);
        cJSON_AddNumberToObject(o, "n_tensors", (double)grp->n_tensors);
        cJSON_AddNumberToObject(o, "n_common", (double)grp->n_common);
        cJSON_AddNumberToObject(o, "numel", (double)grp->numel);
        cJSON_AddNumberToObject(o, "common_numel", (double)grp->common_numel);
        cJSON_AddNumberToObject(o, "n_configs", (double)grp->n_configs);
        cJSON_AddNumberToObject(o, "n_partial", (double)grp->n_partial);
        cJSON_AddItemToObject(o, "points", pts);
        for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++) {
            const fr_point *pt = &p->points[i];
            cJSON *q = cJSON_CreateObject();
            if (!q) {
                cJSON_Delete(root);
                return 0;
            }
            cJSON_AddItemToArray(pts, q);
            cJSON_AddStringToObject(q, "config", pt->config_name);
            cJSON_AddStringToObject(q, "family", pt->family);
            cJSON_AddItemToObject(q, "bits_per_weight", json_number(pt->bits_per_weight));
            cJSON_AddNumberToObject(q, "total_bits", (double)pt->total_bits);
            cJSON_AddNumberToObject(q, "numel", (double)pt->numel);
            cJSON_AddItemToObject(q, "rel_err", json_number(pt->rel_err));
            cJSON_AddItemToObject(q, "sqnr_db", json_number(pt->sqnr_db));
            cJSON_AddItemToObject(q, "out_rel_err", json_number(pt->out_rel_err));
            cJSON_AddBoolToObject(q, "on_frontier", pt->on_frontier);
            if (g_predict)
                cJSON_AddItemToObject(q, "predicted_kl", json_number(predicted_of(pt->config_name)));
        }
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return 0;
    puts(text);
    cJSON_free(text);
    return 1;
}

/* The tables on stdout: every point as JSON, every configuration
 * (--verbose), or the least error per bit band; with a sensitivity, the
 * predicted KL of the rows shown. FR_E_NOMEM (logged) when out of memory. */
static fr_status print_tables(const char *path, const fr_dataset *ds, const fr_pareto *p,
                              int json, int verbose, int frontier_only,
                              const fr_llama_mix_result *mixes, size_t n_mixes)
{
    if (json) {
        if (!print_json(path, p, mixes, n_mixes)) {
            fr_error_log("out of memory");
            return FR_E_NOMEM;
        }
    } else if (verbose) {
        fr_pareto_print(stdout, p, frontier_only);
        if (g_predict)
            print_predicted(ds, NULL);
    } else {
        fr_pareto_print_bands(stdout, p, frontier_only);
        if (g_predict) {
            unsigned char *listed = band_rows(ds, p, frontier_only);
            if (!listed) {
                fr_error_log("out of memory");
                return FR_E_NOMEM;
            }
            print_predicted(ds, listed);
            free(listed);
        }
    }
    if (!json) {
        size_t n_diag = fr_dataset_diagonal_out_tensors(ds);
        if (n_diag)
            printf("out_rel_err: on %zu tensor%s from the diagonal of the inputs' second moment "
                   "only (sweep --diagonal-output-error: their correlations left out)\n",
                   n_diag, n_diag == 1 ? "" : "s");
        fr_llama_mixes_print(stdout, mixes, n_mixes, p);
    }
    return FR_OK;
}

/* The Pareto table into the dataset's /frontier, with the command line that
 * made it; the error is logged (the table printed above stays valid). */
static fr_status store_pareto(const char *path, const fr_pareto *p, const fr_selection *sel,
                              int argc, char **argv)
{
    fr_error err;
    fr_store *store_tx;
    char *command_line = cli_command_line(argc, argv);
    char name[128];
    fr_store_pareto_name(p, name, sizeof name);
    fr_status st = fr_store_begin(path, &store_tx, &err);
    if (st == FR_OK) {
        if ((st = fr_store_pareto(store_tx, p, sel, command_line, &err)) == FR_OK)
            st = fr_store_commit(store_tx, &err);
        else
            fr_store_abort(store_tx);
    }
    free(command_line);
    if (st != FR_OK) {
        fr_error_log("%s (the table above is not stored; --no-store skips storing)", err.msg);
        return st;
    }
    fr_info("stored /frontier/%s in '%s'", name, path);
    return FR_OK;
}

int cmd_pareto(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"by", required_argument, NULL, 'b'},      {"metric", required_argument, NULL, 'm'},
        {"include", required_argument, NULL, 'i'}, {"exclude", required_argument, NULL, 'x'},
        {"configs", required_argument, NULL, 'c'}, {"frontier-only", no_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},          {"no-store", no_argument, NULL, 'n'},
        {"calib", required_argument, NULL, 'C'},  {"default-sensitivity", required_argument, NULL, 'D'},
        {"expert-units", no_argument, NULL, 'E'}, {"verbose", no_argument, NULL, 'v'},
        {"model", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    fr_group_by by = FR_BY_CONFIG;
    fr_metric metric = FR_METRIC_REL_ERR;
    fr_selection sel = {NULL, NULL, NULL};
    int frontier_only = 0, json = 0, store = 1, expert_units = 0, verbose = 0, opt;
    const char *calib_path = NULL, *model_path = NULL;
    double default_alpha = NAN, *alpha = NULL;
    fr_llama_mix_result *mixes = NULL;
    size_t n_mixes = 0;
    fr_selector selector;
    int have_selector = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'b': {
            int b = fr_group_by_from_name(optarg);
            if (b < 0)
                return cli_usage_error(argv[0], "unknown --by '%s' (config, family, class, tensor)",
                                       optarg);
            by = (fr_group_by)b;
            break;
        }
        case 'm': {
            int m = fr_metric_from_name(optarg);
            if (m < 0)
                return cli_usage_error(argv[0],
                                       "unknown metric '%s' (rel_err, out_rel_err, sqnr_db)", optarg);
            metric = (fr_metric)m;
            break;
        }
        case 'i': sel.include = optarg; break;
        case 'x': sel.exclude = optarg; break;
        case 'c': sel.configs = optarg; break;
        case 'f': frontier_only = 1; break;
        case 'j': json = 1; break;
        case 'n': store = 0; break;
        case 'E': expert_units = 1; break;
        case 'v': verbose = 1; break;
        case 'C': calib_path = optarg; break;
        case 'M': model_path = optarg; break;
        case 'D':
            if (!cli_parse_double(optarg, &default_alpha) || !(default_alpha >= 0))
                return cli_usage_error(argv[0], "invalid --default-sensitivity '%s' (a number >= 0)", optarg);
            break;
        case 'h': print_help(stdout); return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no dataset given (frontier pareto RUN.h5)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one dataset at a time: unexpected '%s'", argv[optind + 1]);
    const char *path = argv[optind];

    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    fr_pareto p;
    memset(&ix, 0, sizeof ix);
    memset(&p, 0, sizeof p);
    fr_status st = cli_read_dataset(path, &ds, &ix, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    predict_ctx pctx = {&ds, &ix, NULL, NULL, default_alpha, metric};
    if (calib_path || !isnan(default_alpha)) {
        if (calib_path) {
            if (!(alpha = malloc((ds.n_tensors + 1) * sizeof *alpha))) {
                st = FR_E_NOMEM;
                fr_error_log("out of memory");
                goto done;
            }
            if ((st = fr_alloc_read_sensitivity(&ds, calib_path, alpha, &err)) != FR_OK) {
                fr_error_log("%s", err.msg);
                goto done;
            }
        }
        if ((st = fr_selector_init(&selector, &sel, &err)) != FR_OK) {
            st = cli_usage_error(argv[0], "%s", err.msg);
            goto done;
        }
        have_selector = 1;
        pctx.sel = &selector;
        pctx.alpha = alpha;
        g_predict = &pctx;
    }
    if ((st = fr_pareto_compute_units(&ds, &ix, &sel, by, metric, expert_units, &p, &err)) != FR_OK) {
        if (st == FR_E_USAGE) {
            st = cli_usage_error(argv[0], "%s", err.msg);
        } else {
            fr_error_log("'%s': %s", path, err.msg);
        }
        goto done;
    }
    /* llama-quantize's stock mixes: points over the model's tensors */
    if (by == FR_BY_CONFIG && !expert_units &&
        (st = cli_llama_mixes(&ds, &ix, &sel, metric, model_path, &mixes, &n_mixes)) != FR_OK)
        goto done;
    if ((st = print_tables(path, &ds, &p, json, verbose, frontier_only, mixes, n_mixes)) != FR_OK)
        goto done;
    if (!json)
        cli_print_measured(stdout, path, fr_metric_name(metric), predict_measured, &p);
    cli_warn_unmeasured(&ds, &ix, &sel);
    if (store && (st = store_pareto(path, &p, &sel, argc, argv)) != FR_OK)
        goto done;
done:
    cli_llama_mixes_free(mixes, n_mixes);
    g_predict = NULL;
    if (have_selector)
        fr_selector_free(&selector);
    free(alpha);
    fr_pareto_free(&p);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return st;
}
