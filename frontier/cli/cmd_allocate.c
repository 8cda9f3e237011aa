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
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/allocate_output.h"
#include "frontier/dataset/dataset.h"
#include "frontier/analysis/frontier_store.h"
#include "frontier/analysis/pareto.h"
#include "frontier/cli/cli_target.h"
#include "quantizers/families.h" /* fr_builtin_ggml_configs: the table's GGML types */

#define MAX_FIXED 256

/* The mixes --llama-mix takes, as lines of the help's second column. */
static const char *mix_list(char *buf, size_t size)
{
    size_t used = 0, line = 0;
    for (int m = 0; fr_llama_mix_name(m) && used < size; m++) {
        if (line == 0 || line + strlen(fr_llama_mix_name(m)) > 50) {
            used += (size_t)snprintf(buf + used, size - used, "%s%25s", line ? ",\n" : "", "");
            line = 1;
        } else {
            used += (size_t)snprintf(buf + used, size - used, ", ");
        }
        used += (size_t)snprintf(buf + used, size - used, "%s", fr_llama_mix_name(m));
        line += strlen(fr_llama_mix_name(m)) + 2;
    }
    if (used < size)
        snprintf(buf + used, size - used, "\n");
    return buf;
}

static void print_help(FILE *out)
{
    char mixes[512];
    fprintf(out,
            "usage: frontier allocate RUN.h5 --budget BITS [-o RECIPE.json]\n"
            "       frontier allocate RUN.h5 --sweep-budgets LO..HI[:STEP]\n"
            "       frontier allocate RUN.h5 --llama-mix NAME [-o RECIPE.json] [--model MODEL]\n"
            "         [--metric rel_err|out_rel_err|sqnr_db] [--include REGEX] [--exclude REGEX]\n"
            "         [--configs REGEX] [--fixed REGEX=CONFIG]... [--tensor-types FILE]\n"
            "         [--max-states N] [--summary] [--no-store] [--expert-units]\n"
            "         [--target gguf|compressed-tensors|dequantized]\n"
            "         [--objective auto|error|sensitivity] [--calib FILE]\n"
            "         [--default-sensitivity X] [--sensitivity-reference CONFIG]\n"
            "\n"
            "Chooses one configuration per tensor so that the total size stays within\n"
            "BITS bits per weight (sum of total_bits <= floor(BITS x sum of parameters))\n"
            "and the objective is least: by default the predicted KL divergence when\n"
            "--calib holds measured sensitivities, else the aggregated error (sum\n"
            "||dW||^2 for rel_err and sqnr_db, sum of the output error terms for\n"
            "out_rel_err), with a warning: less weight error can be a worse model than\n"
            "a uniform configuration. The summary and the recipe name the objective.\n"
            "The solution is exact (an LP bound, reduced-cost fixing and a bounded\n"
            "search; docs/analysis.md).\n"
            "\n"
            "  --budget BITS          bits per weight to meet\n"
            "  --sweep-budgets LO..HI[:STEP]  every budget from LO to HI (STEP 0.1) and\n"
            "                         the size of every uniform configuration in range:\n"
            "                         the mixed-precision curve, stored as /frontier/mixed_curve\n"
            "                         and drawn by 'frontier export'\n"
            "  -o FILE                write the recipe JSON (tensor -> configuration, totals)\n"
            "                         and a llama.cpp tensor-type file beside it\n"
            "  --llama-mix NAME       llama-quantize's own mix NAME on this model (the type\n"
            "                         llama_tensor_get_type gives each tensor, measured by the\n"
            "                         ggml-* rows; case-insensitive):\n"
            "%s"
            "                         (Q3_K, Q4_K, Q5_K: the _M mixes); its size and error,\n"
            "                         frontier's allocation of the same size beside it, and\n"
            "                         with -o the mix as a recipe (docs/llama-mixes.md)\n"
            "  --model MODEL          the model the mix's rules and --target read (architecture, layers,\n"
            "                         heads, experts, tensors; default: the dataset's source,\n"
            "                         else inferred from its tensors)\n"
            "  --tensor-types FILE    where the llama-quantize --tensor-type-file goes\n"
            "                         (default: the recipe's name with .tensor-types.txt)\n"
            "  --metric M             rel_err (default), out_rel_err, sqnr_db\n"
            "  --objective O          auto (default): sensitivity when the --calib file\n"
            "                         has a <module>.sensitivity for a tensor of RUN.h5\n"
            "                         (the dataset stores none), else error, warning\n"
            "                         that no sensitivity was measured; error: the\n"
            "                         metric's squared error (weight error, output error\n"
            "                         for out_rel_err); sensitivity: the predicted KL\n"
            "                         divergence sum_t alpha_t err_t^2 (err = rel_err or\n"
            "                         out_rel_err)\n"
            "  --calib FILE           calibration file with <module>.sensitivity (alpha_t;\n"
            "                         frontier sensitivity MODEL.gguf and\n"
            "                         examples/calibration/capture.py write them)\n"
            "  --default-sensitivity X  alpha of tensors without one (else they are refused)\n"
            "  --sensitivity-reference CONFIG  with --metric out_rel_err: the configuration\n"
            "                         whose error the sensitivities stand for (frontier\n"
            "                         sensitivity: ggml-q4_0 by default, or one shaped like\n"
            "                         it). alpha is per unit squared *weight* error; each\n"
            "                         tensor's is multiplied by (rel_err / out_rel_err)^2 of\n"
            "                         CONFIG on that tensor, so that alpha x out_rel_err^2\n"
            "                         predicts the same KL for CONFIG as alpha x rel_err^2;\n"
            "                         a tensor without statistics (no out_rel_err) is then\n"
            "                         allocated on alpha x rel_err^2 instead of left out\n"
            "                         (docs/analysis.md, \"Output error and sensitivity\")\n"
            "  --include/--exclude REGEX  tensors allocated (the rest are not counted)\n"
            "  --configs REGEX        configurations allowed\n"
            "  --target FORMAT        only what 'frontier quantize --format FORMAT' can\n"
            "                         write: each tensor's candidates are the pairs its\n"
            "                         writer stores for that shape (gguf: ggml-* types,\n"
            "                         keep; compressed-tensors: no calibrated configuration,\n"
            "                         a tied embedding kept as it is). Reads the dataset's\n"
            "                         model (--model: another copy of it)\n"
            "  --fixed REGEX=CONFIG   pin matching tensors to CONFIG (repeatable; the last\n"
            "                         matching rule wins, as in llama.cpp)\n"
            "  --expert-units         one configuration for all the 2-D experts of one\n"
            "                         (layer, projection), mlp.experts.<N>.gate_proj.weight\n"
            "                         for every N: one item whose bits and error terms are\n"
            "                         the sums over its experts (default: one per stored\n"
            "                         tensor); the recipe lists every expert\n"
            "  --max-states N         give up proving optimality after N search states\n"
            "                         (default %llu; the answer then says how close it is)\n"
            "  --summary              totals only, no per-tensor table\n"
            "\n"
            "With --budget the summary also names llama-quantize's stock mix of nearest\n"
            "size on these tensors (when the dataset has its ggml-* rows) and frontier's\n"
            "allocation of that size.\n"
            "  --no-store             do not write the result under /frontier in RUN.h5\n"
            "\n"
            "exit codes: 0 ok, 2 usage (including a budget below the smallest size, an\n"
            "unknown --fixed configuration), 3 unreadable file, 4 no usable results,\n"
            "5 cannot write an output (docs/exit-codes.md)\n",
            mix_list(mixes, sizeof mixes), (unsigned long long)FR_MCKP_DEFAULT_MAX_NODES);
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

/* Configuration c used for every allocated tensor: its bits, summed squared
 * error and objective cost; 0 when a tensor lacks its row. */
static int uniform_terms(const fr_alloc_problem *prob, size_t c, uint64_t *bits, double *sq_err,
                         double *cost)
{
    *bits = 0;
    *sq_err = *cost = 0;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        uint64_t b;
        double et, n, ct;
        if (!fr_alloc_unit_terms(prob, i, c, &b, &et, &n, &ct))
            return 0;
        *bits += b;
        *sq_err += et;
        *cost += ct;
    }
    return 1;
}

