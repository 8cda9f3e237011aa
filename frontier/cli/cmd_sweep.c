/* frontier sweep: every tensor x every selected configuration -> one row. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/model/block_source.h"
#include "core/synthetic.h"
#include "frontier/exec/shard.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_mpi.h"
#include "frontier/cli/sweep_summary.h"
#include "frontier/exec/builtins.h"

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: frontier sweep MODEL... -o OUT.h5 [options]\n"
            "       frontier sweep --synthetic DIST:ROWSxCOLS[,...] -o OUT.h5 [options]\n"
            "\n"
            "Quantizes every selected tensor with every selected configuration and\n"
            "records bits and error per (tensor, configuration) in an HDF5 dataset\n"
            "(schema: docs/dataset.md). Prints a summary at the end: the configuration\n"
            "with the least error in each band of bits per weight (every configuration\n"
            "with --verbose or --json).\n"
            "\n"
            "  -o, --output FILE       the dataset to write (refused if it exists, unless --resume)\n"
            "      --resume            continue OUT.h5: measure only the missing rows\n"
            "      --bits SPEC         nominal bit widths: 2..8, 4, or a list 2,3,4,8 (default: all)\n"
            "      --quantizers LIST   comma-separated configuration or quantizer names and\n"
            "                          globs: int*,nvfp4,mx*,gptq-int4* (default: every\n"
            "                          data-free one, and with --calib also those that need\n"
            "                          statistics: gptq-, awq-, imat-; docs/calibrated.md)\n"
            "      --include REGEX     only tensors whose name matches (POSIX extended regex)\n"
            "      --exclude REGEX     no tensor whose name matches\n"
            "      --min-numel N       skip tensors with fewer than N elements\n"
            "      --device DEV        auto (default), cpu, cuda, cuda:N, or several GPUs:\n"
            "                          cuda:all, cuda:0,2 (tensors spread over them)\n"
            "      --threads N         CPU threads (default: all cores; under mpirun, the\n"
            "                          cores of the node divided among its ranks)\n"
            "      --seed N            seed of synthetic tensors and plugin random streams (0)\n"
            "      --synthetic SPEC    generated tensors: gaussian, laplace, student-t3 or\n"
            "                          outliers, e.g. gaussian:4096x4096,student-t3:4096x14336:bf16*4\n"
            "                          (docs/synthetic.md)\n"
            "      --plugin FILE.so    load a quantizer plugin (repeatable)\n"
            "      --isolate-plugins   run plugins' size_bits/quantize_cpu in a child process:\n"
            "                          a crash or hang fails that tensor x configuration only\n"
            "                          (its rows go to /skipped) and the sweep goes on;\n"
            "                          plugins then run on the CPU (docs/plugins.md, \"Isolation\")\n"
            "      --plugin-timeout S  seconds an isolated call may take (60; implies\n"
            "                          --isolate-plugins)\n"
            "      --calib FILE        calibration statistics (docs/calibration.md): every row\n"
            "                          of a tensor with a Hessian there gets out_rel_err, the\n"
            "                          relative error of the layer's output on those inputs;\n"
            "                          enables gptq-, awq-, imat- (a tensor lacking what one\n"
            "                          needs is listed in /skipped for it, not failed); each\n"
            "                          expert of a stack takes its slice of the stack's\n"
            "                          per-expert statistics ([E, in, in], [E, in]);\n"
            "                          'synthetic[:SEED]' generates them instead (AR(1)\n"
            "                          features with outlier channels, for --synthetic models\n"
            "                          and benchmarks; docs/calibration.md)\n"
            "      --diagonal-output-error  with --calib: a tensor whose statistics have\n"
            "                          act_sq_mean d but no Hessian (a llama.cpp importance\n"
            "                          matrix, capture.py --diag-only) gets the out_rel_err\n"
            "                          of that diagonal, sqrt(sum_ij d_j dW_ij^2 / sum_ij\n"
            "                          d_j W_ij^2): the inputs' correlations left out, for\n"
            "                          ranking imat- against data-free configurations\n"
            "                          (marked 'diagonal' in /tensors out_error)\n"
            "      --tf32              GPU: TF32 tensor cores for out_rel_err (faster, about\n"
            "                          1e-3 relative; default FP32, recorded in `devices`)\n"
            "      --split-experts     also one row per expert of each expert stack ([E, out,\n"
            "                          in] tensors of class expert) in /expert_results; the\n"
            "                          stack's own row in /results is their sum\n"
            "      --fused-global-scale  also nvfp4-fused (next to nvfp4; in general each\n"
            "                          configuration whose traits need a fused group's\n"
            "                          joint amax, next to its companion): each member of\n"
            "                          a fused group (q/k/v, gate/up, w1/w3, q_a/kv_a of\n"
            "                          one block) quantized with the global scale of the\n"
            "                          group's joint amax, as 'frontier quantize' writes\n"
            "                          NVFP4 for vLLM; other tensors get no row for it. CPU\n"
            "                          (a CUDA sweep hands these to the CPU); not under\n"
            "                          mpirun\n"
            "  -q, --quiet             no progress or informational messages\n"
            "      --verbose           the summary lists every configuration, with its best\n"
            "                          and worst tensor class\n"
            "      --json              print the summary as JSON (every configuration)\n"
            "  -h, --help              this help\n"
            "\n"
            "Tuning (speed, memory, commit frequency; SIZE takes a k, M or G suffix):\n"
            "      --commit-interval S     seconds between commits of the dataset (default:\n"
            "                              2, stretched to 10x what a commit costs)\n"
            "      --cpu-batch-bytes SIZE  CPU: small tensors are loaded together up to\n"
            "                              SIZE of float32 weights (default 64M)\n"
            "      --cpu-parallel-bytes SIZE  CPU: past SIZE per thread, a tensor's\n"
            "                              configurations run one at a time on every thread\n"
            "                              (default 1G)\n"
            "      --max-memory SIZE       CPU: bound a tensor's working set (float32 copy\n"
            "                              and one output, 8 bytes per element): a larger\n"
            "                              tensor is evaluated in blocks of whole rows, read\n"
            "                              from the file block by block, with the same rows\n"
            "                              bit for bit; configurations whose traits do not\n"
            "                              say they are row-local (plugins that do not,\n"
            "                              host families, nf4-g64-dq, gptq-/awq-/imat-) go\n"
            "                              to /skipped (docs/sweep.md, \"Bounded memory\");\n"
            "                              the CPU only (--device auto means cpu with it)\n"
            "      --cuda-buffer SIZE      GPU: each of the two staging buffers; larger\n"
            "                              tensors stream in row chunks (default 1G)\n"
            "      --device-stats FILE     GPU: write the run's totals as JSON to FILE (GPU\n"
            "                              time, transfers, output-error and calibrated\n"
            "                              seconds; docs/gpu.md)\n"
            "\n"
            "Environment: FRONTIER_COMMIT_INTERVAL, FRONTIER_CPU_BATCH_BYTES,\n"
            "FRONTIER_CPU_PARALLEL_BYTES, FRONTIER_CUDA_BUFFER and FRONTIER_CUDA_STATS give\n"
            "the defaults of five of the options above (an option wins; --max-memory has\n"
            "no variable); FRONTIER_PLUGIN_PATH lists plugin folders or files (\"none\"\n"
            "disables discovery; docs/plugins.md).\n"
            "\n"
            "Under mpirun (or srun) the ranks share the work and rank 0 writes OUT.h5; each\n"
            "rank takes its node-local GPU (docs/scale-out.md).\n"
            "\n"
            "MODEL is a .safetensors file, a Hugging Face folder, a .gguf or an .onnx file.\n"
            "Tensors with fewer than 2 dimensions, non-float tensors and tensors with\n"
            "NaN/Inf weights are skipped and listed in /skipped.\n"
            "\n"
            "exit codes: 0 every configuration succeeded (skipped tensors included);\n"
            "1 some configuration failed on some tensor (recorded in /skipped);\n"
            "2 usage; 3 cannot read a model or calibration file; 4 malformed model or\n"
            "calibration file; 5 output exists or cannot be written; 6 plugin; 7 device;\n"
            "9 --resume on another model or schema;\n"
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

/* A byte count: a non-negative integer with an optional k, M or G (x1024)
 * suffix. 0 is the smallest limit there is (the executors read 0 as "the
 * default", so it becomes 1 byte: every tensor exceeds it). */
