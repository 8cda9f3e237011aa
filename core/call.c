#include "call.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

uint64_t fr_hash64(const char *s, uint64_t h)
{
    if (!h)
        h = 1469598103934665603ull;
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void fr_call_init(frontier_call *call, fr_pool *pool, uint64_t seed, const char *tensor,
                  const char *config)
{
    memset(call, 0, sizeof *call);
    call->pool = pool;
    call->tensor = tensor;
    call->config = config;
    call->rng_state = fr_hash64(config, fr_hash64(tensor, seed ^ 0x9e3779b97f4a7c15ull));
    pthread_mutex_init(&call->scratch_lock, NULL);
}

void fr_call_release(frontier_call *call)
{
    for (size_t i = 0; i < call->n_scratch; i++)
        free(call->scratch[i]);
    free(call->scratch);
    call->scratch = NULL;
    call->n_scratch = call->cap_scratch = 0;
    pthread_mutex_destroy(&call->scratch_lock);
}

static void host_log(frontier_call *call, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (call && call->quantizer)
        fr_log(level, "%s: %s", call->quantizer, msg);
    else
        fr_log(level, "%s", msg);
}

static void host_set_error(frontier_call *call, const char *fmt, ...)
{
    if (!call)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call->error, sizeof call->error, fmt, ap);
    va_end(ap);
    call->failed = 1;
}

static void *host_scratch_alloc(frontier_call *call, size_t bytes)
{
    if (!call)
        return NULL;
    void *p = NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes || posix_memalign(&p, 64, rounded ? rounded : 64) != 0)
        return NULL;
    pthread_mutex_lock(&call->scratch_lock);
    if (call->n_scratch == call->cap_scratch) {
        size_t cap = call->cap_scratch ? call->cap_scratch * 2 : 8;
        void **grown = realloc(call->scratch, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&call->scratch_lock);
            free(p);
            return NULL;
        }
        call->scratch = grown;
        call->cap_scratch = cap;
    }
    call->scratch[call->n_scratch++] = p;
    pthread_mutex_unlock(&call->scratch_lock);
    return p;
}

/* splitmix64 (Steele, Lea, Flood 2014) */
static uint64_t host_rng_u64(frontier_call *call)
{
    uint64_t z = (call->rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void host_parallel_for(frontier_call *call, int64_t n, int64_t grain, frontier_range_fn fn,
                              void *arg)
{
    fr_parallel_for(call ? call->pool : NULL, n, grain, fn, arg);
}

static int host_group_amax(frontier_call *call, float *amax)
{
    if (!call || !call->has_group_amax || !amax)
        return 0;
    *amax = call->group_amax;
    return 1;
}

static const frontier_host_api host_api = {
    .abi_version = FRONTIER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(frontier_host_api),
    .log = host_log,
    .set_error = host_set_error,
    .scratch_alloc = host_scratch_alloc,
    .rng_u64 = host_rng_u64,
    .parallel_for = host_parallel_for,
    .group_amax = host_group_amax,
};

const frontier_host_api *fr_host_api(void)
{
    return &host_api;
}