/* The uniform configurations within the budget, over the allocated tensors:
 * the comparison the allocation has to win (on the objective minimised). */
static void print_uniform_comparison(const fr_allocation *a, const fr_alloc_problem *prob)
{
    const fr_dataset *ds = prob->ds;
    double best = INFINITY;
    const char *best_name = NULL;
    double best_bpw = 0;
    for (size_t c = 0; c < ds->n_configs; c++) {
        uint64_t bits;
        double sq, cost;
        int all = uniform_terms(prob, c, &bits, &sq, &cost);
        double e = prob->objective == FR_OBJECTIVE_SENSITIVITY ? cost : sq;
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
    if (prob->objective == FR_OBJECTIVE_SENSITIVITY) {
        printf("best uniform configuration within the budget: %s at %.4f bits per weight, "
               "predicted KL %.6g (the allocation's is %.1f%% lower)\n",
               best_name, best_bpw, best, best > 0 ? 100.0 * (1 - a->cost_sum / best) : 0.0);
        return;
    }
    double v = fr_metric_value(prob->metric, best, prob->norm_sum);
    printf("best uniform configuration within the budget: %s at %.4f bits per weight, %s %.6g",
           best_name, best_bpw, fr_metric_name(prob->metric), v);
    if (best > 0)
        printf(" (the allocation has %.1f%% less squared error)", 100.0 * (1 - a->err_sum / best));
    printf("\n");
}

/* The command line, parsed. */
typedef struct allocate_args {
    fr_alloc_options aopt;
    fr_alloc_objective obj;
    fr_alloc_fixed fixed[MAX_FIXED];
    char *fixed_text[MAX_FIXED]; /* the REGEX parts, owned */
    size_t n_fixed;
    double budget, lo, hi, step;
    int have_budget, have_sweep, summary, store;
    int objective_given;         /* --objective: else auto (resolve_objective) */
    const char *out_path, *types_path;
    const char *calib_path;      /* --calib: sensitivities */
    const char *sens_source;     /* where the sensitivities came from: --calib, or the
                                  * dataset's /frontier/sensitivity (sens_text) */
    char sens_text[1400];
    int llama_mix;               /* --llama-mix: fr_llama_mix_from_name, -1: none */
    const char *model_path;      /* --model: what the mix's rules and --target read */
    const char *target;          /* --target FORMAT: only pairs its writer stores */
    const char *sens_ref;        /* --sensitivity-reference CONFIG */
    const char *path;            /* the dataset */
} allocate_args;

/* One --fixed REGEX=CONFIG; the configuration is after the last '=', as
 * regexes may hold '='. Returns -1 when taken, else the exit code. */
static int parse_fixed(const char *cmd, const char *text, allocate_args *args)
{
    const char *eq = strrchr(text, '=');
    if (!eq || eq == text || !eq[1])
        return cli_usage_error(cmd, "invalid --fixed '%s' (REGEX=CONFIG)", text);
    if (args->n_fixed == MAX_FIXED)
        return cli_usage_error(cmd, "more than %d --fixed rules", MAX_FIXED);
    char *re = strndup(text, (size_t)(eq - text));
    if (!re) {
        fr_error_log("out of memory");
        return FR_E_NOMEM;
    }
    args->fixed_text[args->n_fixed] = re;
    args->fixed[args->n_fixed++] = (fr_alloc_fixed){re, eq + 1};
    return -1;
}

/* Returns -1 when the command is to run (args complete), else the exit
 * code: 0 after --help, FR_E_USAGE (said on stderr) for a bad command line.
 * The --fixed texts taken are in args either way. */
static int parse_args(int argc, char **argv, allocate_args *args)
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
        {"objective", required_argument, NULL, 'O'},
        {"calib", required_argument, NULL, 'C'},
        {"default-sensitivity", required_argument, NULL, 'D'},
        {"sensitivity-reference", required_argument, NULL, 'R'},
        {"expert-units", no_argument, NULL, 'E'},
        {"llama-mix", required_argument, NULL, 'L'},
        {"model", required_argument, NULL, 'M'},
        {"target", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fr_alloc_options *aopt = &args->aopt;
    int opt, rc;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'B':
            if (!cli_parse_double(optarg, &args->budget) || args->budget <= 0)
                return cli_usage_error(argv[0], "invalid --budget '%s' (bits per weight, e.g. 3.5)", optarg);
            args->have_budget = 1;
            break;
        case 'S':
            if (!cli_parse_range(optarg, 0.1, &args->lo, &args->hi, &args->step))
                return cli_usage_error(argv[0], "invalid --sweep-budgets '%s' (LO..HI or LO..HI:STEP, e.g. 2..8:0.25)", optarg);
            args->have_sweep = 1;
            break;
        case 'o': args->out_path = optarg; break;
        case 'T': args->types_path = optarg; break;
        case 'm': {
            int m = fr_metric_from_name(optarg);
            if (m < 0)
                return cli_usage_error(argv[0], "unknown metric '%s' (rel_err, out_rel_err, sqnr_db)", optarg);
            aopt->metric = (fr_metric)m;
            break;
        }
        case 'i': aopt->selection.include = optarg; break;
        case 'x': aopt->selection.exclude = optarg; break;
        case 'c': aopt->selection.configs = optarg; break;
        case 'F':
            if ((rc = parse_fixed(argv[0], optarg, args)) >= 0)
                return rc;
            break;
        case 'N': {
            char *end;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (*end || n == 0 || optarg[0] == '-')
                return cli_usage_error(argv[0], "invalid --max-states '%s' (a positive integer)", optarg);
            aopt->max_nodes = n;
            break;
        }
        case 'O':
            args->objective_given = strcmp(optarg, "auto") != 0;
            if (!strcmp(optarg, "error") || !strcmp(optarg, "auto"))
                args->obj.objective = FR_OBJECTIVE_ERROR;
            else if (!strcmp(optarg, "sensitivity"))
                args->obj.objective = FR_OBJECTIVE_SENSITIVITY;
            else
                return cli_usage_error(argv[0], "unknown --objective '%s' (auto, error, sensitivity)", optarg);
            break;
        case 'C': args->calib_path = optarg; break;
        case 'L':
            if ((args->llama_mix = fr_llama_mix_from_name(optarg)) < 0) {
                char names[256];
                return cli_usage_error(argv[0], "unknown --llama-mix '%s' (%s)", optarg,
                                       fr_llama_mix_names(names, sizeof names));
            }
            break;
        case 'M': args->model_path = optarg; break;
        case 'R': args->sens_ref = optarg; break;
        case 'G': args->target = optarg; break;
        case 'D':
            if (!cli_parse_double(optarg, &args->obj.default_sensitivity) ||
                !(args->obj.default_sensitivity >= 0))
                return cli_usage_error(argv[0], "invalid --default-sensitivity '%s' (a number >= 0)", optarg);
            break;
        case 's': args->summary = 1; break;
        case 'E': aopt->expert_units = 1; break;
        case 'n': args->store = 0; break;
        case 'h': print_help(stdout); return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no dataset given (frontier allocate RUN.h5 --budget BITS)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one dataset at a time: unexpected '%s'", argv[optind + 1]);
    const int modes = args->have_budget + args->have_sweep + (args->llama_mix >= 0);
    if (modes != 1)
        return cli_usage_error(argv[0], modes ? "--budget, --sweep-budgets and --llama-mix exclude each other"
                                              : "no budget given (--budget BITS, --sweep-budgets LO..HI or --llama-mix NAME)");
    if (args->llama_mix >= 0 && args->types_path)
        return cli_usage_error(argv[0], "--tensor-types goes with --budget: a --llama-mix is llama-quantize's own (llama-quantize MODEL OUT %s)",
                               fr_llama_mix_name(args->llama_mix));
    if (args->have_sweep && (args->out_path || args->types_path))
        return cli_usage_error(argv[0], "-o and --tensor-types write one recipe: use them with --budget");
    /* --calib asks for the sensitivity objective unless --objective says otherwise */
    const int sensitivity = args->objective_given ? args->obj.objective == FR_OBJECTIVE_SENSITIVITY
                                                  : args->calib_path != NULL;
    const int default_given = !isnan(args->obj.default_sensitivity);
    if (sensitivity && aopt->metric == FR_METRIC_SQNR_DB)
        return cli_usage_error(argv[0], "sensitivities (--calib, --objective sensitivity) weight rel_err or out_rel_err, not sqnr_db");
    if (args->objective_given && !sensitivity && (args->calib_path || default_given))
        return cli_usage_error(argv[0], "--objective error reads no sensitivity: --calib and --default-sensitivity go with --objective sensitivity or auto");
    if (args->sens_ref && !(sensitivity && aopt->metric == FR_METRIC_OUT_REL_ERR))
        return cli_usage_error(argv[0], "--sensitivity-reference rescales sensitivities for --metric out_rel_err: it goes with --calib (or --objective sensitivity) and --metric out_rel_err");
    if (!args->objective_given && default_given && !args->calib_path)
        return cli_usage_error(argv[0], "--default-sensitivity is for the tensors a --calib file has no sensitivity for (alone: --objective sensitivity)");
    aopt->n_fixed = args->n_fixed;
    aopt->fixed = args->fixed;
    args->path = argv[optind];
    return -1;
}

/* Without --calib: the sensitivities `frontier sensitivity --dataset`
 * stored in the dataset, when it holds any for its tensors (*alpha then
 * allocated and set as the objective's). */
static fr_status dataset_sensitivity(allocate_args *args, const fr_dataset *ds, double **alpha)
{
    fr_error err;
    double *a = malloc((ds->n_tensors + 1) * sizeof *a);
    if (!a) {
        fr_error_log("out of memory");
        return FR_E_NOMEM;
    }
    size_t n = 0;
    char text[1024];
    fr_status st = fr_store_read_sensitivity(args->path, ds, a, &n, text, sizeof text, &err);
    if (st != FR_OK || n == 0) {
        if (st != FR_OK)
            fr_error_log("%s", err.msg);
        free(a);
        return st;
    }
    snprintf(args->sens_text, sizeof args->sens_text, "%s:/frontier/sensitivity, measured on %s",
             args->path, text[0] ? text : "an unrecorded text");
    args->sens_source = args->sens_text;
    args->obj.sensitivity = a;
    *alpha = a;
    return FR_OK;
}

/* --objective auto (the default): the sensitivity objective when the
 * --calib file, or else the dataset (/frontier/sensitivity), has a measured
 * sensitivity for a tensor of the dataset, else the metric's error
 * (print_objective warns). */
static void resolve_objective(allocate_args *args, const fr_dataset *ds, const double *alpha)
{
    args->obj.objective =
        fr_alloc_count_sensitivity(ds, alpha) > 0 ? FR_OBJECTIVE_SENSITIVITY : FR_OBJECTIVE_ERROR;
}

/* What the allocation minimises and where its sensitivities came from, the
 * summary's first line; the default objective without a measured
 * sensitivity warns plainly that it minimises the error alone. */
static void print_objective_line(const allocate_args *args, const fr_alloc_problem *prob,
                                 const double *alpha)
{
    const char *err = fr_metric_name(prob->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR
                                                                       : prob->metric);
    if (prob->objective == FR_OBJECTIVE_SENSITIVITY) {
        size_t members = 0, measured = 0;
        for (size_t i = 0; i < prob->n_tensors; i++)
            for (size_t k = 0; k < prob->tensors[i].n_members; k++) {
                members++;
                measured += alpha && !isnan(alpha[prob->tensors[i].members[k]]);
            }
        printf("objective: sensitivity, the predicted KL divergence sum alpha x %s^2 (alpha "
               "measured for %zu of %zu tensors%s%s%s",
               err, measured, members, args->sens_source ? ", from '" : "",
               args->sens_source ? args->sens_source : "", args->sens_source ? "'" : "");
        if (args->sens_ref)
            printf("; each x (rel_err / out_rel_err)^2 of %s, --sensitivity-reference", args->sens_ref);
        if (measured < members)
            printf("; %g for the other %zu, --default-sensitivity", prob->default_sensitivity,
                   members - measured);
        printf(")\n");
        return;
    }
    const char *what = prob->metric == FR_METRIC_OUT_REL_ERR ? "output error" : "weight error";
    printf("objective: %s, sum of the squared %s (%s)\n", fr_alloc_objective_name(prob), err,
           args->objective_given ? "--objective error" : "no measured sensitivity");
    if (args->objective_given)
        return;
    const char *result = args->have_budget ? "recipe" : "curve";
    if (args->calib_path)
        fr_warn("'%s' holds no <module>.sensitivity for a tensor of '%s': this %s minimises "
                "%s, which can be worse than a uniform configuration on a real model "
                "(docs/analysis.md, \"The objective\")",
                args->calib_path, args->path, result, what);
    else
        fr_warn("no measured sensitivity (run `frontier sensitivity MODEL.gguf --text FILE -o "
                "sens.safetensors --dataset RUN.h5`, or examples/calibration/capture.py on a "
                "Hugging Face model and pass --calib): this %s minimises %s, which can be "
                "worse than a uniform configuration on a real model (docs/analysis.md, \"The "
                "objective\")",
                result, what);
}

/* The objective, then, for out_rel_err measured on the diagonal of the
 * inputs' second moment only (sweep --diagonal-output-error), how many of
 * the allocated tensors have it so. */
static void print_objective(const allocate_args *args, const fr_alloc_problem *prob,
                            const double *alpha)
{
    print_objective_line(args, prob, alpha);
    if (prob->metric != FR_METRIC_OUT_REL_ERR)
        return;
    size_t members = 0, diagonal = 0;
    for (size_t i = 0; i < prob->n_tensors; i++)
        for (size_t k = 0; k < prob->tensors[i].n_members; k++, members++)
            diagonal += fr_ds_tensor_out_diagonal(&prob->ds->tensors[prob->tensors[i].members[k]]);
    if (diagonal)
        printf("out_rel_err: %zu of %zu tensors from the diagonal of the inputs' second moment "
               "only (sweep --diagonal-output-error: their correlations left out)\n",
               diagonal, members);
}

/* A failure of the analysis said the way of its kind: a usage error (a
 * budget below the minimum, an unknown --fixed configuration) with the
 * command's usage line, anything else as an error. */
static void report(const char *cmd, fr_status st, const fr_error *err)
{
    if (st == FR_E_USAGE)
        cli_usage_error(cmd, "%s", err->msg);
    else
        fr_error_log("%s", err->msg);
}

/* The recipe JSON (-o) and the llama.cpp tensor-type file (--tensor-types,
 * or beside the recipe unless --target names another format). */
static fr_status write_recipe(const allocate_args *args, const fr_allocation *a,
                              const fr_alloc_problem *prob)
{
    fr_error err;
    fr_status st = FR_OK;
    char *types = NULL;
    if (args->out_path) {
        if ((st = fr_allocation_write_json(a, prob, args->path, args->out_path, &err)) != FR_OK) {
            fr_error_log("%s", err.msg);
            return st;
        }
        /* the tensor-type file is llama.cpp's: not beside a recipe for another format */
        if (!args->types_path && args->target && strcmp(args->target, "gguf")) {
            fr_info("wrote '%s'", args->out_path);
            return FR_OK;
        }
        types = args->types_path ? NULL : tensor_types_path(args->out_path);
        if (!args->types_path && !types) {
            fr_error_log("out of memory");
            return FR_E_NOMEM;
        }
    }
    if (!args->types_path && !types)
        return FR_OK;
    size_t unmapped = 0;
    const char *tp = args->types_path ? args->types_path : types;
    if ((st = fr_allocation_write_tensor_types(a, prob, tp, &unmapped, &err)) != FR_OK) {
        fr_error_log("%s", err.msg);
        goto done;
    }
    if (unmapped) {
        char mapped[1024];
        fr_warn("%zu of %zu tensors got a configuration without a llama.cpp type, so "
                "'%s' lists only the other %zu (for a complete file restrict --configs "
                "to %s)",
                unmapped, a->n_choices, tp, a->n_choices - unmapped,
                fr_builtin_ggml_configs(mapped, sizeof mapped));
    }
    if (args->out_path)
        fr_info("wrote '%s' and '%s'", args->out_path, tp);
    else
        fr_info("wrote '%s'", tp);
done:
    free(types);
    return st;
}

/* Frontier's allocation within the size of a llama-quantize mix, on the
 * same tensors: the comparison the mix is a reference for. */
static void print_same_size(const fr_alloc_problem *prob, const fr_llama_mix_result *r)
{
    fr_error err;
    fr_allocation a;
    if (r->numel != prob->numel) {
        printf("(the mix covers %llu parameters, the allocation's problem %llu: not compared)\n",
               (unsigned long long)r->numel, (unsigned long long)prob->numel);
        return;
    }
    /* the mix's own total, exactly: floor(budget x numel) == total_bits */
    double budget = ((double)r->total_bits + 0.5) / (double)prob->numel;
    if (fr_alloc_solve(prob, budget, &a, &err) != FR_OK) {
        printf("no allocation fits within its size (%s)\n", err.msg);
        return;
    }
    printf("frontier's allocation within that size: %.6f bits per weight, %s %.6g", a.bits_per_weight,
           fr_metric_name(prob->metric), a.value);
    if (r->err_sum > 0 && prob->objective == FR_OBJECTIVE_ERROR)
        printf(" (%.1f%% less squared error than %s)", 100.0 * (1 - a.err_sum / r->err_sum),
               fr_llama_mix_name(r->mix));
    printf("%s\n", a.stats.optimal ? "" : " [not proven optimal]");
    fr_allocation_free(&a);
}

/* --budget: llama-quantize's stock mix nearest the allocation's size on
 * its tensors, and frontier's allocation of that size. Nothing when the
 * dataset cannot evaluate any mix. */
static void print_nearest_mix(const allocate_args *args, const fr_allocation *a,
                              const fr_alloc_problem *prob)
{
    fr_llama_mix_result *mixes;
    size_t n, best = 0;
    if (cli_llama_mixes(prob->ds, prob->ix, &args->aopt.selection, prob->metric,
                        args->model_path, &mixes, &n) != FR_OK || !n)
        return;
    /* nearest in size; of mixes of one size (their types alike on these
     * tensors), the least error */
    for (size_t i = 1; i < n; i++) {
        double d = fabs(mixes[i].bits_per_weight - a->bits_per_weight);
        double d_best = fabs(mixes[best].bits_per_weight - a->bits_per_weight);
        int better = prob->metric == FR_METRIC_SQNR_DB ? mixes[i].value > mixes[best].value
                                                       : mixes[i].value < mixes[best].value;
        if (d < d_best || (d == d_best && better))
            best = i;
    }
    printf("llama-quantize's stock mix of nearest size: %s at %.6f bits per weight, %s %.6g\n",
           fr_llama_mix_name(mixes[best].mix), mixes[best].bits_per_weight,
           fr_metric_name(prob->metric), mixes[best].value);
    print_same_size(prob, &mixes[best]);
    cli_llama_mixes_free(mixes, n);
}

/* --llama-mix: the mix on the dataset's tensors, frontier's allocation of
 * its size, the mix as a recipe (-o). */
static fr_status run_llama_mix(const allocate_args *args, const fr_alloc_problem *prob)
{
    fr_error err;
    fr_llama_model m;
    fr_llama_mix_result r;
    fr_selector sel;
    memset(&r, 0, sizeof r);
    fr_status st = fr_llama_model_describe(prob->ds, args->model_path, &m, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    char text[512];
    fr_info("llama-quantize's rules read from %s", cli_llama_model_text(&m, text, sizeof text));
    if ((st = fr_selector_init(&sel, &args->aopt.selection, &err)) != FR_OK) {
        fr_llama_model_free(&m);
        fr_error_log("%s", err.msg);
        return st;
    }
    st = fr_llama_mix_evaluate(prob->ds, prob->ix, &m, args->llama_mix, prob->metric, &sel, &r,
                               &err);
    fr_selector_free(&sel);
    fr_llama_model_free(&m);
    if (st == FR_OK && !r.n_choices)
        st = fr_fail(&err, FR_E_FORMAT, "no selected tensor is one llama-quantize quantizes");
    else if (st == FR_OK && r.n_missing)
        st = fr_fail(&err, FR_E_FORMAT,
                     "%s needs the ggml-* row of the type it stores on every tensor: %zu of %zu "
                     "(e.g. '%s') have none (sweep with --quantizers 'ggml-*')",
                     fr_llama_mix_name(args->llama_mix), r.n_missing, r.n_choices,
                     r.missing_example);
    if (st != FR_OK) {
        fr_error_log("'%s': %s", args->path, err.msg);
        fr_llama_mix_result_free(&r);
        return st;
    }
    fr_llama_mix_print(stdout, &r, prob->ds, !args->summary);
    if (r.n_unquantized)
        fr_warn("%zu selected tensors llama-quantize leaves as they are (or does not know) are "
                "not counted", r.n_unquantized);
    print_same_size(prob, &r);
    fflush(stdout); /* the tables before the log line */
    if (args->out_path) {
        if ((st = fr_llama_mix_write_recipe(&r, prob->ds, args->path, args->out_path, &err)) != FR_OK)
            fr_error_log("%s", err.msg);
        else
            fr_info("wrote '%s'", args->out_path);
    }
    fr_llama_mix_result_free(&r);
    return st;
}

/* --budget: the allocation, its table, how it compares, the recipe. */
/* What cli_print_measured shows beside a measured row: a configuration
 * used uniformly over the allocated tensors, or the allocation itself for
 * the recipe written by -o (same name), else a recipe's own prediction. */
typedef struct measured_ctx {
    const fr_alloc_problem *prob;
    const fr_allocation *a;
    const char *recipe_name;
} measured_ctx;

static void predict_measured(const fr_measured *m, void *ctx, double *metric_value,
                             double *predicted_kl)
{
    const measured_ctx *x = ctx;
    const fr_alloc_problem *prob = x->prob;
    int sens = prob->objective == FR_OBJECTIVE_SENSITIVITY;
    if (!strcmp(m->kind, "recipe")) {
        if (x->a && x->recipe_name && !strcmp(m->name, x->recipe_name)) {
            *metric_value = fr_metric_value(prob->metric, x->a->err_sum, prob->norm_sum);
            *predicted_kl = sens ? x->a->cost_sum : NAN;
        } else
            *predicted_kl = m->predicted_kl;
        return;
    }
    int64_t c = fr_config_position(prob->ds, m->name);
    uint64_t bits;
    double sq, cost;
    if (c >= 0 && uniform_terms(prob, (size_t)c, &bits, &sq, &cost)) {
        *metric_value = fr_metric_value(prob->metric, sq, prob->norm_sum);
        *predicted_kl = sens ? cost : NAN;
    }
}

static fr_status run_budget(const char *cmd, const allocate_args *args,
                            const fr_alloc_problem *prob, const double *alpha,
                            fr_allocation *a)
{
    fr_error err;
    fr_status st = fr_alloc_solve(prob, args->budget, a, &err);
    if (st != FR_OK) {
        report(cmd, st, &err);
        return st;
    }
    print_objective(args, prob, alpha);
    fr_allocation_print(stdout, a, prob, !args->summary);
    if (prob->objective == FR_OBJECTIVE_SENSITIVITY)
        printf("predicted KL divergence (sum of alpha x %s^2): %.6g\n",
               fr_metric_name(prob->metric), a->cost_sum);
    print_uniform_comparison(a, prob);
    print_nearest_mix(args, a, prob);
    char *name = args->out_path ? strdup(args->out_path) : NULL;
    if (name) {
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        memmove(name, base, strlen(base) + 1);
        size_t l = strlen(name);
        if (l > 5 && !strcmp(name + l - 5, ".json"))
            name[l - 5] = '\0';
    }
    measured_ctx mctx = {prob, a, name};
    cli_print_measured(stdout, args->path, fr_metric_name(prob->metric), predict_measured, &mctx);
    free(name);
    if (!a->stats.optimal)
        fr_warn("the search stopped after %llu states: the allocation is within %.3g%% of the "
                "optimal squared error (raise --max-states to prove optimality)",
                (unsigned long long)a->stats.nodes,
                a->stats.lower_bound > 0 ? 100 * (a->err_sum / a->stats.lower_bound - 1) : 0.0);
    return write_recipe(args, a, prob);
}

/* --sweep-budgets: the mixed-precision curve and its table. */
static fr_status run_sweep(const char *cmd, const allocate_args *args,
                           const fr_alloc_problem *prob, const double *alpha,
                           fr_mixed_curve *curve)
{
    fr_error err;
    fr_status st = fr_alloc_sweep(prob, args->lo, args->hi, args->step, 1, curve, &err);
    if (st != FR_OK) {
        report(cmd, st, &err);
        return st;
    }
    print_objective(args, prob, alpha);
    fr_mixed_curve_print(stdout, curve);
    return FR_OK;
}

/* The allocation or the curve under /frontier in the dataset, in one
 * transaction. */
static fr_status store_result(int argc, char **argv, const allocate_args *args,
                              const fr_alloc_problem *prob, const fr_allocation *a,
                              const fr_mixed_curve *curve)
{
    fr_error err;
    fr_store *tx;
    char *command_line = cli_command_line(argc, argv);
    fr_status st = fr_store_begin(args->path, &tx, &err);
    if (st == FR_OK) {
        st = args->have_budget
                 ? fr_store_allocation(tx, a, prob, &args->aopt.selection, command_line, &err)
                 : fr_store_mixed_curve(tx, curve, &args->aopt.selection, command_line, &err);
        if (st == FR_OK)
            st = fr_store_commit(tx, &err);
        else
            fr_store_abort(tx);
    }
    free(command_line);
    if (st != FR_OK) {
        fr_error_log("%s (the result above is not stored; --no-store skips storing)", err.msg);
        return st;
    }
    char name[128];
    if (args->have_budget)
        fr_store_allocation_name(args->budget, name, sizeof name);
    else
        snprintf(name, sizeof name, "mixed_curve");
    fr_info("stored /frontier/%s in '%s'", name, args->path);
    return FR_OK;
}

/* --target: the writer's rule on every measured pair, the ones it cannot
 * store left out of the allocation, and how many said. */
static fr_status apply_target(allocate_args *args, const fr_dataset *ds, cli_target *tg)
{
    fr_error err;
    fr_status st = cli_target_build(args->target, ds, args->model_path, tg, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    args->aopt.storable = tg->storable;
    if (tg->n_refused)
        fr_info("--target %s: %zu (tensor, configuration) pair%s of %zu tensor%s left out, "
                "e.g. %s",
                args->target, tg->n_refused, tg->n_refused == 1 ? "" : "s", tg->n_tensors_hit,
                tg->n_tensors_hit == 1 ? "" : "s", tg->example);
    else
        fr_info("--target %s: every measured pair can be written", args->target);
    return FR_OK;
}

int cmd_allocate(int argc, char **argv)
{
    allocate_args args;
    memset(&args, 0, sizeof args);
    args.aopt.metric = FR_METRIC_REL_ERR;
    args.obj.default_sensitivity = NAN;
    double *alpha = NULL;
    args.budget = NAN;
    args.store = 1;
    args.llama_mix = -1;
    int rc = parse_args(argc, argv, &args);
    if (rc >= 0)
        goto done;

    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_allocation a;
    fr_mixed_curve curve;
    cli_target target;
    memset(&target, 0, sizeof target);
    memset(&prob, 0, sizeof prob);
    memset(&a, 0, sizeof a);
    memset(&curve, 0, sizeof curve);
    fr_status st = cli_read_dataset(args.path, &ds, &ix, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        rc = st;
        goto done;
    }
    if (args.calib_path) {
        alpha = malloc((ds.n_tensors + 1) * sizeof *alpha);
        if (!alpha) {
            fr_error_log("out of memory");
            st = FR_E_NOMEM;
            goto finish;
        }
        if ((st = fr_alloc_read_sensitivity(&ds, args.calib_path, alpha, &err)) != FR_OK) {
            fr_error_log("%s", err.msg);
            goto finish;
        }
        args.obj.sensitivity = alpha;
        args.sens_source = args.calib_path;
    }
    if (!args.calib_path && (!args.objective_given || args.obj.objective == FR_OBJECTIVE_SENSITIVITY) &&
        (st = dataset_sensitivity(&args, &ds, &alpha)) != FR_OK)
        goto finish;
    if (args.objective_given && args.obj.objective == FR_OBJECTIVE_SENSITIVITY && !alpha &&
        isnan(args.obj.default_sensitivity)) {
        st = cli_usage_error(argv[0], "--objective sensitivity needs --calib FILE (with "
                             "<module>.sensitivity), sensitivities stored in '%s' (frontier "
                             "sensitivity --dataset) or --default-sensitivity X", args.path);
        goto finish;
    }
    if (!args.objective_given)
        resolve_objective(&args, &ds, alpha);
    if (args.sens_ref && alpha &&
        (st = fr_alloc_rescale_sensitivity(&ds, &ix, args.sens_ref, alpha, &err)) != FR_OK) {
        if (st == FR_E_USAGE)
            cli_usage_error(argv[0], "%s", err.msg);
        else
            fr_error_log("'%s': %s", args.path, err.msg);
        goto finish;
    }
    /* the rescaled alphas predict the KL of an output error as the others
     * predict that of a weight error: a tensor without statistics is
     * allocated on its weight error rather than left out */
    args.obj.weight_fallback =
        args.sens_ref != NULL && args.obj.objective == FR_OBJECTIVE_SENSITIVITY;
    if (args.target && (st = apply_target(&args, &ds, &target)) != FR_OK)
        goto finish;
    if ((st = fr_alloc_prepare_objective(&ds, &ix, &args.aopt, &args.obj, &prob, &err)) != FR_OK) {
        if (st == FR_E_USAGE)
            cli_usage_error(argv[0], "%s", err.msg);
        else
            fr_error_log("'%s': %s", args.path, err.msg);
        goto finish;
    }
    if (prob.objective == FR_OBJECTIVE_SENSITIVITY)
        prob.sensitivity_source = args.sens_source;
    if (prob.n_dropped)
        fr_warn("%zu selected tensor%s (e.g. '%s') %s no %s result and %s left out of the allocation",
                prob.n_dropped, prob.n_dropped == 1 ? "" : "s", prob.dropped_example,
                prob.n_dropped == 1 ? "has" : "have", fr_metric_name(args.aopt.metric),
                prob.n_dropped == 1 ? "is" : "are");
    if (prob.n_fallback)
        fr_warn("%zu selected tensor%s (e.g. '%s') %s no out_rel_err result (no calibration "
                "statistics) and %s allocated on %s weight error, alpha x rel_err^2 "
                "(--sensitivity-reference); %s out_rel_err in the recipe is null",
                prob.n_fallback, prob.n_fallback == 1 ? "" : "s", prob.fallback_example,
                prob.n_fallback == 1 ? "has" : "have", prob.n_fallback == 1 ? "is" : "are",
                prob.n_fallback == 1 ? "its" : "their", prob.n_fallback == 1 ? "its" : "their");
    if (prob.n_unstorable)
        fr_warn("%zu selected tensor%s (e.g. '%s') %s nothing --target %s can store and %s left "
                "as %s, outside the budget (as --exclude would leave %s)",
                prob.n_unstorable, prob.n_unstorable == 1 ? "" : "s", prob.unstorable_example,
                prob.n_unstorable == 1 ? "has" : "have", args.target,
                prob.n_unstorable == 1 ? "is" : "are", prob.n_unstorable == 1 ? "it is" : "they are",
                prob.n_unstorable == 1 ? "it" : "them");
    if (args.llama_mix >= 0) {
        st = run_llama_mix(&args, &prob);
        goto finish;
    }
    st = args.have_budget ? run_budget(argv[0], &args, &prob, alpha, &a)
                          : run_sweep(argv[0], &args, &prob, alpha, &curve);
    if (st == FR_OK && args.store)
        st = store_result(argc, argv, &args, &prob, &a, &curve);
finish:
    rc = st;
    free(alpha);
    cli_target_free(&target);
    fr_allocation_free(&a);
    fr_mixed_curve_free(&curve);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
done:
    for (size_t i = 0; i < args.n_fixed; i++)
        free(args.fixed_text[i]);
    return rc;
}
