/*
 * frontier evaluate MODEL.gguf (--recipe R.json | --config C) --text FILE
 * --dataset RUN.h5: quantizes through frontier quantize's code, measures the
 * result against MODEL with llama.cpp's llama-perplexity (mean KL divergence,
 * perplexity, same-top-token rate) and stores it under /frontier/measured
 * as annotate does (docs/evaluate.md).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/analysis/annotate.h"
#include "frontier/analysis/llama_eval.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/dataset/dataset.h"
#include "frontier/dataset/source_identity.h"
#include "frontier/exec/builtins.h"

#ifndef FRONTIER_LLAMA_BIN_DEFAULT
#define FRONTIER_LLAMA_BIN_DEFAULT ""
#endif

/* attempts of the --kl-divergence run whose statistics were lost
 * (llama.cpp's asynchronous log may drop its last lines at exit) */
#define KLD_ATTEMPTS 3

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier evaluate MODEL.gguf (--recipe RECIPE.json | --config CONFIG)\n"
            "         --text FILE --dataset RUN.h5 [--ctx N] [--chunks N] [--llama-bin DIR]\n"
            "         [-o OUT.gguf] [--keep] [--name NAME] [--calib FILE]\n"
            "\n"
            "Measures what a recipe or configuration does to the model, through a real\n"
            "engine, in one command: MODEL is quantized by the code of 'frontier quantize'\n"
            "(the file the sweep's rows describe), then llama.cpp's llama-perplexity runs\n"
            "the unquantized MODEL on FILE and saves its logits (--kl-divergence-base), runs\n"
            "the quantized file on the same tokens (--kl-divergence) and reports the mean\n"
            "KL divergence of the quantized model's next-token distribution from the\n"
            "original's, both perplexities and how often both pick the same top token.\n"
            "The result is stored in RUN.h5 under /frontier/measured, exactly as 'frontier\n"
            "annotate' stores it (a name measured again is replaced), with the text's path\n"
            "and sha256, the model's sha256 and the commands; 'annotate RUN.h5 --list'\n"
            "prints it and pareto, allocate and 'export --measured' show it beside the\n"
            "predictions. FILE should be text the choice did not see (not the calibration\n"
            "text).\n"
            "\n"
            "  --recipe FILE      tensor -> configuration, as 'frontier allocate -o' writes;\n"
            "                     its configurations must be in RUN.h5\n"
            "  --config CONFIG    one configuration (of RUN.h5's /configs) for every tensor\n"
            "                     'frontier quantize --config' changes\n"
            "  --text FILE        the evaluation text (UTF-8), tokenized by MODEL's vocabulary\n"
            "  --dataset RUN.h5   the sweep the choice came from; the result is stored there\n"
            "  --ctx N            tokens per chunk (default 512); the second half of each\n"
            "                     chunk is scored. FILE must give at least 2N tokens\n"
            "  --chunks N         score only the first N chunks (default: all of FILE)\n"
            "  --llama-bin DIR    the folder holding llama-perplexity (default: the pinned\n"
            "                     llama.cpp this build was configured with,\n"
            "                     " FRONTIER_LLAMA_BIN_DEFAULT ",\n"
            "                     then PATH; scripts/llama-cpp.sh builds it)\n"
            "  -o, --output FILE  write the quantized GGUF here and keep it (default: a\n"
            "                     temporary file beside RUN.h5, removed afterwards)\n"
            "  --keep             keep the temporary GGUF (its path is printed)\n"
            "  --name NAME        the row's name (default: the configuration, or the\n"
            "                     recipe's file name without .json)\n"
            "  --calib FILE       calibration statistics, for the configurations that need\n"
            "                     them (as for 'frontier quantize')\n"
            "\n"
            "The reference logits of the unquantized model are cached in RUN.h5.evaluate/,\n"
            "keyed by the sha256 of MODEL and of FILE, --ctx and --chunks, so evaluating\n"
            "a second choice on the same text runs llama-perplexity once, not twice. The\n"
            "engine's output is kept there too (*.log). Progress goes to stderr; the\n"
            "result to stdout.\n"
            "\n"
            "  frontier sweep data/stories260K.gguf --quantizers 'ggml-*' -o run.h5\n"
            "  frontier evaluate data/stories260K.gguf --config ggml-q4_0 \\\n"
            "      --text story.txt --dataset run.h5 --ctx 128\n"
            "  frontier annotate run.h5 --list\n"
            "\n"
            "exit codes: 0 ok, 2 usage (a missing --text or --dataset, a configuration or\n"
            "recipe not in RUN.h5, a text too short for --ctx), 3 unreadable MODEL, FILE,\n"
            "recipe or dataset, or no llama-perplexity, 4 malformed input, 5 cannot write,\n"
            "1 llama-perplexity failed (its log is named) (docs/exit-codes.md)\n");
}

