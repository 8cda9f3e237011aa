/*
 * The host side of one quantizer call: the frontier_call a plugin sees, and
 * the table of host services (frontier_host_api) handed to every plugin and
 * built-in at registration.
 */
#ifndef FR_CALL_H
#define FR_CALL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier/plugin.h"
#include "parallel.h"

struct frontier_call {
    fr_pool *pool;             /* may be NULL: serial */
    const char *quantizer;     /* for messages; may be NULL */
    const char *tensor;        /* for messages; may be NULL */
    const char *config;        /* for messages; may be NULL */
    uint64_t rng_state;        /* splitmix64 state */
    int failed;
    char error[512];
    /* host data of a configuration whose quantization spans several
     * tensors: the joint amax (largest |w|) over the members of the
     * tensor's fused group (q/k/v, gate/up; frontier/model/fused_scale.h), set
     * for a configuration whose traits ask for it (needs_group_amax) and
     * read through frontier_host_api.group_amax; valid only when
     * has_group_amax is set */
    int has_group_amax;
    float group_amax;
    /* the CUDA executor's device copy of calib->hessian (cols x cols float32,
     * on the device of the call's stream, written on that stream before the
     * call), or NULL: the built-in families' GPU functions read it instead
     * of uploading H from host memory again (frontier/exec/exec_cuda.cu) */
    const float *hessian_device;
    /* nonzero: that copy's identity, a number the executor gives each H it
     * uploads (a process-wide count), so that GPTQ reuses the factor of H^-1
     * across the tensor's configurations (kernels/gptq.cu) */
    uint64_t hessian_serial;
    pthread_mutex_t scratch_lock;
    void **scratch;
    size_t n_scratch, cap_scratch;
};

/* seed: the run's seed; tensor and config names are mixed in so each
 * (tensor, configuration) gets its own reproducible stream. */
void fr_call_init(frontier_call *call, fr_pool *pool, uint64_t seed, const char *tensor,
                  const char *config);
/* Frees all scratch memory of the call. */
void fr_call_release(frontier_call *call);

/* The services table (static, valid for the process lifetime). */
const frontier_host_api *fr_host_api(void);

/* 64-bit FNV-1a, used to derive seeds from names. */
uint64_t fr_hash64(const char *s, uint64_t h);

#endif
