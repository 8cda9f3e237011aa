#!/usr/bin/env bash
# sweep_imatrix.sh FRONTIER INPUTS WORKDIR DATA: `frontier sweep --calib` with
# llama.cpp importance matrices on data/stories260K. INPUTS (make_imatrix.py)
# holds the shipped statistics' act_sq_mean as a GGUF imatrix (GGUF names:
# the Hugging Face checkpoint finds them through the name map) and as a
# legacy .dat (Hugging Face names). Each sweep must: run imat-* and the
# data-free configurations, skip gptq-* ("needs a Hessian", in /skipped),
# keep out_rel_err NaN everywhere, and give the imat-* rows of a sweep with
# the safetensors statistics (whose act_sq_mean they are). Bad files exit 4
# naming the file and the module, before any output. 77 without h5py.
set -u
FRONTIER=$1 IN=$2 WORK=$3 DATA=$4
python3 -c "import h5py, numpy" 2>/dev/null || { echo "skipped: h5py and numpy check the datasets"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
M=$DATA/stories260K
Q=imat-int4-g32-sym,imat-int3-g32-asym,int4-g32-sym,gptq-int4-g32-sym
failed=0
fail() { echo "FAIL: $*"; failed=1; }
for kind in gguf dat; do
  "$FRONTIER" sweep "$M" -o $kind.h5 --calib "$IN/stories260K.imatrix.$kind" --quantizers $Q \
    --device cpu --threads 2 > $kind.out 2> $kind.err || { cat $kind.err; fail "$kind: sweep failed"; }
  grep -q "calibration statistics '.*stories260K.imatrix.$kind'" $kind.err ||
    fail "$kind: no info line about the statistics"
  if grep -q "match no tensor being measured" $kind.err; then
    cat $kind.err; fail "$kind: modules left unmatched"
  fi
done
# a GGUF model (when data/ has one) matches the GGUF names directly
if [ -f "$DATA/stories260K.gguf" ]; then
  "$FRONTIER" sweep "$DATA/stories260K.gguf" -o gguf_model.h5 --calib "$IN/stories260K.imatrix.gguf" \
    --quantizers imat-int4-g32-sym --device cpu 2> gguf_model.err > /dev/null ||
    { cat gguf_model.err; fail "GGUF model: sweep failed"; }
  grep -q "36 of 36 tensors, 0 with a Hessian" gguf_model.err ||
    { cat gguf_model.err; fail "GGUF model: not every tensor found its statistics"; }
fi
"$FRONTIER" sweep "$M" -o ref.h5 --calib "$M/calib.safetensors" --quantizers $Q --device cpu \
  --threads 2 --quiet > /dev/null || fail "reference sweep failed"
python3 - <<'PY' || fail "dataset checks"
import h5py, numpy as np

def rows(path):
    f = h5py.File(path, "r")
    names = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][()]}
    configs = {int(r["config_id"]): r["name"].decode() for r in f["configs"][()]}
    out = {(names[int(r["tensor_id"])], configs[int(r["config_id"])]): r for r in f["results"][()]}
    skipped = [(r["name"].decode(), r["config"].decode(), r["reason"].decode()) for r in f["skipped"][()]]
    return out, skipped

ref, _ = rows("ref.h5")
for kind in ("gguf", "dat"):
    got, skipped = rows(kind + ".h5")
    imat = [k for k in got if k[1].startswith("imat-")]
    assert len(imat) == 2 * 36, (kind, len(imat))  # 35 linear layers + the tied embedding
    assert not [k for k in got if k[1].startswith("gptq-")], kind
    assert all(np.isnan(r["out_rel_err"]) for r in got.values()), kind
    hess = [s for s in skipped if s[1] == "gptq-int4-g32-sym"]
    assert len(hess) == 36 and all("needs a Hessian" in s[2] for s in hess), (kind, hess[:2])
    for k in imat:
        assert got[k]["rel_err"] == ref[k]["rel_err"], (kind, k, got[k]["rel_err"], ref[k]["rel_err"])
    for k, r in got.items():
        if k[1] == "int4-g32-sym":
            assert r["rel_err"] == ref[k]["rel_err"], (kind, k)
print("imatrix sweeps: 72 imat rows each equal the safetensors statistics' rows; gptq skipped; "
      "out_rel_err NaN")
PY
# bad files: exit 4 before any output, naming the file and the module
python3 - "$IN/stories260K.imatrix.dat" bad.dat <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack_from("<i", b, 8 - 4)[0]  # first name length
off = 8 + n + 8                            # first entry's values
b[off + 4 * 3:off + 4 * 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
PY
"$FRONTIER" sweep "$M" -o bad.h5 --calib bad.dat --quantizers $Q --device cpu 2> bad.err
rc=$?
[ $rc = 4 ] || fail "a NaN in a .dat: exit $rc, not 4"
grep -q "bad.dat': module 'lm_head': value\[3\] is nan" bad.err || { cat bad.err; fail "message"; }
[ ! -e bad.h5 ] || fail "bad.h5 written"
head -c 100 "$IN/stories260K.imatrix.gguf" > cut.gguf
"$FRONTIER" sweep "$M" -o bad.h5 --calib cut.gguf --quantizers $Q --device cpu 2> cut.err
rc=$?
[ $rc = 4 ] || fail "a truncated GGUF imatrix: exit $rc, not 4"
grep -q "cut.gguf" cut.err || { cat cut.err; fail "message names the file"; }
[ ! -e bad.h5 ] || fail "bad.h5 written"
[ $failed = 0 ] && echo "sweep_imatrix: all checks passed"
exit $failed
