#!/usr/bin/env bash
# `frontier quantizers --json`: parsed and checked field by field.
#   quantizers_json.sh FRONTIER PLUGIN_DIR TERNARY_DIR
set -euo pipefail
frontier=$1
dir=$2
ternary_dir=$3
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FRONTIER_PLUGIN_PATH="$dir:$ternary_dir" "$frontier" quantizers --json >"$tmp/out.json" 2>"$tmp/err"
FRONTIER_PLUGIN_PATH=none "$frontier" quantizers --json >"$tmp/builtin.json"
python3 - "$tmp/out.json" "$tmp/builtin.json" "$dir" "$ternary_dir" "$tmp/err" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
builtin = json.load(open(sys.argv[2]))
plugin_dir, ternary_dir = sys.argv[3], sys.argv[4]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

check(doc["abi_version"] == 2, "abi_version")
check(isinstance(doc["frontier_version"], str) and doc["frontier_version"], "frontier_version")
qs = {q["name"]: q for q in doc["quantizers"]}
check(doc["n_quantizers"] == len(doc["quantizers"]), "n_quantizers")
check(doc["n_configs"] == sum(len(q["configs"]) for q in doc["quantizers"]), "n_configs")
check(doc["n_quantizers"] == builtin["n_quantizers"] + 4, "four plugins (good, misbehave, older, ternary) on top of the built-ins")
for q in builtin["quantizers"]:
    check(q["origin"] == "builtin", "built-in %s origin" % q["name"])
    check(qs.get(q["name"]) == q, "built-in %s listed the same with plugins" % q["name"])
names = [c["name"] for q in doc["quantizers"] for c in q["configs"]]
check(len(names) == len(set(names)), "configuration names unique")
for q in doc["quantizers"]:
    check(set(q) == {"name", "version", "origin", "description", "flags", "configs"}, "keys of " + q["name"])
    check(all(f in ("needs-hessian", "needs-act-stats", "cuda", "deterministic") for f in q["flags"]), "flags of " + q["name"])
    for c in q["configs"]:
        check(set(c) == {"name", "nominal_bits", "params", "traits"}, "keys of " + c["name"])
        check(0 < c["nominal_bits"] <= 64, "nominal_bits of " + c["name"])
        check(isinstance(c["params"], dict), "params of " + c["name"])

t = qs.get("ternary", {})
check(t.get("origin") == ternary_dir + "/libternary.so", "ternary origin")
check(t.get("version") == "1.0.0", "ternary version")
check(t.get("flags") == ["deterministic"], "ternary flags")
check(t.get("description", "").startswith("TWN ternary weights"), "ternary description")
check([c["name"] for c in t.get("configs", [])] == ["ternary-tensor", "ternary-row", "ternary-g64"], "ternary configs")
for c in t.get("configs", []):
    check(c["nominal_bits"] == 1.6, c["name"] + " nominal_bits")
    check(c["params"]["threshold_ratio"] == 0.7, c["name"] + " threshold_ratio")
check(t["configs"][2]["params"] == {"group_size": 64, "threshold_ratio": 0.7, "scale_dtype": "fp16", "packing": "5 trits per byte"}, "ternary-g64 params")

g = qs.get("good", {})
check(g.get("origin") == plugin_dir + "/libgood.so", "good origin")
nothing = {"row_multiple": 0, "needs_range": False, "whole_tensor_reason": None, "storage": "none",
           "storage_bits": 0, "storage_group_size": 0, "storage_symmetric": False,
           "storage_fp8_scope": None, "storage_scales": False, "gguf_type": None,
           "gguf_importance": False, "needs_group_amax": False, "fused_companion_of": None}
check(g.get("configs") == [{"name": "good-f32", "nominal_bits": 32, "params": {"dtype": "f32"},
                            "traits": nothing}], "good configs")
# the built-ins' traits as their families declare them
bc = {c["name"]: c["traits"] for q in builtin["quantizers"] for c in q["configs"]}
check(bc["int4-g128-asym"] == dict(nothing, row_multiple=1, storage="int-pack", storage_bits=4,
                                   storage_group_size=128), "int4-g128-asym traits")
check(bc["int4-tensor-sym"] == dict(nothing, row_multiple=1, needs_range=True), "int4-tensor-sym traits")
check(bc["fp8-e4m3-block128"] == dict(nothing, row_multiple=128, storage="fp8",
                                      storage_fp8_scope="block128"), "fp8-e4m3-block128 traits")
check(bc["nvfp4-fused"] == dict(nothing, storage="nvfp4", needs_group_amax=True,
                                fused_companion_of="nvfp4"), "nvfp4-fused traits")
check(bc["ggml-q4_0"] == dict(nothing, gguf_type="q4_0"), "ggml-q4_0 traits")
check(bc["imat-ggml-q4_k"] == dict(nothing, gguf_type="q4_k", gguf_importance=True),
      "imat-ggml-q4_k traits")
check(bc["nf4-g64-dq"]["row_multiple"] == 0 and "double quantization" in bc["nf4-g64-dq"]["whole_tensor_reason"],
      "nf4-g64-dq traits")
check(bc["gptq-int4-g128-sym"] == dict(nothing, storage="int-pack", storage_bits=4,
                                       storage_group_size=128, storage_symmetric=True), "gptq traits")
check(bc["mse-int4-g128-sym"] == nothing, "mse traits")
o = qs.get("older", {})
check(o.get("flags") == ["deterministic"] and len(o.get("configs", [])) == 1, "older plugin listed")
m = qs.get("misbehave", {})
check(len(m.get("configs", [])) == 9, "misbehave configs")
for broken in ("bad_abi", "bad_cudaflag", "good_dup", "dupself", "params"):
    check(broken not in qs, broken + " must not be listed")
warnings = open(sys.argv[5]).read().splitlines()
check(len(warnings) == 10 and all(w.endswith("(skipped)") for w in warnings), "10 warnings on stderr")

if errors:
    sys.exit("frontier quantizers --json: " + "; ".join(errors))
print("frontier quantizers --json: %d quantizers, %d configurations checked" % (doc["n_quantizers"], doc["n_configs"]))
PY