static int parse_size(const char *text, size_t *out)
{
    char *end = NULL;
    if (!text || text[0] == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || v > (SIZE_MAX >> shift))
        return -1;
    *out = v ? (size_t)v << shift : 1;
    return 0;
}

static int parse_seconds(const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v > 0.0 && v < 1e9))
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
    OPT_COMMIT_INTERVAL,
    OPT_CPU_BATCH,
    OPT_CPU_PARALLEL,
    OPT_MAX_MEMORY,
    OPT_CUDA_BUFFER,
    OPT_DEVICE_STATS,
    OPT_CALIB,
    OPT_TF32,
    OPT_DIAG_OUT,
    OPT_SPLIT_EXPERTS,
    OPT_FUSED_GS,
    OPT_ISOLATE,
    OPT_PLUGIN_TIMEOUT,
    OPT_VERBOSE,
};

/* What the command line asks for, beyond the sweep's own options. */
typedef struct sweep_args {
    fr_sweep_options opt;
    const char **plugins;
    size_t n_plugins;
    const char *synthetic;
    const char *device_stats; /* --device-stats FILE, or NULL */
    double isolate_s;         /* --isolate-plugins: the timeout, 0 when off */
    int json;
    int verbose; /* the summary lists every configuration */
    int help;
} sweep_args;

