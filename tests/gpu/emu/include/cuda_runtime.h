/*
 * The CUDA execution model on the CPU, for testing kernels/ where there is
 * no GPU (tests/gpu/emu, docs/gpu.md "Tests"). Not a CUDA implementation:
 * just what the kernels/ sources use. Every CUDA thread is a fiber on one OS thread;
 * __syncthreads and __shfl_xor_sync are real barriers over the block's and
 * the warp's fibers, so a kernel whose threads disagree on a barrier or read
 * a lane that did not write deadlocks here (reported) as it would hang there.
 * Blocks run one after the other, so __shared__ (a function-local static)
 * is each block's own. Streams are synchronous: work runs when enqueued.
 */
#ifndef FR_EMU_CUDA_RUNTIME_H
#define FR_EMU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint4 {
    unsigned x, y, z, w;
};
struct float4 {
    float x, y, z, w;
};
struct float2 {
    float x, y;
};
static inline float2 make_float2(float x, float y)
{
    return float2{x, y};
}
static inline float4 make_float4(float x, float y, float z, float w)
{
    return float4{x, y, z, w};
}

/* ---- the current thread ---- */
struct emu_thread_state {
    dim3 thread_idx;
};
emu_thread_state *emu_current(void);
extern dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
#define threadIdx (emu_current()->thread_idx)
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

void emu_syncthreads(void);
#define __syncthreads() emu_syncthreads()
/* 8 bytes from every lane of the warp, then lane (self ^ offset)'s */
uint64_t emu_shfl_xor(uint64_t value, int offset);

template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int offset)
{
    (void)mask;
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = emu_shfl_xor(bits, offset);
    T out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* 8 bytes from every lane of the warp, then lane src's */
uint64_t emu_shfl_idx(uint64_t value, int src);

template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src)
{
    (void)mask;
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = emu_shfl_idx(bits, src & 31);
    T out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* any lane's predicate: an OR over the same butterfly of real shuffles
 * (so a lane that skips the vote deadlocks here, as it would misbehave on
 * a GPU) */
static inline int __any_sync(unsigned mask, int pred)
{
    uint64_t v = pred != 0;
    for (int off = 1; off < 32; off <<= 1)
        v |= emu_shfl_xor(v, off);
    (void)mask;
    return (int)v;
}

/* a warp barrier: one real shuffle waits for every lane of the warp */
static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    (void)emu_shfl_xor(0, 1);
}

/* atomics: every thread is a fiber of one OS thread, switched only at a
 * barrier or a shuffle, so a read-modify-write is atomic as written */
static inline unsigned atomicMax(unsigned *p, unsigned v)
{
    unsigned old = *p;
    *p = v > old ? v : old;
    return old;
}
static inline unsigned atomicMin(unsigned *p, unsigned v)
{
    unsigned old = *p;
    *p = v < old ? v : old;
    return old;
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = *p;
    *p = old + v;
    return old;
}

template <typename T> static inline T __ldg(const T *p)
{
    return *p;
}

static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __int_as_float(int i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

/* Runs fn on grid x block fibers, block by block. */
void emu_run(dim3 grid, dim3 block, const std::function<void()> &fn);

/* ---- runtime API ---- */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorLaunchFailure = 719
} cudaError_t;
typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3
};
#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
#define cudaHostAllocDefault 0

struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount;
    size_t totalGlobalMem;
};

template <typename... KA, typename... A>
static inline void emu_launch(void (*kernel)(KA...), dim3 grid, dim3 block, size_t smem,
                              cudaStream_t stream, A &&...args)
{
    (void)smem;
    (void)stream;
    std::function<void()> body = [&]() { kernel(args...); };
    emu_run(grid, block, body);
}

const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);

#endif
