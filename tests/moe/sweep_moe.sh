#!/usr/bin/env bash
# Expert stacks (docs/formats.md "Expert tensors") on data/tiny-moe:
# - each [E, out, in] stack's row equals its experts swept as E separate 2-D
#   tensors (the stack split by hand, tests/moe/split_fixture.py): sq_err and
#   sq_norm summed in expert order, bits added, max_abs_err the max; every
#   other tensor's rows unchanged bit for bit
# - --split-experts rows are those separate rows and sum to the stack's row;
#   without it there is no /expert_results table
# - thread counts and schedules do not change a row; --resume keeps them
# - merge carries /expert_results
# - a NaN in one expert skips the stack once, as a whole
# - pareto --by class shows attention against experts, one row per stored tensor
# usage: sweep_moe.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: sweep_moe.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: sweep_moe.sh FRONTIER_BINARY DATA_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch moe-test
need_python numpy h5py

model=$data/tiny-moe
[ -f "$model/model.safetensors" ] || { echo "FAIL: no $model (python3 data/make_moe_fixture.py)"; exit 1; }
# the fixture is what its script makes
python3 "$data/make_moe_fixture.py" -o remade >/dev/null &&
  cmp -s remade/model.safetensors "$model/model.safetensors" && pass "data/tiny-moe is what make_moe_fixture.py writes" ||
  fail "data/tiny-moe differs from what data/make_moe_fixture.py writes"

q=nvfp4,int4-tensor-sym,int4-tensor-asym,fp8-e4m3-tensor,fp8-e5m2-tensor,fp8-e4m3-channel,fp8-e4m3-block128,int4-g128-asym,int3-gC-sym,mxfp4,nf4-g64
python3 "$here/split_fixture.py" "$model/model.safetensors" split.safetensors || exit 1

"$frontier" --quiet sweep "$model" --quantizers "$q" --split-experts --device cpu -o fused.h5 >/dev/null 2>err.txt ||
  { fail "sweep --split-experts"; cat err.txt; }
"$frontier" --quiet sweep split.safetensors --quantizers "$q" --device cpu -o split.h5 >/dev/null 2>err.txt ||
  { fail "sweep of the split checkpoint"; cat err.txt; }
python3 "$here/check_moe.py" split fused.h5 split.h5 || fail "stack rows against their experts"

# one thread, tiny batches, every configuration inside one tensor: the same rows
"$frontier" --quiet sweep "$model" --quantizers "$q" --split-experts --device cpu --threads 1 \
  --cpu-batch-bytes 1k --cpu-parallel-bytes 1k -o serial.h5 >/dev/null 2>err.txt ||
  { fail "serial sweep"; cat err.txt; }
python3 "$here/check_moe.py" same fused.h5 serial.h5 || fail "rows depend on the schedule"

# without --split-experts: the same /results, no /expert_results
"$frontier" --quiet sweep "$model" --quantizers "$q" --device cpu -o plain.h5 >/dev/null 2>err.txt ||
  { fail "sweep without --split-experts"; cat err.txt; }
python3 "$here/check_moe.py" nosplit plain.h5 && pass "no /expert_results without --split-experts" ||
  fail "/expert_results without --split-experts"

