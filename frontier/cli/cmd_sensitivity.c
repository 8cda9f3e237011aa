/* frontier sensitivity: per-tensor sensitivity of a GGUF model through llama.cpp
 * (frontier/engine/sensitivity.h; docs/calibration.md, "Sensitivity through llama.cpp"). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/registry.h"
#include "frontier/analysis/frontier_store.h"
#include "frontier/analysis/pareto.h"
#include "frontier/dataset/source_identity.h"
#include "frontier/engine/llama_lm.h"
#include "frontier/engine/sensitivity.h"
#include "frontier/engine/sensitivity_file.h"
#include "frontier/exec/builtins.h"

#define DEFAULT_SEQUENCES 2
#define DEFAULT_SEQ_LEN 128
#define DEFAULT_CONFIG "ggml-q4_0"
#define DEFAULT_SEED 4321
#define DEFAULT_GAUSSIAN_LEVELS "0.025,0.05,0.1"
/* the fidelity check: mean KL(file's own run || this float32 model) above
 * this is a model llama.cpp builds differently from the file */
#define CHECK_MAX_KL 0.05

#ifdef FRONTIER_HAVE_LLAMA
#define LLAMA_STATE "this frontier was built with " FRONTIER_LLAMA_ORIGIN
#else
#define LLAMA_STATE "this frontier was built without libllama: the command exits 10"
#endif

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: frontier sensitivity MODEL.gguf --text FILE -o OUT.safetensors [options]\n"
            "\n"
            "Measures, through llama.cpp, how much each weight tensor of a GGUF model\n"
            "matters: alpha_t, the increase of the mean next-token KL divergence against\n"
            "the unperturbed model per unit squared relative error r_t^2 = ||dW||^2/||W||^2\n"
            "of tensor t alone (KL ~ alpha_t r_t^2). The model is run in float32 (quantized\n"
            "tensors dequantized by ggml); the reference log-probabilities of the text's\n"
            "first S x T tokens are computed once, then each tensor in turn is perturbed\n"
            "in place, the KL divergence measured, and the tensor restored. Written as\n"
            "<module>.sensitivity = [alpha, residual] (module: the GGUF tensor name without\n"
            ".weight, as a sweep of the same GGUF names it) for\n"
            "  frontier allocate RUN.h5 --budget BITS --calib OUT.safetensors\n"
            "(the sensitivity objective, allocate's default when --calib holds them).\n"
            "A token embedding that is also the output layer (no output.weight) is\n"
            "perturbed in both uses: its alpha is the output layer's too.\n"
            "\n"
            "  --text FILE            the text (its first S x T tokens; BOS first when the\n"
            "                         model adds one)\n"
            "  -o, --output FILE      the calibration file to write (.safetensors)\n"
            "  --dataset RUN.h5       also store them in a dataset swept from this model\n"
            "                         (/frontier/sensitivity, with the text and the\n"
            "                         perturbation): allocate then uses them without --calib\n"
            "  --sequences S          sequences (default %d)\n"
            "  --seq-len T            tokens per sequence (default %d)\n"
            "  --perturb quant|gaussian  the perturbation: the quantization error of\n"
            "                         --perturb-config (default), or Gaussian noise\n"
            "  --perturb-config C     the configuration (`frontier quantizers`; data-free)\n"
            "                         whose error Q(W) - W perturbs W (default %s)\n"
            "  --levels natural|R,... relative errors r the perturbation is scaled to, one\n"
            "                         forward pass each (default: natural, the configuration's\n"
            "                         own error, for quant; %s for gaussian)\n"
            "  --seed N               Gaussian noise (Philox: key N, counter the tensor's\n"
            "                         index) and the quantizer calls (default %d)\n"
            "  --include REGEX        only tensors whose name matches (POSIX extended regex)\n"
            "  --exclude REGEX        no tensor whose name matches\n"
            "  --threads N|auto       CPU threads (default auto: every online core or one,\n"
            "                         whichever evaluates the first sequence faster)\n"
            "  --no-check             skip the comparison with llama.cpp's own run of the file\n"
            "                         (refused above a mean KL of %g nats)\n"
            "  --force                replace OUT when it exists\n"
            "  -q, --quiet            no progress lines\n"
            "  -v, --verbose          llama.cpp's own log lines too\n"
            "  -h, --help             this help\n"
            "\n"
            "Progress: one line per tensor on stderr (k of N, alpha, KL, ETA). SmolLM2-135M\n"
            "(Q4_1, 211 tensors) with the defaults: 305 s of CPU time on one thread of the\n"
            "2-core development machine (12 min of wall time while it was shared with other\n"
            "work); alpha from 0.013 (blk.0.attn_q) to 21 (blk.11.ffn_down), the tied\n"
            "token_embd 11.7 (docs/calibration.md, \"Sensitivity through llama.cpp\").\n"
            "\n"
            "Needs libllama (llama.cpp's library) at build time: scripts/llama-cpp.sh builds\n"
            "the pinned one, then re-run cmake; %s.\n"
            "\n"
            "exit codes: 0 written; 1 llama.cpp failed, or its run of the file disagrees\n"
            "with this one (the check); 2 usage, or a text shorter than S x T tokens;\n"
            "3 MODEL or FILE cannot be read; 4 MODEL is no GGUF model llama.cpp can\n"
            "build; 5 OUT exists (without --force) or cannot be written; 10 this build\n"
            "has no libllama.\n",
            DEFAULT_SEQUENCES, DEFAULT_SEQ_LEN, DEFAULT_CONFIG, DEFAULT_GAUSSIAN_LEVELS, DEFAULT_SEED,
            CHECK_MAX_KL, LLAMA_STATE);
}

