/*
 * The ggml family and `frontier quantize --format gguf` (docs/quantize.md,
 * "GGUF"):
 *
 * - the reference rules worked by hand on small blocks (Q4_0's signed
 *   maximum at -8, truncation after +8.5, Q8_0's ties away from zero, Q4_1's
 *   minimum, Q5's fifth bit, MXFP4's ties; Q6_K's and Q4_K's layouts on
 *   constant blocks), exact sizes, non-finite weights, thread-count
 *   independence, error bounds;
 * - rows a type's block does not divide: the configuration measures
 *   llama-quantize's fallback (Q4_K as Q5_0, ...; F16 where no block of 32
 *   fits), Q(W) and size those of that type, and the writer stores it;
 * - the super-block types' bytes (with and without an importance matrix)
 *   on the seeded rows of ggml_rows.h against the digests of what the
 *   pinned llama.cpp's ggml writes for them (tests/llama checks those
 *   digests against ggml itself), and short super-blocks of whole
 *   sub-blocks equal to the block padded with zeros;
 * - every written ggml type read back by the tool's own reader
 *   (core/gguf.c) and decoder (quantizers/ggml_blocks.h) equals the
 *   registry's quantize-dequantize of the input bit for bit; copied tensors
 *   byte-identical; metadata copied with general.file_type and
 *   general.quantization_version set; tensor data aligned. Every type on
 *   data/stories260K.gguf (rows of 64 and 172: the super-block types stored
 *   as their fallbacks, ffn_down as F16), all of them on a fixture whose
 *   rows are multiples of 256 (stories260K's weights regrouped, seeded rows);
 * - refusals write nothing; a NaN half-way leaves no OUT and no temporary.
 *
 * usage: test_gguf DATA_DIR WORK_DIR
 *        test_gguf --dump FILE.gguf DIR   (our decoding of every quantized
 *        tensor of FILE as DIR/<name>.f32, for crosscheck_gguf.py)
 *        test_gguf --fixture256 DATA_DIR OUT.gguf OUT.dat   (the fixture of
 *        rows of 256 and 512 and an importance matrix of it, for
 *        crosscheck_gguf.py)
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/calib.h"
#include "core/call.h"
#include "core/parallel.h"
#include "core/source.h"
#include "frontier/checkpoint/quantize.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/exec/builtins.h"
#include "ggml_rows.h"
#include "gguf_file.h"
#include "quantizers/ggml_blocks.h"

static fr_registry reg;

static const struct {
    const char *config, *gguf;
    fr_ggml_qtype type;
    unsigned file_type;
    double bits; /* per weight, on whole blocks */
    double bound; /* rel_err on the gaussian rows of properties(), 1.25x what it was */
} types[] = {
    {"ggml-q8_0", "Q8_0", FR_GGML_Q8_0, 7, 8.5, 0.006},
    {"ggml-q4_0", "Q4_0", FR_GGML_Q4_0, 2, 4.5, 0.12},
    {"ggml-q4_1", "Q4_1", FR_GGML_Q4_1, 3, 5.0, 0.10},
    {"ggml-q5_0", "Q5_0", FR_GGML_Q5_0, 8, 5.5, 0.06},
    {"ggml-q5_1", "Q5_1", FR_GGML_Q5_1, 9, 6.0, 0.05},
    {"ggml-mxfp4", "MXFP4", FR_GGML_MXFP4, 38, 4.25, 0.16},
    /* the K-quants' file types: llama-quantize's Q3_K/Q4_K/Q5_K aliases (_M) */
    {"ggml-q2_k", "Q2_K", FR_GGML_Q2_K, 10, 2.625, 0.37},
    {"ggml-q3_k", "Q3_K", FR_GGML_Q3_K, 12, 3.4375, 0.19},
    {"ggml-q4_k", "Q4_K", FR_GGML_Q4_K, 15, 4.5, 0.089},
    {"ggml-q5_k", "Q5_K", FR_GGML_Q5_K, 17, 5.5, 0.045},
    {"ggml-q6_k", "Q6_K", FR_GGML_Q6_K, 18, 6.5625, 0.023},
    {"ggml-iq4_nl", "IQ4_NL", FR_GGML_IQ4_NL, 25, 4.5, 0.096},
    {"ggml-iq4_xs", "IQ4_XS", FR_GGML_IQ4_XS, 30, 4.25, 0.097},
};
#define N_TYPES (sizeof types / sizeof types[0])

static int type_of_name(const char *gguf, fr_ggml_qtype *t)
{
    for (size_t i = 0; i < N_TYPES; i++)
        if (!strcmp(types[i].gguf, gguf)) {
            *t = types[i].type;
            return 1;
        }
    if (!strcmp(gguf, "F16")) /* the last fallback */
        *t = FR_GGML_F16;
    return !strcmp(gguf, "F16");
}

/* The registry's Q(W) (with a pool of `threads`, 0: none); NULL on failure. */
static const frontier_calib *quantize_calib; /* statistics of the next quantize() */

static float *quantize(const char *config, const float *w, int64_t rows, int64_t cols,
                       fr_pool *pool, char *msg, size_t len)
{
    const fr_config_ref *ref = fr_registry_find_config(&reg, config);
    float *w_hat = malloc((size_t)(rows * cols) * sizeof *w_hat);
    frontier_call call;
    fr_error err = {0};
    fr_call_init(&call, pool, 0, "t", config);
    fr_status st = ref && w_hat ? fr_quantizer_quantize_cpu(&reg, ref, w, w_hat, rows, cols,
                                                            quantize_calib, "t", &call, &err)
                                : FR_E_USAGE;
    fr_call_release(&call);
    if (st != FR_OK) {
        snprintf(msg, len, "%.500s", err.msg);
        free(w_hat);
        return NULL;
    }
    return w_hat;
}

static void expect(const char *config, const float *x, int n, const float *want)
{
    char msg[512];
    float *y = quantize(config, x, 1, n, NULL, msg, sizeof msg);
    CHECK_MSG(y != NULL, "%s: %s", config, msg);
    for (int i = 0; y && i < n; i++)
        CHECK_MSG(y[i] == want[i] && signbit(y[i]) == signbit(want[i]),
                  "%s: element %d: %.9g -> %.9g, the rule gives %.9g", config, i, x[i], y[i],
                  want[i]);
    free(y);
}

/* ---- the rules, by hand ---- */