typedef struct eval_opts {
    const char *model, *recipe, *config, *text, *dataset, *llama_bin, *out, *name, *calib;
    int ctx, chunks, keep;
} eval_opts;

static int parse_count(const char *s, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > 1 << 24)
        return 0;
    *out = (int)v;
    return 1;
}

static int readable(const char *path)
{
    struct stat sb;
    FILE *f = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? fopen(path, "rb") : NULL;
    if (f)
        fclose(f);
    return f != NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What an evaluation records beside the statistics. */
typedef struct eval_record {
    const char *model_sha, *text_sha; /* "" without OpenSSL */
    const char *engine, *base;        /* llama-perplexity, the reference logits */
    int reused;                       /* the reference came from the cache */
    const char *command;
    size_t n_quantized;               /* what fr_quantize wrote */
    double rel_err;                   /* over the quantized tensors, of the file written */
    const char *kept;                 /* the quantized GGUF kept, or NULL */
    double seconds;
} eval_record;

/* The eval JSON annotate reads (frontier/analysis/annotate.h), as text. */
static char *eval_json(const eval_opts *o, const char *name, const fr_llama_kld *k,
                       const eval_record *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "frontier-eval");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, o->config ? "config" : "recipe", o->config ? o->config : o->recipe);
    cJSON_AddStringToObject(j, "model", o->model);
    cJSON_AddStringToObject(j, "model_sha256", r->model_sha);
    cJSON *t = cJSON_AddObjectToObject(j, "tokens");
    cJSON_AddStringToObject(t, "kind", "text");
    cJSON_AddStringToObject(t, "file", o->text);
    cJSON_AddStringToObject(t, "sha256", r->text_sha);
    cJSON_AddNumberToObject(t, "ctx", k->n_ctx);
    cJSON_AddNumberToObject(t, "chunks", k->n_chunks);
    cJSON_AddNumberToObject(t, "predicted_positions", k->positions);
    cJSON_AddNumberToObject(j, "kl_mean", k->kl_mean);
    cJSON_AddNumberToObject(j, "kl_stderr", k->kl_stderr);
    cJSON_AddNumberToObject(j, "ppl_quant", k->ppl_quant);
    cJSON_AddNumberToObject(j, "ppl_orig", k->ppl_base);
    cJSON_AddNumberToObject(j, "top1_agreement", k->same_top);
    cJSON_AddNumberToObject(j, "top1_agreement_stderr", k->same_top_stderr);
    cJSON_AddStringToObject(j, "statistics", k->from_summary ? "llama-perplexity's closing statistics"
                                                           : "llama-perplexity's last chunk row");
    cJSON_AddStringToObject(j, "engine", "llama.cpp llama-perplexity --kl-divergence");
    cJSON_AddStringToObject(j, "engine_path", r->engine);
    cJSON_AddStringToObject(j, "reference_logits", r->base);
    cJSON_AddBoolToObject(j, "reference_reused", r->reused);
    cJSON *q = cJSON_AddObjectToObject(j, "quantized");
    cJSON_AddNumberToObject(q, "tensors", (double)r->n_quantized);
    cJSON_AddNumberToObject(q, "rel_err", r->rel_err);
    if (r->kept)
        cJSON_AddStringToObject(q, "file", r->kept);
    else
        cJSON_AddNullToObject(q, "file");
    cJSON_AddStringToObject(j, "command", r->command ? r->command : "");
    cJSON_AddStringToObject(j, "tool", "frontier " FRONTIER_VERSION);
    cJSON_AddNumberToObject(j, "seconds", round(r->seconds * 100) / 100);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Runs llama-perplexity; a nonzero exit is FR_E_FAIL naming its log. */
