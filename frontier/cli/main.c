/*
 * frontier: maps the compression frontier of neural-network checkpoints.
 * Subcommands are one table (git.c); exit codes are enum fr_status
 * (docs/exit-codes.md); only this file exits.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"inspect", cmd_inspect, "list a model's tensors: class, dtype, shape, parameters"},
    {"quantizers", cmd_quantizers, "list every registered quantizer and its configurations"},
    {"sweep", cmd_sweep, "measure bits and error of every tensor x configuration into an HDF5 dataset"},
    {"merge", cmd_merge, "join sweep datasets into one"},
    {"pareto", cmd_pareto, "model-level points and Pareto-optimal configurations of a dataset"},
    {"allocate", cmd_allocate, "choose one configuration per tensor under a bits-per-weight budget"},
    {"export", cmd_export, "write a dataset's rows and frontiers as csv/json/tex/gnuplot/svg/pdf/png"},
    {"quantize", cmd_quantize, "write a recipe or one configuration as a deployable checkpoint"},
    {"annotate", cmd_annotate, "store measured model quality (KL divergence, perplexity) in a dataset"},
    {"evaluate", cmd_evaluate, "quantize, measure with llama.cpp (KL divergence, perplexity) and store it"},
    {"sensitivity", cmd_sensitivity, "per-tensor sensitivity (KL per squared error) of a GGUF model through llama.cpp"},
};

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier [-q|--quiet] [-v|--verbose] <command> [options]\n"
            "       frontier <command> --help\n"
            "\n"
            "Measures, for every weight tensor of a checkpoint and every quantization\n"
            "scheme, the bits a real checkpoint would store against the reconstruction\n"
            "error, and turns the measurements into Pareto frontiers, mixed-precision\n"
            "recipes and figures.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "A typical study:\n"
            "  frontier inspect data/stories260K\n"
            "  frontier sweep data/stories260K --bits 2..8 -o run.h5\n"
            "  frontier pareto run.h5 --by class\n"
            "  frontier allocate run.h5 --budget 3.5 -o recipe.json\n"
            "  frontier quantize data/stories260K --recipe recipe.json -o stories-q\n"
            "  frontier export run.h5 --format png -o frontier.png\n"
            "\n"
            "exit codes:\n"
            "  0 success            1 failure           2 usage error\n"
            "  3 i/o error          4 malformed input   5 output error\n"
            "  6 plugin error       7 device error      8 out of memory\n"
            "  9 datasets disagree  10 not in this build (sensitivity without libllama)\n"
            "  130 interrupted\n"
            "\n"
            "frontier %s; docs/ holds the formats, the dataset schema and the plugin ABI\n",
            FRONTIER_VERSION);
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
            fr_log_set_level(FRONTIER_LOG_WARN);
        } else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
            fr_log_set_level(FRONTIER_LOG_DEBUG);
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            print_help(stdout);
            return FR_OK;
        } else if (!strcmp(argv[i], "--version")) {
            printf("frontier %s\n", FRONTIER_VERSION);
            return FR_OK;
        } else {
            fprintf(stderr, "frontier: unknown option '%s'\n(see 'frontier --help')\n", argv[i]);
            return FR_E_USAGE;
        }
    }
    if (i >= argc) {
        print_help(stderr);
        return FR_E_USAGE;
    }
    if (!strcmp(argv[i], "help")) {
        print_help(stdout);
        return FR_OK;
    }
    const struct command *cmd = NULL;
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(argv[i], commands[k].name))
            cmd = &commands[k];
    if (!cmd) {
        fprintf(stderr, "frontier: '%s' is not a command\n(see 'frontier --help')\n", argv[i]);
        return FR_E_USAGE;
    }
    int rc = cmd->run(argc - i, argv + i);
    /* Like git: a full disk or closed pipe on stdout is an error, not success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "frontier %s: cannot write to standard output: %s\n", cmd->name,
                strerror(errno));
        if (rc == FR_OK)
            rc = FR_E_OUTPUT;
    }
    return rc;
}
