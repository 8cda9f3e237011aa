/* frontier sweep: every tensor x every selected configuration -> one row. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "core/registry.h"
#include "core/source.h"
#include "core/synthetic.h"
#include "frontier/sweep.h"

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: frontier sweep MODEL... -o OUT.h5 [options]\n"
            "       frontier sweep --synthetic DIST:ROWSxCOLS[,...] -o OUT.h5 [options]\n"
            "\n"
            "Quantizes every selected tensor with every selected configuration and\n"
            "records bits and error per (tensor, configuration) in an HDF5 dataset\n"
            "(schema: docs/dataset.md). Prints a summary per configuration at the end.\n"
            "\n"
            "  -o, --output FILE       the dataset to write (refused if it exists, unless --resume)\n"
            "      --resume            continue OUT.h5: measure only the missing rows\n"
            "      --bits SPEC         nominal bit widths: 2..8, 4, or a list 2,3,4,8 (default: all)\n"
            "      --quantizers LIST   comma-separated configuration or quantizer names and\n"
            "                          globs: int*,nvfp4,mx* (default: every data-free one)\n"
            "      --include REGEX     only tensors whose name matches (POSIX extended regex)\n"
            "      --exclude REGEX     no tensor whose name matches\n"
            "      --min-numel N       skip tensors with fewer than N elements\n"
            "      --device DEV        auto (default), cpu, cuda or cuda:N\n"
            "      --threads N         CPU threads (default: all cores)\n"
            "      --seed N            seed of synthetic tensors and plugin random streams (0)\n"
            "      --synthetic SPEC    generated tensors: gaussian, laplace, student-t3 or\n"
            "                          outliers, e.g. gaussian:4096x4096,student-t3:4096x14336:bf16*4\n"
            "                          (docs/synthetic.md)\n"
            "      --plugin FILE.so    load a quantizer plugin (repeatable)\n"
            "  -q, --quiet             no progress or informational messages\n"
            "      --json              print the summary as JSON\n"
            "  -h, --help              this help\n"
            "\n"
            "MODEL is a .safetensors file, a Hugging Face folder, a .gguf or an .onnx file.\n"
            "Tensors with fewer than 2 dimensions, non-float tensors and tensors with\n"
            "NaN/Inf weights are skipped and listed in /skipped.\n"
            "\n"
            "exit codes: 0 every configuration succeeded (skipped tensors included);\n"
            "1 some configuration failed on some tensor (recorded in /skipped);\n"
            "2 usage; 3 cannot read a model; 4 malformed model; 5 output exists or cannot\n"
            "be written; 6 plugin; 7 device; 9 --resume on another model or schema;\n"
            "130 interrupted (rows so far are kept: run again with --resume).\n");
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int parse_int64(const char *text, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *text, uint64_t *out)
{
    char *end = NULL;
    if (text[0] == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end)
        return -1;
    *out = v;
    return 0;
}

enum {
    OPT_BITS = 256,
    OPT_QUANTIZERS,
    OPT_INCLUDE,
    OPT_EXCLUDE,
    OPT_MIN_NUMEL,
    OPT_DEVICE,
    OPT_THREADS,
    OPT_SEED,
    OPT_RESUME,
    OPT_PLUGIN,
    OPT_SYNTHETIC,
    OPT_JSON,
};

int cmd_sweep(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"bits", required_argument, NULL, OPT_BITS},
        {"quantizers", required_argument, NULL, OPT_QUANTIZERS},
        {"include", required_argument, NULL, OPT_INCLUDE},
        {"exclude", required_argument, NULL, OPT_EXCLUDE},
        {"min-numel", required_argument, NULL, OPT_MIN_NUMEL},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"resume", no_argument, NULL, OPT_RESUME},
        {"plugin", required_argument, NULL, OPT_PLUGIN},
        {"synthetic", required_argument, NULL, OPT_SYNTHETIC},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int rc = FR_OK;
    fr_error err = {0};
    fr_sweep_options opt = {.device = "auto"};
    const char **plugins = NULL;
    size_t n_plugins = 0;
    const char *synthetic = NULL;
    int json = 0;
    fr_registry reg;
    int have_reg = 0;
    fr_sweep *sw = NULL;
    fr_source **sources = NULL;
    size_t n_sources = 0;
    char *command_line = NULL;
    struct sigaction old_int, old_term;
    int signals_set = 0;

    memset(&reg, 0, sizeof reg);
    plugins = calloc((size_t)argc + 1, sizeof *plugins);
    sources = calloc((size_t)argc + 2, sizeof *sources);
    command_line = cli_command_line(argc, argv);
    if (!plugins || !sources || !command_line) {
        rc = fr_fail(&err, FR_E_NOMEM, "out of memory");
        goto report;
    }
    opt.command_line = command_line;
    opt.stop = &stop_requested;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        int64_t v;
        switch (c) {
        case 'o': opt.output = optarg; break;
        case OPT_BITS: opt.bits = optarg; break;
        case OPT_QUANTIZERS: opt.quantizers = optarg; break;
        case OPT_INCLUDE: opt.include = optarg; break;
        case OPT_EXCLUDE: opt.exclude = optarg; break;
        case OPT_MIN_NUMEL:
            if (parse_int64(optarg, &v) != 0 || v < 0) {
                rc = cli_usage_error(argv[0], "invalid --min-numel '%s'", optarg);
                goto done;
            }
            opt.min_numel = v;
            break;
        case OPT_DEVICE: opt.device = optarg; break;
        case OPT_THREADS:
            if (parse_int64(optarg, &v) != 0 || v < 1 || v > 4096) {
                rc = cli_usage_error(argv[0], "invalid --threads '%s' (1 to 4096)", optarg);
                goto done;
            }
            opt.threads = (int)v;
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &opt.seed) != 0) {
                rc = cli_usage_error(argv[0], "invalid --seed '%s' (a non-negative integer)", optarg);
                goto done;
            }
            break;
        case OPT_RESUME: opt.resume = 1; break;
        case OPT_PLUGIN: plugins[n_plugins++] = optarg; break;
        case OPT_SYNTHETIC: synthetic = optarg; break;
        case 'q': opt.quiet = 1; break;
        case OPT_JSON: json = 1; break;
        case 'h': print_usage(stdout); goto done;
        case ':':
            rc = cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
            goto done;
        default:
            rc = cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
            goto done;
        }
    }
    if (optind >= argc && !synthetic) {
        rc = cli_usage_error(argv[0], "no model given (MODEL... or --synthetic SPEC)");
        goto done;
    }
    if (!opt.output) {
        rc = cli_usage_error(argv[0], "no output given (-o OUT.h5)");
        goto done;
    }
    if (opt.quiet)
        fr_log_set_level(FRONTIER_LOG_WARN);
    /* `frontier -q sweep` silences the progress bar too */
    if (fr_log_level() < FRONTIER_LOG_INFO)
        opt.quiet = 1;

    /* everything that can be checked before touching a model or the output */
    if ((rc = fr_registry_init(&reg, &err)) != FR_OK)
        goto report;
    have_reg = 1;
    if ((rc = fr_registry_discover(&reg, plugins, n_plugins, &err)) != FR_OK)
        goto report;
    if ((rc = fr_sweep_create(&reg, &opt, &sw, &err)) != FR_OK)
        goto report;

    for (int i = optind; i < argc; i++) {
        if ((rc = fr_source_open(argv[i], &sources[n_sources], &err)) != FR_OK)
            goto report;
        n_sources++;
    }
    if (synthetic) {
        if ((rc = fr_synthetic_open(synthetic, opt.seed, &sources[n_sources], &err)) != FR_OK) {
            if (rc == FR_E_USAGE) {
                rc = cli_usage_error(argv[0], "%s", err.msg);
                goto done;
            }
            goto report;
        }
        n_sources++;
    }
    for (size_t i = 0; i < n_sources; i++)
        if ((rc = fr_sweep_add_source(sw, sources[i], &err)) != FR_OK)
            goto report;

    /* Ctrl-C stops after the tensors in flight and commits what was
     * measured; a second Ctrl-C kills as usual (the file stays valid). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    signals_set = 1;

    rc = fr_sweep_execute(sw, &err);
    if (rc == FR_OK || rc == FR_E_FAIL) {
        fr_error perr = {0};
        fr_status pst = fr_sweep_summary_print(stdout, fr_sweep_dataset(sw), opt.output,
                                               fr_sweep_get_stats(sw), json, &perr);
        if (pst != FR_OK) {
            fr_error_log("%s", perr.msg);
            if (rc == FR_OK)
                rc = pst;
        }
    }
report:
    if (rc == FR_E_USAGE)
        rc = cli_usage_error(argv[0], "%s", err.msg);
    else if (rc != FR_OK)
        fr_error_log("%s", err.msg);
done:
    if (signals_set) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    fr_sweep_destroy(sw);
    for (size_t i = 0; i < n_sources; i++)
        fr_source_close(sources[i]);
    if (have_reg)
        fr_registry_free(&reg);
    free(sources);
    free(plugins);
    free(command_line);
    return rc;
}
