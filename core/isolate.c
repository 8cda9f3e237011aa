/* Plugin work in a child process (isolate.h). */
#include "isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "call.h"

/* What the child hands back, at the start of the shared mapping. */
typedef struct isolate_header {
    int done;       /* 1 once body returned */
    int rc;
    int failed;
    char error[sizeof(((frontier_call *)0)->error)];
} isolate_header;

#define HEADER_BYTES ((sizeof(isolate_header) + 63) / 64 * 64)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int fr_isolate_run(fr_isolate_body body, void *ctx, void *out, size_t out_bytes,
                   double timeout_s, frontier_call *call, int *rc, char *why, size_t why_len)
{
    size_t bytes = HEADER_BYTES + out_bytes;
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        snprintf(why, why_len, "cannot map %zu bytes of shared memory: %s", bytes,
                 strerror(errno));
        return -1;
    }
    isolate_header *h = map;
    memset(h, 0, sizeof *h);
    void *shared_out = (char *)map + HEADER_BYTES;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_len, "cannot fork: %s", strerror(errno));
        munmap(map, bytes);
        return -1;
    }
    if (pid == 0) {
        /* a crash ends the child by its signal, whatever handlers the
         * parent installed (a sanitizer's, for instance) */
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
            signal(fatal[i], SIG_DFL);
        frontier_call child;
        fr_call_init(&child, NULL, 0, call->tensor, call->config);
        child.quantizer = call->quantizer;
        child.rng_state = call->rng_state;
        h->rc = body(ctx, shared_out, &child);
        h->failed = child.failed;
        memcpy(h->error, child.error, sizeof h->error);
        h->error[sizeof h->error - 1] = '\0';
        h->done = 1;
        _exit(0);
    }
    double start = now_s();
    int status = 0, timed_out = 0;
    struct timespec nap = {0, 200000}; /* 0.2 ms, doubling up to 20 ms */
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(why, why_len, "cannot wait for the isolated call: %s", strerror(errno));
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            munmap(map, bytes);
            return -1;
        }
        if (now_s() - start > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = 1;
            break;
        }
        nanosleep(&nap, NULL);
        if (nap.tv_nsec < 20000000)
            nap.tv_nsec *= 2;
    }
    int ok = 0;
    if (timed_out)
        snprintf(why, why_len, "did not finish within %g s (killed)", timeout_s);
    else if (WIFSIGNALED(status))
        snprintf(why, why_len, "crashed with signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (!h->done)
        snprintf(why, why_len, "exited with status %d before returning",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else
        ok = 1;
    if (ok) {
        *rc = h->rc;
        call->failed = h->failed;
        memcpy(call->error, h->error, sizeof call->error);
        if (out_bytes)
            memcpy(out, shared_out, out_bytes);
    }
    munmap(map, bytes);
    return ok ? 0 : -1;
}