static void by_hand(void)
{
    /* nearest_int of any NaN is 0, as on the CPU for ggml's default NaN:
     * a CUDA device's NaN (every mantissa bit set) must not read as 2^22 - 1 */
    static const uint32_t nans[] = {0xffc00000u, 0x7fc00000u, 0x7fffffffu, 0xffffffffu,
                                    0x7f800001u};
    for (size_t k = 0; k < sizeof nans / sizeof nans[0]; k++)
        CHECK_MSG(fr_ggml_nearest_int(fr_bits_to_f32(nans[k])) == 0, "nearest_int(0x%08x) = %d",
                  (unsigned)nans[k], fr_ggml_nearest_int(fr_bits_to_f32(nans[k])));
    CHECK(fr_ggml_nearest_int(2.5f) == 2 && fr_ggml_nearest_int(-3.5f) == -4);
    float x[32] = {0}, want[32] = {0};
    uint8_t blk[FR_GGML_MAX_BLOCK_BYTES];
    /* Q4_0, the maximum magnitude positive: d = 1 / -8, id = -8. 0.4375 * -8
     * + 8.5 = 5 exactly: code 5 -> (5 - 8) d = 0.375 (rint would give 0.5);
     * 1 -> 0.5 -> code 0 -> 1; 0 -> code 8 -> -0 (0 * negative d) */
    x[0] = 1.0f, x[1] = 0.4375f, x[2] = -0.5f, x[3] = 0.99f;
    want[0] = 1.0f, want[1] = 0.375f, want[2] = -0.5f, want[3] = 1.0f;
    for (int i = 4; i < 32; i++)
        want[i] = -0.0f;
    expect("ggml-q4_0", x, 32, want);
    /* the maximum negative: d = 1/8, code 0 is -1, and +1 cannot be reached (7/8) */
    x[0] = -1.0f, x[1] = 1.0f, x[2] = 0.0f, x[3] = 0.0f;
    want[0] = -1.0f, want[1] = 0.875f, want[2] = 0.0f, want[3] = 0.0f;
    for (int i = 4; i < 32; i++)
        want[i] = 0.0f;
    expect("ggml-q4_0", x, 32, want);
    /* Q8_0: amax 127 -> d = 1; roundf: 2.5 -> 3, -2.5 -> -3 (ties away from zero) */
    memset(x, 0, sizeof x);
    memset(want, 0, sizeof want);
    x[0] = 127.0f, x[1] = 2.5f, x[2] = -2.5f, x[3] = 3.49f;
    want[0] = 127.0f, want[1] = 3.0f, want[2] = -3.0f, want[3] = 3.0f;
    expect("ggml-q8_0", x, 32, want);
    /* Q4_1: min 0, max 15 -> d = 1, m = 0; 7.5 -> trunc(8.0) = 8; 7.49 -> 7 */
    memset(x, 0, sizeof x);
    memset(want, 0, sizeof want);
    x[0] = 15.0f, x[1] = 7.5f, x[2] = 7.49f, x[31] = 14.6f;
    want[0] = 15.0f, want[1] = 8.0f, want[2] = 7.0f, want[31] = 15.0f;
    expect("ggml-q4_1", x, 32, want);
    /* Q5_0: max -16 -> d = 1: -16 -> code 0, 15.7 -> 32.2 clamped to 31 -> 15,
     * element 20 needs the fifth bit (code 16 + 5 = 21 -> 5) */
    memset(x, 0, sizeof x);
    memset(want, 0, sizeof want);
    x[0] = -16.0f, x[1] = 15.7f, x[20] = 5.0f, x[17] = -3.0f;
    want[0] = -16.0f, want[1] = 15.0f, want[20] = 5.0f, want[17] = -3.0f;
    expect("ggml-q5_0", x, 32, want);
    /* Q5_1 on a block from 1 to 32: d = 1, m = 1: exact */
    for (int i = 0; i < 32; i++)
        x[i] = want[i] = (float)(i + 1);
    expect("ggml-q5_1", x, 32, want);
    /* the scale is stored as fp16: Q8_0 with amax 1 -> d = 1/127, fp16(d) = 0.007873535 */
    memset(x, 0, sizeof x);
    memset(want, 0, sizeof want);
    x[0] = 1.0f;
    want[0] = 127.0f * fr_f16_to_f32(fr_ggml_f32_to_f16(1.0f / 127.0f));
    CHECK_MSG(want[0] != 1.0f, "fp16(1/127) * 127 is 1");
    expect("ggml-q8_0", x, 32, want);
    /* MXFP4: amax 6 -> e = 2 - 2 + 127, d = 2^0 / 2; nearest kvalue * d, the first
     * on a tie: 1.75 -> 1.5 (3 d; round-to-nearest-even E2M1 would give 2),
     * -1.75 -> -1.5, 1.25 -> 1 (2 d), -5.1 -> -6 (-12 d, nibble 15), 0.2 -> 0 */
    memset(x, 0, sizeof x);
    memset(want, 0, sizeof want);
    x[0] = 6.0f, x[1] = 1.75f, x[2] = -1.75f, x[3] = 1.25f, x[20] = -5.1f, x[21] = 0.2f;
    want[0] = 6.0f, want[1] = 1.5f, want[2] = -1.5f, want[3] = 1.0f, want[20] = -6.0f;
    expect("ggml-mxfp4", x, 32, want);
    fr_ggml_encode_block(FR_GGML_MXFP4, x, 32, blk);
    CHECK_MSG(blk[0] == 127 && blk[1] == 7 && blk[2] == 3 && blk[5] == (0 | 15 << 4),
              "MXFP4 bytes %u %u %u %02x", blk[0], blk[1], blk[2], blk[5]);
    /* the byte layout: Q4_0 element j in the low nibble of qs[j], j + 16 in the high */
    for (int i = 0; i < 32; i++)
        x[i] = i == 0 ? -8.0f : i == 16 ? 7.0f : 0.0f;
    fr_ggml_encode_block(FR_GGML_Q4_0, x, 32, blk);
    CHECK_MSG(blk[0] == 0x00 && blk[1] == 0x3c, "Q4_0 d = 1 as fp16 0x3c00: %02x %02x", blk[0],
              blk[1]);
    CHECK_MSG(blk[2] == (0 | 15 << 4), "Q4_0 qs[0] = %02x", blk[2]);
    CHECK_MSG(blk[3] == (8 | 8 << 4), "Q4_0 qs[1] = %02x", blk[3]);
    /* fp16: ties to even, subnormals, overflow to Inf */
    CHECK_MSG(fr_ggml_f32_to_f16(65504.0f) == 0x7bff && fr_ggml_f32_to_f16(65520.0f) == 0x7c00 &&
                  fr_ggml_f32_to_f16(65519.99f) == 0x7bff && fr_ggml_f32_to_f16(-0.0f) == 0x8000 &&
                  fr_ggml_f32_to_f16(5.9604645e-08f) == 0x0001 &&
                  fr_ggml_f32_to_f16(2.9802322e-08f) == 0x0000 &&
                  fr_ggml_f32_to_f16(1.0f + 1.0f / 2048.0f) == 0x3c00 &&
                  fr_ggml_f32_to_f16(1.0f + 3.0f / 2048.0f) == 0x3c02,
              "fp16 rounding");
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite fp16 round-trips */
        if (fr_ggml_f32_to_f16(fr_f16_to_f32((uint16_t)h)) != h)
            CHECK_MSG(0, "fp16 0x%04x does not round-trip", h);

    /* Q6_K on 256 ones: every sub-block's search keeps -1/32 (the extreme at
     * code -32: the trials reach the same fit, never a larger one), so the
     * super-block maps it to -128: d = 1/4096 (fp16 0x0c00), every scale
     * -128, every code 0 (q - 32 = -32): -32 x -128 / 4096 = 1 */
    float ones[256], y[256];
    fr_ggml_block_q6_k q6;
    for (int i = 0; i < 256; i++)
        ones[i] = 1.0f;
    fr_ggml_q6_k_encode(ones, 256, NULL, &q6);
    int zero_codes = 1, scales_128 = 1;
    for (int i = 0; i < 128; i++)
        zero_codes &= q6.ql[i] == 0 && q6.qh[i % 64] == 0;
    for (int i = 0; i < 16; i++)
        scales_128 &= q6.scales[i] == -128;
    CHECK_MSG(q6.d[0] == 0x00 && q6.d[1] == 0x0c && zero_codes && scales_128,
              "Q6_K of ones: d %02x%02x, codes %s, scales %d", q6.d[1], q6.d[0],
              zero_codes ? "0" : "not 0", q6.scales[0]);
    fr_ggml_q6_k_decode(&q6, y);
    for (int i = 0; i < 256; i++)
        CHECK_MSG(y[i] == 1.0f, "Q6_K of ones decodes element %d to %g", i, y[i]);
    /* Q4_K on 256 x 945: a sub-block's range [0, 945] (the min clamped at 0)
     * gives step 945 / 15 = 63 and no trial a better fit; the super-block's
     * d = 63 / 63 = 1 (fp16 0x3c00), dmin 0; scale code 63 (6 bits: low
     * bits of scales[0..3], and 0x0f nibbles of scales[8..11] with the top
     * two bits 11 in scales[0..3]), min codes 0, every element 15: 1 x 63 x 15 */
    fr_ggml_block_q4_k q4;
    for (int i = 0; i < 256; i++)
        ones[i] = 945.0f;
    fr_ggml_q4_k_encode(ones, 256, NULL, &q4);
    static const uint8_t want_scales[12] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
                                            0x0f, 0x0f, 0x0f, 0x0f};
    int all_15 = 1;
    for (int i = 0; i < 128; i++)
        all_15 &= q4.qs[i] == 0xff;
    CHECK_MSG(q4.d[0] == 0x00 && q4.d[1] == 0x3c && q4.dmin[0] == 0 && q4.dmin[1] == 0 &&
                  !memcmp(q4.scales, want_scales, 12) && all_15,
              "Q4_K of 945s: d %02x%02x dmin %02x%02x scales[0] %02x scales[8] %02x qs[0] %02x",
              q4.d[1], q4.d[0], q4.dmin[1], q4.dmin[0], q4.scales[0], q4.scales[8], q4.qs[0]);
    fr_ggml_q4_k_decode(&q4, y);
    for (int i = 0; i < 256; i++)
        CHECK_MSG(y[i] == 945.0f, "Q4_K of 945s decodes element %d to %g", i, y[i]);
}

