#!/usr/bin/env bash
# frontier quantize --calib on data/stories260K: the calibrated configurations
# (gptq-, awq-, imat-, rht+gptq-) and the data-free wrapped ones (mse-, hqq-,
# rht+) written as dequantized hold exactly what the sweep measured (the
# report's rel_err, and the file's own, against the sweep's rows, tensor by
# tensor, the tied embedding included); the refusals: no --calib, a format
# that cannot store what a calibrated method chose, a tensor without
# statistics or without a Hessian, an unreadable --calib; nothing written.
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
calib=$model/calib.safetensors
nothing_written() {
  [ ! -e "$1" ] || fail "'$1' was written"
  ls "$1".tmp-* >/dev/null 2>&1 && fail "a temporary '$1.tmp-*' was left behind"
  true
}

calibrated="gptq-int4-g32-sym awq-int3-g32-asym imat-int3-g32-sym rht+gptq-int4-g32-sym"
datafree="mse-int3-g32-asym hqq-int3-g32-asym rht+int4-g32-sym"
all="$calibrated $datafree"
expect 0 "$bin" -q sweep "$model" -o "$tmp/run.h5" --device cpu --calib "$calib" \
  --quantizers "$(echo $all | tr ' ' ,)"
expect 0 "$bin" -q export "$tmp/run.h5" --format json -o "$tmp/run.json"

# every linear layer and the tied embedding (which takes lm_head's statistics)
for c in $all; do
  expect 0 "$bin" quantize "$model" --config "$c" --include 'embed_tokens|layers\.' \
    --format dequantized --calib "$calib" -o "$tmp/dq-$c"
  case $c in
  mse-* | hqq-* | rht+int*) expect_err "is not used: no selected configuration needs" ;;
  *) expect_err "'model.embed_tokens.weight' is tied to the output layer" ;;
  esac
done
python3 - "$tmp" "$model" $all <<'PY' || fail "dequantized calibrated checkpoints"
import json, math, struct, sys
tmp, model, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    h.pop("__metadata__", None)
    out = {}
    for k, v in h.items():
        assert v["dtype"] == "F32", (k, v["dtype"])
        a, b = v["data_offsets"]
        out[k] = (v["shape"], struct.unpack(f"<{(b - a) // 4}f", data[a:b]))
    return out
src = tensors(f"{model}/model.safetensors")
sweep = {(r["tensor"], r["config"]): r for r in json.load(open(f"{tmp}/run.json"))["results"]}
for c in configs:
    d = f"{tmp}/dq-{c}"
    rep = json.load(open(f"{d}/quantize_report.json"))
    assert rep["calib"] is not None and rep["checkpoint_format"] == "dequantized", rep
    dq = tensors(f"{d}/model.safetensors")
    assert {k: v[0] for k, v in dq.items()} == {k: v[0] for k, v in src.items()}, c
    names = {t["name"] for t in rep["tensors"]}
    assert len(names) == 36 and "model.embed_tokens.weight" in names, (c, len(names))
    for t in rep["tensors"]:
        row = sweep[(t["name"], c)]
        assert t["equals_quantizer"], (c, t)
        # the report measures the stored values; the sweep measured Q(W)
        assert abs(t["rel_err"] - row["rel_err"]) <= 1e-12 * row["rel_err"], (c, t, row["rel_err"])
        assert abs(t["max_abs_err"] - row["max_abs_err"]) <= 1e-12 * row["max_abs_err"], (c, t)
        w, q = src[t["name"]][1], dq[t["name"]][1]
        e = math.sqrt(sum((x - y) ** 2 for x, y in zip(w, q)) / sum(x * x for x in w))
        assert abs(e - row["rel_err"]) <= 1e-9 * row["rel_err"], (c, t["name"], e, row["rel_err"])
        m = max(abs(x - y) for x, y in zip(w, q))  # exact in double; JSON keeps 15 digits
        assert abs(m - row["max_abs_err"]) <= 1e-13 * m, (c, t["name"], m, row["max_abs_err"])
    for k in src:  # untouched tensors are copied as they are
        if k not in names:
            assert dq[k] == src[k], (c, k)
print("ok:", len(configs), "configurations")
PY

