#!/usr/bin/env bash
# Optional (label `optional`: needs torch and transformers): kld.py on
# data/stories260K gives KL 0 and equal perplexities for the original weights
# as the "quantized" checkpoint, and a positive KL for int8-g32-sym written by
# frontier quantize; its JSON annotates a dataset.
set -uo pipefail
bin=$1
root=$2
python3 -c "import torch, transformers" 2>/dev/null || { echo "SKIP: torch/transformers not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
m=$root/data/stories260K
python3 "$root/examples/eval/kld.py" "$m" --dequantized "$m/model.safetensors" --n-sequences 2 --seq-len 64 -o "$tmp/id.json" 2>/dev/null || fail "kld.py identity"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert abs(d['kl_mean'])<1e-9 and abs(d['ppl_quant']-d['ppl_orig'])<1e-9*d['ppl_orig'], d" "$tmp/id.json" || fail "identity KL not 0"
python3 "$root/examples/eval/kld.py" "$m" --config int8-g32-sym --frontier "$bin" --n-sequences 2 --seq-len 64 -o "$tmp/q8.json" 2>/dev/null || fail "kld.py --config"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert 0<d['kl_mean']<0.2 and d['tokens']['seed']==5678, d" "$tmp/q8.json" || fail "int8 KL"
"$bin" -q sweep "$m" --bits 8..8 -o "$tmp/run.h5" >/dev/null 2>&1 || fail "sweep"
"$bin" annotate "$tmp/run.h5" "$tmp/q8.json" --list | grep -q "int8-g32-sym *config" || fail "annotate"
# capture.py's sensitivities: a small capture loads in frontier and steers allocate
python3 "$root/examples/calibration/capture.py" "$m" -o "$tmp/c.safetensors" --n-sequences 2 --seq-len 32 \
  --sensitivity-sequences 1 >/dev/null 2>&1 || fail "capture.py"
python3 -c "
from safetensors.numpy import load_file; import sys
t = load_file(sys.argv[1]); s = [k for k in t if k.endswith('.sensitivity')]
assert len(s) == 36 and all(t[k].shape == (2,) and t[k][0] > 0 for k in s), s" "$tmp/c.safetensors" || fail "sensitivity tensors"
# the original per-level way measures the same alphas (the default batches the levels)
python3 "$root/examples/calibration/capture.py" "$m" -o "$tmp/p.safetensors" --n-sequences 2 --seq-len 32 \
  --sensitivity-sequences 1 --sensitivity-mode perturb >/dev/null 2>&1 || fail "capture.py --sensitivity-mode perturb"
python3 -c "
import json, struct, sys, numpy as np
from safetensors.numpy import load_file
def meta(p):
    f = open(p, 'rb'); return json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))['__metadata__']
b, p = load_file(sys.argv[1]), load_file(sys.argv[2])
assert set(b) == set(p)
for k in b:
    if k.endswith('.sensitivity'):
        assert abs(b[k][0] - p[k][0]) <= 1e-4 * p[k][0], (k, b[k], p[k])
    else:
        assert np.array_equal(b[k], p[k]), k
mb, mp = meta(sys.argv[1]), meta(sys.argv[2])
assert mb['sensitivity'].startswith(mp['sensitivity'] + '; batched:') and 'sensitivity_per_level' not in mb, mb
" "$tmp/c.safetensors" "$tmp/p.safetensors" || fail "batched and perturb sensitivities differ"
# --sample-batch: a bad value is refused before any work; on the CPU the
# sampling sentence stays the one the shipped files carry
python3 "$root/examples/calibration/capture.py" "$m" -o "$tmp/x.safetensors" --sample-batch -1 \
  >/dev/null 2>"$tmp/x.err" && fail "capture.py --sample-batch -1 accepted"
grep -q -- "--sample-batch >= 0" "$tmp/x.err" || { cat "$tmp/x.err"; fail "capture.py --sample-batch -1: no message"; }
[ ! -e "$tmp/x.safetensors" ] || fail "capture.py --sample-batch -1 wrote a file"
python3 "$root/examples/calibration/capture.py" "$m" -o "$tmp/s1.safetensors" --n-sequences 3 --seq-len 16 \
  --sample-batch 1 --no-sensitivity >/dev/null 2>&1 || fail "capture.py --sample-batch 1"
python3 -c "
import json, struct, sys
f = open(sys.argv[1], 'rb'); m = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))['__metadata__']
assert m['sampling'] == 'self-sampled, temperature 1.0, seed 1234' and m['n_sequences'] == '3', m" \
  "$tmp/s1.safetensors" || fail "capture.py --sample-batch 1: metadata"
"$bin" -q sweep "$m" --bits 4..8 --quantizers 'int*' -o "$tmp/r4.h5" --calib "$tmp/c.safetensors" >/dev/null 2>&1 || fail "sweep with the new file"
"$bin" allocate "$tmp/r4.h5" --budget 5 --objective sensitivity --calib "$tmp/c.safetensors" --summary --no-store >"$tmp/a.txt" 2>&1 || { cat "$tmp/a.txt"; fail "allocate --objective sensitivity"; }
grep -q "predicted KL divergence" "$tmp/a.txt" || fail "no predicted KL"
echo "test_kld_optional: all checks passed"
