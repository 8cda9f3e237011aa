#!/usr/bin/env bash
# Numeric edge cases named, not silent (docs/dataset.md "Numeric
# flags"): a checkpoint with fp16 scale overflow and underflow (and their
# exact boundaries), an all-zero tensor with -0, subnormals; the /results
# `flags` checked against numpy, one warning line per (tensor, kind); a file
# without the column still reads and merges; merge refuses flags that disagree.
source "$(dirname "$0")/../sweep/lib.sh"
need_python
need_builtins
NUM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$NUM/make_edge_model.py" edge.safetensors
Q=int4-g128-sym,int8-g128-sym,int4-g128-asym,int8-g32-asym,int4-gC-sym,nvfp4,fp8-e4m3-tensor,fp8-e4m3-block128,mxfp4,nf4-g64,mse-int4-g128-sym

expect_rc 0 "sweep of the edge cases" -- "$FRONTIER" sweep edge.safetensors -o run.h5 --device cpu \
  --quantizers "$Q"
cp err.txt sweep.log
if python3 "$NUM/check_flags.py" edge.safetensors run.h5 sweep.log > check.txt; then
  pass "flags equal numpy's, one warning line per (tensor, kind) ($(tr '\n' ' ' < check.txt))"
else
  fail "flags or warnings"; sed 's/^/  /' check.txt >&2; sed 's/^/  log: /' sweep.log >&2
fi

# the rows themselves are those of a sweep without the column: the metrics
# do not depend on it (sweep.reference checks them against a stored run)
python3 - <<'PY' || fail "a /results without flags"
import h5py, numpy as np
with h5py.File("run.h5", "r") as f, h5py.File("old.h5", "w", libver=("v108", "v108")) as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    for name in ("sources", "tensors", "configs", "skipped"):
        f.copy(name, g)
    rows = f["results"][()]
    names = [n for n in rows.dtype.names if n != "flags"]
    old = np.empty(rows.shape, dtype=[(n, rows.dtype[n]) for n in names])
    for n in names:
        old[n] = rows[n]
    g.create_dataset("results", data=old, maxshape=(None,), chunks=True)  # no checksum: an edit
PY
expect_rc 0 "export of a dataset without the flags column" -- "$FRONTIER" export old.h5 --format csv -o old.csv
expect_rc 0 "merge of it with the flagged run" -- "$FRONTIER" merge old.h5 run.h5 -o merged.h5
python3 - <<'PY' && pass "merge keeps the examined flags" || fail "merge lost the flags"
import h5py, numpy as np
a = {(int(r["tensor_id"]), int(r["config_id"])): int(r["flags"]) for r in h5py.File("run.h5")["results"][()]}
t = {int(r["tensor_id"]): r["name"] for r in h5py.File("run.h5")["tensors"][()]}
c = {int(r["config_id"]): r["name"] for r in h5py.File("run.h5")["configs"][()]}
m = h5py.File("merged.h5")
mt = {int(r["tensor_id"]): r["name"] for r in m["tensors"][()]}
mc = {int(r["config_id"]): r["name"] for r in m["configs"][()]}
want = {(t[k[0]], c[k[1]]): v for k, v in a.items()}
got = {(mt[int(r["tensor_id"])], mc[int(r["config_id"])]): int(r["flags"]) for r in m["results"][()]}
assert want == got and all(v & 1 for v in got.values()), (len(want), len(got))
PY

python3 - <<'PY' || fail "editing a copy"
import h5py
with h5py.File("run.h5", "r") as f, h5py.File("bad.h5", "w", libver=("v108", "v108")) as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    for name in ("sources", "tensors", "configs", "results", "skipped"):
        f.copy(name, g)
    rows = g["results"][()]
    rows["flags"][0] ^= 0x20
    g["results"][...] = rows
    del g["results"].attrs["checksum"]
PY
expect_rc 9 "merge refuses rows whose flags disagree" -- "$FRONTIER" merge run.h5 bad.h5 -o conflict.h5
expect_stderr "flags is" "the refusal names the flags field"

python3 - <<'PY' || fail "flipping a flag without touching the checksum"
import h5py
with h5py.File("run.h5", "r") as f, h5py.File("flip.h5", "w", libver=("v108", "v108")) as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    for name in ("sources", "tensors", "configs", "results", "skipped"):
        f.copy(name, g)
    rows = g["results"][()]
    rows["flags"][3] ^= 0x10
    g["results"][...] = rows
PY
expect_rc 4 "a flipped flag is caught by the content checksum" -- "$FRONTIER" export flip.h5 --format csv -o flip.csv
finish
