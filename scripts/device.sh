#!/usr/bin/env bash
# Runs ON the GPU machine, from the repository root, in one device call
# (scripts/device-prepare.sh ran here first; the call carries .carry):
#   bash scripts/device.sh
# 1. unpacks cJSON from .carry/debs into a prefix under /tmp and configures
#    CMake for it (-DFRONTIER_CUDA=ON, -DFRONTIER_PLOTS=AUTO: no cairo there,
#    figures skipped), Ninja, builds;
# 2. runs the GPU tests (ctest -L gpu);
# 3. the three benchmarks of issue 5 (docs/gpu.md): kernels vs the copy
#    bandwidth, the fused sweep vs PyTorch eager, the 8B Llama-shaped
#    synthetic sweep end to end; and GPTQ on the GPU vs eager PyTorch
#    (issue 10: bench_gptq, bench/peers/torch_gptq.py -> gptq.json);
# 4. the rest of the suite (ctest -LE gpu);
# and writes at most 8 files into $OUT, printing a summary table last.
# Every step has a time limit so the whole stays under 10 minutes (9.5).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
LOG=$OUT/device.log
CTLOG=/tmp/frontier-ctest   # ctest logs (also copied into device.log): $OUT holds at most 8 files
mkdir -p "$CTLOG"
SUMMARY=$OUT/summary.txt
BUILD=$ROOT/build-device
PREFIX=/tmp/frontier-deps
START=$(date +%s)
DEADLINE=$((START + ${DEVICE_SECONDS:-570}))
: > "$LOG"
declare -a ROWS=()

log() { echo "$*" | tee -a "$LOG"; }
left() { echo $((DEADLINE - $(date +%s))); }