/* ---- the super-block types against ggml's digests ---- */

static const fr_ggml_qtype digest_types[7] = {FR_GGML_Q2_K, FR_GGML_Q3_K, FR_GGML_Q4_K,
                                              FR_GGML_Q5_K, FR_GGML_Q6_K, FR_GGML_IQ4_NL,
                                              FR_GGML_IQ4_XS};

static void kquant_digests(void)
{
    static float w[FR_ROWS_DIGEST_ROWS * FR_ROWS_DIGEST_COLS], qw[FR_ROWS_DIGEST_COLS];
    fr_rows_digest_set(w, qw);
    for (int k = 0; k < 7; k++) {
        const fr_ggml_qtype ty = digest_types[k];
        const size_t row_bytes =
            (size_t)(FR_ROWS_DIGEST_COLS / fr_ggml_block_elems(ty)) * fr_ggml_block_bytes(ty);
        uint8_t *blocks = malloc(row_bytes * FR_ROWS_DIGEST_ROWS);
        for (int weighted = 0; blocks && weighted < 2; weighted++) {
            for (int r = 0; r < FR_ROWS_DIGEST_ROWS; r++)
                fr_ggml_encode_row_weighted(ty, w + (size_t)r * FR_ROWS_DIGEST_COLS,
                                            FR_ROWS_DIGEST_COLS, weighted ? qw : NULL,
                                            blocks + (size_t)r * row_bytes);
            uint64_t h = fr_rows_fnv(blocks, row_bytes * FR_ROWS_DIGEST_ROWS);
            CHECK_MSG(h == fr_rows_ggml_digest[k][weighted],
                      "ggml type %d %s: our blocks' digest 0x%016llx, ggml's 0x%016llx", (int)ty,
                      weighted ? "with an importance matrix" : "without",
                      (unsigned long long)h, (unsigned long long)fr_rows_ggml_digest[k][weighted]);
        }
        free(blocks);
    }
    /* a short super-block of whole sub-blocks (128 elements) is the block
     * padded with zeros, whose sub-blocks ggml gives zero scales; with an
     * importance the mean square divides by 128 (only Q6_K, which weighs
     * by the importance alone, keeps the padded block's bytes) */
    uint64_t s = 5;
    float x[256] = {0}, imp[256] = {0};
    for (int i = 0; i < 128; i++) {
        x[i] = fr_rows_gaussian(&s);
        imp[i] = 1.0f + fr_rows_uniform(&s);
    }
    for (int k = 0; k < 7; k++) {
        const fr_ggml_qtype ty = digest_types[k];
        if (fr_ggml_block_elems(ty) != 256)
            continue;
        for (int weighted = 0; weighted < 2; weighted++) {
            uint8_t a[FR_GGML_MAX_BLOCK_BYTES], b[FR_GGML_MAX_BLOCK_BYTES];
            fr_ggml_encode_block_weighted(ty, x, 128, weighted ? imp : NULL, a);
            fr_ggml_encode_block_weighted(ty, x, 256, weighted ? imp : NULL, b);
            int same = !memcmp(a, b, fr_ggml_block_bytes(ty));
            CHECK_MSG(same == (!weighted || ty == FR_GGML_Q6_K),
                      "ggml type %d %s: the short super-block %s the padded one", (int)ty,
                      weighted ? "with an importance" : "without", same ? "equals" : "differs from");
        }
    }
}

/* ---- the family's properties (tests/quantizers has the registry-wide ones) ---- */

