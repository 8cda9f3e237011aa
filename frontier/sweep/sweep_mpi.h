/*
 * `mpirun -n N frontier sweep ...`: the ranks of an MPI job share one sweep
 * (docs/scale-out.md).
 *
 * Every rank parses the same command line, opens the same models and
 * registers the same quantizers; fr_mpi_agree checks that they did. Rank 0
 * alone runs the sweep engine (resume, plan, commits, progress, summary)
 * with fr_mpi_executor as its executor: it splits the plan by cost
 * (frontier/exec/shard.h), sends each rank its share as (source, tensor,
 * configurations), evaluates its own share, and feeds every rank's
 * outcomes into the engine as they arrive, so the one output file is
 * written and committed by rank 0 only. The other ranks run fr_mpi_serve:
 * their share on their own devices, each outcome sent to rank 0.
 *
 * A rank whose executor fails or is interrupted reports it; the others
 * finish, rank 0 names the tensors left unmeasured and commits, and
 * --resume measures them. A rank that dies takes the job down (MPI's
 * default); rank 0 commits what it has when mpirun stops it.
 *
 * Requires MPI_THREAD_SERIALIZED: executors report from their worker
 * threads, one call at a time.
 */
#ifndef FR_SWEEP_MPI_H
#define FR_SWEEP_MPI_H

#ifdef FRONTIER_HAVE_MPI

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/exec/shard.h"
#include "frontier/sweep/sweep.h"

typedef struct fr_mpi fr_mpi;

/* MPI_Init_thread (MPI_THREAD_SERIALIZED), this rank, and its rank among
 * the ranks of its node. FR_E_DEVICE when MPI offers too low a thread level. */
fr_status fr_mpi_start(fr_mpi **out, fr_error *err);
int fr_mpi_rank(const fr_mpi *m);
int fr_mpi_size(const fr_mpi *m);
int fr_mpi_local_rank(const fr_mpi *m);
int fr_mpi_local_size(const fr_mpi *m);

/*
 * Collective, after each rank has set up (registry, sweep, sources) with
 * status mine. Every rank returns the same: FR_OK when all ranks set up
 * alike; the status of the lowest failing rank (*failed_rank) when one
 * failed; FR_E_MISMATCH when a rank opened other models or registered
 * other quantizers than rank 0 (err says which). Then records the sources
 * and this rank's devices and CPU threads (for the job's device label).
 */
fr_status fr_mpi_agree(fr_mpi *m, fr_status mine, const fr_registry *reg,
                       fr_source *const *sources, size_t n_sources, const fr_devices *devices,
                       int threads, int *failed_rank, fr_error *err);

/* Rank 0: the executor for fr_sweep_options.executor. */
const fr_sweep_executor *fr_mpi_executor(fr_mpi *m);

/* Ranks other than 0: waits for this rank's share and evaluates it. FR_OK
 * also when rank 0 stopped before sharing out any work. */
fr_status fr_mpi_serve(fr_mpi *m, const fr_registry *reg, const fr_sweep_options *opt,
                       fr_error *err);

/* Rank 0, after fr_sweep_execute: releases the other ranks when the sweep
 * stopped before its executor ran (a refused --resume, an unwritable
 * output). */
void fr_mpi_release(fr_mpi *m);

/* MPI_Finalize, and frees m. */
void fr_mpi_finish(fr_mpi *m);

#endif
#endif
