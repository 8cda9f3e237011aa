#!/usr/bin/env bash
# The CPU sweep of data/stories260K over every built-in configuration writes
# exactly the rows stored in tests/sweep/reference/ (made at d4f971c, before
# the architecture change): every float bit for bit, every size exactly.
# A change that alters a single rounding fails here.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
expect_rc 0 "sweep of stories260K, every configuration of the kernel families" -- "$FRONTIER" sweep "$DATA/stories260K" --quantizers int,fp8,nvfp4,mx,nf4 \
  -o run.h5 --quiet --device cpu
if python3 "$HERE/reference_rows.py" compare run.h5 "$HERE/reference/stories260K-d4f971c.tsv"; then
  pass "rows equal the stored reference"
else
  fail "rows differ from tests/sweep/reference/stories260K-d4f971c.tsv"
fi
finish
