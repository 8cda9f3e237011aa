#!/usr/bin/env bash
# Runs ON the GPU machine (after scripts/device-prepare.sh here; carry .carry):
# builds bench_gpu and profiles the single-configuration streaming kernel and
# the fused kernel with Nsight Compute (clocks left alone), writing the
# reports to $OUT/ncu-*.txt and printing the key sections.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
PREFIX=/tmp/frontier-deps
mkdir -p "$PREFIX"
for deb in .carry/debs/*.deb; do dpkg -x "$deb" "$PREFIX"; done
PCDIR=$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig
sed -i "s|=/usr|=$PREFIX/usr|g" "$PCDIR"/*.pc
export PKG_CONFIG_PATH=$PCDIR LD_LIBRARY_PATH=$PREFIX/usr/lib/x86_64-linux-gnu CPATH=$PREFIX/usr/include
cmake -S . -B build-prof -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA=ON \
  -DFRONTIER_TESTS=OFF >/dev/null || exit 1
cmake --build build-prof -j"$(nproc)" --target bench_gpu >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats"
timeout 200 "$NCU" --clock-control none $SECTIONS -k regex:fr_kstream_kernel -c 2 \
  build-prof/bench/bench_gpu kernels --reps 1 >"$OUT/ncu-stream.txt" 2>&1
timeout 200 "$NCU" --clock-control none $SECTIONS -k regex:fr_kfused_kernel -c 1 \
  build-prof/bench/bench_gpu fused --reps 1 >"$OUT/ncu-fused.txt" 2>&1
for f in stream fused; do
  echo "=== $f"
  grep -E "fr_k|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issued Ipc|No Eligible|Warp Cycles Per Issued|Executed Ipc|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Stall|Dynamic Shared|Waves Per SM|Grid Size|Executed Instructions  " "$OUT/ncu-$f.txt" | head -60
done
