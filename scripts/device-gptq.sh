#!/usr/bin/env bash
# Runs ON the GPU machine (like scripts/device.sh, after
# scripts/device-prepare.sh here; carry .carry): only what GPTQ's speed
# needs, for a short call while tuning kernels/gptq.cu:
#   bash scripts/device-gptq.sh
# builds bench_gptq and test_gpu_calib, runs the GPU GPTQ tests (the column
# kernels against each other and GPU against CPU), then bench_gptq with
# every column kernel and phases, and the eager PyTorch peer on the same
# data; $OUT/gptq.json and $OUT/device-gptq.log come back.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
LOG=$OUT/device-gptq.log
BUILD=$ROOT/build-device
PREFIX=/tmp/frontier-deps
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1
[ -f .carry/commit.txt ] && cat .carry/commit.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv
log() { echo "$*"; }
source scripts/device-deps.sh
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA=ON \
  -DFRONTIER_PLOTS=AUTO -DFRONTIER_MPI=OFF > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
t0=$(date +%s)
cmake --build "$BUILD" -j"$(nproc)" --target bench_gptq test_gpu_calib > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout 120 "$BUILD/tests/gpu/test_gpu_calib" | grep -E "gptq|GPTQ|FAIL|passed"
GD=/tmp/frontier-gptq
rm -rf "$GD"; mkdir -p "$GD"
timeout 120 "$BUILD/bench/bench_gptq" --reps 5 --tokens 8192 --dir "$GD" --json "$GD/gpu.json" \
  --phases --loops "${LOOPS:-warp8,warp4,block}"
timeout 120 python3 bench/peers/torch_gptq.py --dir "$GD" --passes 2 --gpu-json "$GD/gpu.json" \
  --json "$OUT/gptq.json"
[ -f "$OUT/gptq.json" ] || cp "$GD/gpu.json" "$OUT/gptq.json"
