#!/usr/bin/env bash
# Numeric flags of GPU rows (docs/dataset.md "Numeric flags", docs/gpu.md
# "Numeric flags"): `frontier sweep --device cuda` against `--device cpu` on
# tests/numeric's edge-case checkpoint (fp16 scale overflow / underflow and
# their exact boundaries, an all-zero tensor with -0, float32 subnormals, the
# e8m0 floor, NVFP4's saturating global scale) and on F16 / BF16 tensors
# (f16 subnormals are normal float32, bf16 ones are not; -0 in both), whole
# and streamed in row chunks (--cuda-buffer; 128-row slabs with 128 x 128
# tiles, odd chunk sizes without): every row's flags equal bit for bit, the
# GPU rows examined (bit 0), the numeric warning lines the same, and the F32
# run's flags equal numpy's (tests/numeric/check_flags.py).
# usage: numeric_flags_gpu.sh FRONTIER_BINARY
set -u
frontier=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
num=$here/../numeric
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
python3 -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: python3 has no h5py/numpy"; exit 77; }
python3 "$num/make_edge_model.py" edge.safetensors || { echo "FAIL: make_edge_model.py"; exit 1; }
python3 - <<'PY' || { echo "FAIL: writing the f16/bf16 model"; exit 1; }
import json, struct
import numpy as np
rng = np.random.default_rng(20)
def bf16(a):
    # round to nearest even, as the bits of a bfloat16
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)
def f16(a):
    return np.asarray(a, np.float32).astype(np.float16).view(np.uint16)
u = lambda r, c: rng.uniform(-1, 1, (r, c)).astype(np.float32)
zero = np.zeros((64, 256), np.float32)
zero[1::4, ::3] = -0.0
sub16 = u(64, 256) * np.float32(3e-5)   # f16 subnormals (below 6.1e-5): normal float32
sub16[::5, ::7] = -0.0
sub16b = u(64, 256) * np.float32(1e-39)  # bf16 subnormals: float32 subnormals
tall = u(1000, 256) * np.float32(0.02)
tall[700, 3] = np.float32(3e6)           # fp16 overflow in the 6th 128-row slab
tall[613, 128:256] *= np.float32(1e-7)   # one small group (fp16 underflow of int8 sym)
ftall = u(1000, 256) * np.float32(0.02)
ftall[640:768, :128] = u(128, 128) * np.float32(3e-45)  # one 128 x 128 tile whose fp32 scale is 0
wide = u(4, 5000) * np.float32(0.02)     # rows wider than a warp's piece (2048 columns)
wide[2] *= np.float32(1e-7)               # a row whose fp16 scale underflows
wide[3, 4321] = np.float32(2e6)           # and one whose scale overflows
odd = u(300, 200) * np.float32(1e-2)
odd[299, 199] = -0.0
odd[150, :] = 0.0
tensors = {
    "h.sub.weight": ("F16", f16(sub16), (64, 256)),
    "h.zero.weight": ("F16", f16(zero), (64, 256)),
    "h.huge.weight": ("F16", f16(u(64, 256) * np.float32(6e4)), (64, 256)),
    "b.sub.weight": ("BF16", bf16(sub16b), (64, 256)),
    "b.huge.weight": ("BF16", bf16(u(64, 256) * np.float32(1e6)), (64, 256)),
    "b.tall.weight": ("BF16", bf16(tall), (1000, 256)),
    "f.odd.weight": ("F32", odd, (300, 200)),
    "f.tall.weight": ("F32", ftall, (1000, 256)),
    "f.wide.weight": ("F32", wide, (4, 5000)),
}
header, blobs, off = {}, [], 0
for name, (dt, arr, shape) in tensors.items():
    data = np.ascontiguousarray(arr).tobytes()
    header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
    blobs.append(data)
    off += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open("half.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
PY

Q=int4-g128-sym,int8-g128-sym,int4-g128-asym,int8-g32-asym,int4-gC-sym,nvfp4,fp8-e4m3-tensor,fp8-e4m3-block128,fp8-e4m3-channel,mxfp4,nf4-g64,mse-int4-g128-sym
# without 128 x 128 tiles: chunks of any number of rows
Q_ROWS=int4-g128-sym,int8-g128-sym,int8-g32-asym,int4-gC-sym,nvfp4,fp8-e4m3-tensor,mxfp4,nf4-g64

sweep() { # NAME DEVICE MODEL QUANTIZERS [options]
  local name=$1 dev=$2 model=$3 q=$4
  shift 4
  "$frontier" sweep "$model" -o "$name.h5" --device "$dev" --quantizers "$q" "$@" 2>"$name.err"
  local rc=$?
  if [ "$dev" = cuda ] && [ $rc -eq 7 ]; then
    echo "SKIP: no CUDA device ($(head -1 "$name.err"))"
    exit 77
  fi
  if [ $rc -ne 0 ]; then
    echo "FAIL: sweep $name ($dev) exited $rc"; sed 's/^/  /' "$name.err"; exit 1
  fi
}

fails=0
compare() { # GPU CPU [numpy MODEL]
  python3 - "$@" <<'PY' || fails=$((fails + 1))
import sys
import h5py
gpu, cpu = sys.argv[1], sys.argv[2]
def rows(name):
    with h5py.File(name + ".h5", "r") as f:
        t = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][()]}
        c = {int(r["config_id"]): r["name"].decode() for r in f["configs"][()]}
        return {(t[int(r["tensor_id"])], c[int(r["config_id"])]):
                (int(r["flags"]), r["device"].decode()) for r in f["results"][()]}
