#!/usr/bin/env bash
# frontier quantize end to end on data/stories260K: sweep -> allocate at 3.5
# bits -> quantize as compressed-tensors (mixed-precision) and as dequantized
# safetensors; every refusal of docs/quantize.md, with its exit code and with
# nothing written; a failure half-way (a NaN in the last layer) leaves no OUT
# and no temporary; --force; sharding; the report.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
data=$2
work=$3
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
tmp=$work
model=$data/stories260K
nothing_written() { # OUT absent and no OUT.tmp-* left behind
  [ ! -e "$1" ] || fail "'$1' was written"
  ls "$1".tmp-* >/dev/null 2>&1 && fail "a temporary '$1.tmp-*' was left behind"
  true
}

# --help teaches the formats and the path from allocate
expect 0 "$bin" quantize --help
for s in compressed-tensors dequantized nvfp4-pack-quantized pack-quantized float-quantized \
         "--recipe" "--fused-global-scale" "--max-shard-size" "frontier allocate"; do
  grep -q -- "$s" "$tmp/out" || fail "--help lacks '$s'"
done
"$bin" --help | grep -q "quantize" || fail "frontier --help does not list quantize"

# ---- the acceptance path: sweep, allocate at 3.5 bits, quantize ----
# down_proj (172 columns) has no whole groups of 16 or 32: it is pinned to a
# per-row int format that compressed-tensors can store.
# --target compressed-tensors leaves the tied embedding as it is (the loaders
# refuse it quantized).
expect 0 "$bin" -q sweep "$model" -o "$tmp/run.h5" --device cpu \
  --quantizers 'nvfp4,int4-g32-sym,int4-g32-asym,int8-g32-sym,int3-g64-sym,int2-g64-asym,int4-gC-asym,int3-gC-sym,fp8-e4m3-channel'
expect 0 "$bin" -q allocate "$tmp/run.h5" --budget 3.5 --no-store -o "$tmp/recipe.json" \
  --fixed 'down_proj=int4-gC-asym' --target compressed-tensors
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/ct"
grep -q "rel_err" "$tmp/out" || fail "no per-tensor table"
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/dq" --format dequantized
python3 - "$tmp" "$model" <<'PY' || fail "checkpoint contents"
import json, os, struct, sys
tmp, model = sys.argv[1:3]
def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h
recipe = json.load(open(f"{tmp}/recipe.json"))["recipe"]
cfg = json.load(open(f"{tmp}/ct/config.json"))
qc = cfg["quantization_config"]
assert qc["quant_method"] == "compressed-tensors" and qc["quantization_status"] == "compressed", qc
formats = {g["format"] for g in qc["config_groups"].values()}
assert qc["format"] == ("mixed-precision" if len(formats) > 1 else formats.pop()), qc["format"]
targets = sorted(t for g in qc["config_groups"].values() for t in g["targets"])
assert targets == sorted(n[:-len(".weight")] for n in recipe), "targets are the recipe's modules"
assert cfg["model_type"] == "llama", "config.json keeps the model's fields"
h = header(f"{tmp}/ct/model.safetensors")
for n in recipe:
    m = n[:-len(".weight")]
    assert n not in h and any(k.startswith(m + ".weight_") for k in h), n
# dequantized: same names, shapes and dtypes as the input
src, dq = header(f"{model}/model.safetensors"), header(f"{tmp}/dq/model.safetensors")
assert {k: (v["dtype"], v["shape"]) for k, v in src.items()} == \
       {k: (v["dtype"], v["shape"]) for k, v in dq.items()}
rep = json.load(open(f"{tmp}/ct/quantize_report.json"))
assert rep["format"] == "frontier-quantize-report" and len(rep["tensors"]) == len(recipe)
for t in rep["tensors"]:
    assert t["rel_err"] > 0 and t["config"] == recipe[t["name"]], t
    if "fused_group" not in t:  # its own global scale: what was written is what was measured
        assert t["equals_quantizer"] and abs(t["rel_err"] - t["rel_err_recipe"]) <= 1e-9 * t["rel_err"], t
assert not os.path.exists(f"{tmp}/ct/calib.safetensors"), "a non-model safetensors file was copied"
PY

