#!/usr/bin/env bash
# Results do not depend on the thread count nor on the CPU executor's
# schedule (many jobs in parallel, or one job at a time parallel inside):
# every row is bitwise equal (timing columns aside).
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
# 512x512 tensors span several 65536-element reduction chunks; the 1-D and
# odd shapes cover short groups
SPEC=gaussian:512x512,student-t3:300x257,outliers:129x513
# one or more configurations of every built-in family
Q='int4*,int8-g32-sym,fp8*,nvfp4,mx*,nf4*'
run() { "$FRONTIER" sweep "$DATA/stories260K" --synthetic "$SPEC" --seed 3 --quantizers "$Q" --quiet -o "$@"; }
expect_rc 0 "1 thread" -- run t1.h5 --threads 1
expect_rc 0 "2 threads" -- run t2.h5 --threads 2
expect_rc 0 "3 threads" -- run t3.h5 --threads 3
export FRONTIER_CPU_BATCH_BYTES=0      # one tensor per batch
expect_rc 0 "2 threads, one tensor per batch" -- run t2b.h5 --threads 2
export FRONTIER_CPU_PARALLEL_BYTES=0   # and its configurations one at a time, parallel inside
expect_rc 0 "3 threads, one job at a time" -- run t3s.h5 --threads 3
unset FRONTIER_CPU_BATCH_BYTES FRONTIER_CPU_PARALLEL_BYTES
for f in t2.h5 t3.h5 t3s.h5 t2b.h5; do
  python3 "$HERE/h5tool.py" same t1.h5 "$f" && pass "$f = t1.h5" || fail "$f differs from t1.h5"
done
finish
