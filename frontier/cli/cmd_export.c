/*
 * frontier export RUN.h5 --format csv|json|tex|gnuplot|svg|pdf|png -o FILE:
 * the dataset's rows and frontiers as tables, a pgfplots or gnuplot figure,
 * or a figure drawn with cairo (docs/analysis.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/analysis/allocate.h"
#include "frontier/dataset/dataset.h"
#include "frontier/export/export.h"
#include "frontier/analysis/frontier_store.h"
#include "frontier/analysis/pareto.h"

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier export RUN.h5 --format csv|json|tex|gnuplot|svg|pdf|png -o FILE\n"
            "         [--x bits_per_weight] [--y rel_err|out_rel_err|sqnr_db] [--log-y]\n"
            "         [--by family|class] [--title TEXT] [--label-frontier] [--no-mixed]\n"
            "         [--no-llama-mixes] [--model MODEL]\n"
            "         [--include REGEX] [--exclude REGEX] [--configs REGEX]\n"
            "\n"
            "  csv, json   tidy tables, one observation per row: every result (tensor x\n"
            "              configuration, with the tensor's and configuration's fields),\n"
            "              every model-level point (on_frontier marks the Pareto set) and\n"
            "              the stored mixed-precision curve and llama-quantize's stock\n"
            "              mixes (kind = result, point, mixed, llama_mix)\n"
            "  tex         a standalone pgfplots figure with the data inline (pdflatex)\n"
            "  gnuplot     a script FILE and its data beside it (FILE with .dat)\n"
            "  svg pdf png the figure drawn by frontier (cairo): 3.4 in wide, 8 pt text,\n"
            "              png at 300 dpi; one marker per family (or class), the Pareto\n"
            "              frontier dashed, the mixed-precision curve (frontier allocate\n"
            "              --sweep-budgets) as a staircase, llama-quantize's stock mixes\n"
            "              as named grey diamonds\n"
            "\n"
            "  --format F       default: from FILE's extension (.csv .json .tex .gp .svg .pdf .png)\n"
            "  --y M            rel_err (default), out_rel_err (a sweep with --calib), sqnr_db;\n"
            "  --metric M       the same, as pareto and allocate spell it\n"
            "  --log-y          logarithmic y axis (not for sqnr_db)\n"
            "  --by family      points per configuration over the model, one series per\n"
            "                   family (default); --by class: points per class, one series\n"
            "                   and one frontier per class\n"
            "  --title TEXT     a title over the figure\n"
            "  --label-frontier write configuration names beside the frontier points\n"
            "  --no-mixed       leave out the stored mixed-precision curve\n"
            "  --no-llama-mixes leave out llama-quantize's stock mixes (Q2_K ... Q8_0 on\n"
            "                   the dataset's ggml-* rows, with --by family; docs/llama-mixes.md)\n"
            "  --model MODEL    the model the mixes are worked out for (default: the\n"
            "                   dataset's source, else its tensors)\n"
            "  --measured       instead: the measured KL divergence that 'frontier annotate'\n"
            "                   stored, against bits (uniform configurations and recipes)\n"
            "\n"
            "FILE is overwritten. exit codes: 0 ok, 2 usage (also svg/pdf/png in a build\n"
            "without cairo), 3 unreadable file, 4 no usable results, 5 cannot write FILE\n"
            "(docs/exit-codes.md)\n");
}

static int format_from_extension(const char *path)
{
    static const struct {
        const char *ext;
        fr_export_format format;
    } map[] = {
        {".csv", FR_EXPORT_CSV}, {".json", FR_EXPORT_JSON}, {".tex", FR_EXPORT_TEX},
        {".gp", FR_EXPORT_GNUPLOT}, {".gnuplot", FR_EXPORT_GNUPLOT}, {".plt", FR_EXPORT_GNUPLOT},
        {".svg", FR_EXPORT_SVG}, {".pdf", FR_EXPORT_PDF}, {".png", FR_EXPORT_PNG},
    };
    const char *dot = strrchr(path, '.');
    if (!dot)
        return -1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcasecmp(dot, map[i].ext))
            return (int)map[i].format;
    return -1;
}

/* The command line, parsed. */
typedef struct export_args {
    fr_export_options eopt;
    const char *out_path;
    int mixed;        /* draw the stored mixed-precision curve */
    int llama_mixes;  /* and llama-quantize's stock mixes */
    const char *model_path; /* --model: what the mixes' rules read */
    int measured;     /* --measured: the /frontier/measured figure */
    const char *path; /* the dataset */
} export_args;

/* Returns -1 when the command is to run (args complete, the format known
 * and available in this build), else the exit code: 0 after --help,
 * FR_E_USAGE (said on stderr) for a bad command line. */