typedef struct args {
    const char *model, *text, *output, *config, *levels, *include, *exclude;
    const char *dataset; /* --dataset: also stored there (/frontier/sensitivity) */
    int argc;
    char **argv;
    fr_sens_options o;
    int threads, check, force, verbose;
} args;

static int parse_int64(const char *s, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo)
        return 0;
    *out = v;
    return 1;
}

/* "natural" (no levels) or a comma list of relative errors in (0, 10]. */
static int parse_levels(const char *s, fr_sens_options *o)
{
    o->n_levels = 0;
    if (!strcmp(s, "natural"))
        return 1;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (errno || end == p || !(v > 0 && v <= 10) || o->n_levels == FR_SENS_MAX_LEVELS)
            return 0;
        o->levels[o->n_levels++] = v;
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            return 0;
        p = end;
    }
    return o->n_levels > 0;
}

static int parse_option(int c, const char *cmd, args *a)
{
    int64_t v;
    switch (c) {
    case 't': a->text = optarg; break;
    case 'o': a->output = optarg; break;
    case 'S':
        if (!parse_int64(optarg, 1, &v))
            return cli_usage_error(cmd, "invalid --sequences '%s' (a positive integer)", optarg);
        a->o.n_sequences = v;
        break;
    case 'T':
        if (!parse_int64(optarg, 2, &v) || v > (1 << 20))
            return cli_usage_error(cmd, "invalid --seq-len '%s' (an integer from 2 to 1048576)", optarg);
        a->o.seq_len = v;
        break;
    case 'p':
        if (strcmp(optarg, "quant") && strcmp(optarg, "gaussian"))
            return cli_usage_error(cmd, "unknown --perturb '%s' (quant, gaussian)", optarg);
        a->o.noise = strcmp(optarg, "quant") ? FR_SENS_GAUSSIAN : FR_SENS_QUANT;
        break;
    case 'c': a->config = optarg; break;
    case 'D': a->dataset = optarg; break;
    case 'l': a->levels = optarg; break;
    case 's':
        if (!parse_int64(optarg, 0, &v))
            return cli_usage_error(cmd, "invalid --seed '%s' (an integer >= 0)", optarg);
        a->o.seed = (uint64_t)v;
        break;
    case 'i': a->include = optarg; break;
    case 'x': a->exclude = optarg; break;
    case 'j':
        if (!strcmp(optarg, "auto"))
            v = 0;
        else if (!parse_int64(optarg, 1, &v) || v > 1024)
            return cli_usage_error(cmd, "invalid --threads '%s' (auto, or 1 to 1024)", optarg);
        a->threads = (int)v;
        break;
    case 'n': a->check = 0; break;
    case 'f': a->force = 1; break;
    case 'q': fr_log_set_level(FRONTIER_LOG_WARN); break;
    case 'v': a->verbose = 1; break;
    default: return FR_E_FAIL;
    }
    return FR_OK;
}

