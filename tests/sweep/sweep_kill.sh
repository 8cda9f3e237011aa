#!/usr/bin/env bash
# Crash safety: a sweep killed with SIGKILL at random moments (20 times,
# resuming each time) always leaves an output that opens with h5py and with
# frontier and holds at least the rows of the previous commit; --resume then
# completes it, and its rows equal those of an uninterrupted run (timing
# columns aside), also with another thread count.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
SPEC=gaussian:512x512*8,outliers:256x512*8,student-t3:128x512*8
Q=(--quantizers 'int4*,int8-g32-sym,fp8*,nvfp4,mx*,nf4*')
export FRONTIER_COMMIT_INTERVAL=0.05   # commit often, so kills land around commits too
KILLS=${FRONTIER_TEST_KILLS:-20}
seed=${FRONTIER_TEST_SEED:-$(( $(date +%s%N) % 100000 ))}
RANDOM=$seed
echo "random delays seeded with $seed (FRONTIER_TEST_SEED=$seed reproduces them)"

t0=$(date +%s%N)
expect_rc 0 "uninterrupted reference run" -- "$FRONTIER" sweep --synthetic "$SPEC" "${Q[@]}" -o ref.h5 --threads 1 --quiet
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ref_rows=$(python3 "$HERE/h5tool.py" rows ref.h5)
# kill delays: uniform in [0, max(250 ms, a tenth of the reference run)]:
# twenty kills then span about one run, on fast and on slow (sanitizer)
# builds alike, so most land mid-way
max_ms=$(( ref_ms / 10 > 250 ? ref_ms / 10 : 250 ))
echo "reference run: $ref_ms ms, $ref_rows rows; kill delays up to $max_ms ms"

rows=0; killed=0; finished=0
for i in $(seq 1 "$KILLS"); do
  ms=$(( (RANDOM * 32768 + RANDOM) % max_ms ))
  delay=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
  "$FRONTIER" sweep --synthetic "$SPEC" "${Q[@]}" -o run.h5 --resume --threads 1 --quiet >/dev/null 2>err.txt &
  pid=$!
  sleep "$delay"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null
  if [ ! -e run.h5 ]; then
    # only possible before the very first commit
    [ "$rows" = 0 ] || fail "kill $i after ${delay}s: run.h5 vanished"
    echo "kill $i after ${delay}s: before the first commit"
    continue
  fi
  now=$(python3 "$HERE/h5tool.py" rows run.h5 2>&1) || { fail "kill $i after ${delay}s: h5py cannot read run.h5: $now"; continue; }
  rm -f check.h5
  "$FRONTIER" merge run.h5 -o check.h5 -q 2>merge_err.txt || fail "kill $i after ${delay}s: frontier cannot read run.h5: $(cat merge_err.txt)"
  [ "$now" -ge "$rows" ] || fail "kill $i after ${delay}s: rows went from $rows to $now"
  echo "kill $i after ${delay}s: $now rows"
  rows=$now
  [ "$now" = "$ref_rows" ] && finished=$((finished + 1))
done
echo "$killed of $KILLS runs were killed mid-way, $finished found the run complete"
expect_rc 0 "the final --resume completes the run" -- "$FRONTIER" sweep --synthetic "$SPEC" "${Q[@]}" -o run.h5 --resume --threads 2 --quiet
if python3 "$HERE/h5tool.py" same ref.h5 run.h5; then
  pass "resumed rows equal the uninterrupted run's ($ref_rows rows)"
else
  fail "resumed rows differ from the uninterrupted run's"
fi
[ "$killed" -ge $((KILLS / 2)) ] || fail "only $killed kills hit a running sweep: the workload is too small"

# SIGTERM twice, 50 ms apart (coreutils' `timeout` signals the command and
# then its process group, so the command gets it twice): the sweep still
# stops after the jobs in flight (here a 4096x4096 tensor's, about 0.25 s
# each), commits, and exits 130; a handler reset by the first signal would
# let the second kill it (exit 143) before its final commit
BIG=gaussian:4096x4096*4
rm -f term.h5
"$FRONTIER" sweep --synthetic "$BIG" "${Q[@]}" -o term.h5 --threads 1 --quiet >/dev/null 2>term_err.txt &
pid=$!
for _ in $(seq 1 400); do [ -e term.h5 ] && break; sleep 0.05; done   # planned and first commit
sleep 0.5
kill -TERM "$pid" 2>/dev/null
sleep 0.05
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
term_rows=$(python3 "$HERE/h5tool.py" rows term.h5 2>&1)
if [ "$rc" = 130 ] && grep -q "interrupted: $term_rows rows committed" term_err.txt; then
  pass "SIGTERM twice: exit 130, $term_rows rows committed ($(head -c 200 term_err.txt))"
else
  fail "SIGTERM twice: exit $rc (expected 130), rows '$term_rows', stderr: $(head -c 400 term_err.txt)"
fi
# pareto on the unfinished run says how many tensors it lacks
unmeasured=$(python3 -c "
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r') as f:
    print(f['tensors'].shape[0] - len(np.unique(f['results']['tensor_id'])))" term.h5)
"$FRONTIER" pareto term.h5 --no-store >/dev/null 2>pareto_err.txt
if [ "$unmeasured" -gt 0 ] && grep -q "warning: $unmeasured of the dataset's 4 selected tensors .* have no result yet" pareto_err.txt; then
  pass "pareto on the stopped run: $(cat pareto_err.txt)"
else
  fail "pareto on the stopped run ($unmeasured of 4 tensors without rows): $(cat pareto_err.txt)"
fi
finish