# nvfp4 on gate_up [4, 128, 64]: a 32-bit global scale per expert
python3 - fused.h5 <<'PY' || fail "nvfp4 bits of an expert stack"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
t = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][...]}
c = {int(r["config_id"]): r["name"].decode() for r in f["configs"][...]}
for r in f["results"][...]:
    if t[int(r["tensor_id"])].endswith("experts.gate_up_proj") and c[int(r["config_id"])] == "nvfp4":
        want = 4 * (128 * 64 * 4 + 128 * 64 // 16 * 8 + 32)
        assert int(r["total_bits"]) == want, (int(r["total_bits"]), want)
        print("ok: nvfp4 on a [4,128,64] stack stores 4 global scales:", r["bits_per_weight"])
        sys.exit(0)
sys.exit(1)
PY

# --resume of a complete split run measures nothing new and keeps the rows
cp fused.h5 resumed.h5
"$frontier" --quiet sweep "$model" --quantizers "$q" --split-experts --device cpu --resume -o resumed.h5 >/dev/null 2>err.txt ||
  { fail "resume"; cat err.txt; }
python3 "$here/check_moe.py" same fused.h5 resumed.h5 || fail "resume changed rows"

# pareto --by class: attention against experts, one configuration per stored tensor
if "$frontier" pareto plain.h5 --by class --verbose >pareto.txt 2>err.txt; then
  grep -q '^expert: 14 of 14 tensors' pareto.txt && grep -q '^attn_q: 2 of 2 tensors' pareto.txt &&
    pass "pareto --by class: attn_q and expert groups (14 stored expert tensors)" ||
    { fail "pareto --by class groups"; cat pareto.txt; }
  "$frontier" pareto fused.h5 --by class --verbose >pareto_split.txt 2>err.txt &&
    grep -q '^expert: 14 of 14 tensors' pareto_split.txt &&
    pass "pareto ignores /expert_results" || { fail "pareto with /expert_results"; cat pareto_split.txt err.txt; }
else
  fail "pareto --by class"; cat err.txt
fi
"$frontier" --quiet allocate fused.h5 --budget 4.5 -o recipe.json >/dev/null 2>err.txt &&
  python3 -c 'import json,sys; r=json.load(open("recipe.json")); s=json.dumps(r); sys.exit(0 if "gate_up_proj" in s and "gate_up_proj.0" not in s else 1)' &&
  pass "allocate: one choice per stored tensor" || { fail "allocate on a split run"; cat err.txt; }

# merge carries /expert_results: two halves of the configurations merged
# give the rows of one run with all of them
"$frontier" --quiet sweep "$model" --quantizers nvfp4,int4-tensor-sym --split-experts --device cpu -o half1.h5 >/dev/null 2>err.txt &&
"$frontier" --quiet sweep "$model" --quantizers fp8-e4m3-tensor,int4-g128-asym --split-experts --device cpu -o half2.h5 >/dev/null 2>&1 &&
"$frontier" --quiet sweep "$model" --quantizers nvfp4,int4-tensor-sym,fp8-e4m3-tensor,int4-g128-asym --split-experts --device cpu -o whole.h5 >/dev/null 2>&1 &&
"$frontier" --quiet merge half1.h5 half2.h5 fused.h5 -o merged.h5 >/dev/null 2>err.txt &&
"$frontier" --quiet merge half1.h5 half2.h5 -o merged2.h5 >/dev/null 2>>err.txt ||
  { fail "sweeps or merges of the halves"; cat err.txt; }
python3 "$here/check_moe.py" same merged2.h5 whole.h5 && python3 "$here/check_moe.py" same merged.h5 fused.h5 ||
  fail "merge and /expert_results"

# a NaN in one expert skips the stack once, as a whole; the other tensors go on
python3 - "$model/model.safetensors" nan.safetensors <<'PY' || exit 1
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
t = h["model.layers.0.mlp.experts.down_proj"]
at = 8 + n + t["data_offsets"][0] + 2 * (2 * 64 * 64 + 5)   # expert 2, element 5
b[at:at + 2] = b"\xc0\x7f"                                 # bf16 NaN
open(sys.argv[2], "wb").write(bytes(b))
PY
"$frontier" --quiet sweep nan.safetensors --quantizers nvfp4,int4-tensor-sym --split-experts --device cpu -o nan.h5 >/dev/null 2>err.txt ||
  { fail "sweep with a NaN expert"; cat err.txt; }
python3 - nan.h5 <<'PY' && pass "a NaN expert skips its stack once" || fail "a NaN expert"
import math, sys, h5py
f = h5py.File(sys.argv[1], "r")
name = "model.layers.0.mlp.experts.down_proj"
t = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][...]}
skips = [(r["config"].decode(), r["reason"].decode()) for r in f["skipped"][...] if r["name"].decode() == name]
assert len(skips) == 1 and skips[0][0] == "" and skips[0][1].startswith("expert 2: non-finite"), skips
assert not any(t[int(r["tensor_id"])] == name for r in f["results"][...])
assert "expert_results" in f and not any(t[int(r["tensor_id"])] == name for r in f["expert_results"][...])
assert all(math.isnan(r["sq_norm"]) for r in f["tensors"][...] if r["name"].decode() == name)
assert any(t[int(r["tensor_id"])].endswith("gate_up_proj") for r in f["results"][...])
PY

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
