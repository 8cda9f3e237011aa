/*
 * libFuzzer target for the recipe reader (frontier quantize --recipe, the
 * JSON that frontier allocate -o writes; frontier/recipe/recipe.c, applied
 * by frontier/checkpoint/quantize.c): the input is written to a temporary
 * file and given as the recipe of a quantization of
 * data/stories260K/model.safetensors into a temporary output (dequantized).
 * A recipe that reads runs the whole quantization, so the target covers
 * what the recipe's names and configurations reach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/log.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/exec/builtins.h"
#include "tests/fuzz/fuzz_file.h"

#ifndef FUZZ_DATA_DIR
#define FUZZ_DATA_DIR "data"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fr_registry reg;
static int reg_ready;
static char out_path[4200], report_path[4300];

static void remove_outputs(void)
{
    unlink(out_path);
    unlink(report_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_error err = {0};
    if (!reg_ready) {
        fr_log_set_level(FRONTIER_LOG_ERROR);
        if (fr_registry_init(&reg, &err) != FR_OK)
            abort();
        reg_ready = 1;
    }
    const char *recipe = fuzz_file_write(data, size, ".json");
    if (!recipe)
        return 0;
    if (!out_path[0]) {
        snprintf(out_path, sizeof out_path, "%s.out.safetensors", recipe);
        snprintf(report_path, sizeof report_path, "%s.report.json", out_path);
        atexit(remove_outputs);
    }
    fr_quantize_options opt = {
        .model = FUZZ_DATA_DIR "/stories260K/model.safetensors",
        .out = out_path,
        .recipe = recipe,
        .format = FR_QFORMAT_DEQUANTIZED,
        .force = 1,
        .fused_global_scale = -1,
    };
    fr_quantize_summary summary;
    (void)fr_quantize(&reg, &opt, &summary, &err);
    remove_outputs();
    return 0;
}