static fr_status run_engine(const char *const *argv, const char *log, fr_error *err)
{
    int rc = 0;
    fr_status st = fr_llama_run(argv, log, &rc, err);
    if (st != FR_OK || rc == 0)
        return st;
    char line[512];
    fr_llama_log_error(log, line, sizeof line);
    return fr_fail(err, FR_E_FAIL, "llama-perplexity exited with %d%s%s (its output: '%s')", rc,
                   *line ? ": " : "", line, log);
}

/* The reference logits of the unquantized model at *base (cached). */
static fr_status reference(const eval_opts *o, const char *engine, const char *dir,
                           const char *model_sha, const char *text_sha, char *base, size_t len,
                           int *reused, fr_error *err)
{
    char chunks[32], tmp[4200], log[4200];
    snprintf(chunks, sizeof chunks, o->chunks > 0 ? "%d" : "all", o->chunks);
    int n_ctx = 0;
    if (*model_sha && *text_sha) {
        snprintf(base, len, "%s/base-%.16s-%.16s-c%d-%s.kld", dir, model_sha, text_sha, o->ctx, chunks);
        if (fr_llama_base_chunks(base, &n_ctx) > 0 && n_ctx == o->ctx) {
            fr_info("evaluate: reusing the reference logits '%s' (same model, text and --ctx)", base);
            *reused = 1;
            return FR_OK;
        }
    } else
        snprintf(base, len, "%s/base-%ld.kld", dir, (long)getpid());
    *reused = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", base, (long)getpid());
    snprintf(log, sizeof log, "%s.log", base);
    char ctx[16], nch[16];
    snprintf(ctx, sizeof ctx, "%d", o->ctx);
    snprintf(nch, sizeof nch, "%d", o->chunks);
    const char *argv[16] = {engine, "-m", o->model, "-f", o->text, "-c", ctx,
                            "--kl-divergence-base", tmp};
    int n = 9;
    if (o->chunks > 0) {
        argv[n++] = "--chunks";
        argv[n++] = nch;
    }
    argv[n] = NULL;
    fr_info("evaluate: reference logits of the unquantized model (llama-perplexity "
            "--kl-divergence-base, --ctx %d) ...", o->ctx);
    double t0 = now_s();
    fr_status st = run_engine(argv, log, err);
    int got = st == FR_OK ? fr_llama_base_chunks(tmp, &n_ctx) : 0;
    if (st == FR_OK && got == 0)
        st = fr_fail(err, FR_E_USAGE, "the text is too short for --ctx %d: llama-perplexity needs "
                     "at least %d tokens of it (a smaller --ctx, or a longer text; its output: '%s')",
                     o->ctx, 2 * o->ctx, log);
    if (st == FR_OK && rename(tmp, base) != 0)
        st = fr_fail(err, FR_E_OUTPUT, "cannot rename '%s' to '%s': %s", tmp, base, strerror(errno));
    if (st != FR_OK)
        unlink(tmp);
    else
        fr_info("evaluate: %d chunks of %d tokens in %.1f s: '%s'", got, o->ctx, now_s() - t0, base);
    return st;
}

