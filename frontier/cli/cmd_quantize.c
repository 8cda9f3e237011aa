/*
 * frontier quantize MODEL (--recipe RECIPE.json | --config CONFIG) -o OUT
 * [--format compressed-tensors|dequantized]: writes the chosen
 * configurations as a checkpoint a runtime loads (docs/quantize.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/exec/builtins.h"

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: frontier quantize MODEL --recipe RECIPE.json -o OUT [--format FORMAT]\n"
            "       frontier quantize MODEL --config CONFIG [--include REGEX] [--exclude REGEX]\n"
            "         -o OUT [--format FORMAT] [--force] [--max-shard-size BYTES]\n"
            "         [--calib FILE]\n"
            "         [--fused-global-scale | --no-fused-global-scale] [--summary]\n"
            "         [--plugin FILE.so]...\n"
            "\n"
            "Writes MODEL (a .safetensors file, a Hugging Face folder or a .gguf) with its weights\n"
            "quantized as a recipe says ('frontier allocate --budget BITS -o RECIPE.json'\n"
            "chooses one configuration per tensor) or with one configuration for every\n"
            "selected tensor. Each tensor is quantized by the same code the sweep measured,\n"
            "and what is written is decoded again and checked against it bit for bit, so\n"
            "the rel_err in the dataset is the rel_err of the file. An expert stack\n"
            "[E, out, in] is quantized as E matrices with their own scales, as the\n"
            "sweep measures it (compressed-tensors parts get a leading E dimension;\n"
            "docs/quantize.md, \"Expert stacks\").\n"
            "\n"
            "MODEL may itself be released quantized (a GGUF in ggml block types, a\n"
            "compressed-tensors folder): its weights are read as their dequantized\n"
            "values, and a weight the recipe keeps ('keep') or that is not selected is\n"
            "copied as released (GGUF blocks; compressed-tensors members byte for byte,\n"
            "with the release's config group) (docs/quantized-sources.md).\n"
            "\n"
            "formats:\n"
            "  compressed-tensors  (default for a folder) what vLLM and transformers load:\n"
            "                      nvfp4 -> nvfp4-pack-quantized; int<b>-g<g>-sym|asym and\n"
            "                      int<b>-gC-sym|asym -> pack-quantized; fp8-e4m3-tensor|\n"
            "                      channel|block128 -> float-quantized; mxfp4 ->\n"
            "                      mxfp4-pack-quantized (uint8 E8M0 scales, groups of 32);\n"
            "                      a recipe mixing them -> mixed-precision. config.json\n"
            "                      gets quantization_config, the folder's other files\n"
            "                      (tokenizer, ...) are copied. A plugin's configuration\n"
            "                      is written as the storage its traits declare.\n"
            "  dequantized         (default for a file) same names, shapes and dtypes as\n"
            "                      MODEL holding Q(W): any framework evaluates the model as\n"
            "                      quantized; every configuration can be written this way\n"
            "                      (the calibrated gptq-, awq-, imat-, rht+gptq- ones with\n"
            "                      --calib), and only this way for those.\n"
            "  gguf                (default for a .gguf MODEL) a GGUF v3 file as llama-quantize\n"
            "                      writes it: ggml-q8_0|q4_0|q4_1|q5_0|q5_1|mxfp4|iq4_nl ->\n"
            "                      Q8_0, ..., IQ4_NL blocks (rows of 32n); ggml-q2_k|q3_k|\n"
            "                      q4_k|q5_k|q6_k|iq4_xs -> Q2_K, ..., IQ4_XS (rows of 256n);\n"
            "                      imat-ggml-<type> with --calib (an imatrix): llama-quantize\n"
            "                      --imatrix's blocks; metadata and other tensors copied (a\n"
            "                      plugin's: the GGUF type its traits declare).\n"
            "\n"
            "  --recipe FILE         tensor -> configuration, as 'frontier allocate -o' writes\n"
            "  --config CONFIG       one configuration ('frontier quantizers' lists them)\n"
            "  --include/--exclude REGEX  with --config: the tensors it applies to (POSIX\n"
            "                        extended regexes on tensor names); without --include\n"
            "                        every quantizable tensor but embeddings, lm_head, norms\n"
            "  --calib FILE          calibration statistics ('frontier sweep --calib'): the\n"
            "                        configurations that need them are computed with each\n"
            "                        tensor's statistics, looked up as the sweep does, so the\n"
            "                        file holds the Q(W) the sweep measured (also\n"
            "                        'synthetic[:SEED]', as for the sweep)\n"
            "  -o, --output OUT      the folder (or .safetensors file) to write\n"
            "  --force               replace an existing OUT (a folder only if it holds just files)\n"
            "  --max-shard-size N    split the weights into model-0000K-of-0000N.safetensors\n"
            "                        with model.safetensors.index.json past N bytes (suffixes\n"
            "                        K, M, G: powers of 1000; default 5G)\n"
            "  --fused-global-scale  NVFP4 q/k/v and gate/up share one global scale from their\n"
            "                        joint amax, as vLLM loads them (default for\n"
            "                        compressed-tensors); --no-fused-global-scale keeps each\n"
            "                        tensor's own (default for dequantized). A shared scale\n"
            "                        changes the result: the table and the report show it.\n"
            "                        nvfp4-fused (measured by 'frontier sweep\n"
            "                        --fused-global-scale') always takes its group's scale.\n"
            "  --summary             totals only, no per-tensor table\n"
            "  --plugin FILE.so      load a quantizer plugin (repeatable); plugins are also\n"
            "                        found on FRONTIER_PLUGIN_PATH, as for the sweep\n"
            "                        (\"none\" disables discovery; docs/plugins.md)\n"
            "\n"
            "Nothing is written when a tensor of the recipe is missing from MODEL, a\n"
            "configuration is unknown or has no layout in FORMAT, a calibrated one has no\n"
            "--calib or no statistics for its tensor, or OUT exists without --force. OUT is\n"
            "built as OUT.tmp-PID and renamed when complete, so a failure half-way leaves\n"
            "no OUT. A report (OUT/quantize_report.json, or OUT.report.json\n"
            "beside a file) gives per tensor the rel_err of what was written.\n"
            "\n"
            "  frontier allocate run.h5 --budget 3.5 -o recipe.json\n"
            "  frontier quantize data/stories260K --recipe recipe.json -o stories-3.5bit\n"
            "\n"
            "exit codes: 0 ok, 2 usage (refusals included), 3 unreadable model or recipe,\n"
            "4 malformed input (a non-finite weight), 5 cannot write OUT or OUT exists,\n"
            "6 a --plugin cannot be loaded (docs/exit-codes.md)\n");
}

static int parse_size(const char *text, unsigned long long *out)
{
    char *end;
    double v = strtod(text, &end);
    double mult = 1;
    if (end == text || v <= 0)
        return 0;
    if (*end == 'K' || *end == 'k')
        mult = 1e3, end++;
    else if (*end == 'M' || *end == 'm')
        mult = 1e6, end++;
    else if (*end == 'G' || *end == 'g')
        mult = 1e9, end++;
    if (*end == 'B')
        end++;
    if (*end || v * mult < 1 || v * mult > 1.8e19)
        return 0;
    *out = (unsigned long long)(v * mult);
    return 1;
}

/* The command, with room for its --plugin files (at most one per argument). */
static int quantize_main(int argc, char **argv, const char **plugins)
{
    static const struct option longopts[] = {
        {"recipe", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},
        {"include", required_argument, NULL, 'i'},
        {"exclude", required_argument, NULL, 'x'},
        {"calib", required_argument, NULL, 'C'},
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"force", no_argument, NULL, 'F'},
        {"max-shard-size", required_argument, NULL, 'S'},
        {"fused-global-scale", no_argument, NULL, 'g'},
        {"no-fused-global-scale", no_argument, NULL, 'G'},
        {"summary", no_argument, NULL, 's'},
        {"plugin", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fr_quantize_options o = {.fused_global_scale = -1, .table = stdout};
    const char *format = NULL;
    size_t n_plugins = 0;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'r': o.recipe = optarg; break;
        case 'c': o.config = optarg; break;
        case 'i': o.include = optarg; break;
        case 'x': o.exclude = optarg; break;
        case 'C': o.calib = optarg; break;
        case 'o': o.out = optarg; break;
        case 'f': format = optarg; break;
        case 'F': o.force = 1; break;
        case 'S': {
            unsigned long long n;
            if (!parse_size(optarg, &n))
                return cli_usage_error(argv[0], "invalid --max-shard-size '%s' (bytes, e.g. 5G or 200M)", optarg);
            o.max_shard_bytes = n;
            break;
        }
        case 'g': o.fused_global_scale = 1; break;
        case 'G': o.fused_global_scale = 0; break;
        case 's': o.table = NULL; break;
        case 'P': plugins[n_plugins++] = optarg; break;
        case 'h': print_help(stdout); return FR_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error(argv[0], "no model given (frontier quantize MODEL --recipe RECIPE.json -o OUT)");
    if (optind + 1 < argc)
        return cli_usage_error(argv[0], "one model at a time: unexpected '%s'", argv[optind + 1]);
    o.model = argv[optind];
    if (!o.out)
        return cli_usage_error(argv[0], "no output given (-o OUT)");
    if (!o.recipe == !o.config)
        return cli_usage_error(argv[0], o.recipe ? "--recipe and --config exclude each other"
                                                 : "nothing to apply: give --recipe FILE or --config CONFIG");
    if (format) {
        int f = fr_qformat_from_name(format);
        if (f < 0)
            return cli_usage_error(argv[0], "unknown format '%s' (compressed-tensors, dequantized, gguf)", format);
        o.format = (fr_qformat)f;
    } else {
        /* a folder becomes a deployable folder; a file its dequantized twin */
        size_t l = strlen(o.model);
        o.format = l > 12 && !strcmp(o.model + l - 12, ".safetensors") ? FR_QFORMAT_DEQUANTIZED
                   : l > 5 && !strcmp(o.model + l - 5, ".gguf")        ? FR_QFORMAT_GGUF
                                                                        : FR_QFORMAT_COMPRESSED_TENSORS;
    }
    fr_registry reg;
    fr_error err = {0};
    fr_status st = fr_registry_init(&reg, &err);
    if (st == FR_OK)
        st = fr_registry_discover(&reg, plugins, n_plugins, &err);
    if (st != FR_OK) {
        fr_error_log("%s", err.msg);
        fr_registry_free(&reg);
        return st;
    }
    fr_quantize_summary sum;
    st = fr_quantize(&reg, &o, &sum, &err);
    if (st == FR_E_USAGE)
        cli_usage_error(argv[0], "%s", err.msg);
    else if (st != FR_OK)
        fr_error_log("%s", err.msg);
    else
        printf("wrote '%s' (%s): %zu tensors quantized, %zu copied, %zu shard%s, %zu other "
               "files; rel_err %.6g over the quantized tensors; report '%s'\n",
               o.out, fr_qformat_name(o.format), sum.n_quantized, sum.n_copied, sum.n_shards,
               sum.n_shards == 1 ? "" : "s", sum.n_files_copied, sum.rel_err, sum.report);
    fr_registry_free(&reg);
    return st;
}

int cmd_quantize(int argc, char **argv)
{
    const char **plugins = calloc((size_t)argc + 1, sizeof *plugins);
    if (!plugins) {
        fr_error_log("out of memory");
        return FR_E_NOMEM;
    }
    int rc = quantize_main(argc, argv, plugins);
    free(plugins);
    return rc;
}