/* One tuning setting: the option's value, else the environment's (a bad
 * value in the environment is as much a usage error as on the line). */
enum { TUNE_COMMIT, TUNE_CPU_BATCH, TUNE_CPU_PARALLEL, TUNE_CUDA_BUFFER, TUNE_DEVICE_STATS,
       N_TUNE };
typedef struct tuning {
    const char *option, *env;
    const char *text;
} tuning;

static int apply_tuning(const char *cmd, sweep_args *a, const tuning t[N_TUNE])
{
    for (int i = 0; i < N_TUNE; i++) {
        const char *v = t[i].text ? t[i].text : getenv(t[i].env);
        const char *from = t[i].text ? t[i].option : t[i].env;
        int bad = 0;
        if (!v || !*v)
            continue;
        switch (i) {
        case TUNE_COMMIT: bad = parse_seconds(v, &a->opt.commit_interval); break;
        case TUNE_CPU_BATCH: bad = parse_size(v, &a->opt.cpu_batch_bytes); break;
        case TUNE_CPU_PARALLEL: bad = parse_size(v, &a->opt.cpu_parallel_bytes); break;
        case TUNE_CUDA_BUFFER:
            bad = parse_size(v, &a->opt.cuda_buffer_bytes);
            /* a staging buffer smaller than a page only costs copies */
            if (!bad && a->opt.cuda_buffer_bytes < 4096)
                a->opt.cuda_buffer_bytes = 4096;
            break;
        case TUNE_DEVICE_STATS: a->device_stats = v; break;
        }
        if (bad)
            return cli_usage_error(cmd, "invalid %s '%s' (%s)", from, v,
                                   i == TUNE_COMMIT ? "seconds, more than 0"
                                                    : "bytes, with k, M or G");
    }
    return FR_OK;
}

/* Fills *a from the command line; FR_OK, or the exit code of a usage error
 * (already reported). */
