/*
 * frontier annotate RUN.h5 EVAL.json...: measured model quality (the JSON
 * of examples/eval/kld.py) stored under /frontier/measured of the dataset
 * (docs/dataset.md), keyed by configuration or recipe; --list prints it.
 */
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/analysis/annotate.h"
#include "frontier/dataset/dataset.h"

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier annotate RUN.h5 EVAL.json... [--list]\n"
            "\n"
            "Stores measured model quality -- the JSON that examples/eval/kld.py writes:\n"
            "mean next-token KL divergence against the original model, perplexity --\n"
            "in RUN.h5 under /frontier/measured (docs/dataset.md), one row per\n"
            "configuration (\"config\") or recipe (\"recipe\", a file read relative to\n"
            "the JSON), keyed by its \"name\"; a name annotated again is replaced.\n"
            "All files are checked before the dataset is changed, which happens in one\n"
            "step (a copy renamed over it). With no EVAL.json, or --list, prints the\n"
            "rows stored.\n"
            "\n"
            "exit codes: 0 ok, 2 usage (an unknown configuration or recipe), 3 unreadable\n"
            "file, 4 bad JSON or not a dataset, 5 cannot write (docs/exit-codes.md)\n");
}

static void print_rows(const fr_measured *rows, size_t n)
{
    printf("%-40s %-7s %8s %10s %10s %10s\n", "name", "kind", "bpw", "kl_mean", "ppl_quant",
           "ppl_orig");
    for (size_t i = 0; i < n; i++)
        printf("%-40s %-7s %8.4f %10.5g %10.5g %10.5g\n", rows[i].name, rows[i].kind,
               rows[i].bits_per_weight, rows[i].kl_mean, rows[i].ppl_quant, rows[i].ppl_orig);
}

int cmd_annotate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, list = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'l': list = 1; break;
        case 'h': print_help(stdout); return 0;
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no dataset given (frontier annotate RUN.h5 EVAL.json)");
    const char *path = argv[optind++];
    fr_error err;
    fr_dataset ds;
    fr_status st = fr_dataset_read(path, &ds, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    size_t n = (size_t)(argc - optind);
    fr_measured *rows = calloc(n + 1, sizeof *rows);
    if (!rows) {
        fr_dataset_free(&ds);
        fr_error_log("out of memory");
        return FR_E_NOMEM;
    }
    for (size_t i = 0; i < n && st == FR_OK; i++) {
        const char *file = argv[optind + (int)i];
        FILE *f = fopen(file, "rb");
        char *text = NULL;
        size_t len = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
            len = text ? fread(text, 1, (size_t)sz, f) : 0;
            fclose(f);
        }
        if (!text) {
            st = fr_fail(&err, FR_E_IO, "cannot read '%s'", file);
            break;
        }
        text[len] = '\0';
        char *dup = strdup(file);
        st = fr_measured_parse(text, file, dup ? dirname(dup) : ".", &ds, &rows[i], &err);
        free(dup);
        free(text);
    }
    if (st == FR_OK && n > 0) {
        char *command_line = cli_command_line(argc, argv);
        st = fr_measured_store(path, rows, n, command_line, &err);
        free(command_line);
        if (st == FR_OK)
            fr_info("stored %zu measured result%s under %s in '%s'", n, n == 1 ? "" : "s",
                    FR_MEASURED_GROUP, path);
    }
    if (st == FR_OK && (list || n == 0)) {
        fr_measured *stored;
        size_t n_stored;
        if ((st = fr_measured_read(path, &stored, &n_stored, &err)) == FR_OK) {
            print_rows(stored, n_stored);
            fr_measured_free_all(stored, n_stored);
        }
    }
    if (st == FR_E_USAGE)
        cli_usage_error(argv[0], "%s", err.msg);
    else if (st != FR_OK)
        fr_error_log("%s", err.msg);
    fr_measured_free_all(rows, n);
    fr_dataset_free(&ds);
    return st;
}
