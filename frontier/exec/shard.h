/*
 * Sharding a sweep's plan: over the CUDA devices of one process
 * (`--device cuda:all`, `cuda:0,2`) and over the ranks of an MPI job
 * (frontier/sweep/sweep_mpi.c). docs/scale-out.md is the user's view.
 *
 *   fr_shard_balance   which shard takes each item: largest cost first, each
 *                      to the shard with the least cost so far (LPT)
 *   fr_devices_parse   --device text -> the devices this process (or this
 *                      rank of a node) runs on
 *   fr_exec_devices    runs items on a device set: the CPU, one CUDA device,
 *                      or several, one thread per device
 *   fr_shard_lost      the message naming the tensors a failed shard left
 *                      unmeasured
 */
#ifndef FR_SHARD_H
#define FR_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/exec/executor.h"

/* The cost of an item: stored bytes x configurations to evaluate (a
 * synthetic tensor counts 4 bytes per element). */
double fr_shard_cost(const fr_sweep_item *it);

/* shard[i] in [0, n_shards) for every item: items by decreasing cost (ties:
 * plan order), each to the shard with the least total so far (ties: the
 * lowest index); load[s] (n_shards entries, may be NULL) receives each
 * shard's total. Deterministic: the same plan gives the same split. */
fr_status fr_shard_balance(const fr_sweep_item *items, size_t n_items, size_t n_shards,
                           size_t *shard, double *load, fr_error *err);

#define FR_MAX_DEVICES 64

/* The devices one process runs on: none (the CPU) or a list of CUDA devices. */
typedef struct fr_devices {
    int n;                   /* 0: the CPU */
    int id[FR_MAX_DEVICES];
    int spread;              /* asked for as a set (cuda:all, cuda:N,M): one thread
                                per device, even when the set has one */
} fr_devices;

/*
 * --device text for the process that is local rank local_rank of
 * local_size on its node (0 of 1 without MPI):
 *   auto (NULL)  CUDA device local_rank mod count when there is one, else the CPU
 *   cpu          the CPU
 *   cuda         CUDA device local_rank mod count (FR_E_DEVICE when none)
 *   cuda:N       device N, whatever the rank
 *   cuda:all     every device; shared among the node's ranks (device i goes
 *                to local rank i mod local_size, or device local_rank mod
 *                count when there are fewer devices than ranks)
 *   cuda:N,M,... those devices, shared the same way
 * FR_E_USAGE for malformed text or a device listed twice, FR_E_DEVICE for
 * an absent device or a binary built without CUDA.
 */
fr_status fr_devices_parse(const char *text, int local_rank, int local_size, fr_devices *out,
                           fr_error *err);

/* "cpu", "cuda:0", "cuda:0,2" into buf. */
void fr_devices_name(const fr_devices *d, char *buf, size_t len);

/* Runs items on d: fr_exec_cpu, fr_exec_cuda on the one device, or, for
 * several, a balanced share per device, each on its own thread, with
 * opt->threads divided among them (all CPUs when opt->threads <= 0). The
 * sink sees one call at a time. When a device fails, the others finish
 * their shares; the error names the tensors left unmeasured. */
fr_status fr_exec_devices(const fr_devices *d, const fr_registry *reg, const fr_sweep_item *items,
                          size_t n_items, const fr_executor_options *opt,
                          const fr_sweep_sink *sink, fr_error *err);

/* An executor (fr_exec_cpu, fr_exec_cuda). */
typedef fr_status (*fr_exec_fn)(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                                const fr_executor_options *opt, const fr_sweep_sink *sink,
                                fr_error *err);

/* fr_exec_devices' several-device path with any executor: n_lanes threads,
 * lane l running run() with opt->device = device[l] on its share (the
 * tests run it with fr_exec_cpu lanes). */
fr_status fr_exec_lanes(fr_exec_fn run, const int *device, int n_lanes, const fr_registry *reg,
                        const fr_sweep_item *items, size_t n_items, const fr_executor_options *opt,
                        const fr_sweep_sink *sink, fr_error *err);

/* Adds the totals of one device's run to *into (times and counts summed,
 * wall_s the longest). */
void fr_cuda_stats_add(fr_cuda_run_stats *into, const fr_cuda_run_stats *s);

/* "3 tensors not measured: 'a', 'b', 'c'" (at most a few names, then
 * "..."), for the items whose done[i] is 0; returns how many there are. */
size_t fr_shard_lost(const fr_sweep_item *items, size_t n_items, const uint8_t *done, char *buf,
                     size_t len);

#endif