/* The quantized file against the reference; retried when the statistics were lost. */
static fr_status measure(const eval_opts *o, const char *engine, const char *gguf,
                         const char *base, const char *log, fr_llama_kld *k, fr_error *err)
{
    char ctx[16];
    snprintf(ctx, sizeof ctx, "%d", o->ctx);
    const char *argv[] = {engine, "-m", gguf, "-f", o->text, "-c", ctx,
                          "--kl-divergence-base", base, "--kl-divergence", NULL};
    for (int attempt = 1; attempt <= KLD_ATTEMPTS; attempt++) {
        fr_info("evaluate: the quantized model against the reference (llama-perplexity "
                "--kl-divergence)%s ...", attempt > 1 ? ", again" : "");
        double t0 = now_s();
        fr_status st = run_engine(argv, log, err);
        if (st != FR_OK)
            return st;
        st = fr_llama_parse_kld(log, o->ctx, k, err);
        /* closing statistics lost (docs/evaluate.md) where the text has
         * enough positions for them: measured again, the last chunk's row
         * (fewer digits) only if every attempt lost them */
        if (st == FR_OK && !k->from_summary && k->positions >= 100 && attempt < KLD_ATTEMPTS) {
            fr_warn("llama-perplexity's closing statistics are missing from '%s': measuring "
                    "again (attempt %d of %d)", log, attempt + 1, KLD_ATTEMPTS);
            continue;
        }
        if (st != FR_E_FORMAT) {
            if (st == FR_OK)
                fr_info("evaluate: measured in %.1f s", now_s() - t0);
            return st;
        }
        fr_warn("%s", err->msg);
    }
    return fr_fail(err, FR_E_FAIL, "llama-perplexity printed no KL divergence statistics in %d "
                   "runs (its output: '%s')", KLD_ATTEMPTS, log);
}

