/* cuRAND's Philox4_32_10 device API for the CPU emulation: the state is the
 * (seed, subsequence, offset) triple, curand4 the Philox function of
 * core/philox.h. (The real generator is checked against the CPU one on the
 * GPU, gpu.synthetic; here it only has to exist.) */
#ifndef FR_EMU_CURAND_KERNEL_H
#define FR_EMU_CURAND_KERNEL_H

#include "cuda_runtime.h"
extern "C" {
#include "core/philox.h"
}

struct curandStatePhilox4_32_10_t {
    unsigned long long seed, subsequence, offset;
};
static inline void curand_init(unsigned long long seed, unsigned long long subsequence,
                               unsigned long long offset, curandStatePhilox4_32_10_t *s)
{
    s->seed = seed;
    s->subsequence = subsequence;
    s->offset = offset;
}
static inline uint4 curand4(curandStatePhilox4_32_10_t *s)
{
    fr_philox_words w = fr_philox_element(s->seed, s->subsequence, s->offset / 4);
    return uint4{w.w[0], w.w[1], w.w[2], w.w[3]};
}
#endif
