#!/usr/bin/env bash
# Per-expert calibration statistics (docs/calibration.md "Mixture-of-experts
# statistics") on data/tiny-moe with its shipped capture,
# data/tiny-moe/calib.safetensors (examples/calibration/capture.py):
# - the file loads; every tensor of the sweep finds statistics (the fused
#   stacks their [E, in, in] ones), and every stack row has out_rel_err
# - each expert of a stack is the direct computation: the stack and its
#   statistics split into E 2-D tensors with 2-D statistics
#   (split_fixture.py, split_calib.py) give the same rows bit for bit, for
#   the data-free and the calibrated (gptq-, awq-, imat-) configurations,
#   and the stack's out_sq_err / out_sq_ref are the sums over its experts
# - an expert with no tokens: one warning line naming module and expert,
#   and the rows of the documented fallback (the token-weighted mean of the
#   other experts' statistics) bit for bit
# - another expert count, statistics without an expert axis, a NaN in one
#   expert's hessian: exit 4 with the exact message, no output written
# - quantize --calib writes a calibrated configuration on a stack per expert
#   with each expert's statistics, as the sweep measured it; allocate reads
#   a stack's sensitivity
# usage: sweep_moe_calib.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: sweep_moe_calib.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: sweep_moe_calib.sh FRONTIER_BINARY DATA_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch moe-calib
need_python numpy h5py

model=$data/tiny-moe
calib=$model/calib.safetensors
[ -f "$calib" ] || { echo "FAIL: no $calib (examples/calibration/capture.py data/tiny-moe -o $calib --sensitivity-mode perturb)"; exit 1; }
gu=model.layers.0.mlp.experts.gate_up_proj
down=model.layers.0.mlp.experts.down_proj
q=int4-g32-sym,gptq-int4-g32-sym,awq-int4-g32-sym,imat-int4-g32-sym,nvfp4
# the embedding has no statistics (its input is token ids): left out
sweep() { "$frontier" sweep "$@" --quantizers "$q" --exclude embed_tokens --device cpu; }

python3 "$here/split_fixture.py" "$model/model.safetensors" split.safetensors || exit 1
python3 "$here/split_calib.py" split "$calib" split_calib.safetensors || exit 1

# the shipped statistics: every swept tensor finds its own
sweep "$model" --calib "$calib" --split-experts -o fused.h5 >/dev/null 2>err.txt ||
  { fail "sweep --calib of data/tiny-moe"; cat err.txt; }
grep -q "(16384 tokens): 31 of 31 tensors, 31 with a Hessian" err.txt &&
  ! grep -q "match no tensor\|warning" err.txt &&
  pass "shipped calibration: 31 of 31 sweep items (8 of them experts of stacks) with a Hessian, no module unmatched" ||
  { fail "shipped calibration not matched as expected"; cat err.txt; }
sweep split.safetensors --calib split_calib.safetensors -o split.h5 >/dev/null 2>err.txt ||
  { fail "sweep of the split checkpoint"; cat err.txt; }
python3 "$here/check_moe.py" splitcalib fused.h5 split.h5 &&
  pass "stack rows with per-expert statistics = their experts swept as 2-D tensors" ||
  fail "per-expert statistics against the split computation"

# the schedule does not change a calibrated row
sweep "$model" --calib "$calib" --split-experts --threads 1 --cpu-batch-bytes 1k \
  --cpu-parallel-bytes 1k -o serial.h5 >/dev/null 2>err.txt || { fail "serial sweep"; cat err.txt; }
python3 "$here/check_moe.py" same fused.h5 serial.h5 >/dev/null || fail "calibrated rows depend on the schedule"

# an expert that received no tokens: one warning, the documented fallback
python3 "$here/split_calib.py" zero "$calib" zero.safetensors "$down" 2 &&
  python3 "$here/split_calib.py" split zero.safetensors zero_split.safetensors || exit 1
sweep "$model" --calib zero.safetensors --split-experts -o zero.h5 >/dev/null 2>err.txt ||
  { fail "sweep with a zero-token expert"; cat err.txt; }
want="frontier: warning: 'zero.safetensors': module '$down', expert 2 received no calibration tokens: it takes the token-weighted mean of the other experts' statistics"
[ "$(grep -c 'received no calibration tokens' err.txt)" = 1 ] && grep -qxF "$want" err.txt &&
  pass "a zero-token expert: one warning line naming module and expert" ||
  { fail "zero-token warning"; cat err.txt; }
