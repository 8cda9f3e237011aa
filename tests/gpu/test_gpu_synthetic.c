/*
 * The device generator (cuRAND Philox4_32_10 + core/synthetic.h's FR_HD
 * transform) against the CPU generator, bit for bit: every distribution,
 * every storage dtype, a random seed, tensor index and starting offset
 * (including offsets past 2^32 elements, where the counter's high word
 * matters).
 */
#include "gpu_test.h"

#include "core/synthetic.h"

static void check(int dist, int dtype, uint64_t seed, uint64_t tensor, uint64_t first, int64_t n)
{
    fr_error err;
    size_t es = fr_dtype_size((fr_dtype)dtype);
    void *dev = NULL;
    size_t words = ((size_t)n * es + 3) / 4;
    uint8_t *host = malloc((size_t)n * es);
    if (!host) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
    GPU_OK(fr_cuda_malloc(&dev, words * 4, &err));
    GPU_OK(fr_cuda_fill32(dev, GPU_POISON, words, NULL, &err));
    GPU_OK(fr_cuda_synthetic(dist, dtype, seed, tensor, first, n, dev, NULL, &err));
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(host, dev, (size_t)n * es, &err));
    int64_t bad = 0, where = -1;
    float want_first = 0.0f, got_first = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float want = fr_synthetic_element(dist, dtype, seed, tensor, first + (uint64_t)i);
        float got;
        if (dtype == FR_DTYPE_F32)
            got = ((const float *)host)[i];
        else if (dtype == FR_DTYPE_BF16)
            got = fr_bf16_to_f32(((const uint16_t *)host)[i]);
        else
            got = fr_f16_to_f32(((const uint16_t *)host)[i]);
        if (fr_f32_to_bits(want) != fr_f32_to_bits(got)) {
            if (where < 0) {
                where = i;
                want_first = want;
                got_first = got;
            }
            bad++;
        }
    }
    CHECK_MSG(bad == 0,
              "%s %s seed %llu tensor %llu from %llu: %lld of %lld differ, first at %lld: cpu %.9g "
              "(0x%08x) gpu %.9g (0x%08x)",
              fr_synthetic_dist_name(dist), fr_dtype_name((fr_dtype)dtype),
              (unsigned long long)seed, (unsigned long long)tensor, (unsigned long long)first,
              (long long)bad, (long long)n, (long long)where, want_first, fr_f32_to_bits(want_first),
              got_first, fr_f32_to_bits(got_first));
    fr_cuda_free(dev);
    free(host);
}

int main(void)
{
    gpu_require_device();
    uint64_t rng = gpu_seed();
    static const int dtypes[] = {FR_DTYPE_F32, FR_DTYPE_F16, FR_DTYPE_BF16};
    for (int dist = 0; dist < FR_SYN_COUNT; dist++) {
        for (size_t d = 0; d < 3; d++) {
            uint64_t seed = fr_test_splitmix64(&rng), tensor = fr_test_splitmix64(&rng) % 4096;
            check(dist, dtypes[d], seed, tensor, 0, (int64_t)1 << 20);
            check(dist, dtypes[d], seed, tensor, fr_test_splitmix64(&rng) % (1ull << 40), 100003);
        }
    }
    /* the seed the CLI uses by default, the first tensors of a spec */
    check(FR_SYN_GAUSSIAN, FR_DTYPE_BF16, 0, 0, 0, 4096 * 64);
    check(FR_SYN_STUDENT_T3, FR_DTYPE_F32, 1, 1, 4096, 4096 * 16);
    return fr_test_finish("test_gpu_synthetic");
}