static fr_status evaluate(const eval_opts *o, int argc, char **argv, fr_error *err)
{
    if (!readable(o->model))
        return fr_fail(err, FR_E_IO, "cannot read '%s'", o->model);
    if (!readable(o->text))
        return fr_fail(err, FR_E_IO, "cannot read --text '%s'", o->text);
    if (o->recipe && !readable(o->recipe))
        return fr_fail(err, FR_E_IO, "cannot read --recipe '%s'", o->recipe);
    if (o->out && access(o->out, F_OK) == 0)
        return fr_fail(err, FR_E_OUTPUT, "'%s' exists: evaluate does not replace it (remove it, "
                       "or leave -o out for a temporary file)", o->out);
    fr_dataset ds;
    fr_status st = fr_dataset_read(o->dataset, &ds, err);
    if (st != FR_OK)
        return st;
    char name[256];
    if (o->name)
        snprintf(name, sizeof name, "%s", o->name);
    else if (o->config)
        snprintf(name, sizeof name, "%s", o->config);
    else {
        char *dup = strdup(o->recipe);
        snprintf(name, sizeof name, "%s", dup ? basename(dup) : o->recipe);
        free(dup);
        size_t l = strlen(name);
        if (l > 5 && !strcmp(name + l - 5, ".json"))
            name[l - 5] = '\0';
    }
    /* the choice checked against the dataset before anything runs, by annotate's own reader */
    fr_llama_kld none = {.n_ctx = o->ctx};
    char *command = cli_command_line(argc, argv);
    eval_record rec = {.model_sha = "", .text_sha = "", .engine = "", .base = "",
                       .command = command};
    char *probe = eval_json(o, name, &none, &rec);
    fr_measured row;
    st = probe ? fr_measured_parse(probe, "evaluate", NULL, &ds, &row, err)
               : fr_fail(err, FR_E_NOMEM, "out of memory");
    free(probe);
    if (st == FR_OK)
        fr_measured_free(&row);
    /* the digests the dataset has of the models it was swept from */
    char (*swept)[65] = calloc(ds.n_sources + 1, sizeof *swept);
    size_t n_swept = 0;
    for (size_t i = 0; swept && i < ds.n_sources; i++)
        if (ds.sources[i].sha256 && strlen(ds.sources[i].sha256) == 64)
            memcpy(swept[n_swept++], ds.sources[i].sha256, 65);
    fr_dataset_free(&ds);
    char engine[4096], dir[4200], model_sha[65] = "", text_sha[65] = "";
    if (st == FR_OK)
        st = fr_llama_find(o->llama_bin, FRONTIER_LLAMA_BIN_DEFAULT, engine, sizeof engine, err);
    snprintf(dir, sizeof dir, "%s.evaluate", o->dataset);
    if (st == FR_OK && mkdir(dir, 0755) != 0 && errno != EEXIST)
        st = fr_fail(err, FR_E_OUTPUT, "cannot create '%s': %s", dir, strerror(errno));
    if (st == FR_OK) {
        fr_info("evaluate: sha256 of '%s' and '%s' ...", o->model, o->text);
        st = fr_file_sha256(o->model, model_sha, err);
        if (st == FR_OK)
            st = fr_file_sha256(o->text, text_sha, err);
        int same = n_swept == 0 || !*model_sha;
        for (size_t i = 0; i < n_swept && !same; i++)
            same = !strcmp(swept[i], model_sha);
        if (st == FR_OK && !same)
            fr_warn("'%s' is not the model '%s' was swept from (its sha256 is not in /sources): "
                    "the measurement is stored beside another file's predictions", o->model,
                    o->dataset);
    }
    free(swept);
    double t0 = now_s();
    char base[4400] = "", gguf[4400] = "", log[4400];
    int reused = 0, temp_out = !o->out;
    if (st == FR_OK)
        st = reference(o, engine, dir, model_sha, text_sha, base, sizeof base, &reused, err);
    if (st == FR_OK) {
        if (o->out)
            snprintf(gguf, sizeof gguf, "%s", o->out);
        else
            snprintf(gguf, sizeof gguf, "%s/quantized-%ld.gguf", dir, (long)getpid());
        fr_info("evaluate: quantizing '%s' with %s '%s' ...", o->model,
                o->config ? "configuration" : "recipe", o->config ? o->config : o->recipe);
        fr_registry reg;
        st = fr_registry_init(&reg, err);
        if (st == FR_OK)
            st = fr_registry_discover(&reg, NULL, 0, err);
        fr_quantize_options q = {.model = o->model, .out = gguf, .recipe = o->recipe,
                                 .config = o->config, .calib = o->calib,
                                 .format = FR_QFORMAT_GGUF, .fused_global_scale = -1};
        fr_quantize_summary sum;
        if (st == FR_OK && (st = fr_quantize(&reg, &q, &sum, err)) == FR_OK) {
            rec.n_quantized = sum.n_quantized;
            rec.rel_err = sum.rel_err;
            fr_info("evaluate: wrote '%s': %zu tensors quantized, rel_err %.6g", gguf,
                    sum.n_quantized, sum.rel_err);
        }
        fr_registry_free(&reg);
    }
    fr_llama_kld k;
    if (st == FR_OK) {
        int n = snprintf(log, sizeof log, "%s/%s.kld.log", dir, name[0] == '.' ? "eval" : name);
        if (n < 0 || (size_t)n >= sizeof log) {
            st = fr_fail(err, FR_E_USAGE, "the log path in '%s' for '%s' is too long", dir, name);
        } else {
            for (char *c = log + strlen(dir) + 1; *c; c++)
                if (*c == '/')
                    *c = '_';
            st = measure(o, engine, gguf, base, log, &k, err);
        }
    }
    if (st == FR_OK) {
        rec.model_sha = model_sha;
        rec.text_sha = text_sha;
        rec.engine = engine;
        rec.base = base;
        rec.reused = reused;
        rec.kept = !temp_out || o->keep ? gguf : NULL;
        rec.seconds = now_s() - t0;
        char *json = eval_json(o, name, &k, &rec);
        st = json ? fr_dataset_read(o->dataset, &ds, err) : fr_fail(err, FR_E_NOMEM, "out of memory");
        if (st == FR_OK) {
            st = fr_measured_parse(json, "evaluate", NULL, &ds, &row, err);
            fr_dataset_free(&ds);
        }
        free(json);
        if (st == FR_OK) {
            st = fr_measured_store(o->dataset, &row, 1, command, err);
            if (st == FR_OK)
                printf("%s (%s, %.4f bits/weight): mean KLD %.6g +/- %.2g, PPL %.6g (unquantized "
                       "%.6g), same top token %.3f%% over %.0f positions (llama-perplexity, "
                       "--ctx %d, %d chunks of '%s'); stored in '%s'\n",
                       row.name, row.kind, row.bits_per_weight, k.kl_mean, k.kl_stderr,
                       k.ppl_quant, k.ppl_base, 100 * k.same_top, k.positions, o->ctx,
                       k.n_chunks, o->text, o->dataset);
            fr_measured_free(&row);
        }
    }
    if (temp_out && *gguf && access(gguf, F_OK) == 0) {
        char report[4500];
        snprintf(report, sizeof report, "%s.report.json", gguf);
        if (o->keep)
            fr_info("evaluate: kept '%s'", gguf);
        else {
            unlink(gguf);
            unlink(report);
        }
    }
    if (*base && (!*model_sha || !*text_sha))
        unlink(base); /* without digests nothing can be reused */
    free(command);
    return st;
}