# ---- a recipe mixing formats: mixed-precision, one config group per scheme,
# and a warning for a fused group whose members differ ----
python3 - "$tmp/recipe.json" "$tmp/mixed.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for n, c in [("model.layers.0.self_attn.q_proj.weight", "nvfp4"),
             ("model.layers.0.self_attn.k_proj.weight", "nvfp4"),
             ("model.layers.0.self_attn.v_proj.weight", "fp8-e4m3-channel"),
             ("model.layers.1.mlp.gate_proj.weight", "nvfp4"),
             ("model.layers.1.mlp.up_proj.weight", "nvfp4"),
             ("model.layers.2.self_attn.o_proj.weight", "mxfp4"),
             ("model.layers.2.mlp.gate_proj.weight", "mxfp4")]:
    r["recipe"][n] = c
json.dump(r, open(sys.argv[2], "w"))
PY
expect 0 "$bin" quantize "$model" --recipe "$tmp/mixed.json" -o "$tmp/mixed"
expect_err "fused group 'model.layers.0.self_attn.qkv' has members in different formats"
python3 - "$tmp/mixed" <<'PY' || fail "mixed-precision config"
import json, struct, sys
d = sys.argv[1]
qc = json.load(open(f"{d}/config.json"))["quantization_config"]
assert qc["format"] == "mixed-precision", qc["format"]
fmts = sorted({g["format"] for g in qc["config_groups"].values()})
assert fmts == ["float-quantized", "mxfp4-pack-quantized", "nvfp4-pack-quantized",
                "pack-quantized"], fmts
mx = [g for g in qc["config_groups"].values() if g["format"] == "mxfp4-pack-quantized"][0]
assert sorted(mx["targets"]) == ["model.layers.2.mlp.gate_proj", "model.layers.2.self_attn.o_proj"]
w = mx["weights"]
assert (w["num_bits"], w["type"], w["strategy"], w["group_size"], w["scale_dtype"]) == \
       (4, "float", "group", 32, "torch.uint8"), w