/* The command line into a; FR_OK, a usage error, or -1 for --help (printed). */
static int parse_args(int argc, char **argv, args *a)
{
    static const struct option longopts[] = {
        {"text", required_argument, NULL, 't'},     {"output", required_argument, NULL, 'o'},
        {"sequences", required_argument, NULL, 'S'}, {"seq-len", required_argument, NULL, 'T'},
        {"perturb", required_argument, NULL, 'p'},  {"perturb-config", required_argument, NULL, 'c'},
        {"levels", required_argument, NULL, 'l'},   {"seed", required_argument, NULL, 's'},
        {"include", required_argument, NULL, 'i'},  {"exclude", required_argument, NULL, 'x'},
        {"threads", required_argument, NULL, 'j'},  {"no-check", no_argument, NULL, 'n'},
        {"force", no_argument, NULL, 'f'},          {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},        {"help", no_argument, NULL, 'h'},
        {"dataset", required_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    *a = (args){.o = {.n_sequences = DEFAULT_SEQUENCES, .seq_len = DEFAULT_SEQ_LEN,
                      .seed = DEFAULT_SEED},
                .check = 1};
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":o:qvh", longopts, NULL)) != -1) {
        if (c == 'h') {
            print_usage(stdout);
            return -1;
        }
        if (c == ':')
            return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        if ((rc = parse_option(c, argv[0], a)) != FR_OK)
            return rc;
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no model given (a .gguf file)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one model only ('%s' is extra)", argv[optind + 1]);
    a->model = argv[optind];
    if (!a->text)
        return cli_usage_error(argv[0], "no text given (--text FILE)");
    if (!a->output)
        return cli_usage_error(argv[0], "no output given (-o OUT.safetensors)");
    if (a->o.noise == FR_SENS_GAUSSIAN && a->config)
        return cli_usage_error(argv[0], "--perturb-config goes with --perturb quant");
    const char *levels = a->levels ? a->levels
                         : a->o.noise == FR_SENS_GAUSSIAN ? DEFAULT_GAUSSIAN_LEVELS : "natural";
    if (!parse_levels(levels, &a->o))
        return cli_usage_error(argv[0], "invalid --levels '%s' (natural, or up to %d relative "
                               "errors in (0, 10] separated by commas)", levels, FR_SENS_MAX_LEVELS);
    if (a->o.noise == FR_SENS_GAUSSIAN && a->o.n_levels == 0)
        return cli_usage_error(argv[0], "--perturb gaussian needs --levels R,... (no natural level)");
    if (a->o.n_sequences > INT64_MAX / a->o.seq_len / 64)
        return cli_usage_error(argv[0], "--sequences x --seq-len is too large");
    return FR_OK;
}

#ifdef FRONTIER_HAVE_LLAMA

/* The text file, whole (NUL-terminated). */
static fr_status read_text(const char *path, char **text, size_t *len, fr_error *err)
{
    char why[128];
    FILE *f = fopen(path, "rb");
    if (!f)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", path, fr_errno_text(errno, why, sizeof why));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown)
            free(buf);
        buf = grown;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
    if (bad) {
        free(buf);
        return fr_fail(err, FR_E_IO, "cannot read '%s'", path);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return FR_OK;
}

/* The first `need` tokens of the text: a prefix of it is tokenized (cut at
 * a space or line end, far enough past what `need` tokens can take), the
 * whole text when the prefix is too short. */
static fr_status tokens_of(fr_llama *m, const char *text, size_t len, int64_t need,
                           int32_t **tokens, int64_t *n, fr_error *err)
{
    size_t cut = len;
    if (len > 65536 && (uint64_t)need < (uint64_t)(len - 65536) / 64) {
        cut = (size_t)need * 64 + 65536;
        while (cut < len && text[cut] != ' ' && text[cut] != '\n')
            cut++;
    }
    fr_status st = fr_llama_tokenize(m, text, cut, tokens, n, err);
    if (st == FR_OK && *n < need && cut < len) {
        free(*tokens);
        st = fr_llama_tokenize(m, text, len, tokens, n, err);
    }
    return st;
}

/* --perturb-config: a data-free configuration of the registry. */
static int pick_config(const args *a, const fr_registry *reg, const char *cmd,
                       const fr_config_ref **out)
{
    const char *name = a->config ? a->config : DEFAULT_CONFIG;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    if (!ref)
        return cli_usage_error(cmd, "unknown --perturb-config '%s' (see 'frontier quantizers')", name);
    if (fr_config_quantizer(reg, ref)->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS))
        return cli_usage_error(cmd, "--perturb-config '%s' needs calibration statistics: choose a "
                               "data-free configuration", name);
    if (fr_config_traits_of(ref)->needs_group_amax)
        return cli_usage_error(cmd, "--perturb-config '%s' needs its fused group's joint scale: "
                               "choose one that quantizes a tensor alone", name);
    *out = ref;
    return FR_OK;
}

