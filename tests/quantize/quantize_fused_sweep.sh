#!/usr/bin/env bash
# frontier sweep --fused-global-scale against frontier quantize on
# data/stories260K (docs/quantize.md, "Measuring the fused variant"): the
# sweep's nvfp4-fused rows equal, bit for bit, the rel_err and max_abs_err
# the quantize report gives for what it wrote (q/k/v and gate/up members,
# with `--config nvfp4` under the default shared scale and with `--config
# nvfp4-fused`, compressed-tensors and dequantized); they differ from the
# plain nvfp4 rows exactly where a member's own amax is below its group's;
# allocate can choose them and quantize writes them; refusals; --resume.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
data=$2
work=$3
emu=${4:-} # optional: frontier_cli_emu (the CUDA executor on the emulated device)
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
python3 -c "import h5py, numpy, safetensors" 2>/dev/null || { echo "SKIP: h5py, numpy and safetensors are needed"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
tmp=$work
model=$data/stories260K
members='(q|k|v|gate|up)_proj'

expect 0 "$bin" sweep --device cpu "$model" --quantizers nvfp4 --fused-global-scale -o "$tmp/s.h5"
expect_err "nvfp4-fused: 11 tensors are not members of a fused group"
expect 0 "$bin" quantize "$model" --config nvfp4 --include "$members" -o "$tmp/ct-plain"
expect 0 "$bin" quantize "$model" --config nvfp4-fused --include "$members" -o "$tmp/ct-fused"
expect 0 "$bin" quantize "$model" --config nvfp4-fused --include "$members" -o "$tmp/dq-fused" \
  --format dequantized
# --no-fused-global-scale does not change nvfp4-fused: its configuration is the shared scale
expect 0 "$bin" quantize "$model" --config nvfp4-fused --include "$members" -o "$tmp/ct-nofgs" \
  --no-fused-global-scale
# allocate chooses nvfp4-fused where it is allowed; quantize writes the recipe
expect 0 "$bin" allocate "$tmp/s.h5" --budget 5 --configs '^nvfp4-fused$' --include "$members" \
  -o "$tmp/recipe.json" --no-store
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/ct-recipe"

python3 - "$tmp" "$model" <<'PY' || fail "fused rows against the quantize reports"
import json, sys
import h5py, numpy as np
from safetensors.numpy import load_file
tmp, model = sys.argv[1:3]
f = h5py.File(f"{tmp}/s.h5", "r")
cfg = {int(c["config_id"]): (c["name"].decode(), c["family"].decode()) for c in f["configs"][:]}
assert sorted(cfg.values()) == [("nvfp4", "nvfp4"), ("nvfp4-fused", "nvfp4_fused")], cfg
ten = {int(t["tensor_id"]): t["name"].decode() for t in f["tensors"][:]}
rows = {(ten[int(r["tensor_id"])], cfg[int(r["config_id"])][0]): r for r in f["results"][:]}
fused = sorted(n for n, c in rows if c == "nvfp4-fused")
w = load_file(f"{model}/model.safetensors")
want = sorted(n for n in w if w[n].ndim == 2 and
              any(n.endswith(f".{m}_proj.weight") for m in ("q", "k", "v", "gate", "up")))
assert fused == want and len(fused) == 25, (len(fused), fused[:3])
assert not any(c == "nvfp4-fused" and "o_proj" in n for n, c in rows), "o_proj has no group"
# the group's joint amax and each member's own
def group(n):
    for m, g in (("q", "qkv"), ("k", "qkv"), ("v", "qkv"), ("gate", "gate_up"), ("up", "gate_up")):
        s = f".{m}_proj.weight"
        if n.endswith(s):
            return n[: -len(s)].rsplit(".", 1)[0] + "." + g
amax = {n: float(np.abs(w[n]).max()) for n in fused}
joint = {}
for n in fused:
    joint[group(n)] = max(joint.get(group(n), 0.0), amax[n])
n_diff = 0
for n in fused:
    fz, pl = rows[(n, "nvfp4-fused")], rows[(n, "nvfp4")]
    assert fz["total_bits"] == pl["total_bits"], n
    if amax[n] < joint[group(n)]:
        assert fz["rel_err"] != pl["rel_err"], f"{n}: the joint amax differs, the rows do not"
        n_diff += 1
    else:
        assert fz["rel_err"] == pl["rel_err"] and fz["max_abs_err"] == pl["max_abs_err"], n
assert n_diff > 0, "no member with an amax below its group's"
for out in ("ct-plain", "ct-fused", "dq-fused", "ct-nofgs", "ct-recipe"):
    rep = json.load(open(f"{tmp}/{out}/quantize_report.json"))
    assert len(rep["tensors"]) == 25, (out, len(rep["tensors"]))
    for t in rep["tensors"]:
        r = rows[(t["name"], "nvfp4-fused")]
        assert t["rel_err"] == float(r["rel_err"]), (out, t["name"], t["rel_err"], r["rel_err"])
        assert t["max_abs_err"] == float(r["max_abs_err"]), (out, t["name"])
        assert t["global_scale"] == np.float32(448 * 6 / np.float32(joint[group(t["name"])])), \
            (out, t["name"], t["global_scale"])
        if out != "ct-plain":
            assert t["config"] == "nvfp4-fused" and t["equals_quantizer"], (out, t)
        else:  # plain nvfp4 under the shared scale: written != the plain row where amax differs
            assert t["equals_quantizer"] == (amax[t["name"]] == joint[group(t["name"])]), t
        if out == "ct-recipe":  # the recipe's number is the row, and what was written
            assert t["rel_err_recipe"] == t["rel_err"], t
recipe = json.load(open(f"{tmp}/recipe.json"))["recipe"]
assert set(recipe.values()) == {"nvfp4-fused"} and len(recipe) == 25, recipe
print(f"25 fused rows equal the reports of 5 checkpoints; {n_diff} differ from plain nvfp4")
PY

# nvfp4 and nvfp4-fused in one group: one format to vLLM (no warning), one scale
cat >"$tmp/mix.json" <<'JSON'
{"format": "frontier-recipe", "recipe": {
 "model.layers.0.self_attn.q_proj.weight": "nvfp4",
 "model.layers.0.self_attn.k_proj.weight": "nvfp4-fused",
 "model.layers.0.self_attn.v_proj.weight": "nvfp4-fused"}}
JSON
expect 0 "$bin" quantize "$model" --recipe "$tmp/mix.json" -o "$tmp/ct-mix"
grep -q "different formats" "$tmp/err" && { cat "$tmp/err"; fail "nvfp4 + nvfp4-fused warned"; }
python3 - "$tmp" <<'PY' || fail "nvfp4 and nvfp4-fused in one group"
import json, sys
import h5py
tmp = sys.argv[1]
f = h5py.File(f"{tmp}/s.h5", "r")
cfg = {int(c["config_id"]): c["name"].decode() for c in f["configs"][:]}
ten = {int(t["tensor_id"]): t["name"].decode() for t in f["tensors"][:]}
rows = {(ten[int(r["tensor_id"])], cfg[int(r["config_id"])]): r for r in f["results"][:]}
rep = json.load(open(f"{tmp}/ct-mix/quantize_report.json"))["tensors"]
assert len({t["global_scale"] for t in rep}) == 1, rep
for t in rep:
    assert t["rel_err"] == float(rows[(t["name"], "nvfp4-fused")]["rel_err"]), t
PY

# refusals
expect 2 "$bin" sweep "$model" --quantizers int4-g32-sym --fused-global-scale -o "$tmp/r1.h5"
expect_err "nvfp4 is not selected"
[ ! -e "$tmp/r1.h5" ] || fail "a refused sweep wrote its output"
expect 2 "$bin" sweep "$model" --quantizers nvfp4-fused -o "$tmp/r2.h5"
expect_err "is measured by --fused-global-scale"
expect 2 "$bin" quantize "$model" --config nvfp4-fused --exclude down_proj -o "$tmp/r3"
expect_err "cannot be written as nvfp4-fused: 'model.layers.0.self_attn.o_proj.weight'"
[ ! -e "$tmp/r3" ] || fail "a refused quantize wrote its output"
# without the option nothing is fused (a default sweep stays as it was)
expect 0 "$bin" sweep --device cpu "$model" --quantizers 'nvfp4*' -o "$tmp/r4.h5"
python3 -c "
import h5py, sys
names = [c['name'].decode() for c in h5py.File(sys.argv[1], 'r')['configs'][:]]
assert names == ['nvfp4'], names" "$tmp/r4.h5" || fail "nvfp4-fused measured without the option"
# --resume: nothing left to measure, no row added
expect 0 "$bin" sweep --device cpu "$model" --quantizers nvfp4 --fused-global-scale -o "$tmp/s.h5" --resume
python3 -c "
import h5py, sys
assert len(h5py.File(sys.argv[1], 'r')['results']) == 61" "$tmp/s.h5" || fail "--resume added rows"
if [ -n "$emu" ]; then
  expect 0 "$emu" sweep "$model" --quantizers nvfp4 --fused-global-scale --device cuda:0 \
    -o "$tmp/emu.h5"
  python3 - "$tmp" <<'PY' || fail "the CUDA executor's nvfp4-fused rows"
import sys
import h5py
tmp = sys.argv[1]
def rows(path):
    f = h5py.File(path, "r")
    cfg = {int(c["config_id"]): c["name"].decode() for c in f["configs"][:]}
    ten = {int(t["tensor_id"]): t["name"].decode() for t in f["tensors"][:]}
    return {(ten[int(r["tensor_id"])], cfg[int(r["config_id"])]): r for r in f["results"][:]}
gpu, cpu = rows(f"{tmp}/emu.h5"), rows(f"{tmp}/s.h5")
fused = [k for k in gpu if k[1] == "nvfp4-fused"]
assert len(fused) == 25 and sorted(gpu) == sorted(cpu), len(fused)
for k in fused:
    assert gpu[k]["device"].decode() == "cpu", (k, gpu[k]["device"])
    assert gpu[k]["rel_err"] == cpu[k]["rel_err"] and gpu[k]["sq_err"] == cpu[k]["sq_err"], k
assert {gpu[k]["device"].decode() for k in gpu if k[1] == "nvfp4"} == {"cuda:0"}
PY
fi
echo "quantize.fused_sweep: ok"