static void properties(int print_bounds)
{
    const int64_t rows = 37, cols = 256, n = rows * cols; /* whole blocks of every type */
    float *w = malloc((size_t)n * sizeof *w);
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        /* Box-Muller on splitmix64 */
        double u1 = ((double)(fr_test_splitmix64(&s) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = (double)(fr_test_splitmix64(&s) >> 11) / 9007199254740992.0;
        w[i] = (float)(0.02 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
    }
    fr_pool *pool4 = NULL;
    fr_error err;
    CHECK_OK(fr_pool_create(4, &pool4, &err), err);
    char msg[512];
    for (size_t k = 0; k < N_TYPES; k++) {
        float *a = quantize(types[k].config, w, rows, cols, NULL, msg, sizeof msg);
        float *b = quantize(types[k].config, w, rows, cols, pool4, msg, sizeof msg);
        CHECK_MSG(a && b, "%s: %s", types[k].config, msg);
        if (!a || !b) {
            free(a);
            free(b);
            continue;
        }
        CHECK_MSG(!memcmp(a, b, (size_t)n * sizeof *a), "%s: 1 and 4 threads differ",
                  types[k].config);
        double e2 = 0, r2 = 0;
        for (int64_t i = 0; i < n; i++) {
            e2 += ((double)w[i] - a[i]) * ((double)w[i] - a[i]);
            r2 += (double)w[i] * w[i];
        }
        if (print_bounds)
            printf("%s: rel_err %.4g\n", types[k].config, sqrt(e2 / r2));
        CHECK_MSG(sqrt(e2 / r2) < types[k].bound, "%s: rel_err %g past %g", types[k].config,
                  sqrt(e2 / r2), types[k].bound);
        const int block = fr_ggml_block_elems(types[k].type);
        free(a);
        free(b);
        /* sizes: the block bytes; rows no block of 32 divides: F16's */
        const fr_config_ref *ref = fr_registry_find_config(&reg, types[k].config);
        uint64_t bits = 0;
        frontier_call call;
        fr_call_init(&call, NULL, 0, "t", types[k].config);
        CHECK_MSG(ref && fr_config_quantizer(&reg, ref)->size_bits(ref->cfg, 4096, 4096, &bits,
                                                                     &call) == FRONTIER_OK &&
                      bits == 4096ull * (4096 / block) * fr_ggml_block_bytes(types[k].type) * 8 &&
                      (double)bits / (4096.0 * 4096.0) == types[k].bits,
                  "%s: size of 4096 x 4096 is %llu bits, not %g per weight", types[k].config,
                  (unsigned long long)bits, types[k].bits);
        CHECK_MSG(fr_config_quantizer(&reg, ref)->size_bits(ref->cfg, 3, block + 1, &bits,
                                                           &call) == FRONTIER_OK &&
                      bits == 3ull * (uint64_t)(block + 1) * 16,
                  "%s: size of 3 x %d", types[k].config, block + 1);
        /* the weighted variant stores the same blocks */
        char imat[64];
        snprintf(imat, sizeof imat, "imat-%s", types[k].config);
        const fr_config_ref *iref = fr_registry_find_config(&reg, imat);
        uint64_t ibits = 0;
        if (block == 256 || types[k].type == FR_GGML_IQ4_NL)
            CHECK_MSG(iref && fr_config_quantizer(&reg, iref)->size_bits(iref->cfg, 4096, 4096,
                                                                         &ibits, &call) ==
                                  FRONTIER_OK &&
                          ibits == 4096ull * (4096 / block) * fr_ggml_block_bytes(types[k].type) * 8,
                      "%s: size of 4096 x 4096", imat);
        else
            CHECK_MSG(!iref, "%s is registered: the legacy types have no weighted variant", imat);
        fr_call_release(&call);
        /* zeros stay zeros; a non-finite weight is refused, naming where */
        float z[64] = {0};
        float *y = quantize(types[k].config, z, 2, 32, NULL, msg, sizeof msg);
        for (int i = 0; y && i < 64; i++)
            CHECK_MSG(y[i] == 0.0f, "%s: zero -> %g", types[k].config, y[i]);
        free(y);
        z[40] = NAN;
        y = quantize(types[k].config, z, 2, 32, NULL, msg, sizeof msg);
        CHECK_MSG(!y && strstr(msg, "row 1, column 8"), "%s: NaN: '%s'", types[k].config, msg);
        free(y);
    }
    fr_pool_destroy(pool4);
    free(w);
}

/* ---- rows a type's block does not divide ---- */

/* What llama-quantize stores each type as on rows of 96 (its
 * tensor_type_fallback); on rows of 200 every type is stored as F16. */
static const struct {
    const char *config, *on96;
} fallback96[] = {
    {"ggml-q2_k", "ggml-q4_0"},  {"ggml-q3_k", "ggml-q4_0"},   {"ggml-q4_k", "ggml-q5_0"},
    {"ggml-q5_k", "ggml-q5_1"},  {"ggml-q6_k", "ggml-q8_0"},   {"ggml-iq4_xs", "ggml-iq4_nl"},
    {"imat-ggml-q6_k", "ggml-q8_0"}, /* Q8_0 takes no importance */
};

static uint64_t size_of(const char *config, int64_t rows, int64_t cols)
{
    const fr_config_ref *ref = fr_registry_find_config(&reg, config);
    uint64_t bits = 0;
    frontier_call call;
    fr_call_init(&call, NULL, 0, "t", config);
    if (!ref || fr_config_quantizer(&reg, ref)->size_bits(ref->cfg, rows, cols, &bits, &call))
        bits = 0;
    fr_call_release(&call);
    return bits;
}

static void fallbacks(void)
{
    enum { ROWS = 7 };
    float w[ROWS * 200], imp[200];
    uint64_t s = 99;
    for (int i = 0; i < ROWS * 200; i++)
        w[i] = (float)(0.03 * (fr_test_uniform(&s) - 0.5)) * (i % 17 ? 1.0f : 9.0f);
    for (int i = 0; i < 200; i++)
        imp[i] = (float)(0.1 + fr_test_uniform(&s));
    frontier_calib calib = {.cols = 96, .act_mean_sq = imp};
    char msg[512];
    for (size_t k = 0; k < sizeof fallback96 / sizeof fallback96[0]; k++) {
        const char *cfg = fallback96[k].config;
        quantize_calib = strncmp(cfg, "imat-", 5) ? NULL : &calib;
        float *a = quantize(cfg, w, ROWS, 96, NULL, msg, sizeof msg);
        quantize_calib = NULL;
        float *b = quantize(fallback96[k].on96, w, ROWS, 96, NULL, msg, sizeof msg);
        CHECK_MSG(a && b && !memcmp(a, b, sizeof(float) * ROWS * 96) &&
                      size_of(cfg, ROWS, 96) == size_of(fallback96[k].on96, ROWS, 96),
                  "%s on rows of 96: not %s's rows", cfg, fallback96[k].on96);
        free(a);
        free(b);
    }
    for (size_t k = 0; k < N_TYPES; k++) {
        const fr_ggml_params *p = fr_ggml_params_by_name(types[k].config + 5);
        CHECK(p && fr_ggml_stored_type(p, 256) == p && fr_ggml_stored_type(p, 200) == &fr_ggml_f16);
        float *a = quantize(types[k].config, w, ROWS, 200, NULL, msg, sizeof msg);
        int same = a != NULL;
        for (int i = 0; a && i < ROWS * 200; i++)
            same &= a[i] == fr_f16_to_f32(fr_ggml_f32_to_f16(w[i]));
        CHECK_MSG(same && size_of(types[k].config, ROWS, 200) == ROWS * 200 * 16ull,
                  "%s on rows of 200: not F16", types[k].config);
        free(a);
    }
}

/* ---- files ---- */

static float *load(const fr_source *s, const fr_tensor *t)
{
    float *w = malloc((size_t)t->numel * sizeof *w);
    fr_error err;
    if (!w || fr_tensor_load_f32(s, t, w, &err) != FR_OK) {
        fprintf(stderr, "cannot load '%s'\n", t->name);
        exit(1);
    }
    return w;
}

static long find(const fr_source *s, const char *name)
{
    for (size_t i = 0; i < s->n_tensors; i++)
        if (!strcmp(s->tensors[i].name, name))
            return (long)i;
    return -1;
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* No OUT.tmp-* beside OUT. */
static int no_temporary(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int ok = 1;
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    while (d && (de = readdir(d)))
        ok &= strncmp(de->d_name, prefix, strlen(prefix)) != 0;
    if (d)
        closedir(d);
    return ok;
}

/* OUT (written from model with `want[name]` = configuration or NULL)
 * against model: read back, decoded, compared. */
static const char *check_calib_path; /* the --calib of imat- tensors of check_output */

static void check_output(const char *model, const char *out, const char *label,
                         const char *(*config_of)(const char *name, void *ctx), void *ctx,
                         unsigned want_file_type)
{
    fr_source *in = NULL, *o = NULL;
    fr_calib_file *cf = NULL;
    fr_error err;
    if (check_calib_path)
        CHECK_OK(fr_calib_open(check_calib_path, &cf, &err), err);
    CHECK_OK(fr_source_open(model, &in, &err), err);
    CHECK_OK(fr_source_open(out, &o, &err), err);
    if (!in || !o)
        goto done;
    CHECK_MSG(o->kind == FR_SOURCE_GGUF && o->n_tensors == in->n_tensors, "%s: %zu tensors", label,
              o->n_tensors);
    /* metadata: the input's, file type and quantization version set */
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(o->metadata, "general.file_type");
    const cJSON *qv =
        cJSON_GetObjectItemCaseSensitive(o->metadata, "general.quantization_version");
    CHECK_MSG(cJSON_IsNumber(ft) && ft->valuedouble == want_file_type, "%s: general.file_type",
              label);
    CHECK_MSG(cJSON_IsNumber(qv) && qv->valuedouble == 2, "%s: general.quantization_version",
              label);
    const cJSON *item;
    cJSON_ArrayForEach(item, in->metadata)
    {
        if (!strcmp(item->string, "general.file_type"))
            continue;
        const cJSON *got = cJSON_GetObjectItemCaseSensitive(o->metadata, item->string);
        CHECK_MSG(got && cJSON_Compare(item, got, 1), "%s: metadata '%s' differs", label,
                  item->string);
    }
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(in->metadata, "general.alignment");
    uint64_t align = cJSON_IsNumber(al) ? (uint64_t)al->valuedouble : 32;
    for (size_t i = 0; i < in->n_tensors; i++) {
        const fr_tensor *t = &in->tensors[i], *u = &o->tensors[i];
        CHECK_MSG(!strcmp(t->name, u->name) && t->ndim == u->ndim &&
                      !memcmp(t->shape, u->shape, sizeof t->shape),
                  "%s: tensor %zu is '%s', not '%s' of the same shape", label, i, u->name, t->name);
        CHECK_MSG(u->offset % align == 0, "%s: '%s' at %llu, not aligned to %llu", label, u->name,
                  (unsigned long long)u->offset, (unsigned long long)align);
        const char *cfg = config_of(t->name, ctx);
        const uint8_t *raw = fr_tensor_raw(o, u);
        if (!cfg) {
            CHECK_MSG(!strcmp(t->dtype_name, u->dtype_name) && t->nbytes == u->nbytes &&
                          !memcmp(fr_tensor_raw(in, t), raw, (size_t)t->nbytes),
                      "%s: copied '%s' differs", label, t->name);
            continue;
        }
        fr_ggml_qtype ty = FR_GGML_Q8_0;
        CHECK_MSG(type_of_name(u->dtype_name, &ty), "%s: '%s' is %s", label, u->name,
                  u->dtype_name);
        /* imat-ggml-<type> stores its base's blocks */
        const fr_config_ref *ref =
            fr_registry_find_config(&reg, strncmp(cfg, "imat-", 5) ? cfg : cfg + 5);
        const fr_ggml_params *p = ref ? ref->cfg->impl : NULL;
        if (p) /* rows the type's block does not divide: llama-quantize's fallback */
            p = fr_ggml_stored_type(p, t->shape[t->ndim - 1]);
        if (!p || p->type != ty) {
            CHECK_MSG(0, "%s: '%s' is %s, the recipe says %s", label, u->name, u->dtype_name, cfg);
            continue;
        }
        int64_t rows, cols;
        fr_sweep_matrix(t, &rows, &cols);
        float *w = load(in, t);
        char msg[512] = "";
        fr_calib_stats cs = {0};
        if (cf && !strncmp(cfg, "imat-", 5))
            CHECK_MSG(fr_calib_lookup(cf, t->name, cols, &cs, &err) == FR_OK && cs.found,
                      "%s: no statistics for '%s'", label, t->name);
        quantize_calib = cs.found ? &cs.calib : NULL;
        float *q = quantize(cfg, w, rows, cols, NULL, msg, sizeof msg);
        quantize_calib = NULL;
        CHECK_MSG(q != NULL, "%s: '%s': %s", label, t->name, msg);
        float *dec = malloc((size_t)t->numel * sizeof *dec);
        uint64_t row_bytes = (uint64_t)cols / fr_ggml_block_elems(ty) * fr_ggml_block_bytes(ty);
        CHECK_MSG(u->nbytes == row_bytes * (uint64_t)rows, "%s: '%s' has %llu bytes", label,
                  u->name, (unsigned long long)u->nbytes);
        for (int64_t r = 0; q && dec && r < rows; r++)
            fr_ggml_decode_row(ty, raw + r * row_bytes, cols, dec + r * cols);
        for (int64_t k = 0; q && dec && k < t->numel; k++)
            if (memcmp(&dec[k], &q[k], sizeof *dec)) {
                CHECK_MSG(0, "%s: '%s' element %lld reads back as %.9g, Q(W) is %.9g", label,
                          t->name, (long long)k, dec[k], q[k]);
                break;
            }
        free(w);
        free(q);
        free(dec);
    }
done:
    if (in)
        fr_source_close(in);
    if (o)
        fr_source_close(o);
    if (cf)
        fr_calib_close(cf);
}

typedef struct one_config {
    const char *config;
    const char *exclude; /* substring */
} one_config;

static const char *config_one(const char *name, void *ctx)
{
    const one_config *c = ctx;
    size_t l = strlen(name);
    int matrix = l > 7 && !strcmp(name + l - 7, ".weight") && !strstr(name, "norm") &&
                 strcmp(name, "token_embd.weight");
    return matrix && !strstr(name, c->exclude) ? c->config : NULL;
}

static const char *config_embd(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "token_embd.weight") ? NULL : "ggml-q8_0";
}

/* The mixed recipe: a type per tensor by its position. */
static const char *config_mixed(const char *name, void *ctx)
{
    (void)ctx;
    if (!strcmp(name, "token_embd.weight"))
        return "ggml-q8_0";
    if (strstr(name, "norm") || strstr(name, "ffn_down"))
        return NULL;
    if (strstr(name, "attn_q"))
        return "ggml-q5_1";
    if (strstr(name, "attn_k"))
        return "ggml-mxfp4";
    if (strstr(name, "attn_v"))
        return "ggml-q5_0";
    if (strstr(name, "attn_output"))
        return "ggml-q4_1";
    return "ggml-q4_0";
}

static const char *include_arg; /* --include of the next run() */
static const char *calib_arg;   /* --calib of the next run() */

static fr_status run(const char *model, const char *out, const char *config, const char *exclude,
                     const char *recipe, fr_qformat format, int force, fr_error *err)
{
    fr_quantize_options o = {.model = model, .out = out, .config = config, .exclude = exclude,
                             .include = include_arg, .calib = calib_arg,
                             .recipe = recipe, .format = format, .force = force,
                             .fused_global_scale = -1};
    fr_quantize_summary sum;
    return fr_quantize(&reg, &o, &sum, err);
}

static void files(const char *data, const char *work)
{
    char model[4096], out[4096], recipe[4096];
    snprintf(model, sizeof model, "%s/stories260K.gguf", data);
    fr_error err = {0};
    for (size_t k = 0; k < N_TYPES; k++) {
        snprintf(out, sizeof out, "%s/%s.gguf", work, types[k].config);
        /* rows of 64 hold no super-block, ffn_down's 172 no block: stored
         * as llama-quantize's fallback (check_output reads the types) */
        one_config c = {.config = types[k].config, .exclude = "no tensor"};
        fr_status st = run(model, out, types[k].config, NULL, NULL, FR_QFORMAT_GGUF, 1, &err);
        CHECK_MSG(st == FR_OK, "%s: %s", types[k].config, err.msg);
        if (st == FR_OK)
            check_output(model, out, types[k].config, config_one, &c, types[k].file_type);
    }
    /* a GGUF that is already Q4_0 (but token_embd): its Q4_0 tensors are copied
     * as they are, token_embd becomes Q8_0, the file type stays Q4_0's */
    {
        char q4[4096];
        snprintf(q4, sizeof q4, "%s/ggml-q4_0.gguf", work);
        snprintf(out, sizeof out, "%s/requant.gguf", work);
        include_arg = "^token_embd";
        fr_status st = run(q4, out, "ggml-q8_0", NULL, NULL, FR_QFORMAT_GGUF, 1, &err);
        include_arg = NULL;
        CHECK_MSG(st == FR_OK, "requantize: %s", err.msg);
        if (st == FR_OK)
            check_output(q4, out, "requant", config_embd, NULL, 2);
    }
    /* a recipe mixing every type (token_embd too); Q4_0 has the most elements */
    snprintf(recipe, sizeof recipe, "%s/mixed.json", work);
    fr_source *in = NULL;
    CHECK_OK(fr_source_open(model, &in, &err), err);
    cJSON *root = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(root, "recipe");
    cJSON_AddStringToObject(root, "format", "frontier-recipe");
    for (size_t i = 0; in && i < in->n_tensors; i++)
        if (config_mixed(in->tensors[i].name, NULL))
            cJSON_AddStringToObject(map, in->tensors[i].name, config_mixed(in->tensors[i].name, NULL));
    char *text = cJSON_Print(root);
    FILE *f = fopen(recipe, "w");
    if (f && text)
        fputs(text, f);
    if (f)
        fclose(f);
    free(text);
    cJSON_Delete(root);
    snprintf(out, sizeof out, "%s/mixed.gguf", work);
    fr_status st = run(model, out, NULL, NULL, recipe, FR_QFORMAT_GGUF, 1, &err);
    CHECK_MSG(st == FR_OK, "mixed: %s", err.msg);
    if (st == FR_OK)
        check_output(model, out, "mixed", config_mixed, NULL, 2);

    /* refusals write nothing */
    snprintf(out, sizeof out, "%s/refused.gguf", work);
    remove(out); /* left by an older run */
    st = run(model, out, "int4-g32-sym", NULL, NULL, FR_QFORMAT_GGUF, 0, &err);
    CHECK_MSG(st == FR_E_USAGE && strstr(err.msg, "with a gguf writer: ggml: 13 of 13") &&
                  !exists(out),
              "a non-ggml configuration: %d '%s'", st, err.msg);
    char st_model[4096];
    snprintf(st_model, sizeof st_model, "%s/stories260K", data);
    st = run(st_model, out, "ggml-q4_0", NULL, NULL, FR_QFORMAT_GGUF, 0, &err);
    CHECK_MSG(st == FR_E_USAGE && !exists(out), "gguf from safetensors: %d '%s'", st, err.msg);
    st = run(model, out, "ggml-q4_0", NULL, NULL, FR_QFORMAT_DEQUANTIZED, 0, &err);
    CHECK_MSG(st == FR_E_USAGE && !exists(out), "dequantized from gguf: %d '%s'", st, err.msg);
    snprintf(out, sizeof out, "%s/mixed.gguf", work);
    st = run(model, out, "ggml-q4_0", "ffn_down", NULL, FR_QFORMAT_GGUF, 0, &err);
    CHECK_MSG(st == FR_E_OUTPUT, "existing OUT without --force: %d '%s'", st, err.msg);

    /* a NaN in the last quantized tensor: no OUT, no temporary */
    char bad[4096];
    snprintf(bad, sizeof bad, "%s/nan.gguf", work);
    long last = in ? find(in, "blk.4.ffn_up.weight") : -1;
    CHECK_MSG(last >= 0 && !strcmp(in->tensors[last].dtype_name, "F16"), "fixture layout");
    if (last >= 0) {
        const fr_mapped_file *mf = &in->files[0];
        uint8_t *copy = malloc((size_t)mf->size);
        memcpy(copy, mf->base, (size_t)mf->size);
        copy[in->tensors[last].offset + 2 * 100] = 0x00; /* element 100: fp16 NaN 0x7e00 */
        copy[in->tensors[last].offset + 2 * 100 + 1] = 0x7e;
        f = fopen(bad, "wb");
        if (f) {
            fwrite(copy, 1, (size_t)mf->size, f);
            fclose(f);
        }
        free(copy);
        snprintf(out, sizeof out, "%s/nan-out.gguf", work);
        st = run(bad, out, "ggml-q4_0", "ffn_down", NULL, FR_QFORMAT_GGUF, 0, &err);
        CHECK_MSG(st == FR_E_FORMAT && strstr(err.msg, "blk.4.ffn_up.weight") && !exists(out) &&
                      no_temporary(work, "nan-out.gguf"),
                  "NaN half-way: %d '%s'", st, err.msg);
    }
    if (in)
        fr_source_close(in);
}

/* ---- the fixture of rows of 256 ---- */

typedef struct fixture_tensor {
    const char *name;
    int64_t rows, cols; /* cols = ne[0]; rows 0: a vector */
    int f16;
    float *w;
} fixture_tensor;

/* Every 2-D weight of stories260K named `part` in layer `layer`, end to end. */
static int64_t gather(const fr_source *src, int layer, const char *const *parts, float *out)
{
    int64_t n = 0;
    for (const char *const *p = parts; *p; p++) {
        char name[256];
        snprintf(name, sizeof name, "model.layers.%d.%s.weight", layer, *p);
        long i = find(src, name);
        if (i < 0) {
            fprintf(stderr, "no '%s' in stories260K\n", name);
            exit(1);
        }
        float *w = load(src, &src->tensors[i]);
        memcpy(out + n, w, (size_t)src->tensors[i].numel * sizeof *w);
        n += src->tensors[i].numel;
        free(w);
    }
    return n;
}

/*
 * A GGUF v3 (llama names, alignment 32) whose matrices have rows of 256 or
 * 512: stories260K's weights regrouped (not a runnable model: a fixture for
 * the super-block types) and seeded rows of ggml_rows.h whose steps stay in
 * fp16's range; F16 and F32 tensors; norms as vectors.
 */
static int write_fixture256(const char *data, const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/stories260K", data);
    fr_source *src = NULL;
    fr_error err;
    if (fr_source_open(dir, &src, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 0;
    }
    static const char *const attn[] = {"self_attn.q_proj", "self_attn.k_proj",
                                       "self_attn.v_proj", "self_attn.o_proj", NULL};
    static const char *const gate_up[] = {"mlp.gate_proj", "mlp.up_proj", NULL};
    static const char *const down[] = {"mlp.down_proj", NULL};
    fixture_tensor t[] = {
        {"token_embd.weight", 128, 256, 1, NULL},  {"blk.0.attn_norm.weight", 0, 256, 0, NULL},
        {"blk.0.attn_q.weight", 64, 256, 1, NULL}, {"blk.0.attn_k.weight", 32, 512, 0, NULL},
        {"blk.0.ffn_gate.weight", 86, 256, 0, NULL}, {"blk.0.ffn_down.weight", 43, 256, 1, NULL},
        {"blk.0.ffn_up.weight", 40, 512, 0, NULL}, {"output_norm.weight", 0, 256, 0, NULL},
    };
    const size_t n_t = sizeof t / sizeof t[0];
    for (size_t i = 0; i < n_t; i++)
        t[i].w = calloc((size_t)((t[i].rows ? t[i].rows : 1) * t[i].cols), sizeof(float));
    long embd = find(src, "model.embed_tokens.weight");
    if (embd < 0)
        return 0;
    float *e = load(src, &src->tensors[embd]);
    memcpy(t[0].w, e, 128 * 256 * sizeof *e);
    free(e);
    for (int j = 0; j < 256; j++)
        t[1].w[j] = t[7].w[j] = 1.0f + 0.01f * (float)(j % 64);
    gather(src, 0, attn, t[2].w);
    gather(src, 1, attn, t[3].w);
    gather(src, 0, gate_up, t[4].w);
    gather(src, 0, down, t[5].w);
    uint64_t seed = 99;
    for (int r = 0, kind = 0; r < 40; r++, kind = (kind + 1) % FR_ROWS_KINDS) {
        while (fr_rows_overflow(kind))
            kind = (kind + 1) % FR_ROWS_KINDS;
        fr_rows_fill(t[6].w + r * 512, 512, kind, &seed);
    }
    fr_source_close(src);

    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite("GGUF", 1, 4, f);
    put_le(f, 3, 4);
    put_le(f, n_t, 8);
    put_le(f, 2, 8);
    put_gguf_str(f, "general.architecture");
    put_le(f, 8, 4); /* string */
    put_gguf_str(f, "llama");
    put_gguf_str(f, "general.name");
    put_le(f, 8, 4);
    put_gguf_str(f, "stories260K regrouped to rows of 256 and 512");
    uint64_t offset = 0;
    for (size_t i = 0; i < n_t; i++) {
        uint64_t n = (uint64_t)((t[i].rows ? t[i].rows : 1) * t[i].cols);
        put_gguf_str(f, t[i].name);
        put_le(f, t[i].rows ? 2 : 1, 4);
        put_le(f, (uint64_t)t[i].cols, 8);
        if (t[i].rows)
            put_le(f, (uint64_t)t[i].rows, 8);
        put_le(f, t[i].f16 ? 1 : 0, 4); /* GGML_TYPE_F16 : F32 */
        put_le(f, offset, 8);
        uint64_t bytes = n * (t[i].f16 ? 2 : 4);
        offset += (bytes + 31) / 32 * 32;
    }
    while (ftell(f) % 32)
        fputc(0, f);
    for (size_t i = 0; i < n_t; i++) {
        uint64_t n = (uint64_t)((t[i].rows ? t[i].rows : 1) * t[i].cols);
        for (uint64_t j = 0; j < n; j++) {
            uint32_t bits;
            memcpy(&bits, &t[i].w[j], 4);
            if (t[i].f16)
                put_le(f, fr_ggml_f32_to_f16(t[i].w[j]), 2);
            else
                put_le(f, bits, 4);
        }
        while (ftell(f) % 32)
            fputc(0, f);
        free(t[i].w);
    }
    return fclose(f) == 0;
}

/* A llama.cpp importance matrix (the legacy .dat: int32 entry count; per
 * entry int32 name length, the name, int32 ncall, int32 nval, nval float32
 * sums) for the fixture's matrices: heavy-tailed importances, one call, so
 * the mean read back is the value written. */
static int write_imatrix_dat(const char *path)
{
    static const struct {
        const char *name;
        int cols;
    } e[] = {{"blk.0.attn_q.weight", 256}, {"blk.0.attn_k.weight", 512},
             {"blk.0.ffn_gate.weight", 256}, {"blk.0.ffn_down.weight", 256},
             {"blk.0.ffn_up.weight", 512}, {"token_embd.weight", 256}};
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    uint64_t seed = 123;
    float v[512];
    put_le(f, sizeof e / sizeof e[0], 4);
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
        put_le(f, strlen(e[i].name), 4);
        fputs(e[i].name, f);
        put_le(f, 1, 4);
        put_le(f, (uint64_t)e[i].cols, 4);
        fr_rows_importance(v, e[i].cols, 2, &seed);
        for (int j = 0; j < e[i].cols; j++) {
            uint32_t bits;
            memcpy(&bits, &v[j], 4);
            put_le(f, bits, 4);
        }
    }
    return fclose(f) == 0;
}

/* A recipe of the super-block types over the fixture. */
static const char *config_k_mixed(const char *name, void *ctx)
{
    (void)ctx;
    static const char *const map[][2] = {
        {"token_embd.weight", "ggml-iq4_xs"}, {"blk.0.attn_q.weight", "ggml-q6_k"},
        {"blk.0.attn_k.weight", "ggml-q3_k"}, {"blk.0.ffn_gate.weight", "ggml-q4_k"},
        {"blk.0.ffn_down.weight", "ggml-q5_k"}, {"blk.0.ffn_up.weight", "ggml-q2_k"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(name, map[i][0]))
            return map[i][1];
    return NULL;
}

static void write_recipe(const char *model, const char *path,
                         const char *(*config_of)(const char *name, void *ctx))
{
    fr_source *in = NULL;
    fr_error err;
    CHECK_OK(fr_source_open(model, &in, &err), err);
    cJSON *root = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(root, "recipe");
    cJSON_AddStringToObject(root, "format", "frontier-recipe");
    for (size_t i = 0; in && i < in->n_tensors; i++)
        if (config_of(in->tensors[i].name, NULL))
            cJSON_AddStringToObject(map, in->tensors[i].name, config_of(in->tensors[i].name, NULL));
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    if (f && text)
        fputs(text, f);
    if (f)
        fclose(f);
    free(text);
    cJSON_Delete(root);
    if (in)
        fr_source_close(in);
}

/* Every type on the fixture of rows of 256, and a recipe of the super-block
 * types (IQ4_XS holds the most elements: its file type). */
static void files256(const char *data, const char *work)
{
    char model[4096], out[4096], recipe[4096];
    snprintf(model, sizeof model, "%s/rows256.gguf", work);
    CHECK_MSG(write_fixture256(data, model), "cannot write '%s'", model);
    fr_error err = {0};
    for (size_t k = 0; k < N_TYPES; k++) {
        snprintf(out, sizeof out, "%s/rows256-%s.gguf", work, types[k].config);
        one_config c = {.config = types[k].config, .exclude = "(none)"};
        fr_status st = run(model, out, types[k].config, NULL, NULL, FR_QFORMAT_GGUF, 1, &err);
        CHECK_MSG(st == FR_OK, "rows256 %s: %s", types[k].config, err.msg);
        if (st == FR_OK)
            check_output(model, out, types[k].config, config_one, &c, types[k].file_type);
    }
    snprintf(recipe, sizeof recipe, "%s/rows256-mixed.json", work);
    write_recipe(model, recipe, config_k_mixed);
    snprintf(out, sizeof out, "%s/rows256-mixed.gguf", work);
    fr_status st = run(model, out, NULL, NULL, recipe, FR_QFORMAT_GGUF, 1, &err);
    CHECK_MSG(st == FR_OK, "rows256 mixed: %s", err.msg);
    if (st == FR_OK)
        check_output(model, out, "rows256 mixed", config_k_mixed, NULL, 30);

    /* with an importance matrix: llama-quantize --imatrix's blocks, read back
     * equal to the registry's Q(W) with the same statistics, and not the
     * unweighted blocks */
    char dat[4096];
    snprintf(dat, sizeof dat, "%s/rows256.imatrix.dat", work);
    CHECK_MSG(write_imatrix_dat(dat), "cannot write '%s'", dat);
    for (size_t k = 0; k < N_TYPES; k++) {
        char cfg[64], plain[4096];
        snprintf(cfg, sizeof cfg, "imat-%s", types[k].config);
        snprintf(out, sizeof out, "%s/rows256-%s.gguf", work, cfg);
        if (!fr_registry_find_config(&reg, cfg))
            continue;
        calib_arg = dat;
        st = run(model, out, cfg, NULL, NULL, FR_QFORMAT_GGUF, 1, &err);
        calib_arg = NULL;
        CHECK_MSG(st == FR_OK, "rows256 %s: %s", cfg, err.msg);
        if (st != FR_OK)
            continue;
        one_config c = {.config = cfg, .exclude = "(none)"};
        check_calib_path = dat;
        check_output(model, out, cfg, config_one, &c, types[k].file_type);
        check_calib_path = NULL;
        /* the importance changed the blocks of attn_q */
        snprintf(plain, sizeof plain, "%s/rows256-%s.gguf", work, types[k].config);
        fr_source *a = NULL, *b = NULL;
        if (fr_source_open(out, &a, &err) == FR_OK && fr_source_open(plain, &b, &err) == FR_OK) {
            long i = find(a, "blk.0.attn_q.weight");
            CHECK_MSG(i >= 0 && a->tensors[i].nbytes == b->tensors[i].nbytes &&
                          memcmp(fr_tensor_raw(a, &a->tensors[i]), fr_tensor_raw(b, &b->tensors[i]),
                                 (size_t)a->tensors[i].nbytes) != 0,
                      "%s: the importance matrix changed nothing", cfg);
        }
        if (a)
            fr_source_close(a);
        if (b)
            fr_source_close(b);
    }
    /* without --calib the weighted configurations are refused, naming it */
    snprintf(out, sizeof out, "%s/rows256-refused.gguf", work);
    st = run(model, out, "imat-ggml-q4_k", NULL, NULL, FR_QFORMAT_GGUF, 1, &err);
    CHECK_MSG(st == FR_E_USAGE && strstr(err.msg, "--calib") && !exists(out),
              "imat-ggml-q4_k without --calib: %d '%s'", st, err.msg);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--dump"))
        return fr_test_dump_blocks(argv[2], argv[3]); /* for crosscheck_gguf.py */
    if (argc == 5 && !strcmp(argv[1], "--fixture256"))
        return write_fixture256(argv[2], argv[3]) && write_imatrix_dat(argv[4]) ? 0 : 1;
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--print-bounds"))) {
        fprintf(stderr, "usage: test_gguf DATA_DIR WORK_DIR | --dump FILE.gguf DIR\n");
        return 2;
    }
    mkdir(argv[2], 0777);
    fr_error err;
    CHECK_OK(fr_registry_init(&reg, &err), err);
    by_hand();
    kquant_digests();
    properties(argc == 4 && !strcmp(argv[3], "--print-bounds"));
    fallbacks();
    files(argv[1], argv[2]);
    files256(argv[1], argv[2]);
    fr_registry_free(&reg);
    return fr_test_finish("quantize.gguf");
}
