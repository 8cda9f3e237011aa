/*
 * Plugin isolation (`frontier sweep --isolate-plugins`, docs/plugins.md,
 * "Isolation"): a plugin's function runs in a forked child process that
 * writes its results into shared memory; the parent waits up to a timeout.
 * A child that dies of a signal, exits without finishing, or outlives the
 * timeout (then killed) is a failure of that (tensor, configuration) only,
 * with a message that says which, and the run goes on.
 *
 * What it protects against: crashes (SIGSEGV, abort, exit()), hangs, and
 * writes through stray pointers in the plugin's own call (they land in the
 * child's copy of memory). What it does not: the GPU functions (not run
 * isolated), a plugin that corrupts files or the system, the entry point
 * (run once at load time, in the process), and a deadlock of the child on
 * a lock another thread of the parent held at fork time (it ends as a
 * timeout).
 */
#ifndef FR_ISOLATE_H
#define FR_ISOLATE_H

#include <stddef.h>

#include "frontier/plugin.h"

/* The work done in the child, with its own call (same tensor, config and
 * random stream; no thread pool) and `out` in shared memory. Returns the
 * plugin's status code. */
typedef int (*fr_isolate_body)(void *ctx, void *out, frontier_call *child_call);

/* Runs body in a child. Returns 0 when the child finished: *rc is body's
 * return value and call's error state is the child's. Returns -1 when it
 * did not (why says so: "crashed with signal 11 (Segmentation fault)",
 * "did not finish within 2 s (killed)", "exited with status 3", or that
 * fork or mmap failed). out_bytes of shared memory are handed to body and
 * copied to out afterwards. */
int fr_isolate_run(fr_isolate_body body, void *ctx, void *out, size_t out_bytes,
                   double timeout_s, frontier_call *call, int *rc, char *why, size_t why_len);

#endif