static int parse_args(int argc, char **argv, sweep_args *a)
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
        {"isolate-plugins", no_argument, NULL, OPT_ISOLATE},
        {"plugin-timeout", required_argument, NULL, OPT_PLUGIN_TIMEOUT},
        {"synthetic", required_argument, NULL, OPT_SYNTHETIC},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, OPT_JSON},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"commit-interval", required_argument, NULL, OPT_COMMIT_INTERVAL},
        {"cpu-batch-bytes", required_argument, NULL, OPT_CPU_BATCH},
        {"cpu-parallel-bytes", required_argument, NULL, OPT_CPU_PARALLEL},
        {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
        {"cuda-buffer", required_argument, NULL, OPT_CUDA_BUFFER},
        {"device-stats", required_argument, NULL, OPT_DEVICE_STATS},
        {"calib", required_argument, NULL, OPT_CALIB},
        {"tf32", no_argument, NULL, OPT_TF32},
        {"diagonal-output-error", no_argument, NULL, OPT_DIAG_OUT},
        {"split-experts", no_argument, NULL, OPT_SPLIT_EXPERTS},
        {"fused-global-scale", no_argument, NULL, OPT_FUSED_GS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tuning tune[N_TUNE] = {
        [TUNE_COMMIT] = {"--commit-interval", "FRONTIER_COMMIT_INTERVAL", NULL},
        [TUNE_CPU_BATCH] = {"--cpu-batch-bytes", "FRONTIER_CPU_BATCH_BYTES", NULL},
        [TUNE_CPU_PARALLEL] = {"--cpu-parallel-bytes", "FRONTIER_CPU_PARALLEL_BYTES", NULL},
        [TUNE_CUDA_BUFFER] = {"--cuda-buffer", "FRONTIER_CUDA_BUFFER", NULL},
        [TUNE_DEVICE_STATS] = {"--device-stats", "FRONTIER_CUDA_STATS", NULL},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        int64_t v;
        switch (c) {
        case 'o': a->opt.output = optarg; break;
        case OPT_BITS: a->opt.bits = optarg; break;
        case OPT_QUANTIZERS: a->opt.quantizers = optarg; break;
        case OPT_INCLUDE: a->opt.include = optarg; break;
        case OPT_EXCLUDE: a->opt.exclude = optarg; break;
        case OPT_MIN_NUMEL:
            if (parse_int64(optarg, &v) != 0 || v < 0)
                return cli_usage_error(argv[0], "invalid --min-numel '%s'", optarg);
            a->opt.min_numel = v;
            break;
        case OPT_DEVICE: a->opt.device = optarg; break;
        case OPT_THREADS:
            if (parse_int64(optarg, &v) != 0 || v < 1 || v > 4096)
                return cli_usage_error(argv[0], "invalid --threads '%s' (1 to 4096)", optarg);
            a->opt.threads = (int)v;
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &a->opt.seed) != 0)
                return cli_usage_error(argv[0], "invalid --seed '%s' (a non-negative integer)",
                                       optarg);
            break;
        case OPT_RESUME: a->opt.resume = 1; break;
        case OPT_PLUGIN: a->plugins[a->n_plugins++] = optarg; break;
        case OPT_ISOLATE:
            if (a->isolate_s <= 0)
                a->isolate_s = 60.0;
            break;
        case OPT_PLUGIN_TIMEOUT:
            if (parse_seconds(optarg, &a->isolate_s) != 0)
                return cli_usage_error(argv[0], "invalid --plugin-timeout '%s' (seconds > 0)",
                                       optarg);
            break;
        case OPT_SYNTHETIC: a->synthetic = optarg; break;
        case OPT_CALIB: a->opt.calib = optarg; break;
        case OPT_TF32: a->opt.cuda_tf32 = 1; break;
        case OPT_DIAG_OUT: a->opt.diagonal_output_error = 1; break;
        case OPT_SPLIT_EXPERTS: a->opt.split_experts = 1; break;
        case OPT_FUSED_GS: a->opt.fused_global_scale = 1; break;
        case 'q': a->opt.quiet = 1; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_VERBOSE: a->verbose = 1; break;
        case OPT_COMMIT_INTERVAL: tune[TUNE_COMMIT].text = optarg; break;
        case OPT_CPU_BATCH: tune[TUNE_CPU_BATCH].text = optarg; break;
        case OPT_CPU_PARALLEL: tune[TUNE_CPU_PARALLEL].text = optarg; break;
        case OPT_MAX_MEMORY:
            if (parse_size(optarg, &a->opt.max_memory) != 0)
                return cli_usage_error(argv[0], "invalid --max-memory '%s' (bytes, with k, M or G)",
                                       optarg);
            break;
        case OPT_CUDA_BUFFER: tune[TUNE_CUDA_BUFFER].text = optarg; break;
        case OPT_DEVICE_STATS: tune[TUNE_DEVICE_STATS].text = optarg; break;
        case 'h': a->help = 1; return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc && !a->synthetic)
        return cli_usage_error(argv[0], "no model given (MODEL... or --synthetic SPEC)");
    if (!a->opt.output)
        return cli_usage_error(argv[0], "no output given (-o OUT.h5)");
    if (a->opt.diagonal_output_error && !a->opt.calib)
        return cli_usage_error(argv[0], "--diagonal-output-error weights the error by the "
                                        "statistics of --calib FILE: give one");
    if (a->opt.max_memory) {
        /* row blocks are the CPU executor's: auto means the CPU then */
        if (!a->opt.device || !strcmp(a->opt.device, "auto"))
            a->opt.device = "cpu";
        else if (strcmp(a->opt.device, "cpu") != 0)
            return cli_usage_error(argv[0],
                                   "--max-memory applies to the CPU executor only (--device cpu); "
                                   "the GPU streams large tensors itself (--cuda-buffer)");
    }
    return apply_tuning(argv[0], a, tune);
}