# the data-free wrapped ones need no --calib: the same bytes without it
for c in $datafree; do
  expect 0 "$bin" quantize "$model" --config "$c" --include 'embed_tokens|layers\.' \
    --format dequantized -o "$tmp/nocalib-$c" --summary
  cmp -s "$tmp/nocalib-$c/model.safetensors" "$tmp/dq-$c/model.safetensors" ||
    fail "$c without --calib differs from $c with it"
done

# ---- refusals: before anything is written ----
expect 2 "$bin" quantize "$model" --config gptq-int4-g32-sym --format dequantized -o "$tmp/r1"
expect_err "needs calibration statistics: give --calib FILE"
expect_err "'model.layers.0.mlp.down_proj.weight (gptq-int4-g32-sym)'"
nothing_written "$tmp/r1"

# a recipe with one calibrated tensor is refused without --calib, by name
python3 - "$tmp/recipe.json" <<'PY'
import json, sys
json.dump({"format": "frontier-recipe", "recipe": {
    "model.layers.0.self_attn.q_proj.weight": "int4-g32-sym",
    "model.layers.2.self_attn.v_proj.weight": "awq-int3-g32-asym"}}, open(sys.argv[1], "w"))
PY
expect 2 "$bin" quantize "$model" --recipe "$tmp/recipe.json" --format dequantized -o "$tmp/r2"
expect_err "1 tensor cannot be written as dequantized: 'model.layers.2.self_attn.v_proj.weight (awq-int3-g32-asym)'"
nothing_written "$tmp/r2"
expect 0 "$bin" quantize "$model" --recipe "$tmp/recipe.json" --format dequantized -o "$tmp/r2" \
  --calib "$calib" --summary

for fmt in compressed-tensors; do
  for c in gptq-int4-g32-sym awq-int3-g32-asym; do
    expect 2 "$bin" quantize "$model" --config "$c" --exclude down_proj --format $fmt \
      --calib "$calib" -o "$tmp/r3"
    expect_err "the $fmt encoder cannot store the codes and scales it chose exactly"
    expect_err "configurations with a $fmt writer: int: 70 of 84 configurations; fp8:"
    nothing_written "$tmp/r3"
  done
done

# statistics missing for one tensor (o_proj of layer 3), a Hessian missing for
# another (o_proj of layer 2: its diagonal statistics are kept)
python3 - "$calib" "$tmp/partial.safetensors" <<'PY'
import json, struct, sys
src, dst = sys.argv[1:3]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
    data = f.read()
meta = h.pop("__metadata__")
out, blobs, off = {"__metadata__": meta}, [], 0
for k, v in h.items():
    if k.startswith("model.layers.3.self_attn.o_proj.") or k == "model.layers.2.self_attn.o_proj.hessian":
        continue
    a, b = v["data_offsets"]
    blobs.append(data[a:b])
    out[k] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [off, off + b - a]}
    off += b - a
hdr = json.dumps(out).encode()
hdr += b" " * (-len(hdr) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs))
PY
expect 2 "$bin" quantize "$model" --config gptq-int4-g32-sym --include 'o_proj' --format dequantized \
  --calib "$tmp/partial.safetensors" -o "$tmp/r4"
expect_err "2 tensors cannot be written as dequantized: 'model.layers.2.self_attn.o_proj.weight (gptq-int4-g32-sym)', 'model.layers.3.self_attn.o_proj.weight (gptq-int4-g32-sym)'"
expect_err "needs a Hessian: this tensor's statistics have none"
nothing_written "$tmp/r4"
expect 2 "$bin" quantize "$model" --config gptq-int4-g32-sym --include 'layers\.3\.self_attn\.o_proj' \
  --format dequantized --calib "$tmp/partial.safetensors" -o "$tmp/r4"
expect_err "'model.layers.3.self_attn.o_proj.weight (gptq-int4-g32-sym)'"
expect_err "has none for it"
nothing_written "$tmp/r4"
# imat- takes the diagonal statistics: no Hessian needed
expect 0 "$bin" quantize "$model" --config imat-int3-g32-sym --include 'layers\.2\.self_attn\.o_proj' \
  --format dequantized --calib "$tmp/partial.safetensors" -o "$tmp/r5" --summary

expect 3 "$bin" quantize "$model" --config gptq-int4-g32-sym --format dequantized \
  --calib "$tmp/none.safetensors" -o "$tmp/r6"
nothing_written "$tmp/r6"
echo "ok"
