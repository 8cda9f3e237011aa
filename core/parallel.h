/*
 * A fixed pool of worker threads offering parallel_for. A parallel_for
 * issued from inside a worker (a quantizer parallelising its rows while the
 * engine parallelises jobs) runs inline on that worker, so nesting never
 * deadlocks. Chunk boundaries depend only on n and grain, never on the
 * thread count, so results that are reduced per chunk are deterministic.
 */
#ifndef FR_PARALLEL_H
#define FR_PARALLEL_H

#include <stdint.h>

#include "error.h"
#include "frontier/plugin.h"

typedef struct fr_pool fr_pool;

/* n_threads <= 0: one per online CPU. */
fr_status fr_pool_create(int n_threads, fr_pool **out, fr_error *err);
void fr_pool_destroy(fr_pool *pool);
int fr_pool_threads(const fr_pool *pool);

/* Runs fn(arg, b, e) over [0, n) in chunks [k*grain, min((k+1)*grain, n)).
 * pool may be NULL (runs serially). */
void fr_parallel_for(fr_pool *pool, int64_t n, int64_t grain, frontier_range_fn fn, void *arg);

/* Number of online CPUs (at least 1). */
int fr_cpu_count(void);

#endif