def warnings(name):
    keys = ("every value is zero", "subnormal", "scale")
    return sorted(l for l in open(name + ".err").read().splitlines()
                  if "warning: '" in l and any(k in l for k in keys))
g, c = rows(gpu), rows(cpu)
bad = 0
if set(g) != set(c):
    print(f"FAIL: {gpu}: rows differ ({len(g)} on cuda, {len(c)} on cpu)"); sys.exit(1)
on_gpu = 0
for k, (fc, dc) in sorted(c.items()):
    fg, dg = g[k]
    on_gpu += dg.startswith("cuda:")
    if fg != fc:
        print(f"FAIL: {gpu}: {k}: flags {fg:#x} on {dg}, {fc:#x} on cpu"); bad += 1
    if not fg & 1:
        print(f"FAIL: {gpu}: {k}: not examined on {dg}"); bad += 1
if not on_gpu:
    print(f"FAIL: {gpu}: no row was measured on the GPU"); bad += 1
wg, wc = warnings(gpu), warnings(cpu)
if wg != wc:
    print(f"FAIL: {gpu}: warning lines differ")
    for l in sorted(set(wg) ^ set(wc)):
        print(f"  {'cuda' if l in wg else 'cpu '}: {l}")
    bad += 1
if not wc:
    print(f"FAIL: {cpu}: no numeric warning at all"); bad += 1
print(f"{gpu}: {len(c)} rows ({on_gpu} on the GPU), {len(wc)} warning lines compared, {bad} failures")
sys.exit(1 if bad else 0)
PY
}

sweep edge_cpu cpu edge.safetensors "$Q"
sweep edge_gpu cuda edge.safetensors "$Q"
compare edge_gpu edge_cpu
if python3 "$num/check_flags.py" edge.safetensors edge_gpu.h5 edge_gpu.err > check.txt; then
  echo "edge_gpu: flags equal numpy's ($(tr '\n' ' ' < check.txt))"
else
  echo "FAIL: edge_gpu against numpy"; sed 's/^/  /' check.txt; fails=$((fails + 1))
fi

sweep half_cpu cpu half.safetensors "$Q"
sweep half_gpu cuda half.safetensors "$Q"
compare half_gpu half_cpu
# streamed: 128-row slabs (fp8-e4m3-block128) and chunks of 1 to 40 rows
# (none); a tile, a tensor and a wide row whose groups span several chunks
sweep half_chunk cuda half.safetensors "$Q" --cuda-buffer 48K --device-stats stats.json
compare half_chunk half_cpu
# (the emulation's events time nothing: numeric_s is 0 there)
python3 -c "import json,sys; s=json.load(open('stats.json')); sys.exit(0 if s['chunked_tensors'] > 0 and s['numeric_s'] >= 0 else 1)" ||
  { echo "FAIL: half_chunk: no tensor was streamed in chunks ($(cat stats.json))"; fails=$((fails + 1)); }
sweep rows_cpu cpu half.safetensors "$Q_ROWS"
sweep rows_chunk cuda half.safetensors "$Q_ROWS" --cuda-buffer 20K
compare rows_chunk rows_cpu

# the f16/bf16 facts themselves, from the stored bits: f16 subnormals are
# normal float32, bf16 ones are float32 subnormals
python3 - <<'PY' || fails=$((fails + 1))
import json, struct
import h5py
import numpy as np
with open("half.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    blob = f.read()
want = {}
for name, t in header.items():
    a, b = t["data_offsets"]
    raw = np.frombuffer(blob[a:b], {"F16": "<f2", "BF16": "<u2", "F32": "<f4"}[t["dtype"]])
    x = (raw.astype(np.uint32) << 16).view(np.float32) if t["dtype"] == "BF16" else raw.astype(np.float32)
    u = x.view(np.uint32)
    mag = u & 0x7FFFFFFF
    want[name] = (1 | (2 if (mag == 0).all() else 0) | (4 if ((mag != 0) & (mag < 0x00800000)).any() else 0)
                  | (8 if (u == 0x80000000).any() else 0))
with h5py.File("half_gpu.h5", "r") as f:
    tn = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][()]}
    got = {}
    for r in f["results"][()]:
        got.setdefault(tn[int(r["tensor_id"])], set()).add(int(r["flags"]) & 0xF)
bad = [(k, got.get(k), v) for k, v in want.items() if got.get(k) != {v}]
if bad or want["h.sub.weight"] & 4 or not want["b.sub.weight"] & 4:
    print(f"FAIL: tensor facts of the f16/bf16 model (tensor, got, expected): {bad}")
    raise SystemExit(1)
print(f"f16/bf16 tensor facts as the float32 copy has them ({len(want)} tensors)")
PY

if [ $fails -ne 0 ]; then
  echo "FAIL: $fails check(s)"
  exit 1
fi
echo "PASS"
