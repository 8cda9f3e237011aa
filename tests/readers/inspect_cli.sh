#!/usr/bin/env bash
# frontier inspect end to end on the real fixtures and the generated ones.
set -u
frontier=$1 data=$2 inputs=$3
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "skipped: python3 is needed to read --json output"; exit 77; }

# acceptance: stories260K prints 47 tensors and 260,032 parameters
out=$("$frontier" inspect "$data/stories260K") || fail "inspect stories260K exited $?"
grep -qx "47 tensors, 260,032 parameters" <<<"$out" || fail "stories260K summary line: $(tail -1 <<<"$out")"
grep -q "config.num_hidden_layers: 5" <<<"$out" || fail "config.json not shown"
grep -Eq "^model.layers.0.self_attn.q_proj.weight +attn_q +F32 +32 +\[64, 64\] +4,096$" <<<"$out" ||
  fail "q_proj row"
# the file itself, and --json with the same content
"$frontier" inspect "$data/stories260K/model.safetensors" | grep -qx "47 tensors, 260,032 parameters" ||
  fail "inspect of the .safetensors file"
"$frontier" inspect --json "$data/stories260K" >"$inputs/stories.json" || fail "--json exited $?"
python3 - "$inputs/stories.json" <<'PY' || fail "stories260K --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n_tensors"] == 47 and d["n_params"] == 260032, (d["n_tensors"], d["n_params"])
assert len(d["tensors"]) == 47
assert d["source"]["kind"] == "safetensors"
assert d["metadata"]["config"]["num_hidden_layers"] == 5
assert d["metadata"]["__metadata__"]["format"] == "pt"
assert d["by_class"]["attn_q"] == {"tensors": 5, "params": 20480}, d["by_class"]["attn_q"]
assert d["by_dtype"]["F32"]["params"] == 260032
assert sum(c["params"] for c in d["by_class"].values()) == 260032
t = {x["name"]: x for x in d["tensors"]}
assert t["model.layers.3.mlp.down_proj.weight"]["shape"] == [64, 172]
assert t["model.layers.3.mlp.down_proj.weight"]["class"] == "mlp_down"
PY

# acceptance: the ONNX OCR model lists its transformer weights held in Constant nodes
onnx="$data/ppocr-v4-rec/ch_PP-OCRv4_rec_infer.onnx"
"$frontier" inspect --json "$onnx" >"$inputs/ppocr.json" || fail "inspect ppocr exited $?"
python3 - "$inputs/ppocr.json" <<'PY' || fail "ppocr --json content"
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert d["metadata"]["constant_nodes"] > 0 and d["metadata"]["constant_nodes"] == len(t)
qkv = [n for n, x in t.items() if x["shape"] == [120, 360]]
assert qkv, "no [120, 360] weight"
assert t["linear_77.w_0"]["shape"] == [120, 360] and t["linear_77.w_0"]["dtype"] == "FLOAT"
assert t["linear_85.w_0"]["shape"] == [120, 6625]
assert t["conv2d_106.w_0"]["class"] == "conv"
assert t["layer_norm_43.w_0"]["class"] == "norm"
assert all(x["dtype"] != "FLOAT" or "skip_reason" not in x for x in d["tensors"])
PY
"$frontier" inspect "$onnx" | grep -Eq "^linear_77.w_0 +other +FLOAT +32 +\[120, 360\] +43,200$" ||
  fail "ppocr text row for linear_77.w_0"

# the sharded copy reads as the original
"$frontier" inspect "$inputs/sharded" | grep -qx "47 tensors, 260,032 parameters" || fail "sharded folder"
"$frontier" inspect "$inputs/sharded/model.safetensors.index.json" | grep -q "safetensors-sharded, 3 files" ||
  fail "index.json given directly"
# a ggml block type frontier decodes is one weight with its stored bits
# (docs/quantized-sources.md); skipped tensors say why
"$frontier" inspect "$inputs/all.gguf" | grep -Eq "^blk.0.attn_k.weight +attn_k +Q4_K +4.5 +\[2, 256\] +512$" ||
  fail "GGUF Q4_K row"
"$frontier" inspect "$inputs/all.gguf" | grep -Eq "^blk.0.future.weight +other +GGML_TYPE_99 +- .*\(skipped: unknown ggml type\)$" ||
  fail "GGUF row of an unknown type"
"$frontier" inspect "$inputs/all.gguf" | grep -q "tokenizer.ggml.tokens: {\"type\":\"array\",\"element_type\":\"string\",\"length\":1000}" ||
  fail "long token array not summarised"

# usage
"$frontier" inspect --help | grep -q "usage: frontier inspect MODEL" || fail "--help"
"$frontier" inspect >/dev/null 2>&1; [ $? = 2 ] || fail "no MODEL should exit 2"
"$frontier" inspect --bogus "$data/stories260K" >/dev/null 2>&1; [ $? = 2 ] || fail "unknown option should exit 2"
"$frontier" inspect a b >/dev/null 2>&1; [ $? = 2 ] || fail "two models should exit 2"
# a closed stdout is an error, not success (main's fflush check)
if [ -w /dev/full ]; then
  "$frontier" inspect "$data/stories260K" >/dev/full 2>/dev/null; [ $? = 5 ] || fail "writing to /dev/full should exit 5"
fi
echo "inspect_cli: all checks passed"
