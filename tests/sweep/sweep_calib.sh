#!/usr/bin/env bash
# frontier sweep --calib on the real data/stories260K checkpoint: out_rel_err
# equals a float64 trace recomputed with numpy (docs/formats.md, "Error
# metrics"), tensors without statistics keep NaN, k/v projections use their
# block's q_proj statistics, the rows do not depend on the thread count, a
# module matching no tensor is named in a warning, and bad files fail with
# their exit code before the output is written.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
M=$DATA/stories260K
python3 "$HERE/calib_check.py" write "$M/model.safetensors" calib.safetensors
expect_rc 0 "sweep with --calib, 1 thread" -- "$FRONTIER" sweep "$M" -o t1.h5 --calib calib.safetensors \
  --quantizers int4-g32-sym,int8-tensor-sym --device cpu --threads 1
expect_stderr "module\(s\) match no tensor being measured: 'model.layers.9.mlp.up_proj'" \
  "unmatched module named in one warning"
if python3 "$HERE/calib_check.py" check "$M/model.safetensors" calib.safetensors t1.h5; then
  pass "out_rel_err equals numpy's float64 trace; NaN without statistics"
else
  fail "out_rel_err differs from numpy's"
fi
expect_rc 0 "sweep with --calib, 2 threads" -- "$FRONTIER" sweep "$M" -o t2.h5 --calib calib.safetensors \
  --quantizers int4-g32-sym,int8-tensor-sym --device cpu --threads 2 --quiet
python3 - <<'PY' && pass "rows equal across thread counts" || fail "rows differ across thread counts"
import h5py, numpy as np
a, b = (h5py.File(p, "r")["results"][()] for p in ("t1.h5", "t2.h5"))
key = lambda r: (int(r["tensor_id"]), int(r["config_id"]))
a, b = sorted(a, key=key), sorted(b, key=key)
assert len(a) == len(b)
for x, y in zip(a, b):
    for f in ("out_rel_err", "out_sq_err", "out_sq_ref", "rel_err"):
        assert (np.isnan(x[f]) and np.isnan(y[f])) or x[f] == y[f], (f, x[f], y[f])
PY
python3 "$HERE/calib_check.py" write "$M/model.safetensors" nan.safetensors bad-nan
expect_rc 4 "a NaN in a Hessian" -- "$FRONTIER" sweep "$M" -o bad.h5 --calib nan.safetensors --device cpu \
  --quantizers int8-tensor-sym
expect_stderr "nan.safetensors.*model.layers.0.mlp.up_proj" "the message names the file and the module"
[ ! -e bad.h5 ] && pass "no output written for a bad file" || fail "bad.h5 was written"
expect_rc 3 "a missing calibration file" -- "$FRONTIER" sweep "$M" -o bad.h5 --calib nope.safetensors \
  --device cpu --quantizers int8-tensor-sym
expect_stderr "nope.safetensors" "the message names the file"
# the statistics shipped in data/ (examples/calibration/capture.py): every
# block projection gets out_rel_err, and so does the embedding, which this
# checkpoint ties to the output layer (it has no lm_head.weight): it takes
# the statistics captured under lm_head
if [ -f "$M/calib.safetensors" ]; then
  expect_rc 0 "sweep with the shipped statistics" -- "$FRONTIER" sweep "$M" -o shipped.h5 \
    --calib "$M/calib.safetensors" --quantizers int3-g64-asym,nvfp4 --device cpu --json
  expect_stderr "36 of 36 tensors, 36 with a Hessian" "the 35 projections and the tied embedding have statistics"
  expect_stderr "'model.embed_tokens.weight' is tied to the output layer" "the tie is said"
  if grep -q "match no tensor" err.txt; then fail "a module of the shipped file matched nothing"; else
    pass "every module of the shipped file is used"; fi
  python3 - <<'PY' && pass "out_rel_err on every row, the tied embedding's too" || fail "rows without out_rel_err"
import json, h5py, numpy as np
s = {c["name"]: c for c in json.load(open("out.txt"))["configs"]}
assert all(c["out_tensors"] == 36 and 0 < c["out_rel_err"] < 1 for c in s.values()), s
with h5py.File("shipped.h5", "r") as f:
    t = {int(x["tensor_id"]): x["name"].decode() if isinstance(x["name"], bytes) else x["name"] for x in f["tensors"][()]}
    for r in f["results"][()]:
        name = t[int(r["tensor_id"])]
        assert 0 < r["out_rel_err"] < 1, (name, r["out_rel_err"])
PY
else
  fail "data/stories260K/calib.safetensors is missing"
fi
finish
