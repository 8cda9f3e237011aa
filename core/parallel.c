#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct fr_pool {
    pthread_mutex_t lock;
    pthread_cond_t work_ready;
    pthread_cond_t work_done;
    pthread_mutex_t submit_lock; /* one parallel_for at a time from outside */
    pthread_t *threads;
    int n_threads;
    int stop;
    /* the current loop */
    uint64_t generation;
    frontier_range_fn fn;
    void *arg;
    int64_t n, grain, n_chunks;
    int64_t next_chunk;
    int64_t chunks_done;
};

static _Thread_local int in_worker;

int fr_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Claims and runs chunks until none is left; called with pool->lock held. */
static void run_chunks(fr_pool *pool)
{
    while (pool->next_chunk < pool->n_chunks) {
        int64_t chunk = pool->next_chunk++;
        frontier_range_fn fn = pool->fn;
        void *arg = pool->arg;
        int64_t begin = chunk * pool->grain;
        int64_t end = begin + pool->grain < pool->n ? begin + pool->grain : pool->n;
        pthread_mutex_unlock(&pool->lock);
        fn(arg, begin, end);
        pthread_mutex_lock(&pool->lock);
        if (++pool->chunks_done == pool->n_chunks)
            pthread_cond_broadcast(&pool->work_done);
    }
}

static void *worker_main(void *p)
{
    fr_pool *pool = p;
    uint64_t seen = 0;
    in_worker = 1;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->work_ready, &pool->lock);
        if (pool->stop)
            break;
        seen = pool->generation;
        run_chunks(pool);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

fr_status fr_pool_create(int n_threads, fr_pool **out, fr_error *err)
{
    *out = NULL;
    if (n_threads <= 0)
        n_threads = fr_cpu_count();
    fr_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate a thread pool");
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_mutex_init(&pool->submit_lock, NULL);
    pthread_cond_init(&pool->work_ready, NULL);
    pthread_cond_init(&pool->work_done, NULL);
    /* the calling thread works too: n_threads - 1 helpers */
    if (n_threads > 1) {
        pool->threads = calloc((size_t)n_threads - 1, sizeof *pool->threads);
        if (!pool->threads) {
            fr_pool_destroy(pool);
            return fr_fail(err, FR_E_NOMEM, "cannot allocate a thread pool");
        }
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
                pool->n_threads = i + 1;
                fr_pool_destroy(pool);
                return fr_fail(err, FR_E_FAIL, "cannot start worker thread %d", i + 1);
            }
        }
    }
    *out = pool;
    return FR_OK;
}

void fr_pool_destroy(fr_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->work_ready);
    pthread_mutex_unlock(&pool->lock);
    if (pool->threads)
        for (int i = 0; i < pool->n_threads - 1; i++)
            pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    pthread_cond_destroy(&pool->work_ready);
    pthread_cond_destroy(&pool->work_done);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->submit_lock);
    free(pool);
}

int fr_pool_threads(const fr_pool *pool)
{
    return pool ? pool->n_threads : 1;
}

void fr_parallel_for(fr_pool *pool, int64_t n, int64_t grain, frontier_range_fn fn, void *arg)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int64_t n_chunks = (n + grain - 1) / grain;
    if (!pool || pool->n_threads <= 1 || in_worker || n_chunks == 1) {
        for (int64_t b = 0; b < n; b += grain)
            fn(arg, b, b + grain < n ? b + grain : n);
        return;
    }
    pthread_mutex_lock(&pool->submit_lock);
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->grain = grain;
    pool->n_chunks = n_chunks;
    pool->next_chunk = 0;
    pool->chunks_done = 0;
    pool->generation++;
    pthread_cond_broadcast(&pool->work_ready);
    in_worker = 1; /* nested calls from fn on this thread run inline */
    run_chunks(pool);
    in_worker = 0;
    while (pool->chunks_done < pool->n_chunks)
        pthread_cond_wait(&pool->work_done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_unlock(&pool->submit_lock);
}
