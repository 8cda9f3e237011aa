#!/usr/bin/env bash
# Optional (label `optional`: needs torch and transformers):
# bench/bench_capture.py, the capture.py benchmark of docs/benchmarks.md, on
# its tiny shape on the CPU (2 layers of width 64): it makes the model
# folder, runs capture.py with random token ids and then with capture.py's
# own sampling (--model, --tokens-source self), and writes JSON whose
# figures agree with the shape: 15 nn.Linear modules (7 per layer and the
# untied lm_head), each with statistics and a sensitivity, 4 x 32 tokens, and
# the exact bytes of the float64 sums (q/k/v and gate/up sharing one); and
# capture.py's option errors (a line naming the option, exit 1, no file) and
# a shared sum whose sharing breaks in a batch (exit 1, --no-shared-sums named).
set -uo pipefail
root=$1
python3 -c "import torch, transformers" 2>/dev/null || { echo "SKIP: torch/transformers not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
b=$root/bench/bench_capture.py
python3 "$b" --work "$tmp/w" --shape tiny --layers 2 --n-sequences 4 --seq-len 32 --device cpu \
  --dtype float32 --threads 1 --json "$tmp/a.json" >"$tmp/a.out" 2>&1 || { cat "$tmp/a.out"; fail "bench_capture.py"; }
grep -q "capture.py wall time" "$tmp/a.out" || fail "no table"
python3 "$b" --work "$tmp/w2" --model "$tmp/w/tiny-2" --tokens-source self --n-sequences 4 --seq-len 32 \
  --device cpu --dtype float32 --threads 1 --json "$tmp/b.json" >"$tmp/b.out" 2>&1 ||
  { cat "$tmp/b.out"; fail "bench_capture.py --model --tokens-source self"; }
# capture.py's option errors: one line naming the option, exit 1, before the model loads
cap=$root/examples/calibration/capture.py
for bad in "--device foo|--device 'foo' is not a torch device" \
           "--stats-device bar|--stats-device 'bar' is not a torch device" \
           "--sensitivity-levels 0.1,-1|--sensitivity-levels '0.1,-1' must be positive" \
           "--sensitivity-batch -1|--sensitivity-batch must be >= 0"; do
  opts=${bad%%|*} want=${bad#*|}
  python3 "$cap" "$tmp/w/tiny-2" -o "$tmp/bad.safetensors" $opts >"$tmp/bad.out" 2>&1 && fail "capture.py $opts: exit 0"
  grep -qF -- "$want" "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "capture.py $opts: no '$want'"; }
  grep -q "Traceback" "$tmp/bad.out" && fail "capture.py $opts: a traceback"
  [ -e "$tmp/bad.safetensors" ] && fail "capture.py $opts: wrote a file"
done
# a shared sum whose sharing does not hold in a batch stops the run with a
# line naming both modules and --no-shared-sums (the probe made to pair
# o_proj with q_proj, which are handed different tensors)
python3 - "$cap" "$tmp/w/tiny-2" "$tmp/alias.safetensors" >"$tmp/alias.out" 2>&1 <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("capture", sys.argv[1])
cap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cap)
real = cap.shared_inputs
def paired(*a):
    owner = real(*a)
    owner["model.layers.0.self_attn.o_proj"] = "model.layers.0.self_attn.q_proj"
    return owner
cap.shared_inputs = paired
sys.argv = ["capture.py", sys.argv[2], "-o", sys.argv[3], "--n-sequences", "2", "--seq-len", "16",
            "--no-sensitivity"]
cap.main()
PY
[ $? -eq 1 ] || { cat "$tmp/alias.out"; fail "a broken shared sum: not exit 1"; }
grep -q "o_proj was handed .*q_proj's input tensor .* --no-shared-sums" "$tmp/alias.out" ||
  { cat "$tmp/alias.out"; fail "a broken shared sum: no message naming both modules"; }
[ -e "$tmp/alias.safetensors" ] && fail "a broken shared sum: wrote a file"
python3 - "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "the JSON figures"
import json, sys
for p, source in zip(sys.argv[1:], ("random", "self")):
    b = json.load(open(p))
    assert b["modules"] == 15 and b["sensitivity_weights"] == 15 and b["tokens"] == 128, b
    assert b["tokens_source"] == source and b["output_bytes"] > 0 and b["wall_s"] > 0, b
    assert set(b["split_s"]) == {"load", "tokens", "statistics", "sensitivity", "write"}, b
    # float64 sums: per layer q (shared by k, v), o, gate (shared by up) of 64 inputs and down of
    # 160, and lm_head: 8 (2n + n^2) each
    assert b["sums_on"] == "cpu" and b["sums_bytes"] == 2 * (3 * 33792 + 207360) + 33792, b
print("ok: bench_capture.py on the tiny shape, random and self-sampled tokens")
PY
echo "bench_capture_smoke: all checks passed"
