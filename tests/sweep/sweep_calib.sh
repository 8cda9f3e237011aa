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
# --diagonal-output-error: statistics with act_sq_mean only (what an
# importance matrix holds) give out_rel_err from the diagonal, sum_ij
# d_j dW_ij^2; without the option they give none; the rows do not depend on
# the thread count (row blocks: sweep_blocked.sh); /tensors says which basis
python3 "$HERE/calib_check.py" write "$M/model.safetensors" diag.safetensors diag-only
expect_rc 2 "--diagonal-output-error without --calib" -- "$FRONTIER" sweep "$M" -o dx.h5 \
  --diagonal-output-error --quantizers int8-tensor-sym --device cpu
expect_stderr "diagonal-output-error.*--calib" "the usage error names --calib"
expect_rc 0 "diagonal statistics without --diagonal-output-error" -- "$FRONTIER" sweep "$M" -o dn.h5 \
  --calib diag.safetensors --quantizers int4-g32-sym,int8-tensor-sym --device cpu --threads 2
expect_stderr "34 of 36 tensors, 0 with a Hessian \(out_rel_err\)$" "the info line counts no output error"
expect_rc 0 "--diagonal-output-error, 1 thread" -- "$FRONTIER" sweep "$M" -o d1.h5 --calib diag.safetensors \
  --diagonal-output-error --quantizers int4-g32-sym,int8-tensor-sym --device cpu --threads 1
expect_stderr "34 of 36 tensors, 0 with a Hessian \(out_rel_err\), 34 with its diagonal only" \
  "the info line counts the diagonal's tensors"
grep -q "on 34 tensors from the diagonal of X^T X only" out.txt &&
  pass "the summary says out_rel_err is the diagonal's" || { cat out.txt; fail "summary line"; }
if python3 "$HERE/calib_check.py" check-diag "$M/model.safetensors" diag.safetensors d1.h5; then
  pass "the diagonal output error equals numpy's float64 sums"
else
  fail "the diagonal output error differs from numpy's"
fi
expect_rc 0 "--diagonal-output-error, 2 threads" -- "$FRONTIER" sweep "$M" -o d2.h5 \
  --calib diag.safetensors --diagonal-output-error --quantizers int4-g32-sym,int8-tensor-sym \
  --device cpu --threads 2 --quiet
python3 - <<'PY' && pass "equal rows on 1 and 2 threads; bases on /tensors" || fail "diagonal rows"
import h5py, numpy as np
def load(p):
    with h5py.File(p, "r") as f:
        t = {int(x["tensor_id"]): (x["name"].decode(), x["out_error"].decode()) for x in f["tensors"][()]}
        return t, {(t[int(r["tensor_id"])][0], int(r["config_id"])): r for r in f["results"][()]}
t1, a = load("d1.h5")
_, b = load("d2.h5")
assert a.keys() == b.keys()
for k in a:
    for f in ("out_sq_err", "out_sq_ref", "rel_err"):
        x, y = a[k][f], b[k][f]
        assert (np.isnan(x) and np.isnan(y)) or x == y, (k, f, x, y)
tn, n = load("dn.h5")
assert all(np.isnan(r["out_rel_err"]) for r in n.values()) and all(v[1] == "" for v in tn.values())
th, _ = load("t1.h5")
bases = {v[1] for v in th.values()}
assert bases == {"hessian", ""}, bases  # one module is left out of the Hessian file
assert sum(v[1] == "diagonal" for v in t1.values()) == 34
PY
expect_rc 0 "pareto on the diagonal run" -- "$FRONTIER" pareto d1.h5 --no-store
grep -q "^out_rel_err: on 34 tensors from the diagonal of the inputs' second moment only" out.txt &&
  pass "pareto says out_rel_err is the diagonal's" || { cat out.txt; fail "pareto's line"; }
expect_rc 0 "allocate on the diagonal's output error" -- "$FRONTIER" allocate d1.h5 --budget 6 \
  --metric out_rel_err --no-store
grep -q "^out_rel_err: 34 of 34 tensors from the diagonal of the inputs' second moment only" out.txt &&
  pass "allocate says out_rel_err is the diagonal's" || { cat out.txt; fail "allocate's line"; }
# a run's tensors keep one basis: resuming the diagonal run with the Hessian
# file, or merging it with the Hessian run, is refused (exit 9)
expect_rc 9 "--resume with a Hessian where the run has the diagonal" -- "$FRONTIER" sweep "$M" -o d1.h5 \
  --resume --calib calib.safetensors --quantizers int4-g32-sym,int8-tensor-sym,int3-g64-asym --device cpu
expect_stderr "cannot resume 'd1.h5': tensor '.*' has its output error from the diagonal there, from the hessian now" \
  "the message names the run, the tensor and both bases"
expect_rc 9 "merging a diagonal run with a Hessian run" -- "$FRONTIER" merge d1.h5 t1.h5 -o m.h5
expect_stderr "output error from the (diagonal|hessian) in '.*' but from the (diagonal|hessian)" \
  "the merge names the tensor and both bases"
[ ! -e m.h5 ] && pass "no merged file written" || fail "m.h5 was written"
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