int cmd_evaluate(int argc, char **argv)
{
    eval_opts o = {.ctx = 512};
    /* the options that take a file or a name: getopt's value is the index here */
    const char **text_opts[] = {&o.recipe, &o.config, &o.text, &o.dataset,
                                &o.llama_bin, &o.out, &o.name, &o.calib};
    static const struct option longopts[] = {
        {"recipe", required_argument, NULL, 0}, {"config", required_argument, NULL, 1},
        {"text", required_argument, NULL, 2}, {"dataset", required_argument, NULL, 3},
        {"llama-bin", required_argument, NULL, 4}, {"output", required_argument, NULL, 5},
        {"name", required_argument, NULL, 6}, {"calib", required_argument, NULL, 7},
        {"ctx", required_argument, NULL, 'x'}, {"chunks", required_argument, NULL, 'n'},
        {"keep", no_argument, NULL, 'k'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        if (opt == 'o')
            opt = 5;
        if (opt >= 0 && opt < (int)(sizeof text_opts / sizeof *text_opts)) {
            *text_opts[opt] = optarg;
            continue;
        }
        if (opt == 'h') {
            print_help(stdout);
            return FR_OK;
        }
        if (opt == ':')
            return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        if (opt == 'k')
            o.keep = 1;
        else if (opt == 'x' && !parse_count(optarg, 8, &o.ctx))
            return cli_usage_error(argv[0], "invalid --ctx '%s' (tokens per chunk, 8 or more)", optarg);
        else if (opt == 'n' && !parse_count(optarg, 1, &o.chunks))
            return cli_usage_error(argv[0], "invalid --chunks '%s' (1 or more)", optarg);
        else if (opt != 'x' && opt != 'n')
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no model given (frontier evaluate MODEL.gguf --config C "
                               "--text FILE --dataset RUN.h5)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one model at a time: unexpected '%s'", argv[optind + 1]);
    o.model = argv[optind];
    size_t l = strlen(o.model);
    if (l < 5 || strcmp(o.model + l - 5, ".gguf"))
        return cli_usage_error(argv[0], "'%s' is not a .gguf: evaluate measures through llama.cpp, "
                               "which runs GGUF files", o.model);
    if (!o.recipe == !o.config)
        return cli_usage_error(argv[0], o.recipe ? "--recipe and --config exclude each other"
                                                 : "nothing to measure: give --recipe FILE or --config CONFIG");
    if (!o.text)
        return cli_usage_error(argv[0], "no --text FILE: the text the models are measured on");
    if (!o.dataset)
        return cli_usage_error(argv[0], "no --dataset RUN.h5: where the result is stored");
    if (o.out && o.keep)
        return cli_usage_error(argv[0], "-o keeps its file already: --keep is for the temporary one");
    fr_error err = {0};
    fr_status st = evaluate(&o, argc, argv, &err);
    if (st == FR_E_USAGE)
        cli_usage_error(argv[0], "%s", err.msg);
    else if (st != FR_OK)
        fr_error_log("%s", err.msg);
    return st;
}
