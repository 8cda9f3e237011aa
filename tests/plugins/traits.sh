#!/usr/bin/env bash
# Configuration traits across the plugin ABI (include/frontier/plugin.h,
# frontier_config_traits; docs/plugins.md, "Traits"): a version-1 plugin
# still loads and runs, known to need whole tensors and to have no
# checkpoint storage; a version-2 plugin's traits decide what the sweep and
# the writers do with it, exactly as a built-in family's do.
#   traits.sh FRONTIER PLUGIN_DIR DATA SWEEP_TESTS
set -euo pipefail
F=$1
dir=$2
data=$3
sweep_tests=$4
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
python3 -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py and numpy are needed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FRONTIER_PLUGIN_PATH=none
P=(--plugin "$dir/libvone.so" --plugin "$dir/librowlocal.so")
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }

# 1. both load; --json lists what the host understood of each configuration
"$F" quantizers "${P[@]}" --json >"$tmp/q.json" || fail "frontier quantizers with both plugins"
python3 - "$tmp/q.json" <<'PY' || fail "traits as listed"
import json, sys
doc = json.load(open(sys.argv[1]))
t = {c["name"]: c["traits"] for q in doc["quantizers"] for c in q["configs"]}
assert t["vone-r8"]["row_multiple"] == 0 and t["vone-r8"]["storage"] == "none", t["vone-r8"]
assert t["rowlocal-g32"]["row_multiple"] == 1 and t["rowlocal-g32"]["storage"] == "int-pack"
assert t["rowlocal-g32"]["storage_scales"] and t["rowlocal-g32"]["storage_group_size"] == 32
assert t["rowlocal-tensor"]["needs_range"] and t["rowlocal-tensor"]["row_multiple"] == 1
assert t["rowlocal-mean"]["whole_tensor_reason"].startswith("a scale from the mean")
assert t["rowlocal-q8_0"]["gguf_type"] == "q8_0"
PY
pass "a v1 plugin loads knowing nothing; a v2 plugin's traits are read"

# 2. --max-memory: the v2 plugin's row-local configurations run in row
# blocks, bit for bit the whole tensor's rows; the others are skipped with
# their reason
SPEC=gaussian:512x512,student-t3:1000x256
run() { "$F" sweep --device cpu --synthetic "$SPEC" --seed 5 "${P[@]}" \
  --quantizers 'vone-*,rowlocal-*' --quiet --threads 2 -o "$@"; }
run "$tmp/a.h5" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "default sweep"; }
run "$tmp/b.h5" --max-memory 1M >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "--max-memory sweep"; }
python3 "$sweep_tests/blocked_check.py" "$tmp/a.h5" "$tmp/b.h5" 'synthetic\.[01]\.' 4 ||
  fail "blocked rows differ from the whole tensor's"
python3 - "$tmp/b.h5" <<'PY' || fail "what --max-memory measured and skipped"
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    cfg = {int(c["config_id"]): c["name"].decode() for c in f["configs"][()]}
    measured = {cfg[int(r["config_id"])] for r in f["results"][()]}
    skipped = {r["config"].decode(): r["reason"].decode() for r in f["skipped"][()]}
assert {"rowlocal-g32", "rowlocal-tensor"} <= measured, measured
assert "rowlocal-g32" not in skipped and "rowlocal-tensor" not in skipped, skipped
assert skipped["vone-r8"].startswith("plugin configuration on a tensor over --max-memory"), skipped
assert skipped["rowlocal-mean"] == ("a scale from the mean |w| of the whole tensor: needs the "
                                    "whole tensor; raise --max-memory"), skipped
print("blocked: %s measured; skipped: %s" % (sorted(measured), sorted(skipped)))
PY
pass "--max-memory runs the declared row-local configurations in blocks"

# 3. the writers: the storage a v2 plugin declares is written (its own
# scales), checked bit for bit by the writer; a v1 plugin is refused for
# compressed-tensors and written dequantized
"$F" quantize "$data/stories260K" "${P[@]}" --config rowlocal-g32 --exclude down_proj \
  -o "$tmp/ct" --summary >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "compressed-tensors of rowlocal-g32"; }
python3 - "$tmp/ct" <<'PY' || fail "quantization_config of rowlocal-g32"
import json, sys
q = json.load(open(sys.argv[1] + "/config.json"))["quantization_config"]
assert q["format"] == "pack-quantized", q["format"]
a = q["config_groups"]["group_0"]["weights"]
assert a["num_bits"] == 4 and a["group_size"] == 32 and a["symmetric"] and a["type"] == "int", a
rep = json.load(open(sys.argv[1] + "/quantize_report.json"))
assert all(t["equals_quantizer"] for t in rep["tensors"] if t.get("config") == "rowlocal-g32"), rep
PY
pass "rowlocal-g32 written as pack-quantized with the scales it chose"
rc=0
"$F" quantize "$data/stories260K" "${P[@]}" --config vone-r8 -o "$tmp/v1" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "compressed-tensors has no layout for it" "$tmp/out" ||
  { cat "$tmp/out"; fail "vone-r8 as compressed-tensors: exit $rc"; }
"$F" quantize "$data/stories260K" "${P[@]}" --config vone-r8 --format dequantized \
  -o "$tmp/v1.safetensors" --summary >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "vone-r8 dequantized"; }
pass "a v1 plugin: no compressed-tensors layout, written dequantized"
"$F" quantize "$data/stories260K.gguf" "${P[@]}" --config rowlocal-q8_0 --exclude ffn_down \
  -o "$tmp/q8.gguf" --summary >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "GGUF of rowlocal-q8_0"; }
python3 - "$tmp/q8.gguf.report.json" <<'PY' || fail "the GGUF report"
import json, sys
ts = [t for t in json.load(open(sys.argv[1]))["tensors"] if t["config"] == "rowlocal-q8_0"]
assert ts and all(t["layout"] == "Q8_0" and t["equals_quantizer"] for t in ts), ts[:2]
PY
pass "rowlocal-q8_0 written as GGUF Q8_0 blocks"
echo "traits: all checks passed"
