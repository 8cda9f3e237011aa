/*
 * The CPU emulation of the CUDA execution model (include/cuda_runtime.h
 * says what it is for). Fibers: created with makecontext, switched with
 * _setjmp/_longjmp (no signal-mask system call per switch), scheduled round
 * robin on the calling thread. A barrier is a generation counter: a fiber
 * arrives, then yields until the generation moves on. A round in which no
 * fiber makes progress is a deadlock: reported, and the process aborts.
 */
#include "cuda_runtime.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

#define EMU_STACK (256 * 1024)

namespace {

struct fiber {
    emu_thread_state state;
    ucontext_t start;
    jmp_buf ctx;
    char *stack;
    bool started, done;
    unsigned warp, lane;
    uint64_t shfl_count;
};

struct barrier {
    unsigned arrived = 0, expected = 0;
    uint64_t generation = 0;
};

std::vector<fiber> fibers;
std::vector<barrier> warp_barriers;
barrier block_barrier;
std::vector<uint64_t> shfl_slots; /* [warp][bank 0/1][lane] */
jmp_buf scheduler;
fiber *current = nullptr;
const std::function<void()> *body = nullptr;
bool progressed = false;

void yield_to_scheduler()
{
    if (!_setjmp(current->ctx))
        _longjmp(scheduler, 1);
}

/* An exited thread no longer holds a barrier back (as on the GPU). */
void leave_barrier(barrier &b)
{
    b.expected--;
    if (b.arrived && b.arrived == b.expected) {
        b.arrived = 0;
        b.generation++;
    }
}

void fiber_main()
{
    (*body)();
    current->done = true;
    progressed = true;
    leave_barrier(block_barrier);
    leave_barrier(warp_barriers[current->warp]);
    _longjmp(scheduler, 1);
}

void wait_barrier(barrier &b)
{
    uint64_t gen = b.generation;
    progressed = true;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        b.generation++;
        progressed = true;
        return;
    }
    while (b.generation == gen)
        yield_to_scheduler();
}

} // namespace

dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
static emu_thread_state host_state;

emu_thread_state *emu_current(void)
{
    return current ? &current->state : &host_state;
}

void emu_syncthreads(void)
{
    wait_barrier(block_barrier);
}

uint64_t emu_shfl_xor(uint64_t value, int offset)
{
    fiber *f = current;
    /* two banks: a lane's next shuffle cannot overwrite a value another lane
     * has still to read, since that lane must reach the next barrier first */
    size_t bank = f->shfl_count++ & 1u;
    size_t base = ((size_t)f->warp * 2 + bank) * 32;
    shfl_slots[base + f->lane] = value;
    wait_barrier(warp_barriers[f->warp]);
    return shfl_slots[base + (f->lane ^ (unsigned)offset)];
}

uint64_t emu_shfl_idx(uint64_t value, int src)
{
    fiber *f = current;
    size_t bank = f->shfl_count++ & 1u;
    size_t base = ((size_t)f->warp * 2 + bank) * 32;
    shfl_slots[base + f->lane] = value;
    wait_barrier(warp_barriers[f->warp]);
    return shfl_slots[base + (unsigned)src];
}

void emu_run(dim3 grid, dim3 block, const std::function<void()> &fn)
{
    const unsigned n = block.x * block.y * block.z;
    const unsigned warps = (n + 31) / 32;
    if (n % 32 != 0) {
        fprintf(stderr, "emu: blocks of %u threads (not whole warps) are not emulated\n", n);
        abort();
    }
    if (fibers.size() < n) {
        size_t old = fibers.size();
        fibers.resize(n);
        for (size_t i = old; i < n; i++)
            fibers[i].stack = (char *)malloc(EMU_STACK);
    }
    warp_barriers.assign(warps, barrier{});
    shfl_slots.assign((size_t)warps * 64, 0);
    emu_grid_dim = grid;
    emu_block_dim = block;
    body = &fn;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                emu_block_idx = dim3(bx, by, bz);
                block_barrier = barrier{};
                block_barrier.expected = n;
                for (unsigned w = 0; w < warps; w++) {
                    warp_barriers[w] = barrier{};
                    warp_barriers[w].expected = 32;
                }
                for (unsigned t = 0; t < n; t++) {
                    fiber &f = fibers[t];
                    f.state.thread_idx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
                    f.started = f.done = false;
                    f.warp = t / 32;
                    f.lane = t % 32;
                    f.shfl_count = 0;
                    getcontext(&f.start);
                    f.start.uc_stack.ss_sp = f.stack;
                    f.start.uc_stack.ss_size = EMU_STACK;
                    f.start.uc_link = nullptr;
                    makecontext(&f.start, fiber_main, 0);
                }
                unsigned alive = n;
                while (alive) {
                    progressed = false;
                    alive = 0;
                    for (unsigned t = 0; t < n; t++) {
                        fiber &f = fibers[t];
                        if (f.done)
                            continue;
                        current = &f;
                        if (!_setjmp(scheduler)) {
                            if (!f.started) {
                                f.started = true;
                                progressed = true;
                                ucontext_t here;
                                swapcontext(&here, &f.start);
                            } else {
                                _longjmp(f.ctx, 1);
                            }
                        }
                        current = nullptr;
                        if (!f.done)
                            alive++;
                    }
                    if (alive && !progressed) {
                        fprintf(stderr,
                                "emu: deadlock in block (%u,%u,%u): %u threads wait at a barrier "
                                "the others never reach\n", bx, by, bz, alive);
                        abort();
                    }
                }
            }
    body = nullptr;
}

/* ---- the runtime API ---- */

static cudaError_t last_error = cudaSuccess;

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidValue: return "invalid argument";
    default: return "unspecified launch failure";
    }
}
cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    (void)d;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CPU emulation of the CUDA execution model");
    p->major = 9;
    p->multiProcessorCount = 1;
    p->totalGlobalMem = (size_t)1 << 32;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 0;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 0;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    *free_b = (size_t)1 << 32;
    *total_b = (size_t)1 << 32;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t bytes)
{
    /* garbage, not zeros, as device memory is */
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return cudaErrorMemoryAllocation;
    memset(*p, 0xa5, bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    (void)s;
    return cudaMalloc(p, bytes);
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    (void)s;
    free(p);
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    return cudaMalloc(p, bytes);
}
cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    (void)s;
    return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s)
{
    (void)s;
    memset(dst, value, bytes);
    return cudaSuccess;
}
struct emu_stream {
    int unused;
};
struct emu_event {
    int unused;
};
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = new emu_stream();
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)s;
    (void)e;
    (void)flags;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new emu_event();
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    (void)a;
    (void)b;
    *ms = 0.0f;
    return cudaSuccess;
}
