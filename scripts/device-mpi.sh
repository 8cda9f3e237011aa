#!/usr/bin/env bash
# Runs ON the GPU machine (scripts/device-prepare.sh ran here first; the call
# carries .carry): the MPI scale-out benchmark of issue 13 (bench/bench_mpi.py,
# docs/scale-out.md): the 70B-Llama-shaped synthetic sweep with 1, 2 and 4
# ranks sharing the one GPU, and a reduced CPU run. Writes bench-mpi-*.json
# and mpi.log into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
PREFIX=/tmp/frontier-deps
BUILD=$PWD/build-device
log() { echo "$*" | tee -a "$OUT/mpi.log"; }
source scripts/device-deps.sh
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA=ON \
  -DFRONTIER_PLOTS=AUTO -DFRONTIER_MPI=AUTO -DFRONTIER_BENCH=OFF >>"$OUT/mpi.log" 2>&1 &&
  cmake --build "$BUILD" -j"$(nproc)" --target frontier_cli >>"$OUT/mpi.log" 2>&1 ||
  { log "build failed"; tail -30 "$OUT/mpi.log"; exit 1; }
log "== GPU: 70B-shaped, ranks 1,2,4"
timeout 200 python3 bench/bench_mpi.py --frontier "$BUILD/frontier" --device cuda --ranks 1,2,4 \
  --json "$OUT/bench-mpi-gpu.json" 2>&1 | tee -a "$OUT/mpi.log"
log "== CPU: 1 layer of 70B halved (--layers 1 --scale 2), ranks 1,2,4"
timeout 120 python3 bench/bench_mpi.py --frontier "$BUILD/frontier" --device cpu --layers 1 --scale 2 \
  --ranks 1,2,4 --json "$OUT/bench-mpi-cpu.json" 2>&1 | tee -a "$OUT/mpi.log"
