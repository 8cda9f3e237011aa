#!/usr/bin/env bash
# A rank that fails: a configuration failing on a tensor (recorded in
# /skipped as with one process), a rank interrupted mid-sweep (the others
# finish, the lost tensor is named, --resume completes it without redoing
# the rest), rank 0 interrupted, a rank killed (the job ends, the output
# stays readable, --resume completes it). tests/mpi/fail_plugin.c fails on
# the tensors of one shape when FRONTIER_TEST_FAIL=MODE:RxC says so.
source "$(cd "$(dirname "$0")" && pwd)/mpi_lib.sh"
PLUGIN=${4:?usage: sweep_mpi_failure.sh FRONTIER DATA MPIEXEC FAIL_PLUGIN}
# Costs 256x520 > 256x512 > 256x504 > 128x96 over 2 ranks, largest first to
# the least loaded: rank 0 takes 256x520 and 128x96, rank 1 takes 256x512
# and then 256x504 (docs/scale-out.md). One thread and one tensor per batch
# make the order within a rank the plan's.
SPEC="gaussian:256x512,gaussian:256x520,gaussian:256x504,laplace:128x96"
ARGS=(sweep --synthetic "$SPEC" --plugin "$PLUGIN" --quantizers 'int4*,failtest*'
      --threads 1 --cpu-batch-bytes 0 --device cpu)

FRONTIER_TEST_FAIL= expect_rc 0 "one process" -- "$FRONTIER" -q "${ARGS[@]}" -o ref.h5
all=$(rows ref.h5)

# ---- a configuration fails on a tensor: /skipped, as with one process ----
export FRONTIER_TEST_FAIL=error:256x512
expect_rc 1 "one process, failtest fails on 256x512" -- "$FRONTIER" -q "${ARGS[@]}" -o err1.h5
expect_rc 1 "2 ranks, failtest fails on 256x512 (rank 1)" -- mpi 2 -q "${ARGS[@]}" -o err2.h5
expect_stderr "failtest: asked to fail on 256x512" "the failure is reported"
same err1.h5 err2.h5 "the failed configuration is in /skipped as with one process"

# ---- rank 1 interrupted after its first tensor ----
export FRONTIER_TEST_FAIL=term:256x512
expect_rc 130 "2 ranks, rank 1 interrupted" -- mpi 2 "${ARGS[@]}" -o term.h5
expect_stderr "rank 1 on '.*' was interrupted" "the interrupted rank is named"
expect_stderr "1 tensor not measured: 'synthetic.2.gaussian'" "the lost tensor is named"
expect_stderr "--resume" "the message says how to finish"
part=$(rows term.h5)
[ "$part" != unreadable ] && [ "$part" -lt "$all" ] && pass "term.h5 is readable, $part of $all rows" ||
  fail "term.h5: $part rows of $all"
export FRONTIER_TEST_FAIL=
expect_rc 0 "2 ranks resume" -- mpi 2 "${ARGS[@]}" --resume -o term.h5
expect_stderr "resuming 'term.h5': $part rows present, 1 tensors with work left" \
  "only the lost tensor is measured again"
same ref.h5 term.h5 "the resumed run has the rows of one process"

# ---- rank 0 interrupted: the whole job stops ----
export FRONTIER_TEST_FAIL=term:256x520
expect_rc 130 "2 ranks, rank 0 interrupted" -- mpi 2 "${ARGS[@]}" -o term0.h5
[ "$(rows term0.h5)" != unreadable ] && pass "term0.h5 is readable" || fail "term0.h5 unreadable"
export FRONTIER_TEST_FAIL=
expect_rc 0 "3 ranks resume" -- mpi 3 -q "${ARGS[@]}" --resume -o term0.h5
same ref.h5 term0.h5 "resumed after rank 0 was interrupted"

# ---- rank 1 killed: mpirun ends the job; the file stays whole ----
export FRONTIER_TEST_FAIL=kill:256x512
mpi 2 "${ARGS[@]}" -o kill.h5 >out.txt 2>err.txt
rc=$?
[ $rc -ne 0 ] && pass "a killed rank fails the job (exit $rc)" || fail "a killed rank: exit 0"
[ "$(rows kill.h5)" != unreadable ] && pass "kill.h5 is readable ($(rows kill.h5) rows)" ||
  fail "kill.h5 unreadable"
export FRONTIER_TEST_FAIL=
expect_rc 0 "2 ranks resume after the kill" -- mpi 2 -q "${ARGS[@]}" --resume -o kill.h5
same ref.h5 kill.h5 "resumed after a rank was killed"

finish
