/*
 * The body shared by the libFuzzer targets: open the input as a checkpoint
 * from memory (fr_source_open_memory: no temp files, no file descriptors),
 * then touch everything a later stage would: every tensor's matrix view,
 * raw view and float32 load (FUZZ_ATTACH, when a target defines it, first
 * attaches what decodes its tensors), the page release, and the metadata JSON.
 * FUZZ_NAME (set by each target) picks the reader when the content is not
 * recognised by itself.
 */
#ifndef FR_FUZZ_READER_H
#define FR_FUZZ_READER_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/source.h"

#define FUZZ_MAX_LOAD (1 << 22) /* elements: keep each run's memory bounded */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_source *src = NULL;
    fr_error err;
    if (fr_source_open_memory(data, size, FUZZ_NAME, &src, &err) != FR_OK)
        return 0;
#ifdef FUZZ_ATTACH
    FUZZ_ATTACH(src); /* a target's decoders (gguf: the ggml block types) */
#endif
    volatile float sink = 0.0f;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        int64_t rows, cols;
        fr_tensor_matrix(t, &rows, &cols);
        const uint8_t *raw = fr_tensor_raw(src, t);
        if (raw && t->nbytes)
            sink += (float)(raw[0] ^ raw[t->nbytes - 1]);
        if (t->numel > FUZZ_MAX_LOAD)
            continue;
        float *values = malloc(((size_t)t->numel + 1) * sizeof *values);
        if (values && fr_tensor_load_f32(src, t, values, &err) == FR_OK && t->numel > 0)
            sink += values[0] + values[t->numel - 1];
        free(values);
        fr_tensor_release(src, t);
    }
    (void)sink;
    char *meta = cJSON_PrintUnformatted(src->metadata);
    free(meta);
    fr_source_close(src);
    return 0;
}

#endif
