/*
 * libFuzzer target for the sharded safetensors layout (core/safetensors.c:
 * model.safetensors.index.json, "weight_map" tensor -> shard file): the
 * input is written as the index of a private temporary folder that holds
 * two small valid shards (made once per process), and the folder is opened
 * with fr_source_open, as `frontier sweep FOLDER` does. What the index
 * names reaches the shard-name check, the shard reader and the cross-check
 * of every named tensor against its shard; every tensor that reads is then
 * loaded as float32.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096], index_path[4200];

static void remove_folder(void)
{
    char p[4300];
    unlink(index_path);
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

/* A safetensors file with one F32 tensor `name` of shape [rows, cols]. */
static int write_shard(const char *file, const char *name, int rows, int cols)
{
    char header[256], path[4300];
    int n = snprintf(header, sizeof header,
                     "{\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%d]}}", name,
                     rows, cols, rows * cols * 4);
    while (n % 8)
        header[n++] = ' ';
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint64_t len = (uint64_t)n;
    int ok = fwrite(&len, 8, 1, f) == 1 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; i < rows * cols && ok; i++) {
        float v = (float)(i - 3) * 0.25f;
        ok = fwrite(&v, 4, 1, f) == 1;
    }
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

static int make_folder(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/frontier-fuzz-index-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    atexit(remove_folder);
    return write_shard("model-00001-of-00002.safetensors", "a.weight", 2, 8) ||
           write_shard("model-00002-of-00002.safetensors", "b.weight", 8, 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready = -1;
    if (ready < 0)
        ready = make_folder() == 0;
    if (!ready)
        return 0;
    FILE *f = fopen(index_path, "wb");
    if (!f)
        return 0;
    int ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !ok)
        return 0;
    fr_source *src = NULL;
    fr_error err;
    if (fr_source_open(dir, &src, &err) != FR_OK)
        return 0;
    volatile float sink = 0.0f;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        float *values = malloc(((size_t)t->numel + 1) * sizeof *values);
        if (values && fr_tensor_load_f32(src, t, values, &err) == FR_OK && t->numel > 0)
            sink += values[0] + values[t->numel - 1];
        free(values);
        fr_tensor_release(src, t);
    }
    (void)sink;
    fr_source_close(src);
    return 0;
}