static int parse_args(int argc, char **argv, export_args *args)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},  {"output", required_argument, NULL, 'o'},
        {"x", required_argument, NULL, 'X'},       {"y", required_argument, NULL, 'Y'},
        {"metric", required_argument, NULL, 'Y'},
        {"log-y", no_argument, NULL, 'l'},         {"by", required_argument, NULL, 'b'},
        {"title", required_argument, NULL, 't'},   {"label-frontier", no_argument, NULL, 'L'},
        {"no-mixed", no_argument, NULL, 'M'},      {"measured", no_argument, NULL, 'K'},
        {"no-llama-mixes", no_argument, NULL, 'N'}, {"model", required_argument, NULL, 'm'},
        {"include", required_argument, NULL, 'i'},
        {"exclude", required_argument, NULL, 'x'}, {"configs", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    fr_export_options *eopt = &args->eopt;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f': {
            int f = fr_export_format_from_name(optarg);
            if (f < 0)
                return cli_usage_error(argv[0], "unknown format '%s' (csv, json, tex, gnuplot, svg, pdf, png)", optarg);
            eopt->format = (fr_export_format)f;
            break;
        }
        case 'o': args->out_path = optarg; break;
        case 'X':
            if (strcmp(optarg, "bits_per_weight"))
                return cli_usage_error(argv[0], "unknown --x '%s' (bits_per_weight)", optarg);
            break;
        case 'Y': {
            int m = fr_metric_from_name(optarg);
            if (m < 0)
                return cli_usage_error(argv[0], "unknown metric '%s' (rel_err, out_rel_err, sqnr_db)", optarg);
            eopt->y = (fr_metric)m;
            break;
        }
        case 'l': eopt->log_y = 1; break;
        case 'b':
            if (!strcmp(optarg, "family"))
                eopt->by = FR_BY_FAMILY;
            else if (!strcmp(optarg, "class"))
                eopt->by = FR_BY_CLASS;
            else
                return cli_usage_error(argv[0], "unknown --by '%s' (family, class)", optarg);
            break;
        case 't': eopt->title = optarg; break;
        case 'L': eopt->label_frontier = 1; break;
        case 'M': args->mixed = 0; break;
        case 'K': args->measured = 1; break;
        case 'N': args->llama_mixes = 0; break;
        case 'm': args->model_path = optarg; break;
        case 'i': eopt->selection.include = optarg; break;
        case 'x': eopt->selection.exclude = optarg; break;
        case 'c': eopt->selection.configs = optarg; break;
        case 'h': print_help(stdout); return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no dataset given (frontier export RUN.h5 --format F -o FILE)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one dataset at a time: unexpected '%s'", argv[optind + 1]);
    if (!args->out_path)
        return cli_usage_error(argv[0], "no output given (-o FILE)");
    if (eopt->format == FR_EXPORT_COUNT) {
        int f = format_from_extension(args->out_path);
        if (f < 0)
            return cli_usage_error(argv[0], "no --format given and '%s' has no known extension", args->out_path);
        eopt->format = (fr_export_format)f;
    }
    if (eopt->log_y && eopt->y == FR_METRIC_SQNR_DB)
        return cli_usage_error(argv[0], "--log-y does not apply to sqnr_db, which is already in decibels");
    if ((eopt->format == FR_EXPORT_SVG || eopt->format == FR_EXPORT_PDF || eopt->format == FR_EXPORT_PNG) &&
        !fr_plot_available())
        return cli_usage_error(argv[0],
                               "%s needs cairo, which this build lacks (install libcairo2-dev and "
                               "rebuild, or use --format tex or gnuplot)",
                               fr_export_format_name(eopt->format));
    args->path = argv[optind];
    eopt->dataset_path = args->path;
    return -1;
}

int cmd_export(int argc, char **argv)
{
    export_args args;
    memset(&args, 0, sizeof args);
    args.eopt.format = FR_EXPORT_COUNT;
    args.eopt.y = FR_METRIC_REL_ERR;
    args.eopt.by = FR_BY_FAMILY;
    args.mixed = 1;
    args.llama_mixes = 1;
    int rc = parse_args(argc, argv, &args);
    if (rc >= 0)
        return rc;

    const char *path = args.path, *out_path = args.out_path;
    fr_export_options *eopt = &args.eopt;
    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    fr_mixed_curve curve;
    fr_llama_mix_result *mixes = NULL;
    size_t n_mixes = 0;
    int found = 0;
    memset(&curve, 0, sizeof curve);
    fr_status st = cli_read_dataset(path, &ds, &ix, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    if (args.mixed) {
        if ((st = fr_store_read_mixed_curve(path, &curve, &found, &err)) != FR_OK) {
            fr_error_log("%s", err.msg);
            goto done;
        }
        if (found)
            eopt->mixed = &curve;
    }
    if (args.llama_mixes && !args.measured && eopt->by == FR_BY_FAMILY) {
        if ((st = cli_llama_mixes(&ds, &ix, &eopt->selection, eopt->y, args.model_path, &mixes,
                                  &n_mixes)) != FR_OK)
            goto done;
        eopt->mixes = mixes;
        eopt->n_mixes = n_mixes;
    }
    if ((st = args.measured ? fr_export_measured(path, eopt, out_path, &err)
                            : fr_export(&ds, &ix, eopt, out_path, &err)) != FR_OK) {
        if (st == FR_E_USAGE)
            cli_usage_error(argv[0], "%s", err.msg);
        else
            fr_error_log("%s", err.msg);
        goto done;
    }
    cli_warn_unmeasured(&ds, &ix, &eopt->selection);
    fr_info("wrote '%s'%s", out_path,
            eopt->format == FR_EXPORT_GNUPLOT ? " and its data file beside it" : "");
done:
    cli_llama_mixes_free(mixes, n_mixes);
    fr_mixed_curve_free(&curve);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return st;
}
