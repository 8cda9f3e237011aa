/*
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC 2011), exactly as cuRAND's device API computes it, so a synthetic
 * tensor generated on the CPU equals the one cuRAND generates on the GPU.
 *
 * Checked against /usr/local/cuda/include/curand_philox4x32_x.h
 * (_philox4x32round, curand_Philox4x32_10) and curand_kernel.h (curand_init,
 * curand4): after curand_init(seed, k, 4*i, &state), curand4(&state) returns
 * fr_philox4x32_10(counter = {lo32(i), hi32(i), lo32(k), hi32(k)},
 * key = {lo32(seed), hi32(seed)}). tests/sweep/test_synthetic.c holds the
 * Random123 known-answer vectors.
 */
#ifndef FR_PHILOX_H
#define FR_PHILOX_H

#include <stdint.h>

#include "hd.h"

/* Round multipliers and Weyl key increments (Random123 philox.h; cuRAND
 * PHILOX_M4x32_0/1 and PHILOX_W32_0/1). */
#define FR_PHILOX_M0 0xD2511F53u
#define FR_PHILOX_M1 0xCD9E8D57u
#define FR_PHILOX_W0 0x9E3779B9u
#define FR_PHILOX_W1 0xBB67AE85u

typedef struct fr_philox_words {
    uint32_t w[4];
} fr_philox_words;

FR_HD void fr_philox_round(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    uint64_t p0 = (uint64_t)FR_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)FR_PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k0;
    uint32_t n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

/* Ten rounds, the key bumped by the Weyl constants between rounds. */
FR_HD fr_philox_words fr_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                       uint32_t k0, uint32_t k1)
{
    uint32_t c[4] = {c0, c1, c2, c3};
    for (int r = 0; r < 9; r++) {
        fr_philox_round(c, k0, k1);
        k0 += FR_PHILOX_W0;
        k1 += FR_PHILOX_W1;
    }
    fr_philox_round(c, k0, k1);
    fr_philox_words out = {{c[0], c[1], c[2], c[3]}};
    return out;
}

/* The four words of element `index` of synthetic tensor `tensor` under
 * `seed`: cuRAND's curand_init(seed, tensor, 4 * index, &s); curand4(&s). */
FR_HD fr_philox_words fr_philox_element(uint64_t seed, uint64_t tensor, uint64_t index)
{
    return fr_philox4x32_10((uint32_t)index, (uint32_t)(index >> 32), (uint32_t)tensor,
                            (uint32_t)(tensor >> 32), (uint32_t)seed, (uint32_t)(seed >> 32));
}

#endif
