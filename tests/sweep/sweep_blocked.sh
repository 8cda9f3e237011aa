#!/usr/bin/env bash
# --max-memory (docs/sweep.md, "Bounded memory"): tensors over the bound are
# evaluated in blocks of whole rows, and every row they give is bit for bit
# the default sweep's (every float column, every configuration the blocked
# path supports: the 98 built-in row-local ones, the tensor-wide int, fp8
# and nvfp4 scales through the first pass); the rest are in /skipped with
# a reason, not failed.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
# several blocks each: 512 columns -> 128-row blocks (65536-element chunks);
# 640x1024 bf16 -> 128-row blocks with fp8's 128x128 tiles; 1000x256 ends
# with a short block; 129x513 (odd columns) stays one block
SPEC=gaussian:512x512,student-t3:640x1024:bf16,outliers:1000x256,laplace:129x513
run() { "$FRONTIER" sweep "$DATA/stories260K" --synthetic "$SPEC" --seed 3 --quiet --threads 2 -o "$@"; }
expect_rc 0 "default sweep" -- run a.h5
# 1 byte: every tensor in minimal blocks
expect_rc 0 "--max-memory 1 (every tensor blocked)" -- run b.h5 --max-memory 1
python3 "$HERE/blocked_check.py" a.h5 b.h5 '.' 3920 && pass "tiny --max-memory: rows bit for bit" ||
  fail "tiny --max-memory rows differ from the default sweep"
# 1M: the synthetic 512x512, 640x1024 and 1000x256 tensors in blocks of
# 256, 128 and 512 rows; the small ones whole, in the same run
expect_rc 0 "--max-memory 1M (three tensors blocked)" -- run c.h5 --max-memory 1M
python3 "$HERE/blocked_check.py" a.h5 c.h5 'synthetic\.[012]\.' 11727 &&
  pass "1M --max-memory: rows bit for bit" || fail "1M --max-memory rows differ"
grep -q "nf4-g64-dq" <(python3 -c "
import h5py
with h5py.File('c.h5') as f:
    for r in f['skipped'][...]:
        if r['config'] == b'nf4-g64-dq': print(r['config'].decode(), r['reason'].decode())
") && pass "nf4-g64-dq skipped on blocked tensors" || fail "nf4-g64-dq not in /skipped"
expect_rc 2 "--max-memory with --device cuda" -- run d.h5 --max-memory 1G --device cuda
expect_stderr "CPU executor only" "the message says why"
expect_rc 2 "bad --max-memory" -- run e.h5 --max-memory 12X
expect_stderr "invalid --max-memory '12X'" "the message names the value"
finish
