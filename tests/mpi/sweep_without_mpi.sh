#!/usr/bin/env bash
# A frontier built without MPI refuses to run as one of several processes
# of an MPI launcher (each would sweep everything into one output), and
# runs as before otherwise (one process under `mpirun -n 1` included).
source "$(cd "$(dirname "$0")" && pwd)/../sweep/lib.sh" "$1" "$2"
need_builtins
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 expect_rc 7 "rank 0 of 2, no MPI" -- \
  "$FRONTIER" sweep --synthetic gaussian:16x16 -o a.h5
expect_stderr "built without MPI" "the message says why"
[ ! -e a.h5 ] && pass "nothing written" || fail "a.h5 written"
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 expect_rc 7 "rank 1 of 2, no MPI" -- \
  "$FRONTIER" sweep --synthetic gaussian:16x16 -o a.h5
[ ! -s err.txt ] && pass "rank 1 leaves the message to rank 0" || fail "rank 1 printed: $(cat err.txt)"
PMI_SIZE=1 PMI_RANK=0 expect_rc 0 "one process of a launcher" -- \
  "$FRONTIER" -q sweep --synthetic gaussian:16x16 -o b.h5
finish
