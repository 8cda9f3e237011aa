#!/usr/bin/env bash
# The CUDA executor (`--device cuda`, here on the emulated device) against the
# CPU on data/tiny-moe's expert stacks: the same /results and /expert_results
# (sizes and max_abs_err exact; sums within 1e-6 relative, as
# tests/gpu/sweep_cli_gpu.sh: the device reduces in its own fixed order).
# Also the device column names the GPU for the fused families. With the
# shipped per-expert statistics (data/tiny-moe/calib.safetensors): the same
# rows, out_rel_err included, for data-free and gptq- configurations.
# usage: sweep_moe_gpu.sh FRONTIER_CUDA_BINARY FRONTIER_BINARY DATA_DIR
set -u
gpu=$1 cpu=$2 data=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/frontier-moe-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export FRONTIER_PLUGIN_PATH=none
python3 -c 'import h5py' 2>/dev/null || { echo "SKIP: python3 has no h5py"; exit 77; }
q=nvfp4,int4-tensor-sym,fp8-e4m3-tensor,fp8-e4m3-channel,int4-g128-asym,mxfp4,nf4-g64
"$gpu" --quiet sweep "$data/tiny-moe" --quantizers "$q" --split-experts --device cuda -o gpu.h5 >/dev/null 2>err.txt
rc=$?
if [ $rc -eq 7 ]; then echo "SKIP: no CUDA device ($(head -1 err.txt))"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: --device cuda exited $rc"; cat err.txt; exit 1; }
"$cpu" --quiet sweep "$data/tiny-moe" --quantizers "$q" --split-experts --device cpu -o cpu.h5 >/dev/null 2>err.txt ||
  { echo "FAIL: cpu sweep"; cat err.txt; exit 1; }
python3 "$here/check_moe.py" same gpu.h5 cpu.h5 1e-6 || { echo "FAIL: GPU rows differ from the CPU's"; exit 1; }
python3 - gpu.h5 <<'PY' || { echo "FAIL: expert stacks did not run on the device"; exit 1; }
import sys, h5py
f = h5py.File(sys.argv[1], "r")
t = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][...]}
dev = {r["device"].decode() for r in f["results"][...] if t[int(r["tensor_id"])].endswith("_proj") and
       "experts." in t[int(r["tensor_id"])] and t[int(r["tensor_id"])].count(".") == 5}
print("devices of the stacks' rows:", sorted(dev))
sys.exit(0 if dev and all(d.startswith("cuda") for d in dev) else 1)
PY
qc=int4-g32-sym,gptq-int4-g32-sym,nvfp4
calib=$data/tiny-moe/calib.safetensors
"$gpu" --quiet sweep "$data/tiny-moe" --calib "$calib" --quantizers "$qc" --exclude embed_tokens \
  --split-experts --device cuda -o gpu_calib.h5 >/dev/null 2>err.txt ||
  { echo "FAIL: --device cuda --calib"; cat err.txt; exit 1; }
"$cpu" --quiet sweep "$data/tiny-moe" --calib "$calib" --quantizers "$qc" --exclude embed_tokens \
  --split-experts --device cpu -o cpu_calib.h5 >/dev/null 2>err.txt ||
  { echo "FAIL: cpu sweep --calib"; cat err.txt; exit 1; }
python3 "$here/check_moe.py" samecalib gpu_calib.h5 cpu_calib.h5 1e-6 ||
  { echo "FAIL: GPU rows with per-expert statistics differ from the CPU's"; exit 1; }
echo "all passed"
