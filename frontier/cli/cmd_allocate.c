/*
 * frontier allocate RUN.h5 --budget BITS [-o recipe.json]: one
 * configuration per tensor with the least aggregated error under a
 * bits-per-weight budget, solved exactly; --sweep-budgets LO..HI[:STEP]
 * computes the whole mixed-precision frontier (docs/analysis.md).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/allocate.h"
#include "frontier/dataset.h"
#include "frontier/frontier_store.h"
#include "frontier/pareto.h"

#define MAX_FIXED 256

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier allocate RUN.h5 --budget BITS [-o RECIPE.json]\n"
            "       frontier allocate RUN.h5 --sweep-budgets LO..HI[:STEP]\n"
            "         [--metric rel_err|out_rel_err|sqnr_db] [--include REGEX] [--exclude REGEX]\n"
            "         [--configs REGEX] [--fixed REGEX=CONFIG]... [--tensor-types FILE]\n"
            "         [--max-states N] [--summary] [--no-store]\n"
            "\n"
            "Chooses one configuration per tensor so that the total size stays within\n"
            "BITS bits per weight (sum of total_bits <= floor(BITS x sum of parameters))\n"
            "and the aggregated error is least: sum ||dW||^2 for rel_err and sqnr_db,\n"
            "sum of the output error terms for out_rel_err. The solution is exact (an\n"
            "LP bound, reduced-cost fixing and a bounded search; docs/analysis.md).\n"
            "\n"
            "  --budget BITS          bits per weight to meet\n"
            "  --sweep-budgets LO..HI[:STEP]  every budget from LO to HI (STEP 0.1) and\n"
            "                         the size of every uniform configuration in range:\n"
            "                         the mixed-precision curve, stored as /frontier/mixed_curve\n"
            "                         and drawn by 'frontier export'\n"
            "  -o FILE                write the recipe JSON (tensor -> configuration, totals)\n"
            "                         and a llama.cpp tensor-type file beside it\n"
            "  --tensor-types FILE    where the llama-quantize --tensor-type-file goes\n"
            "                         (default: the recipe's name with .tensor-types.txt)\n"
            "  --metric M             rel_err (default), out_rel_err, sqnr_db\n"
            "  --include/--exclude REGEX  tensors allocated (the rest are not counted)\n"
            "  --configs REGEX        configurations allowed\n"
            "  --fixed REGEX=CONFIG   pin matching tensors to CONFIG (repeatable; the last\n"
            "                         matching rule wins, as in llama.cpp)\n"
            "  --max-states N         give up proving optimality after N search states\n"
            "                         (default %llu; the answer then says how close it is)\n"
            "  --summary              totals only, no per-tensor table\n"
            "  --no-store             do not write the result under /frontier in RUN.h5\n"
            "\n"
            "exit codes: 0 ok, 2 usage (including a budget below the smallest size, an\n"
            "unknown --fixed configuration), 3 unreadable file, 4 no usable results,\n"
            "5 cannot write an output (docs/exit-codes.md)\n",
            (unsigned long long)FR_MCKP_DEFAULT_MAX_NODES);
}

/* recipe.json -> recipe.tensor-types.txt */
static char *tensor_types_path(const char *recipe)
{
    size_t len = strlen(recipe);
    char *out = malloc(len + 32);
    if (!out)
        return NULL;
    strcpy(out, recipe);
    char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    if (dot && (!slash || dot > slash) && !strcmp(dot, ".json"))
        *dot = '\0';
    strcat(out, ".tensor-types.txt");
    return out;
}

/* The uniform configurations within the budget, over the allocated tensors:
 * the comparison the allocation has to win. */
static void print_uniform_comparison(const fr_allocation *a, const fr_alloc_problem *prob)
{
    const fr_dataset *ds = prob->ds;
    double best = INFINITY;
    const char *best_name = NULL;
    double best_bpw = 0;
    for (size_t c = 0; c < ds->n_configs; c++) {
        uint64_t bits = 0;
        double e = 0, n;
        int all = 1;
        for (size_t i = 0; i < prob->n_tensors && all; i++) {
            size_t t = prob->tensors[i].tensor;
            const fr_ds_result *r = fr_result_at(prob->ix, t, c);
            double et;
            if (!r || !fr_metric_terms(prob->metric, r, &ds->tensors[t], &et, &n)) {
                all = 0;
            } else {
                bits += r->total_bits;
                e += et;
            }
        }
        if (!all || bits > a->capacity_bits)
            continue;
        if (e < best) {
            best = e;
            best_name = ds->configs[c].name;
            best_bpw = (double)bits / (double)prob->numel;
        }
    }
    if (!best_name) {
        printf("no uniform configuration fits the budget on these tensors\n");
        return;
    }
    double v = fr_metric_value(prob->metric, best, prob->norm_sum);
    printf("best uniform configuration within the budget: %s at %.4f bits per weight, %s %.6g",
           best_name, best_bpw, fr_metric_name(prob->metric), v);
    if (best > 0)
        printf(" (the allocation has %.1f%% less squared error)", 100.0 * (1 - a->err_sum / best));
    printf("\n");
}