sweep split.safetensors --calib zero_split.safetensors -o zero_split.h5 >/dev/null 2>err.txt ||
  { fail "split sweep with the fallback statistics"; cat err.txt; }
python3 "$here/check_moe.py" splitcalib zero.h5 zero_split.h5 >/dev/null &&
  pass "a zero-token expert's rows: the token-weighted mean of the others' statistics" ||
  fail "zero-token fallback rows"

# bad statistics: exit 4 before any output, the exact message
bad() { # label file expected-message
  rm -f bad.h5
  sweep "$model" --calib "$2" -o bad.h5 >/dev/null 2>err.txt
  local rc=$?
  if [ "$rc" = 4 ] && grep -qxF "frontier: error: $3" err.txt && [ ! -e bad.h5 ]; then
    pass "$1: exit 4, no output"
  else
    fail "$1: rc $rc (want 4), output $( [ -e bad.h5 ] && echo written || echo none )"; cat err.txt
  fi
}
python3 "$here/split_calib.py" drop "$calib" drop.safetensors "$gu" || exit 1
bad "another expert count" drop.safetensors \
  "cannot read calibration 'drop.safetensors': module '$gu': hessian is [3, 64, 64], statistics of 3 experts; the tensor '$gu' has 4 experts"
python3 "$here/split_calib.py" plain "$calib" plain.safetensors "$gu" || exit 1
bad "statistics without an expert axis" plain.safetensors \
  "cannot read calibration 'plain.safetensors': module '$gu': hessian is [64, 64], without an expert axis: the expert stack '$gu' of 4 experts needs per-expert statistics (hessian [E, in, in])"
python3 "$here/split_calib.py" nan "$calib" nan.safetensors "$down" 1 || exit 1
bad "a NaN in one expert's hessian" nan.safetensors \
  "cannot read calibration 'nan.safetensors': module '$down': expert 1: hessian[1, 2] is nan"

# quantize --calib writes a stack per expert with each expert's statistics:
# the report's numbers of what the quantizer gave equal the sweep's rows
"$frontier" quantize "$model" --config gptq-int4-g32-sym --calib "$calib" --format dequantized \
  --exclude embed_tokens -o qstack.safetensors >/dev/null 2>err.txt
rc=$?
[ "$rc" = 0 ] && python3 - fused.h5 qstack.safetensors/quantize_report.json "$gu" "$down" <<'PY' &&
import json, sys, h5py
f = h5py.File(sys.argv[1], "r")
t = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][()]}
c = {int(r["config_id"]): r["name"].decode() for r in f["configs"][()]}
res = {(t[int(r["tensor_id"])], c[int(r["config_id"])]): float(r["rel_err"]) for r in f["results"][()]}
rep = {e["name"]: e for e in json.load(open(sys.argv[2]))["tensors"]}
for stack in sys.argv[3:]:
    want = res[(stack, "gptq-int4-g32-sym")]
    got = rep[stack]["rel_err_quantizer"]
    assert got == want, (stack, got, want)
    assert len(rep[stack]["expert_rel_err_quantizer"]) == 4, stack
PY
  pass "quantize --calib writes gptq stacks per expert, equal to the sweep's rows bit for bit" ||
  { fail "quantize --calib on a stack: rc $rc"; cat err.txt; }
"$frontier" --quiet quantize "$model" --config gptq-int4-g32-sym --calib "$calib" --format dequantized \
  --exclude 'embed_tokens|experts\.(gate_up|down)_proj$' -o q.safetensors >/dev/null 2>err.txt &&
  pass "quantize --calib of everything but the stacks" || { fail "quantize without the stacks"; cat err.txt; }

# allocate --objective sensitivity: a stack has one alpha (capture.py's, per stack)
"$frontier" allocate fused.h5 --budget 4.5 --metric out_rel_err --objective sensitivity \
  --calib "$calib" -o recipe.json >alloc.txt 2>err.txt &&
  pass "allocate --objective sensitivity finds every tensor's alpha, the stacks' too" ||
  { fail "allocate --objective sensitivity"; cat err.txt; }

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
