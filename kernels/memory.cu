/*
 * Device memory, copies and timing for C callers (tests, benchmarks) that
 * must not include CUDA headers: thin checked wrappers over the runtime.
 */
#include "kcommon.cuh"
#include "gptq.h"

extern "C" void fr_cuda_release_kept(void)
{
    fr_cuda_gptq_release_cache();
}

extern "C" fr_status fr_cuda_select(int device, fr_error *err)
{
    fr_status st = FR_OK;
    int n = fr_cuda_device_count();
    if (device < 0 || device >= n)
        return fr_fail(err, FR_E_DEVICE, "no cuda device %d (%d present)", device, n);
    FR_CU(cudaSetDevice(device));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_malloc(void **p, size_t bytes, fr_error *err)
{
    fr_status st = FR_OK;
    *p = NULL;
    FR_CU(cudaMalloc(p, bytes ? bytes : 1));
cleanup:
    return st;
}

extern "C" void fr_cuda_free(void *p)
{
    if (p)
        cudaFree(p);
}

extern "C" fr_status fr_cuda_upload(void *dst, const void *src, size_t bytes, fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_download(void *dst, const void *src, size_t bytes, fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
cleanup:
    return st;
}

static __global__ void fr_kfill32(uint32_t *p, uint32_t bits, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = bits;
}

extern "C" fr_status fr_cuda_fill32(void *dst, uint32_t bits, size_t n_words, void *stream,
                                    fr_error *err)
{
    fr_status st = FR_OK;
    size_t blocks = (n_words + 255) / 256;
    if (n_words == 0)
        return FR_OK;
    FR_LAUNCH(fr_kfill32<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0,
                           (cudaStream_t)stream>>>((uint32_t *)dst, bits, n_words));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_sync(void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaStreamSynchronize((cudaStream_t)stream));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_copy_d2d(void *dst, const void *src, size_t bytes, void *stream,
                                      fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
cleanup:
    return st;
}

/* Timing with CUDA events: a timer is two events on one stream. */
struct fr_cuda_timer {
    cudaEvent_t start, stop;
    cudaStream_t stream;
};

extern "C" fr_status fr_cuda_timer_create(fr_cuda_timer **out, void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    fr_cuda_timer *t = (fr_cuda_timer *)calloc(1, sizeof *t);
    *out = NULL;
    if (!t)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate a timer");
    t->stream = (cudaStream_t)stream;
    FR_CU(cudaEventCreate(&t->start));
    FR_CU(cudaEventCreate(&t->stop));
    *out = t;
    t = NULL;
cleanup:
    if (t) {
        if (t->start)
            cudaEventDestroy(t->start);
        free(t);
    }
    return st;
}

extern "C" fr_status fr_cuda_timer_start(fr_cuda_timer *t, fr_error *err)
{
    fr_status st = FR_OK;
    FR_CU(cudaEventRecord(t->start, t->stream));
cleanup:
    return st;
}

extern "C" fr_status fr_cuda_timer_stop(fr_cuda_timer *t, double *seconds, fr_error *err)
{
    fr_status st = FR_OK;
    float ms = 0.0f;
    FR_CU(cudaEventRecord(t->stop, t->stream));
    FR_CU(cudaEventSynchronize(t->stop));
    FR_CU(cudaEventElapsedTime(&ms, t->start, t->stop));
    *seconds = ms * 1e-3;
cleanup:
    return st;
}

extern "C" void fr_cuda_timer_free(fr_cuda_timer *t)
{
    if (!t)
        return;
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
    free(t);
}