/* Opens the models named on the line (argv[first..]) and the synthetic
 * source, and hands them to the sweep. */
static int open_sources(int argc, char **argv, int first, const sweep_args *a, fr_sweep *sw,
                        fr_source **sources, size_t *n_sources, fr_error *err)
{
    int rc;
    for (int i = first; i < argc; i++) {
        if ((rc = fr_block_source_open(argv[i], &sources[*n_sources], err)) != FR_OK)
            return rc;
        (*n_sources)++;
    }
    if (a->synthetic) {
        /* a bad SPEC is FR_E_USAGE, reported as a usage error */
        if ((rc = fr_synthetic_open(a->synthetic, a->opt.seed, &sources[*n_sources], err)) !=
            FR_OK)
            return rc;
        (*n_sources)++;
    }
    for (size_t i = 0; i < *n_sources; i++)
        if ((rc = fr_sweep_add_source(sw, sources[i], err)) != FR_OK)
            return rc;
    return FR_OK;
}

/* The GPU run's totals as JSON (--device-stats); a failure to write them
 * is a warning, the dataset being what matters. */
static void write_device_stats(const char *path, const fr_cuda_run_stats *s, const char *device)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "device", device);
    const struct {
        const char *name;
        double value;
    } fields[] = {
        {"wall_s", s->wall_s},
        {"gpu_s", s->gpu_s},
        {"generate_s", s->generate_s},
        {"h2d_s", s->h2d_s},
        {"stage_s", s->stage_s},
        {"numeric_s", s->numeric_s},
        {"output_s", s->output_s},
        {"plugin_s", s->plugin_s},
        {"plugin_out_s", s->plugin_out_s},
        {"h2d_bytes", (double)s->h2d_bytes},
        {"tensor_bytes", (double)s->tensor_bytes},
        {"elements", (double)s->elements},
        {"fused_configs", (double)s->fused_configs},
        {"plugin_configs", (double)s->plugin_configs},
        {"cpu_configs", (double)s->cpu_configs},
        {"chunked_tensors", (double)s->chunked_tensors},
        {"nf4_mean_fallbacks", (double)s->nf4_mean_fallbacks},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        cJSON_AddNumberToObject(o, fields[i].name, fields[i].value);
    char *text = cJSON_Print(o);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fr_warn("cannot write the device statistics to '%s'", path);
    free(text);
    cJSON_Delete(o);
}