static void progress(void *ud, const fr_sens_progress *p)
{
    const fr_lm *lm = ud;
    const fr_lm_tensor *t = &lm->tensors[p->tensor];
    const fr_sens_result *r = p->result;
    char eta[32];
    fr_format_duration(p->eta, eta, sizeof eta);
    if (!r->measured) {
        fr_warn("sensitivity: tensor %zu of %zu '%s' skipped: %s", p->done, p->total, t->name,
                r->skipped);
        return;
    }
    size_t last = r->n_points - 1;
    fr_info("sensitivity: tensor %zu of %zu '%s' (%s, %lld x %lld): alpha %.4g, KL %.3g at r %.3g%s; "
            "%.1f s, ETA %s",
            p->done, p->total, t->name, t->type_name, (long long)t->rows, (long long)t->cols,
            r->alpha, r->kl[last], sqrt(r->r2[last]), t->tied ? " (tied: the output layer too)" : "",
            r->seconds, eta);
}

/* sel[k] for --include / --exclude; the count selected. */
static fr_status select_tensors(const args *a, const fr_lm *lm, unsigned char *sel, size_t *n,
                                fr_error *err)
{
    fr_selection spec = {.include = a->include, .exclude = a->exclude};
    fr_selector s;
    fr_status st = fr_selector_init(&s, &spec, err);
    if (st != FR_OK)
        return st;
    *n = 0;
    for (size_t k = 0; k < lm->n_tensors; k++) {
        sel[k] = (unsigned char)fr_selector_tensor(&s, lm->tensors[k].name);
        *n += sel[k];
    }
    fr_selector_free(&s);
    if (*n == 0)
        return fr_fail(err, FR_E_USAGE, "no tensor of the model is selected (--include, --exclude)");
    return FR_OK;
}

/* What the run writes and prints: the strings of fr_sens_meta. */
typedef struct texts {
    char model[1200], text[1200], engine[1024], noise[512], fidelity[512], tool[128];
} texts;

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static fr_status describe(const args *a, fr_llama *m, size_t text_len, double check_kl,
                          texts *t, fr_error *err)
{
    char h_model[65], h_text[65];
    fr_status st = fr_file_sha256(a->model, h_model, err);
    if (st == FR_OK)
        st = fr_file_sha256(a->text, h_text, err);
    if (st != FR_OK)
        return st;
    snprintf(t->model, sizeof t->model, "%s%s%s", base_name(a->model), h_model[0] ? " sha256 " : "", h_model);
    snprintf(t->text, sizeof t->text, "%s (%zu bytes%s%s)", base_name(a->text), text_len,
             h_text[0] ? ", sha256 " : "", h_text);
    snprintf(t->engine, sizeof t->engine, "%s, architecture %s, float32 weights and KV cache, %d "
             "CPU threads", fr_llama_version(), fr_llama_arch(m), fr_llama_threads(m));
    if (a->o.noise == FR_SENS_GAUSSIAN)
        snprintf(t->noise, sizeof t->noise, "Gaussian noise (Philox4x32-10, key the seed, counter "
                 "the tensor's index) scaled to each level");
    else
        snprintf(t->noise, sizeof t->noise, "the quantization error Q(W) - W of %s (frontier's CPU "
                 "reference)%s", a->o.config->cfg->name,
                 a->o.n_levels ? " scaled to each level" : " at its own relative error");
    if (isnan(check_kl))
        snprintf(t->fidelity, sizeof t->fidelity, "not checked (--no-check)");
    else
        snprintf(t->fidelity, sizeof t->fidelity, "mean KL(llama.cpp's own run of the file || "
                 "this float32 model) %.3g nats over the first sequence", check_kl);
    snprintf(t->tool, sizeof t->tool, "frontier %s sensitivity", FRONTIER_VERSION);
    return FR_OK;
}