int cmd_allocate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"budget", required_argument, NULL, 'B'},
        {"sweep-budgets", required_argument, NULL, 'S'},
        {"output", required_argument, NULL, 'o'},
        {"tensor-types", required_argument, NULL, 'T'},
        {"metric", required_argument, NULL, 'm'},
        {"include", required_argument, NULL, 'i'},
        {"exclude", required_argument, NULL, 'x'},
        {"configs", required_argument, NULL, 'c'},
        {"fixed", required_argument, NULL, 'F'},
        {"max-states", required_argument, NULL, 'N'},
        {"summary", no_argument, NULL, 's'},
        {"no-store", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fr_alloc_fixed fixed[MAX_FIXED];
    char *fixed_text[MAX_FIXED];
    size_t n_fixed = 0;
    fr_alloc_options aopt;
    memset(&aopt, 0, sizeof aopt);
    aopt.metric = FR_METRIC_REL_ERR;
    double budget = NAN, lo = 0, hi = 0, step = 0;
    int have_budget = 0, have_sweep = 0, summary = 0, store = 1, opt;
    const char *out_path = NULL, *types_path = NULL;
    int rc = FR_OK;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'B':
            if (!cli_parse_double(optarg, &budget) || budget <= 0) {
                rc = cli_usage_error(argv[0], "invalid --budget '%s' (bits per weight, e.g. 3.5)", optarg);
                goto done;
            }
            have_budget = 1;
            break;
        case 'S':
            if (!cli_parse_range(optarg, 0.1, &lo, &hi, &step)) {
                rc = cli_usage_error(argv[0], "invalid --sweep-budgets '%s' (LO..HI or LO..HI:STEP, e.g. 2..8:0.25)", optarg);
                goto done;
            }
            have_sweep = 1;
            break;
        case 'o': out_path = optarg; break;
        case 'T': types_path = optarg; break;
        case 'm': {
            int m = fr_metric_from_name(optarg);
            if (m < 0) {
                rc = cli_usage_error(argv[0], "unknown metric '%s' (rel_err, out_rel_err, sqnr_db)", optarg);
                goto done;
            }
            aopt.metric = (fr_metric)m;
            break;
        }
        case 'i': aopt.selection.include = optarg; break;
        case 'x': aopt.selection.exclude = optarg; break;
        case 'c': aopt.selection.configs = optarg; break;
        case 'F': {
            /* the configuration is after the last '=': regexes may hold '=' */
            const char *eq = strrchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1]) {
                rc = cli_usage_error(argv[0], "invalid --fixed '%s' (REGEX=CONFIG)", optarg);
                goto done;
            }
            if (n_fixed == MAX_FIXED) {
                rc = cli_usage_error(argv[0], "more than %d --fixed rules", MAX_FIXED);
                goto done;
            }
            char *re = strndup(optarg, (size_t)(eq - optarg));
            if (!re) {
                rc = FR_E_NOMEM;
                fr_error_log("out of memory");
                goto done;
            }
            fixed_text[n_fixed] = re;
            fixed[n_fixed++] = (fr_alloc_fixed){re, eq + 1};
            break;
        }
        case 'N': {
            char *end;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (*end || n == 0 || optarg[0] == '-') {
                rc = cli_usage_error(argv[0], "invalid --max-states '%s' (a positive integer)", optarg);
                goto done;
            }
            aopt.max_nodes = n;
            break;
        }
        case 's': summary = 1; break;
        case 'n': store = 0; break;
        case 'h': print_help(stdout); goto done;
        case ':': rc = cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]); goto done;
        default: rc = cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]); goto done;
        }
    }
    if (optind >= argc) {
        rc = cli_usage_error(argv[0], "no dataset given (frontier allocate RUN.h5 --budget BITS)");
        goto done;
    }
    if (optind + 1 < argc) {
        rc = cli_usage_error(argv[0], "one dataset at a time: unexpected '%s'", argv[optind + 1]);
        goto done;
    }
    if (have_budget == have_sweep) {
        rc = cli_usage_error(argv[0], have_budget ? "--budget and --sweep-budgets exclude each other"
                                                  : "no budget given (--budget BITS or --sweep-budgets LO..HI)");
        goto done;
    }
    if (have_sweep && (out_path || types_path)) {
        rc = cli_usage_error(argv[0], "-o and --tensor-types write one recipe: use them with --budget");
        goto done;
    }
    aopt.n_fixed = n_fixed;
    aopt.fixed = fixed;

    const char *path = argv[optind];
    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_allocation a;
    fr_mixed_curve curve;
    fr_store *tx;
    char *command_line = NULL, *types = NULL;
    memset(&prob, 0, sizeof prob);
    memset(&a, 0, sizeof a);
    memset(&curve, 0, sizeof curve);
    fr_status st = cli_read_dataset(path, &ds, &ix, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        rc = st;
        goto done;
    }
    if ((st = fr_alloc_prepare(&ds, &ix, &aopt, &prob, &err)) != FR_OK) {
        if (st == FR_E_USAGE)
            cli_usage_error(argv[0], "%s", err.msg);
        else
            fr_error_log("'%s': %s", path, err.msg);
        goto finish;
    }
    if (prob.n_dropped)
        fr_warn("%zu selected tensor%s (e.g. '%s') %s no %s result and %s left out of the allocation",
                prob.n_dropped, prob.n_dropped == 1 ? "" : "s", prob.dropped_example,
                prob.n_dropped == 1 ? "has" : "have", fr_metric_name(aopt.metric),
                prob.n_dropped == 1 ? "is" : "are");

    if (have_budget) {
        if ((st = fr_alloc_solve(&prob, budget, &a, &err)) != FR_OK) {
            if (st == FR_E_USAGE)
                cli_usage_error(argv[0], "%s", err.msg);
            else
                fr_error_log("%s", err.msg);
            goto finish;
        }
        fr_allocation_print(stdout, &a, &prob, !summary);
        print_uniform_comparison(&a, &prob);
        if (!a.stats.optimal)
            fr_warn("the search stopped after %llu states: the allocation is within %.3g%% of the "
                    "optimal squared error (raise --max-states to prove optimality)",
                    (unsigned long long)a.stats.nodes,
                    a.stats.lower_bound > 0 ? 100 * (a.err_sum / a.stats.lower_bound - 1) : 0.0);
        if (out_path) {
            if ((st = fr_allocation_write_json(&a, &prob, path, out_path, &err)) != FR_OK) {
                fr_error_log("%s", err.msg);
                goto finish;
            }
            types = types_path ? NULL : tensor_types_path(out_path);
            if (!types_path && !types) {
                st = FR_E_NOMEM;
                fr_error_log("out of memory");
                goto finish;
            }
        }
        if (types_path || types) {
            size_t unmapped = 0;
            const char *tp = types_path ? types_path : types;
            if ((st = fr_allocation_write_tensor_types(&a, &prob, tp, &unmapped, &err)) != FR_OK) {
                fr_error_log("%s", err.msg);
                goto finish;
            }
            if (unmapped)
                fr_warn("%zu of %zu tensors got a configuration without a llama.cpp type, so "
                        "'%s' lists only the other %zu (for a complete file restrict --configs "
                        "to int8-g32-sym, int4-g32-sym, int4-g32-asym, int5-g32-sym, "
                        "int5-g32-asym, mxfp4)",
                        unmapped, a.n_choices, tp, a.n_choices - unmapped);
            if (out_path)
                fr_info("wrote '%s' and '%s'", out_path, tp);
            else
                fr_info("wrote '%s'", tp);
        }
    } else {
        if ((st = fr_alloc_sweep(&prob, lo, hi, step, 1, &curve, &err)) != FR_OK) {
            if (st == FR_E_USAGE)
                cli_usage_error(argv[0], "%s", err.msg);
            else
                fr_error_log("%s", err.msg);
            goto finish;
        }
        fr_mixed_curve_print(stdout, &curve);
    }

    if (store) {
        command_line = cli_command_line(argc, argv);
        if ((st = fr_store_begin(path, &tx, &err)) == FR_OK) {
            st = have_budget ? fr_store_allocation(tx, &a, &prob, &aopt.selection, command_line, &err)
                             : fr_store_mixed_curve(tx, &curve, &aopt.selection, command_line, &err);
            if (st == FR_OK)
                st = fr_store_commit(tx, &err);
            else
                fr_store_abort(tx);
        }
        if (st != FR_OK) {
            fr_error_log("%s (the result above is not stored; --no-store skips storing)", err.msg);
            goto finish;
        }
        char name[128];
        if (have_budget)
            fr_store_allocation_name(budget, name, sizeof name);
        else
            snprintf(name, sizeof name, "mixed_curve");
        fr_info("stored /frontier/%s in '%s'", name, path);
    }
finish:
    rc = st;
    free(command_line);
    free(types);
    fr_allocation_free(&a);
    fr_mixed_curve_free(&curve);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
done:
    for (size_t i = 0; i < n_fixed; i++)
        free(fixed_text[i]);
    return rc;
}
