#!/usr/bin/env bash
# allocate --target FORMAT (docs/analysis.md, "--target"): a recipe allocate
# writes for a format is one `frontier quantize --format FORMAT` writes. On
# stories260K (tied embedding, ffn_down rows of 172): compressed-tensors
# leaves the tied embedding as it is and keeps ggml-* and nvfp4 off the
# 172-column rows, and its recipe is written; without --target the same
# budget's recipe is refused by the writer, naming the tied embedding; gguf
# keeps to ggml-* types on the GGUF model; bad targets and models have their
# exit codes.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
data=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FRONTIER_PLUGIN_PATH=none
configs='nvfp4,int4-g32-sym,int8-gC-sym,ggml-q4_0,ggml-q8_0'

recipe_configs() { # the recipe's configurations, sorted, one line
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join(sorted({t["config"] for t in r["tensors"]})))' "$1"
}
recipe_has() { # whether the recipe lists tensor $2
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if any(t["name"]==sys.argv[2] for t in r["tensors"]) else 1)' "$1" "$2"
}

expect 0 "$bin" -q sweep "$data/stories260K" --quantizers "$configs" -o "$tmp/run.h5"

# compressed-tensors: the tied embedding is left out, with a warning
expect 0 "$bin" allocate "$tmp/run.h5" --budget 7 --target compressed-tensors --no-store \
  --summary -o "$tmp/ct.json"
expect_err "is left as it is, outside the budget"
expect_err "'model.embed_tokens.weight' under .*tied to the output layer"
recipe_has "$tmp/ct.json" model.embed_tokens.weight && fail "--target compressed-tensors: the tied embedding is in the recipe"
case " $(recipe_configs "$tmp/ct.json") " in
*ggml-*) fail "--target compressed-tensors chose a ggml-* configuration: $(recipe_configs "$tmp/ct.json")" ;;
esac
[ -e "$tmp/ct.tensor-types.txt" ] && fail "--target compressed-tensors wrote a llama.cpp tensor-type file"
expect 0 "$bin" -q quantize "$data/stories260K" --recipe "$tmp/ct.json" --format compressed-tensors \
  -o "$tmp/ct-out"
pass "--target compressed-tensors: the recipe is written ($(recipe_configs "$tmp/ct.json"))"

# without --target the allocation of the same budget takes what the writer refuses
expect 0 "$bin" allocate "$tmp/run.h5" --budget 7 --no-store --summary -o "$tmp/free.json"
expect 2 "$bin" -q quantize "$data/stories260K" --recipe "$tmp/free.json" --format compressed-tensors \
  -o "$tmp/free-out"
[ ! -e "$tmp/free-out" ] || fail "a refused recipe left an output"
pass "without --target: the writer refuses the recipe"

# gguf, on the GGUF model: ggml-* types only, a tensor-type file beside it
expect 0 "$bin" -q sweep "$data/stories260K.gguf" --quantizers "$configs" -o "$tmp/gguf.h5"
expect 0 "$bin" allocate "$tmp/gguf.h5" --budget 8 --target gguf --no-store --summary \
  -o "$tmp/gguf.json"
for c in $(recipe_configs "$tmp/gguf.json"); do
  case "$c" in ggml-*) ;; *) fail "--target gguf chose '$c'" ;; esac
done
[ -s "$tmp/gguf.tensor-types.txt" ] || fail "--target gguf: no tensor-type file"
expect 0 "$bin" -q quantize "$data/stories260K.gguf" --recipe "$tmp/gguf.json" --format gguf \
  -o "$tmp/out.gguf"
pass "--target gguf: the recipe is written ($(recipe_configs "$tmp/gguf.json"))"

# bad input
expect 2 "$bin" allocate "$tmp/run.h5" --budget 7 --target onnx --no-store
expect_err "unknown --target 'onnx'"
expect 3 "$bin" allocate "$tmp/run.h5" --budget 7 --target gguf --model "$tmp/missing" --no-store
expect_err "reads the model the dataset was swept from"
pass "bad --target and --model"