/* Ctrl-C or SIGTERM stops after the tensors in flight and commits what was
 * measured. A second Ctrl-C kills as usual (the file stays valid as of the
 * last commit); a second SIGTERM is taken like the first, because senders
 * repeat it: coreutils' `timeout` signals the command and then its whole
 * process group, so the command gets SIGTERM twice at once, and a reset
 * handler would let the second one kill the sweep before its final commit
 * (seen on the GPU machine: a tensor's rows lost). */
static void catch_signals(struct sigaction *old_int, struct sigaction *old_term)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    sigaction(SIGINT, &sa, old_int);
    sa.sa_flags = 0;
    sigaction(SIGTERM, &sa, old_term);
}

/* ---- devices and MPI ---- */

/* How many processes an MPI launcher started together with this one, from
 * the variables it sets (Open MPI's mpirun, MPICH's hydra, srun with PMIx);
 * 1 when none did. *rank: this process's rank. */
static int launcher_size(int *rank)
{
    static const char *const vars[][2] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
        {"PMI_SIZE", "PMI_RANK"},
        {"SLURM_STEP_NUM_TASKS", "PMIX_RANK"},
    };
    *rank = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *size = getenv(vars[i][0]), *r = getenv(vars[i][1]);
        int64_t n = 0, k = 0;
        if (!size || !r || parse_int64(size, &n) != 0 || parse_int64(r, &k) != 0 || n < 1)
            continue;
        *rank = (int)k;
        return n > 1 << 30 ? 1 << 30 : (int)n;
    }
    return 1;
}

/* --device cuda:all and cuda:N,M in one process: the sweep's executor. */
static fr_status run_on_devices(void *ctx, const fr_registry *reg, const fr_sweep_item *items,
                                size_t n_items, const fr_executor_options *opt,
                                const fr_sweep_sink *sink, fr_error *err)
{
    return fr_exec_devices(ctx, reg, items, n_items, opt, sink, err);
}

/* What one process runs a sweep with, beyond its options. */
typedef struct sweep_setup {
    fr_registry reg;
    int have_reg;
    fr_sweep *sw;
    fr_source **sources;
    size_t n_sources;
    fr_devices devices;
    char device[32];         /* the canonical --device handed to the sweep */
    char devices_name[160];
    fr_sweep_executor devices_exec;
} sweep_setup;

/*
 * The devices of this process: without MPI, --device as it is unless it
 * names several GPUs (then an executor spreading tensors over them); under
 * MPI, this rank's share of its node's devices and CPU cores.
 */
static fr_status resolve_devices(sweep_args *a, sweep_setup *S, int local_rank, int local_size,
                                 int mpi, fr_error *err)
{
    const char *d = a->opt.device;
    int several = d && (strchr(d, ',') || !strcmp(d, "cuda:all"));
    memset(&S->devices, 0, sizeof S->devices);
    if (!mpi && !several)
        return FR_OK; /* the sweep's own --device handling, as always */
    fr_status st = fr_devices_parse(d, local_rank, local_size, &S->devices, err);
    if (st != FR_OK)
        return st;
    /* the sweep checks and records the first device as if it were alone */
    if (S->devices.n == 0)
        snprintf(S->device, sizeof S->device, "cpu");
    else
        snprintf(S->device, sizeof S->device, "cuda:%d", S->devices.id[0]);
    a->opt.device = S->device;
    if (mpi && a->opt.threads <= 0) {
        int n = fr_cpu_count() / (local_size > 0 ? local_size : 1);
        a->opt.threads = n > 0 ? n : 1;
    }
    if (!mpi) {
        fr_devices_name(&S->devices, S->devices_name, sizeof S->devices_name);
        S->devices_exec = (fr_sweep_executor){.device = S->devices_name, .ctx = &S->devices,
                                               .run = run_on_devices};
        a->opt.executor = &S->devices_exec;
    }
    return FR_OK;
}

/* Everything that can be checked before touching the output: the registry,
 * the devices, the sweep's options, the models. */
