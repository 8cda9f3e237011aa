/* frontier merge: joins sweep datasets into one (frontier/dataset/dataset_merge.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/dataset/dataset.h"
#include "frontier/dataset/dataset_merge.h"
#include "frontier/dataset/dataset_write.h"

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: frontier merge A.h5 B.h5 [...] -o OUT.h5\n"
            "\n"
            "Joins sweep datasets (e.g. the parts of a Slurm array job) into one.\n"
            "Sources, tensors and configurations are deduplicated by identity (source\n"
            "sha256 or size+mtime, tensor name, configuration name+origin+params) and\n"
            "renumbered. A (tensor, configuration) row present in several inputs must\n"
            "agree within 1e-12 relative on every metric (seconds and device aside).\n"
            "Derived tables under /frontier are not carried over: run pareto/allocate\n"
            "on the merged file.\n"
            "\n"
            "  -o, --output FILE   the merged dataset (never overwritten)\n"
            "  -q, --quiet         no informational messages\n"
            "  -h, --help          this help\n"
            "\n"
            "exit codes: 0 merged; 2 usage; 3 cannot read an input; 4 an input is not a\n"
            "frontier dataset of this schema; 5 output exists or cannot be written;\n"
            "9 inputs disagree.\n");
}

int cmd_merge(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int rc = FR_OK;
    fr_error err = {0};
    const char *output = NULL;
    fr_dataset *inputs = NULL;
    size_t n_read = 0;
    fr_dataset merged = {0};
    fr_merge_stats stats;
    char *command_line = NULL;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'q': fr_log_set_level(FRONTIER_LOG_WARN); break;
        case 'h': print_usage(stdout); return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!output)
        return cli_usage_error(argv[0], "no output given (-o OUT.h5)");
    if (optind >= argc)
        return cli_usage_error(argv[0], "no dataset to merge");
    for (int i = optind; i < argc; i++)
        if (!strcmp(argv[i], output))
            return cli_usage_error(argv[0], "'%s' is both an input and the output", output);
    /* refused before reading anything; the write itself is atomic and
     * never replaces a file (fr_dataset_write FR_DS_CREATE) */
    if (access(output, F_OK) == 0) {
        fr_error_log("'%s' already exists; choose another output", output);
        return FR_E_OUTPUT;
    }

    size_t n = (size_t)(argc - optind);
    inputs = calloc(n, sizeof *inputs);
    command_line = cli_command_line(argc, argv);
    if (!inputs || !command_line) {
        rc = fr_fail(&err, FR_E_NOMEM, "out of memory");
        goto report;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = fr_dataset_read(argv[optind + (int)i], &inputs[i], &err)) != FR_OK)
            goto report;
        n_read++;
    }
    rc = fr_dataset_merge(inputs, (const char *const *)(argv + optind), n, &merged, &stats, &err);
    if (rc != FR_OK)
        goto report;
    if ((rc = fr_dataset_set_string(&merged.command_line, command_line, &err)) != FR_OK)
        goto report;
    if ((rc = fr_dataset_write(output, &merged, FR_DS_CREATE, &err)) != FR_OK)
        goto report;
    fr_info("merged %zu datasets into '%s': %zu rows (%zu duplicates), %zu tensors, %zu configurations",
            n, output, merged.n_results, stats.n_duplicate_rows, merged.n_tensors, merged.n_configs);
report:
    if (rc != FR_OK)
        fr_error_log("%s", err.msg);
    for (size_t i = 0; i < n_read; i++)
        fr_dataset_free(&inputs[i]);
    free(inputs);
    fr_dataset_free(&merged);
    free(command_line);
    return rc;
}