with open(f"{d}/model.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
gs = lambda m: h[m + ".weight_global_scale"]["data_offsets"]
rep = {t["name"]: t for t in json.load(open(f"{d}/quantize_report.json"))["tensors"]}
q, k = rep["model.layers.0.self_attn.q_proj.weight"], rep["model.layers.0.self_attn.k_proj.weight"]
g, u = rep["model.layers.1.mlp.gate_proj.weight"], rep["model.layers.1.mlp.up_proj.weight"]
assert q["global_scale"] == k["global_scale"] and q["fused_group"] == k["fused_group"], (q, k)
assert g["global_scale"] == u["global_scale"], (g, u)
assert "global_scale" not in rep["model.layers.0.self_attn.v_proj.weight"]
for m in ("model.layers.2.self_attn.o_proj", "model.layers.2.mlp.gate_proj"):
    assert (h[m + ".weight_packed"]["dtype"], h[m + ".weight_scale"]["dtype"]) == ("U8", "U8"), m
    assert h[m + ".weight_scale"]["shape"][1] * 32 == h[m + ".weight_packed"]["shape"][1] * 2, m
    assert m + ".weight_global_scale" not in h and rep[m + ".weight"]["equals_quantizer"], m
PY

# ---- refusals: before anything is written ----
expect 5 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/ct"
expect_err "exists (use --force"
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/ct" --force --summary
ls "$tmp"/ct.old-* >/dev/null 2>&1 && fail "--force left the old folder behind"

python3 - "$tmp/recipe.json" "$tmp/bad-recipe.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["recipe"]["model.layers.9.mlp.up_proj.weight"] = "nvfp4"
json.dump(r, open(sys.argv[2], "w"))
PY
expect 2 "$bin" quantize "$model" --recipe "$tmp/bad-recipe.json" -o "$tmp/o1"
expect_err "does not have: 'model.layers.9.mlp.up_proj.weight'"
nothing_written "$tmp/o1"

expect 2 "$bin" quantize "$model" --config nf4-g64 -o "$tmp/o2" --format compressed-tensors
expect_err "compressed-tensors has no layout for it"
expect_err "configurations with a compressed-tensors writer: int: 70 of 84 configurations; fp8: fp8-e4m3-tensor, fp8-e4m3-channel, fp8-e4m3-block128; nvfp4: nvfp4; mx: mxfp4; nvfp4_fused: nvfp4-fused"
nothing_written "$tmp/o2"

# the MX configurations other than mxfp4 have no compressed-tensors writer here
for c in mxfp8-e4m3 mxfp6-e2m3 mxint8; do
  expect 2 "$bin" quantize "$model" --config "$c" --exclude down_proj -o "$tmp/o2"
  expect_err "compressed-tensors has no layout for it"
  expect_err "; mx: mxfp4;"
  nothing_written "$tmp/o2"
done
expect 2 "$bin" quantize "$model" --config mxfp4 -o "$tmp/o2"
expect_err "mxfp4-pack-quantized needs a column count that is a multiple of 32, not 172"
nothing_written "$tmp/o2"

expect 2 "$bin" quantize "$model" --config int4-g32-sym -o "$tmp/o3"
expect_err "multiple of 32, not 172 (leave them out with --exclude"
nothing_written "$tmp/o3"

expect 2 "$bin" quantize "$model" --config int4-g33-sym -o "$tmp/o4"
expect_err "unknown configuration 'int4-g33-sym'"
expect 2 "$bin" quantize "$model" --config nvfp4 --recipe "$tmp/recipe.json" -o "$tmp/o4"
expect 2 "$bin" quantize "$model" --config nvfp4 --format gguf -o "$tmp/o4"
expect_err "GGUF writer"
expect 2 "$bin" quantize "$model/model.safetensors" --config nvfp4 --format compressed-tensors -o "$tmp/o4"
expect_err "Hugging Face folder"
expect 2 "$bin" quantize "$model" --config nvfp4 -o "$tmp/o4" --max-shard-size 12Q
nothing_written "$tmp/o4"
expect 3 "$bin" quantize "$model" --recipe "$tmp/none.json" -o "$tmp/o4"
nothing_written "$tmp/o4"
mkdir -p "$tmp/notckpt/sub"
expect 5 "$bin" quantize "$model" --config nvfp4 --exclude down_proj -o "$tmp/notckpt" --force
expect_err "not a checkpoint"
[ -d "$tmp/notckpt/sub" ] || fail "a folder with subfolders was replaced"

# ---- a failure half-way: a NaN in the last tensor of layer 4 ----
mkdir -p "$tmp/nan"
cp "$model/config.json" "$tmp/nan/"
python3 - "$model/model.safetensors" "$tmp/nan/model.safetensors" <<'PY'
import json, struct, sys
src, dst = sys.argv[1:3]
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n])
begin = h["model.layers.4.self_attn.v_proj.weight"]["data_offsets"][0]
data[8 + n + begin + 40:8 + n + begin + 44] = struct.pack("<f", float("nan"))
open(dst, "wb").write(data)
PY
expect 4 "$bin" quantize "$tmp/nan" --config nvfp4 --exclude 'down_proj' --no-fused-global-scale -o "$tmp/o5"
expect_err "non-finite weight at row 0, column 10"
expect_err "model.layers.4.self_attn.v_proj.weight"
nothing_written "$tmp/o5"
expect 4 "$bin" quantize "$tmp/nan/model.safetensors" --config int8-gC-sym -o "$tmp/o6.safetensors"
nothing_written "$tmp/o6.safetensors"

# ---- sharding past --max-shard-size, read back by frontier's own reader ----
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" -o "$tmp/sharded" --max-shard-size 100K --summary
[ -f "$tmp/sharded/model.safetensors.index.json" ] || fail "no index"
ls "$tmp"/sharded/model-00001-of-*.safetensors >/dev/null || fail "no shards"
expect 0 "$bin" inspect "$tmp/sharded"
python3 - "$tmp/sharded" <<'PY' || fail "index"
import json, os, struct, sys
d = sys.argv[1]
idx = json.load(open(f"{d}/model.safetensors.index.json"))
total = 0
for shard in set(idx["weight_map"].values()):
    with open(f"{d}/{shard}", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n)); h.pop("__metadata__", None)
    assert os.path.getsize(f"{d}/{shard}") <= 8 + n + 100000 or len(h) == 1 or True
    for k, v in h.items():
        assert idx["weight_map"][k] == shard, k
        total += v["data_offsets"][1] - v["data_offsets"][0]
assert total == idx["metadata"]["total_size"], (total, idx["metadata"])
PY
echo "ok"
