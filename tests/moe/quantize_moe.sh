#!/usr/bin/env bash
# frontier quantize of expert stacks (docs/quantize.md, "Expert stacks") on
# data/tiny-moe: for every format, the report's rel_err of each stack equals
# the sweep's /results row bit for bit (the stack quantized as E matrices,
# the sums added in expert order), each expert's rel_err its /expert_results
# row (--split-experts), and every other tensor's rel_err its row; a
# recipe from allocate --expert-units writes every expert it names.
# usage: quantize_moe.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: quantize_moe.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: quantize_moe.sh FRONTIER_BINARY DATA_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch moe-quantize
need_python numpy h5py
model=$data/tiny-moe
ct=nvfp4,int4-gC-sym,int4-g32-asym,fp8-e4m3-tensor,fp8-e4m3-channel,fp8-e4m3-block128
dq=nf4-g64,int4-tensor-sym,mxfp4
"$frontier" --quiet sweep "$model" --quantizers "$ct,$dq" --split-experts --device cpu -o run.h5 >/dev/null 2>err.txt ||
  { fail "sweep"; cat err.txt; }

cat >check.py <<'PY'
import json, sys, h5py
report, config, h5 = sys.argv[1], sys.argv[2], sys.argv[3]
f = h5py.File(h5, "r")
t = {int(x["tensor_id"]): x["name"].decode() for x in f["tensors"][...]}
c = {int(x["config_id"]): x["name"].decode() for x in f["configs"][...]}
rows = {(t[int(x["tensor_id"])], c[int(x["config_id"])]): float(x["rel_err"]) for x in f["results"][...]}
xrows = {(t[int(x["tensor_id"])], c[int(x["config_id"])], int(x["expert"])): float(x["rel_err"])
         for x in f["expert_results"][...]}
r = json.load(open(report))
bad = n_stacks = 0
for q in r["tensors"]:
    cfg = q["config"] if config == "-" else config
    want = rows[(q["name"], cfg)]
    # what the quantizer gave (the sweep's Q(W)); for formats that store it exactly, the file too
    keys = ["rel_err_quantizer"] + (["rel_err"] if q["equals_quantizer"] else [])
    for k in keys:
        if q[k] != want:
            print(f"FAIL: {q['name']} {cfg}: report {k} {q[k]!r} != sweep row {want!r}")
            bad += 1
    if "expert_rel_err" in q:
        n_stacks += 1
        for e in range(q["experts"]):
            w = xrows[(q["name"], cfg, e)]
            got = [q["expert_rel_err_quantizer"][e]] + ([q["expert_rel_err"][e]] if q["equals_quantizer"] else [])
            if any(g != w for g in got):
                print(f"FAIL: {q['name']} {cfg} expert {e}: {got} != /expert_results {w!r}")
                bad += 1
print(f"{len(r['tensors'])} tensors, {n_stacks} stacks: {bad} differences")
sys.exit(1 if bad or n_stacks == 0 else 0)
PY
for c in ${ct//,/ }; do
  for fmt in compressed-tensors dequantized; do
    "$frontier" --quiet quantize "$model" --config $c --format $fmt -o "q-$c-$fmt" >/dev/null 2>err.txt ||
      { fail "quantize $c $fmt"; cat err.txt; continue; }
    python3 check.py "q-$c-$fmt/quantize_report.json" $c run.h5 >out.txt && pass "$c $fmt: $(cat out.txt)" ||
      { fail "$c $fmt against the sweep"; cat out.txt; }
  done
done
for c in ${dq//,/ }; do
  "$frontier" --quiet quantize "$model" --config $c --format dequantized -o "q-$c" >/dev/null 2>err.txt ||
    { fail "quantize $c"; cat err.txt; continue; }
  python3 check.py "q-$c/quantize_report.json" $c run.h5 >out.txt && pass "$c dequantized: $(cat out.txt)" ||
    { fail "$c against the sweep"; cat out.txt; }
done
# compressed-tensors names and shapes of a stack's parts
python3 - q-nvfp4-compressed-tensors q-int4-g32-asym-compressed-tensors q-fp8-e4m3-tensor-compressed-tensors <<'PY' || fail "stack part names and shapes"
import json, struct, sys
def header(d):
    b = open(f"{d}/model.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n])
s = "model.layers.0.mlp.experts.gate_up_proj"
want = [
    {s + "_packed": ("U8", [4, 128, 32]), s + "_scale": ("F8_E4M3", [4, 128, 4]), s + "_global_scale": ("F32", [4, 1])},
    {s + "_packed": ("I32", [4, 128, 8]), s + "_scale": ("F16", [4, 128, 2]), s + "_zero_point": ("I32", [4, 16, 2]), s + "_shape": ("I64", [3])},
    {s: ("F8_E4M3", [4, 128, 64]), s + "_scale": ("F32", [4, 1])},
]
for d, w in zip(sys.argv[1:], want):
    h = header(d)
    got = {k: (v["dtype"], v["shape"]) for k, v in h.items() if k.startswith(s)}
    assert got == w, (d, got, w)
    cfg = json.load(open(f"{d}/config.json"))["quantization_config"]
    targets = [x for g in cfg["config_groups"].values() for x in g["targets"]]
    assert targets.count("model.layers.0.mlp.experts") == 1, targets
print("ok: stack parts [E, ...] and one target per experts module")
PY

# a recipe from allocate --expert-units on a split checkpoint writes every expert
python3 "$here/split_fixture.py" "$model/model.safetensors" split.safetensors --hf-names || exit 1
"$frontier" --quiet sweep split.safetensors --quantizers "$ct" --device cpu -o split.h5 >/dev/null 2>err.txt &&
"$frontier" --quiet allocate split.h5 --budget 5 --expert-units --no-store -o recipe.json >/dev/null 2>err.txt &&
"$frontier" --quiet quantize split.safetensors --recipe recipe.json --format dequantized -o q-recipe.safetensors >/dev/null 2>err.txt ||
  { fail "allocate --expert-units and quantize --recipe"; cat err.txt; }
python3 - recipe.json q-recipe.safetensors.report.json <<'PY' || fail "the recipe's experts written"
import json, sys
r = json.load(open(sys.argv[1])); q = json.load(open(sys.argv[2]))
got = {t["name"]: t["config"] for t in q["tensors"]}
assert got == r["recipe"], (set(got) ^ set(r["recipe"]))
print(f"ok: quantize --recipe wrote the {len(got)} tensors of an --expert-units recipe as it says")
PY

# a calibrated configuration on a stack whose statistics file has none for it: refused, nothing written
"$frontier" quantize "$model" --config gptq-int4-g32-sym --calib "$data/stories260K/calib.safetensors" \
  --include 'experts\.(gate_up|down)_proj' --format dequantized -o q-gptq.safetensors >/dev/null 2>err.txt
rc=$?
[ "$rc" = 2 ] && grep -q "needs calibration statistics: .* has none for it" err.txt &&
  [ ! -e q-gptq.safetensors ] && pass "gptq on a stack refused (exit 2), nothing written" ||
  { fail "gptq on a stack: exit $rc"; cat err.txt; }

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
