#!/usr/bin/env bash
# The summary of a sweep of the real data/stories260K checkpoint, checked
# against numpy recomputing two configurations from docs/formats.md. It
# checks the CPU reference (--device cpu); the GPU is held to the CPU by
# tests/gpu at the tolerance docs/formats.md gives it.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
expect_rc 0 "sweep of stories260K" -- "$FRONTIER" sweep "$DATA/stories260K" -o run.h5 \
  --quantizers int4-g32-sym,int8-tensor-sym --json --quiet --device cpu
cp out.txt summary.json
if python3 "$HERE/golden_stories.py" "$DATA/stories260K/model.safetensors" summary.json run.h5; then
  pass "summary and rows equal numpy's"
else
  fail "summary or rows differ from numpy's"
fi
# the human table (--verbose: every configuration) names both
# configurations with the same numbers
expect_rc 0 "table summary" -- "$FRONTIER" sweep "$DATA/stories260K" -o run2.h5 \
  --quantizers int4-g32-sym,int8-tensor-sym --device cpu --verbose
python3 - <<'PY' && pass "table matches json" || fail "table differs from json"
import json
s = {c["name"]: c for c in json.load(open("summary.json"))["configs"]}
lines = [l.split() for l in open("out.txt") if l.startswith(("int4-g32-sym ", "int8-tensor-sym "))]
assert len(lines) == 2, lines
for name, bpw, rel, tensors, *_ in lines:
    assert abs(float(bpw) - s[name]["bits_per_weight"]) < 1e-4, (name, bpw)
    assert abs(float(rel) - s[name]["rel_err"]) < 1e-3 * s[name]["rel_err"], (name, rel)
    assert int(tensors) == 36
PY
# the default table: the least rel_err of each band of bits per weight,
# here one configuration in [4, 5) and one in >= 7, with the same numbers
expect_rc 0 "compact summary" -- "$FRONTIER" sweep "$DATA/stories260K" -o run3.h5 \
  --quantizers int4-g32-sym,int8-tensor-sym --device cpu
python3 - <<'PY' && pass "compact table matches json" || fail "compact table differs from json"
import json
s = {c["name"]: c for c in json.load(open("summary.json"))["configs"]}
rows = {}
for l in open("out.txt"):
    for band in ("[4, 5)  ", ">= 7  "):
        if l.startswith(band):
            rows[band.strip()] = l[len(band):].split()
assert sorted(rows) == [">= 7", "[4, 5)"], rows
for band, name in (("[4, 5)", "int4-g32-sym"), (">= 7", "int8-tensor-sym")):
    got, bpw, rel = rows[band]
    assert got == name, (band, got)
    assert abs(float(bpw) - s[name]["bits_per_weight"]) < 1e-4, (name, bpw)
    assert abs(float(rel) - s[name]["rel_err"]) < 1e-3 * s[name]["rel_err"], (name, rel)
PY
finish