static int setup_sweep(int argc, char **argv, sweep_args *a, sweep_setup *S, int local_rank,
                       int local_size, int mpi, fr_error *err)
{
    int rc;
    if ((rc = fr_registry_init(&S->reg, err)) != FR_OK)
        return rc;
    S->have_reg = 1;
    if ((rc = fr_registry_discover(&S->reg, a->plugins, a->n_plugins, err)) != FR_OK)
        return rc;
    fr_registry_set_isolation(&S->reg, a->isolate_s);
    if ((rc = resolve_devices(a, S, local_rank, local_size, mpi, err)) != FR_OK)
        return rc;
    if ((rc = fr_sweep_create(&S->reg, &a->opt, &S->sw, err)) != FR_OK)
        return rc;
    return open_sources(argc, argv, optind, a, S->sw, S->sources, &S->n_sources, err);
}

/* parse_args without its messages: the other ranks of an MPI job parse the
 * same line as rank 0, which reports what is wrong with it once. */
static int parse_args_silently(int argc, char **argv, sweep_args *a)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0)
        dup2(null, STDERR_FILENO);
    int rc = parse_args(argc, argv, a);
    fflush(stderr);
    if (saved >= 0 && null >= 0)
        dup2(saved, STDERR_FILENO);
    if (saved >= 0)
        close(saved);
    if (null >= 0)
        close(null);
    return rc;
}

/* The options the line does not set, and the log level; returns the level before ranks muted it. */
static int set_run_options(sweep_args *a, int rank, char *command_line,
                           fr_cuda_run_stats *cuda_stats)
{
    a->opt.command_line = command_line;
    a->opt.stop = &stop_requested;
    a->opt.cuda_stats = cuda_stats;
    if (a->opt.quiet)
        fr_log_set_level(FRONTIER_LOG_WARN);
    /* `frontier -q sweep` silences the progress bar too */
    if (fr_log_level() < FRONTIER_LOG_INFO)
        a->opt.quiet = 1;
    int log_level = fr_log_level();
    if (rank > 0) {
        /* rank 0 tells the job's story; the others only their own errors */
        a->opt.quiet = 1;
        fr_log_set_level(FRONTIER_LOG_ERROR);
    }
    return log_level;
}

#ifdef FRONTIER_HAVE_MPI
/* The ranks' setups (rc: this one's) checked against each other: a failure is reported once. */
static fr_status agree_ranks(fr_mpi *mpi, fr_status rc, const sweep_args *a, sweep_setup *S,
                             int rank, int log_level, int *quiet_errors, fr_error *err)
{
    int failed = -1;
    fr_error aerr = {0};
    fr_status ast = fr_mpi_agree(mpi, rc, &S->reg, S->sources, S->n_sources, &S->devices,
                                 a->opt.threads, &failed, &aerr);
    if (ast != FR_OK) {
        if (rc == FR_OK || failed != rank) {
            /* another rank failed, or the ranks disagree: rank 0 says so */
            *err = aerr;
            *quiet_errors = rank != 0;
        } else if (rank > 0) {
            fr_error_prefix(err, "rank %d: ", rank);
            *quiet_errors = failed != rank;
        }
        return ast;
    }
    if (rank > 0)
        fr_log_set_level(log_level < FRONTIER_LOG_DEBUG ? FRONTIER_LOG_WARN : log_level);
    return rc;
}
#endif

