#!/usr/bin/env bash
# A per-expert llama.cpp importance matrix (docs/calibration.md, "llama.cpp
# importance matrices") on data/tiny-moe.gguf: make_imatrix_moe.py writes an
# imatrix.gguf in llama.cpp's layout (an expert stack's in_sum2 [E, in] and
# counts [E], one expert of blk.1.ffn_down_exps with no token) and the same
# statistics as a safetensors calibration file (act_sq_mean [E, in] and
# expert_token_counts, the means as the imatrix reader forms them). The two
# sweeps must give the same /results, /expert_results and /skipped rows bit
# for bit (imat- on every stack, gptq- skipped for want of a Hessian), the
# stacks' imat rows must exist, and the expert without tokens gets one
# warning line in both.
# usage: gguf_imatrix.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: gguf_imatrix.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: gguf_imatrix.sh FRONTIER_BINARY DATA_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch moe-imatrix
need_python numpy h5py gguf
gg=$data/tiny-moe.gguf
[ -f "$gg" ] || { echo "FAIL: no $gg"; exit 1; }
python3 "$here/make_imatrix_moe.py" "$gg" imatrix.gguf calib.safetensors || { echo "FAIL: make_imatrix_moe.py"; exit 1; }
q=imat-int4-g32-sym,imat-int3-gC-asym,int4-g32-sym,gptq-int4-g32-sym
for kind in imatrix.gguf calib.safetensors; do
  "$frontier" sweep "$gg" --calib "$kind" --quantizers "$q" --split-experts --device cpu \
    --exclude 'token_embd' -o "$kind.h5" > "$kind.out" 2> "$kind.err" ||
    { cat "$kind.err"; fail "sweep with $kind"; }
  grep -q "blk.1.ffn_down_exps.*expert 2" "$kind.err" ||
    { cat "$kind.err"; fail "$kind: no warning for blk.1.ffn_down_exps expert 2 (no tokens)"; }
done
grep -q "calibration statistics '.*imatrix.gguf'" imatrix.gguf.err ||
  fail "no info line about the importance matrix"
python3 - imatrix.gguf.h5 calib.safetensors.h5 <<'PY' || fail "the two sweeps differ"
import sys, h5py, numpy as np
def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)
def load(path):
    with h5py.File(path, "r") as f:
        t = {int(x["tensor_id"]): text(x["name"]) for x in f["tensors"][...]}
        c = {int(x["config_id"]): text(x["name"]) for x in f["configs"][...]}
        rows = {}
        for table in ("results", "expert_results"):
            for r in f[table][...]:
                key = (table, t[int(r["tensor_id"])], c[int(r["config_id"])],
                       int(r["expert"]) if table == "expert_results" else -1)
                rows[key] = tuple(r[k].item() for k in ("total_bits", "rel_err", "max_abs_err",
                                                         "sq_err", "cosine", "flags"))
        skipped = sorted((text(s["name"]), text(s["config"]), text(s["reason"]))
                         for s in f["skipped"][...])
    return rows, skipped
a, sa = load(sys.argv[1])
b, sb = load(sys.argv[2])
bad = 0
if set(a) != set(b):
    print("FAIL: different rows:", sorted(set(a) ^ set(b))[:6])
    bad += 1
for k in sorted(set(a) & set(b)):
    if a[k] != b[k]:
        bad += 1
        if bad <= 5:
            print("FAIL:", k, a[k], "!=", b[k])
if sa != sb:
    print("FAIL: /skipped differs:", [x for x in sa if x not in sb][:3], [x for x in sb if x not in sa][:3])
    bad += 1
stacks = {k[1] for k in a if k[2].startswith("imat-") and "_exps" in k[1] and k[0] == "results"}
if len(stacks) != 6:
    print("FAIL: imat rows on", len(stacks), "stacks, expected 6:", sorted(stacks))
    bad += 1
gptq = [s for s in sa if s[1].startswith("gptq-")]
if not gptq or any("Hessian" not in s[2] for s in gptq):
    print("FAIL: gptq- not skipped for want of a Hessian:", gptq[:2])
    bad += 1
n_exp = sum(1 for k in a if k[0] == "expert_results")
print(f"{len(a)} rows ({n_exp} expert rows) equal, {len(sa)} skipped pairs equal; imat on {len(stacks)} stacks")
sys.exit(1 if bad else 0)
PY
[ "$failures" -eq 0 ] && pass "a per-expert imatrix sweeps as its safetensors twin" && echo "gguf_imatrix: all checks passed"
exit $((failures > 0))