# step NAME LIMIT_S LOGFILE CMD...: runs CMD with a time limit (never past the
# deadline), output into LOGFILE and device.log, one summary row.
step() {
  local name=$1 limit=$2 file=$3
  shift 3
  local l
  l=$(left)
  [ "$limit" -gt "$l" ] && limit=$l
  if [ "$limit" -le 5 ]; then
    ROWS+=("$(printf '%-14s %-8s %6s  %s' "$name" "skipped" "-" "no time left")")
    log "== $name: skipped, no time left"
    return 124
  fi
  local shown="$*"
  [ ${#shown} -gt 240 ] && shown="${shown:0:240}..."
  log "== $name (limit ${limit}s): $shown"
  local t0=$(date +%s) rc
  [ "$file" != "$LOG" ] && : > "$file"
  if [ -n "${STEP_OWN_LOG:-}" ]; then
    # a verbose step (ctest -V): its own log only, gzipped into $OUT at the end
    timeout --kill-after=10 "$limit" "$@" >> "$file" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" > >(tee -a "$file" >> "$LOG") 2>&1
  fi
  rc=$?
  sleep 0.2
  local dt=$(( $(date +%s) - t0 ))
  local status=ok
  [ $rc -ne 0 ] && status="rc=$rc"
  [ $rc -eq 124 ] && status="timeout"
  [ $rc -eq 77 ] && status="skip"
  ROWS+=("$(printf '%-14s %-8s %6ss' "$name" "$status" "$dt")")
  log "== $name: $status in ${dt}s"
  return $rc
}

log "frontier device run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ -f .carry/commit.txt ]; then cat .carry/commit.txt >> "$LOG"; fi
git rev-parse HEAD >> "$LOG" 2>&1 || log "git: no repository in this copy (see the commit line above)"
{ nvidia-smi; nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv; } >> "$LOG" 2>&1
{ nvcc --version | tail -2; cmake --version | head -1; ninja --version; gcc --version | head -1; nproc; } >> "$LOG" 2>&1

# ---- 1. dependencies and build ----
source scripts/device-deps.sh
JOBS=$(nproc)
step configure 90 "$LOG" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFRONTIER_CUDA=ON -DFRONTIER_PLOTS=AUTO -DFRONTIER_MPI=AUTO
# the whole model's calibrated sweep needs only the CLI (about a minute less
# of device time per cold call than the whole build); with DEVICE_TESTS=1 it
# builds everything, for the GPU tests that run first
CLI_ONLY=
[ "${DEVICE_PLAN:-}" = calib-model ] && [ -z "${DEVICE_TESTS:-}" ] && CLI_ONLY=1
TARGETS=()
[ -n "$CLI_ONLY" ] && TARGETS=(--target frontier_cli)
step build 300 "$LOG" cmake --build "$BUILD" -j"$JOBS" "${TARGETS[@]}"
BUILT=$?
FRONTIER=$BUILD/frontier
BENCH=$BUILD/bench/bench_gpu

# ---- plans ----
# DEVICE_PLAN=calib: only GPTQ against PyTorch and the calibrated 8B
# benchmark (scripts/device-calib8b.sh) after the tests; the data-free
# benchmarks (kernels, fused sweep, 8B, file streaming), the example family
# and the rest of the suite are skipped
# DEVICE_PLAN=calibprof: the tests, then scripts/device-calib8b.sh's profile
# (CALIB8B_PLAN=profile), without the GPTQ benchmark
PLAN=${DEVICE_PLAN:-full}
if [ "$PLAN" = calibprof ]; then PLAN=calib; export CALIB8B_PLAN=profile; SKIP_GPTQ=1; fi
# DEVICE_PLAN=calib-layer / calib-free: the tests, then device-calib8b.sh's
# one calibrated layer (c1) / the whole model's data-free output error in
# FP32 and TF32 (c2, c3), without the GPTQ benchmark unless DEVICE_GPTQ=1
# DEVICE_PLAN=calib-model: only (c4), the whole model's calibrated sweep,
# continued from the dataset so far (scripts/device-calib8b.sh); no tests
# unless DEVICE_TESTS=1
[ -n "$CLI_ONLY" ] && SKIP_TESTS=1
case "$PLAN" in
  calib-layer|calib-free|calib-model)
    export CALIB8B_PLAN=${PLAN#calib-}; PLAN=calib; [ -z "${DEVICE_GPTQ:-}" ] && SKIP_GPTQ=1 ;;
esac

# ---- 2. GPU tests ----
# -V: every test's own lines (the measured GPU-vs-CPU differences, flips,
# timings) go into the log; the summary greps the key ones
if [ $BUILT -eq 0 ] && [ -z "${SKIP_TESTS:-}" ]; then
  # GPU_TESTS=REGEX: only those GPU tests (ctest -R)
  STEP_OWN_LOG=1 step gpu-tests 240 "$CTLOG/ctest-gpu.log" ctest --test-dir "$BUILD" -L gpu -V -j4 \
    ${GPU_TESTS:+-R "$GPU_TESTS"}
  gzip -c "$CTLOG/ctest-gpu.log" > "$OUT/ctest-gpu.log.gz"
fi

# ---- 3. benchmarks ----
if [ "$PLAN" = calib ]; then BENCH=/nonexistent; fi
if [ $BUILT -eq 0 ] && [ -x "$BENCH" ]; then
  step bench-kernels 100 "$LOG" "$BENCH" kernels --reps 10 --json "$OUT/bench_kernels.json"
  W=/tmp/frontier-w-4096x14336.bf16
  step bench-tensor 30 "$LOG" "$BENCH" fused --reps 3 --write-tensor "$W"
  step torch-peer 120 "$LOG" python3 bench/peers/torch_sweep.py --tensor "$W" --rows 4096 \
    --cols 14336 --passes 2 --json "$OUT/peer.json"
  PEER=()
  [ -f "$OUT/peer.json" ] && PEER=(--peer "$OUT/peer.json")
  step bench-fused 60 "$LOG" "$BENCH" fused --tensor "$W" --reps 20 "${PEER[@]}" \
    --json "$OUT/bench_fused.json"
  rm -f "$W"
fi
# ---- GPTQ on the GPU against eager PyTorch (issue 10; docs/gpu.md, "GPTQ") ----
# int4-g128-sym on 4096x4096 and 14336x4096 with H from 8192 correlated
# tokens: bench_gptq times the GPU and writes the data, torch_gptq.py runs the
# classic per-column GPTQ on it and prints the table (speedup, both output errors)
BENCH_GPTQ=$BUILD/bench/bench_gptq
if [ $BUILT -eq 0 ] && [ -x "$BENCH_GPTQ" ] && [ -z "${SKIP_GPTQ:-}" ]; then
  GD=/tmp/frontier-gptq
  rm -rf "$GD"
  mkdir -p "$GD"
  step bench-gptq 90 "$LOG" "$BENCH_GPTQ" --reps 5 --tokens 8192 --dir "$GD" --json "$GD/gpu.json" \
    --phases --loops warp8,serial,warp4,block
  step torch-gptq 120 "$LOG" python3 bench/peers/torch_gptq.py --dir "$GD" --passes "${GPTQ_PASSES:-2}" \
    --gpu-json "$GD/gpu.json" --json "$OUT/gptq.json"
  # without torch the GPU figures still come back
  [ -f "$OUT/gptq.json" ] || { [ -f "$GD/gpu.json" ] && cp "$GD/gpu.json" "$OUT/gptq.json"; }
  rm -rf "$GD"
fi
if [ $BUILT -eq 0 ] && [ -x "$FRONTIER" ] && [ "$PLAN" != calib ]; then
  # 8B Llama-shaped: 32 layers of q, k, v, o (4096/1024 x 4096), gate, up
  # (14336 x 4096), down (4096 x 14336), bf16
  layer="gaussian:4096x4096:bf16,gaussian:1024x4096:bf16*2,gaussian:4096x4096:bf16,gaussian:14336x4096:bf16*2,gaussian:4096x14336:bf16"
  spec=$layer
  for _ in $(seq 2 32); do spec="$spec,$layer"; done
  rm -f /tmp/frontier-llama8b.h5
  E2E0=$(date +%s.%N)
  FRONTIER_CUDA_STATS=$OUT/e2e_stats.json step e2e-8b 180 "$LOG" "$FRONTIER" sweep \
    --synthetic "$spec" --bits 2..8 --quantizers int,fp8,nvfp4,mx,nf4 --device cuda -o /tmp/frontier-llama8b.h5
  E2E1=$(date +%s.%N)
  E2E_WALL=$(python3 -c "print(f'{$E2E1 - $E2E0:.2f}')")
  if [ -f /tmp/frontier-llama8b.h5 ]; then
    python3 - /tmp/frontier-llama8b.h5 >> "$LOG" 2>&1 <<'PY'
import sys
try:
    import h5py
    with h5py.File(sys.argv[1], "r") as f:
        r = f["results"]
        print(f"e2e dataset: {r.shape[0]} result rows, {f['tensors'].shape[0]} tensors, {f['configs'].shape[0]} configs")
except Exception as e:
    print(f"e2e dataset: not readable with h5py: {e}")
PY
  fi
  rm -f /tmp/frontier-llama8b.h5
fi

if [ $BUILT -eq 0 ] && [ -x "$FRONTIER" ] && [ "$PLAN" != calib ]; then
  # streaming from a real file: 4 Llama-8B layers in bf16 (1.75 GB) written
  # to disk, swept on the GPU: every byte goes host -> device through the
  # pinned double buffers (the h2d time is reported separately)
  F=/tmp/frontier-llama4.safetensors
  step make-file 90 "$LOG" python3 bench/make_llama_layers.py "$F" 4
  rm -f /tmp/frontier-llama4.h5
  FRONTIER_CUDA_STATS=$OUT/e2e_file_stats.json step e2e-file 120 "$LOG" "$FRONTIER" sweep "$F" \
    --bits 2..8 --quantizers int,fp8,nvfp4,mx,nf4 --device cuda -o /tmp/frontier-llama4.h5
  rm -f "$F" /tmp/frontier-llama4.h5
fi

# ---- the worked example family of docs/adding-a-quantizer.md, through nvcc and the GPU ----
if [ $BUILT -eq 0 ] && [ "$PLAN" = calib ] && [ -z "${SKIP_CALIB8B:-}" ]; then
  # issue 10's calibrated benchmark on the 8B shape (synthetic statistics);
  # SKIP_CALIB8B=1: not run (the tests and the GPTQ benchmark only)
  FRONTIER_DEVICE_DEADLINE=$((DEADLINE - 15)) step calib8b "$(( $(left) - 15 ))" "$LOG" \
    bash scripts/device-calib8b.sh
fi
if [ $BUILT -eq 0 ] && [ "$PLAN" != calib ]; then
  step family-cuda 240 "$LOG" bash tests/family/add_example.sh "$ROOT" ON
fi

# ---- 4. the rest of the suite ----
if [ $BUILT -eq 0 ] && [ "$PLAN" != calib ]; then
  step ctest-rest 150 "$CTLOG/ctest-all.log" ctest --test-dir "$BUILD" -LE gpu --output-on-failure -j"$JOBS"
fi

# ---- summary (last) ----
{
  echo
  echo "================ frontier device summary ================"
  [ -f .carry/commit.txt ] && head -1 .carry/commit.txt
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
  printf '%-14s %-8s %7s\n' step status time
  for r in "${ROWS[@]}"; do echo "$r"; done
  for f in ctest-gpu ctest-all; do
    [ -f "$CTLOG/$f.log" ] || continue
    echo "$f: $(grep -E 'tests passed|tests failed' "$CTLOG/$f.log" | tail -1);" \
      "skipped: $(grep -c '(Skipped)' "$CTLOG/$f.log")"
    grep -E '^ +[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)' "$CTLOG/$f.log" | head -20
  done
  if [ -f "$CTLOG/ctest-gpu.log" ]; then
    # the tests' own figures (ctest -V prefixes each line with the test number)
    grep -E "^[0-9]+: .*(out terms 1100x512|GPU vs CPU|rows compared|worst|flips|differ:|rht\+ rows|executor:|examined)" \
      "$CTLOG/ctest-gpu.log" | cut -c1-220 | head -40
  fi
  python3 - "$OUT" "${E2E_WALL:-nan}" <<'PY'
import json, os, sys
out, e2e_wall = sys.argv[1], float(sys.argv[2])
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
k = load("bench_kernels.json")
if k:
    print(f"(1) copy {k['copy_bytes_per_s']/1e9:.0f} GB/s; single-config sweeps below 80%: "
          f"{k['configs_below_80_percent']} of {len(k['configs'])}, worst {100*k['worst_fraction']:.1f}% "
          f"(target >= 80% each)")
    worst = sorted(k["configs"], key=lambda c: c["sweep_fraction_of_copy"])[:3]
    print("    slowest: " + ", ".join(f"{c['name']} {100*c['sweep_fraction_of_copy']:.0f}%" for c in worst))
    kern = [c.get("kernel_fraction_of_copy", 0) for c in k["configs"]]
    if kern:
        print(f"    fused kernel alone (statistics excluded): {sum(f < 0.8 for f in kern)} below 80%, "
              f"worst {100*min(kern):.1f}%, median {100*sorted(kern)[len(kern)//2]:.1f}%")
f = load("bench_fused.json")
if f:
    line = f"(2) fused sweep of {f['n_configs']} configs on 4096x14336 bf16: {1e3*f['sweep_seconds']:.2f} ms"
    if "speedup" in f:
        line += (f"; PyTorch {f['peer_seconds']:.3f} s; speedup {f['speedup']:.0f}x (target >= 100x); "
                 f"rel_err within 1e-4: {f['compared']-f['mismatched']}/{f['compared']}, worst {f['worst_rel_diff']:.1e}")
    print(line)
g = load("gptq.json")
if g:
    for l in g.get("layers", []):
        if "torch_seconds" in l and "gpu_seconds" in l:
            print(f"(G) gptq int4-g128 {l['shape']}: gpu {1e3*l['gpu_seconds']:.1f} ms, PyTorch "
                  f"{l['torch_seconds']:.3f} s, speedup {l['speedup']:.0f}x (target >= 50x); "
                  f"out_rel_err {l['gpu_out_rel_err']:.5g} vs {l['torch_out_rel_err']:.5g} "
                  f"({100*l['out_rel_err_diff']:.2f}%, target <= 1%)")
        elif "gpu_seconds" in l:
            print(f"(G) gptq int4-g128 {l['shape']}: gpu {1e3*l['gpu_seconds']:.1f} ms, "
                  f"out_rel_err {l['out_rel_err']:.5g} (no PyTorch figures)")
ef = load("e2e_file_stats.json")
if ef:
    print(f"(3b) 4 Llama-8B layers from a safetensors file: executor {ef['wall_s']:.2f} s, "
          f"{ef['tensor_bytes']/1e9:.2f} GB at {ef['tensor_bytes']/1e9/max(ef['wall_s'],1e-9):.1f} GB/s; "
          f"gpu {ef['gpu_s']:.3f} s, host->device {ef['h2d_s']:.3f} s ({ef['h2d_bytes']/1e9:.2f} GB), "
          f"staging {ef['stage_s']:.3f} s")
e = load("e2e_stats.json")
if e:
    print(f"(3) 8B synthetic sweep: wall {e2e_wall:.1f} s (executor {e['wall_s']:.2f} s), "
          f"{e['tensor_bytes']/1e9:.1f} GB at {e['tensor_bytes']/1e9/max(e['wall_s'],1e-9):.1f} GB/s; "
          f"gpu {e['gpu_s']:.3f} s (generate {e['generate_s']:.3f} s; target < 2 s), "
          f"host->device {e['h2d_s']:.3f} s; {e['fused_configs']} (tensor, config) pairs fused, "
          f"{e['cpu_configs']} on cpu")
PY
  echo "total $(( $(date +%s) - START ))s; files in \$OUT: $(ls "$OUT" | tr '\n' ' ')"
} > "$SUMMARY" 2>&1
cat "$SUMMARY" >> "$LOG"
cat "$SUMMARY"