/* --dataset: the measured alphas into /frontier/sensitivity of the dataset
 * (all or nothing: frontier/analysis/frontier_store.h). */
static fr_status store_in_dataset(const args *a, const fr_lm *lm, const fr_sens_result *res,
                                  const texts *t, fr_error *err)
{
    const char **names = calloc(lm->n_tensors + 1, sizeof *names);
    double *alpha = calloc(lm->n_tensors + 1, sizeof *alpha);
    double *residual = calloc(lm->n_tensors + 1, sizeof *residual);
    char *cmdline = cli_command_line(a->argc, a->argv);
    fr_status st = FR_OK;
    if (!names || !alpha || !residual || !cmdline) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i < lm->n_tensors; i++) {
        if (!res[i].measured)
            continue;
        names[n] = lm->tensors[i].name;
        alpha[n] = res[i].alpha;
        residual[n++] = res[i].residual;
    }
    fr_stored_sensitivity sens = {.n = n, .names = names, .alpha = alpha, .residual = residual,
                                  .model = t->model, .text = t->text, .perturbation = t->noise,
                                  .engine = t->engine};
    fr_store *store = NULL;
    if ((st = fr_store_begin(a->dataset, &store, err)) != FR_OK)
        goto done;
    if ((st = fr_store_sensitivity(store, &sens, cmdline, err)) != FR_OK) {
        fr_store_abort(store);
        goto done;
    }
    if ((st = fr_store_commit(store, err)) == FR_OK)
        fr_info("stored %zu sensitivities in '%s' (/frontier/sensitivity)", n, a->dataset);
done:
    free(names);
    free(alpha);
    free(residual);
    free(cmdline);
    return st;
}

static void print_summary(const args *a, const fr_lm *lm, const fr_sens_result *res,
                          const fr_sens_summary *sum)
{
    size_t lo = SIZE_MAX, hi = SIZE_MAX;
    for (size_t k = 0; k < lm->n_tensors; k++) {
        if (!res[k].measured)
            continue;
        if (lo == SIZE_MAX || res[k].alpha < res[lo].alpha)
            lo = k;
        if (hi == SIZE_MAX || res[k].alpha > res[hi].alpha)
            hi = k;
    }
    printf("wrote '%s': %zu sensitivities (%zu skipped) from %lld x %lld tokens of '%s' in %.1f s "
           "(reference pass %.1f s, repeat KL %.3g)\n",
           a->output, sum->n_measured, sum->n_skipped, (long long)a->o.n_sequences,
           (long long)a->o.seq_len, a->text, sum->seconds, sum->seconds_reference, sum->kl_repeat);
    if (lo != SIZE_MAX)
        printf("alpha from %.4g ('%s') to %.4g ('%s')\n", res[lo].alpha, lm->tensors[lo].name,
               res[hi].alpha, lm->tensors[hi].name);
}

