/*
 * Test helper: applies one rounding rule of quantizers/numerics.h (or one
 * built-in configuration) to a file of little-endian float32 values and
 * writes the results, so Python scripts can compare them with ml_dtypes,
 * compressed-tensors and torchao.
 *
 *   fr_numerics_dump round FORMAT IN OUT
 *       FORMAT: e4m3 e5m2 e3m2 e2m3 e2m1 fp16 e8m0 (e8m0: 2^floor(log2 x)
 *       clamped to [2^-127, 2^127], the MX scale of a block whose amax is x)
 *   fr_numerics_dump quantize CONFIG ROWS COLS IN OUT [THREADS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "quantizers/numerics.h"

static float *read_all(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    float *buf = NULL;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long bytes = ftell(f);
        if (bytes >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            *n = bytes / (long)sizeof(float);
            buf = malloc(bytes > 0 ? (size_t)bytes : 1);
            if (buf && fread(buf, sizeof(float), (size_t)*n, f) != (size_t)*n) {
                free(buf);
                buf = NULL;
            }
        }
    }
    fclose(f);
    return buf;
}

static int write_all(const char *path, const float *x, long n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    int ok = fwrite(x, sizeof(float), (size_t)n, f) == (size_t)n;
    return fclose(f) == 0 && ok;
}

static float round_one(const char *fmt, float x, int *ok)
{
    *ok = 1;
    if (!strcmp(fmt, "e4m3"))
        return fr_round_fmt(x, FR_FMT_E4M3);
    if (!strcmp(fmt, "e5m2"))
        return fr_round_fmt(x, FR_FMT_E5M2);
    if (!strcmp(fmt, "e3m2"))
        return fr_round_fmt(x, FR_FMT_E3M2);
    if (!strcmp(fmt, "e2m3"))
        return fr_round_fmt(x, FR_FMT_E2M3);
    if (!strcmp(fmt, "e2m1"))
        return fr_round_fmt(x, FR_FMT_E2M1);
    if (!strcmp(fmt, "fp16"))
        return fr_round_fp16(x);
    if (!strcmp(fmt, "e8m0"))
        return fr_pow2f(fr_mx_scale_exp(x, 0));
    *ok = 0;
    return 0.0f;
}

int main(int argc, char **argv)
{
    long n = 0;
    int status = 1;
    float *in = NULL, *out = NULL;
    fr_pool *pool = NULL;
    if (argc == 5 && !strcmp(argv[1], "round")) {
        if (!(in = read_all(argv[3], &n)) || !(out = malloc((size_t)(n ? n : 1) * sizeof *out))) {
            fprintf(stderr, "fr_numerics_dump: cannot read '%s'\n", argv[3]);
            goto done;
        }
        for (long i = 0; i < n; i++) {
            int ok;
            out[i] = round_one(argv[2], in[i], &ok);
            if (!ok) {
                fprintf(stderr, "fr_numerics_dump: unknown format '%s'\n", argv[2]);
                goto done;
            }
        }
        if (!write_all(argv[4], out, n)) {
            fprintf(stderr, "fr_numerics_dump: cannot write '%s'\n", argv[4]);
            goto done;
        }
        status = 0;
    } else if ((argc == 7 || argc == 8) && !strcmp(argv[1], "quantize")) {
        const frontier_quantizer *q;
        const frontier_config *cfg;
        long rows = atol(argv[3]), cols = atol(argv[4]);
        char msg[512];
        fr_error err = {0};
        if (!qt_find(argv[2], &q, &cfg)) {
            fprintf(stderr, "fr_numerics_dump: unknown configuration '%s'\n", argv[2]);
            goto done;
        }
        if (!(in = read_all(argv[5], &n)) || n != rows * cols ||
            !(out = malloc((size_t)(n ? n : 1) * sizeof *out))) {
            fprintf(stderr, "fr_numerics_dump: cannot read %ld x %ld floats from '%s'\n", rows,
                    cols, argv[5]);
            goto done;
        }
        if (fr_pool_create(argc == 8 ? atoi(argv[7]) : 0, &pool, &err) != FR_OK) {
            fprintf(stderr, "fr_numerics_dump: %s\n", err.msg);
            goto done;
        }
        if (qt_quantize(q, cfg, in, out, rows, cols, pool, msg, sizeof msg) != FRONTIER_OK) {
            fprintf(stderr, "fr_numerics_dump: %s: %s\n", argv[2], msg);
            goto done;
        }
        if (!write_all(argv[6], out, n)) {
            fprintf(stderr, "fr_numerics_dump: cannot write '%s'\n", argv[6]);
            goto done;
        }
        status = 0;
    } else {
        fprintf(stderr, "usage: fr_numerics_dump round FORMAT IN OUT\n"
                        "       fr_numerics_dump quantize CONFIG ROWS COLS IN OUT [THREADS]\n");
        status = 2;
    }
done:
    fr_pool_destroy(pool);
    free(in);
    free(out);
    return status;
}