int cmd_sweep(int argc, char **argv)
{
    int rc = FR_OK;
    fr_error err = {0};
    sweep_args a;
    fr_cuda_run_stats cuda_stats;
    sweep_setup S;
    char *command_line = NULL;
    struct sigaction old_int, old_term;
    int signals_set = 0;
    int rank = 0, local_rank = 0, local_size = 1;
    int quiet_errors = 0; /* another rank reports this failure */
#ifdef FRONTIER_HAVE_MPI
    fr_mpi *mpi = NULL;
#endif

    memset(&a, 0, sizeof a);
    memset(&S, 0, sizeof S);
    memset(&cuda_stats, 0, sizeof cuda_stats);
    a.opt.device = "auto";
    a.plugins = calloc((size_t)argc + 1, sizeof *a.plugins);
    S.sources = calloc((size_t)argc + 2, sizeof *S.sources);
    command_line = cli_command_line(argc, argv);
    if (!a.plugins || !S.sources || !command_line) {
        rc = fr_fail(&err, FR_E_NOMEM, "out of memory");
        goto report;
    }
    int launched = launcher_size(&rank);
    if (launched > 1) {
#ifdef FRONTIER_HAVE_MPI
        if ((rc = fr_mpi_start(&mpi, &err)) != FR_OK)
            goto report;
        rank = fr_mpi_rank(mpi);
        local_rank = fr_mpi_local_rank(mpi);
        local_size = fr_mpi_local_size(mpi);
#else
        quiet_errors = rank != 0;
        rc = fr_fail(&err, FR_E_DEVICE,
                     "started as one of %d processes by an MPI launcher, but this frontier was "
                     "built without MPI: each process would sweep everything into the same "
                     "output (docs/scale-out.md)",
                     launched);
        goto report;
#endif
    }
    if ((rc = rank ? parse_args_silently(argc, argv, &a) : parse_args(argc, argv, &a)) != FR_OK)
        goto done;
    if (a.help) {
        if (rank == 0)
            print_usage(stdout);
        goto done;
    }
    int log_level = set_run_options(&a, rank, command_line, &cuda_stats);
    (void)log_level; /* (not without MPI) */
#ifdef FRONTIER_HAVE_MPI
    if (mpi && rank == 0)
        a.opt.executor = fr_mpi_executor(mpi);
#endif

    if (a.opt.fused_global_scale && launched > 1) {
        /* the ranks rebuild their items from messages that carry no joint amax */
        rc = fr_fail(&err, FR_E_USAGE, "--fused-global-scale is not supported under mpirun yet: "
                                       "run it in one process (docs/quantize.md)");
        quiet_errors = rank != 0;
        goto report;
    }
    rc = setup_sweep(argc, argv, &a, &S, local_rank, local_size, launched > 1, &err);
#ifdef FRONTIER_HAVE_MPI
    if (mpi)
        rc = agree_ranks(mpi, rc, &a, &S, rank, log_level, &quiet_errors, &err);
#endif
    if (rc != FR_OK)
        goto report;

    catch_signals(&old_int, &old_term);
    signals_set = 1;
#ifdef FRONTIER_HAVE_MPI
    if (mpi && rank > 0) {
        rc = fr_mpi_serve(mpi, &S.reg, &a.opt, &err);
        goto report;
    }
#endif
    rc = fr_sweep_execute(S.sw, &err);
#ifdef FRONTIER_HAVE_MPI
    fr_mpi_release(mpi);
#endif
    if (a.device_stats && cuda_stats.wall_s > 0)
        write_device_stats(a.device_stats, &cuda_stats, fr_sweep_get_stats(S.sw)->device);
    if (rc == FR_OK || rc == FR_E_FAIL) {
        fr_error perr = {0};
        fr_status pst = fr_sweep_summary_print(stdout, fr_sweep_dataset(S.sw), a.opt.output,
                                               fr_sweep_get_stats(S.sw), a.json, a.verbose, &perr);
        if (pst != FR_OK) {
            fr_error_log("%s", perr.msg);
            if (rc == FR_OK)
                rc = pst;
        }
    }
report:
    if (!quiet_errors && rc == FR_E_USAGE)
        rc = cli_usage_error(argv[0], "%s", err.msg);
    else if (!quiet_errors && rc != FR_OK)
        fr_error_log("%s", err.msg);
done:
    if (signals_set) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    fr_sweep_destroy(S.sw);
    for (size_t i = 0; i < S.n_sources; i++)
        fr_source_close(S.sources[i]);
    if (S.have_reg)
        fr_registry_free(&S.reg);
#ifdef FRONTIER_HAVE_MPI
    fr_mpi_finish(mpi);
#endif
    free(S.sources);
    free(a.plugins);
    free(command_line);
    return rc;
}