/* The model is open: tokens, the check, the measurement, the file. */
static fr_status measure(args *a, fr_llama *m, const char *text, size_t len, fr_error *err)
{
    fr_lm *lm = fr_llama_lm(m);
    int64_t need = a->o.n_sequences * a->o.seq_len, n_tok = 0;
    int32_t *tokens = NULL;
    unsigned char *sel = calloc(lm->n_tensors + 1, 1);
    fr_sens_result *res = calloc(lm->n_tensors + 1, sizeof *res);
    texts *t = calloc(1, sizeof *t);
    double check_kl = NAN;
    size_t n_sel = 0;
    fr_status st = sel && res && t ? select_tensors(a, lm, sel, &n_sel, err)
                                   : fr_fail(err, FR_E_NOMEM, "out of memory");
    if (st == FR_OK && (st = tokens_of(m, text, len, need, &tokens, &n_tok, err)) == FR_OK &&
        n_tok < need)
        st = fr_fail(err, FR_E_USAGE, "'%s' has %lld tokens, fewer than the %lld x %lld = %lld "
                     "needed (--sequences, --seq-len)", a->text, (long long)n_tok,
                     (long long)a->o.n_sequences, (long long)a->o.seq_len, (long long)need);
    if (st == FR_OK && a->threads == 0)
        st = fr_llama_tune_threads(m, tokens, a->o.seq_len, err);
    if (st == FR_OK && a->check && (st = fr_llama_check(m, tokens, a->o.seq_len, &check_kl, err)) == FR_OK &&
        !(check_kl <= CHECK_MAX_KL))
        st = fr_fail(err, FR_E_FAIL, "'%s': the float32 model built from the file's tensors "
                     "disagrees with llama.cpp's own run of it (mean KL %.3g nats, above %g): an "
                     "architecture this command cannot rebuild faithfully (--no-check measures "
                     "anyway)", a->model, check_kl, CHECK_MAX_KL);
    if (st == FR_OK) {
        fr_info("sensitivity: %zu of %zu weight tensors of '%s', %lld x %lld tokens of '%s', %d "
                "thread%s; check KL %.3g", n_sel, lm->n_tensors, a->model, (long long)a->o.n_sequences,
                (long long)a->o.seq_len, a->text, fr_llama_threads(m),
                fr_llama_threads(m) > 1 ? "s" : "", check_kl);
        a->o.selected = sel;
        a->o.progress = progress;
        a->o.progress_ud = lm;
        fr_sens_summary sum;
        if ((st = fr_sens_measure(lm, tokens, &a->o, res, &sum, err)) == FR_OK &&
            (st = describe(a, m, len, check_kl, t, err)) == FR_OK) {
            fr_sens_meta meta = {.model = t->model, .text = t->text, .engine = t->engine,
                                 .noise = t->noise, .fidelity = t->fidelity, .tool = t->tool,
                                 .n_sequences = a->o.n_sequences, .seq_len = a->o.seq_len,
                                 .seed = (unsigned long long)a->o.seed};
            if ((st = fr_sens_write(a->output, lm, res, &a->o, &sum, &meta, err)) == FR_OK &&
                (!a->dataset || (st = store_in_dataset(a, lm, res, t, err)) == FR_OK))
                print_summary(a, lm, res, &sum);
        }
    }
    free(tokens);
    free(sel);
    free(res);
    free(t);
    return st;
}

static int run(args *a, const char *cmd)
{
    fr_registry reg;
    fr_error err = {0};
    char *text = NULL;
    size_t len = 0;
    fr_llama *m = NULL;
    fr_status st = fr_registry_init(&reg, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        return st;
    }
    if (a->o.noise == FR_SENS_QUANT && (st = pick_config(a, &reg, cmd, &a->o.config)) != FR_OK)
        goto done;
    a->o.reg = &reg;
    if (!a->force && access(a->output, F_OK) == 0) {
        st = fr_fail(&err, FR_E_OUTPUT, "'%s' already exists (--force replaces it)", a->output);
    } else if (a->dataset && access(a->dataset, R_OK | W_OK) != 0) {
        /* before the measurement, not after it */
        st = fr_fail(&err, FR_E_IO, "--dataset '%s' cannot be read and written: %s", a->dataset,
                     strerror(errno));
    } else if ((st = read_text(a->text, &text, &len, &err)) == FR_OK) {
        fr_llama_options lo = {.threads = a->threads, .n_ctx = a->o.seq_len, .verbose = a->verbose};
        if ((st = fr_llama_open(a->model, &lo, &m, &err)) == FR_OK)
            st = measure(a, m, text, len, &err);
    }
    if (st == FR_E_USAGE)
        cli_usage_error(cmd, "%s", err.msg);
    else if (st != FR_OK)
        fr_error_log("%s", err.msg);
done:
    fr_llama_close(m);
    free(text);
    fr_registry_free(&reg);
    return st;
}

#endif

int cmd_sensitivity(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != FR_OK)
        return rc < 0 ? FR_OK : rc;
    a.argc = argc;
    a.argv = argv;
#ifdef FRONTIER_HAVE_LLAMA
    return run(&a, argv[0]);
#else
    fr_error_log("'frontier sensitivity' needs libllama (llama.cpp's library), and this frontier "
                 "was built without it: run scripts/llama-cpp.sh (it builds the pinned llama.cpp "
                 "into ~/.cache/frontier), or install llama.cpp where pkg-config finds llama.pc, "
                 "or pass -DFRONTIER_LLAMA_CPP_DIR=DIR to cmake; then configure and build again "
                 "(docs/calibration.md, \"Sensitivity through llama.cpp\")");
    return FR_E_UNSUPPORTED;
#endif
}
