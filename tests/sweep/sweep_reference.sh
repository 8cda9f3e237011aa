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
# Every configuration of the demo's sweep (701: data-free, calibrated and
# optimised, with the output error from the shipped statistics), against a
# sha256 per configuration of its 36 rows made at f904653, before the second
# architecture change (the 14 of llama.cpp's super-block types and IQ4,
# ggml-* and imat-ggml-*, added when they were, their blocks checked against
# ggml's by tests/llama; their 20 lines regenerated with `reference_rows.py
# digest` when a row no block divides became llama-quantize's fallback:
# down_proj's 5 rows of 172 columns (F16) under every one of them, and all
# 36 rows of the super-block types, whose rows of 64 fall back to Q4_0,
# Q5_0, Q5_1, Q8_0 or IQ4_NL; every other configuration's digest is
# unchanged): a refactor of the families, the executors or the sweep that
# alters one bit of one row names the configuration here.
expect_rc 0 "sweep of stories260K with its calibration, every configuration" -- "$FRONTIER" sweep "$DATA/stories260K" --bits 2..8 \
  --calib "$DATA/stories260K/calib.safetensors" -o calibrated.h5 --quiet --json --device cpu
if python3 "$HERE/reference_rows.py" compare-digest calibrated.h5 "$HERE/reference/stories260K-calibrated-f904653.tsv"; then
  pass "calibrated rows equal the stored digests"
else
  fail "calibrated rows differ from tests/sweep/reference/stories260K-calibrated-f904653.tsv"
fi
finish
