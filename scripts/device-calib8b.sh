#!/usr/bin/env bash
# Runs ON the GPU machine (after scripts/device.sh in the same warm session,
# whose build-device it reuses; else it builds the CLI), carry .carry:
#   bash scripts/device-calib8b.sh
# Issue 10's calibrated benchmark on the 8B Llama shape with synthetic
# statistics (`--calib synthetic`, docs/calibration.md):
#   (c1) the calibrated sweep (gptq, awq, hqq, mse, imat, rht+, rht+gptq at
#        2..4 bits) of ONE layer of the 8B shape (q, k, v, o, gate, up,
#        down), FP32 output error;
#   (c2) out_rel_err of every data-free configuration (2..8 bits) for the
#        whole 8B model (32 layers) with --tf32;
#   (c3) the same in FP32 (the default; the longest, so last).
# CALIB8B_PLAN=layer: (c1) only (limit LAYER_LIMIT, 200 s); =free: (c3)
# then (c2) (limit FP32_LIMIT, 300 s); =model: (c4) the whole model's
# calibrated sweep, resumable across calls (below). CALIB8B_PLAN=profile instead: (p1) every calibrated configuration at
# 2..4 bits on one 4096x4096 tensor, (p2, p3) those at 4 bits on one
# 14336x4096 and one 4096x14336 tensor, per family and per configuration
# (each calibrated row's seconds is its own: docs/gpu.md), then (c2).
# Each writes its --device-stats JSON into $OUT (calib8b_*.json) and a row
# count; the log is $OUT/device-calib8b.log.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
LOG=$OUT/device-calib8b.log
BUILD=$ROOT/build-device
PREFIX=/tmp/frontier-deps
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1
[ -f .carry/commit.txt ] && cat .carry/commit.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
log() { echo "$*"; }
source scripts/device-deps.sh
if [ ! -x "$BUILD/frontier" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA=ON \
    -DFRONTIER_PLOTS=AUTO -DFRONTIER_MPI=OFF > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  t0=$(date +%s)
  cmake --build "$BUILD" -j"$(nproc)" --target frontier_cli > "$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
FRONTIER=$BUILD/frontier
layer="gaussian:4096x4096:bf16,gaussian:1024x4096:bf16*2,gaussian:4096x4096:bf16,gaussian:14336x4096:bf16*2,gaussian:4096x14336:bf16"
spec=$layer
for _ in $(seq 2 32); do spec="$spec,$layer"; done
spec=${CALIB8B_SPEC:-$spec} # a smaller model for a dry run of the plans
rows() {
  python3 - "$1" <<'PY'
import sys, h5py, numpy as np
def text(v):  # HDF5 strings come back as bytes
    return v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(sys.argv[1], "r") as f:
    r = f["results"][...]
    c = f["configs"][...]
    fam = {int(x["config_id"]): text(x["family"]) for x in c}
    names = {int(x["config_id"]): text(x["name"]) for x in c}
    shape = {int(x["tensor_id"]): text(x["shape"]) for x in f["tensors"][...]}
    o = r["out_rel_err"]
    print(f"{len(r)} rows, {int(np.isfinite(o).sum())} with out_rel_err; devices {f.attrs.get('devices')}")
    print(f"tensors with rows: {len(np.unique(r['tensor_id']))} of {f['tensors'].shape[0]}; "
          f"GPU seconds (sum of rows): {float(r['seconds'].sum()):.1f}")
    by = {}
    cell = {}  # per family and tensor shape: where a family's time goes
    for row in r:
        dev = text(row["device"])
        k = fam[int(row["config_id"])]
        e = by.setdefault(k, {"n": 0, "dev": {}, "sec": 0.0, "o": []})
        e["n"] += 1
        e["dev"][dev] = e["dev"].get(dev, 0) + 1
        e["sec"] += float(row["seconds"])
        e["o"].append(float(row["out_rel_err"]))
        ce = cell.setdefault((k, shape.get(int(row["tensor_id"]), "?")), [0, 0.0])
        ce[0] += 1
        ce[1] += float(row["seconds"])
    for k in sorted(by):
        e = by[k]
        print(f"  {k:12s} {e['n']:6d} rows {e['dev']}, seconds (sum of rows) {e['sec']:.2f} "
              f"({1e3 * e['sec'] / max(e['n'], 1):.1f} ms per row), "
              f"median out_rel_err {np.nanmedian(e['o']):.4g}")
    for k in sorted(cell):
        print(f"  {k[0]:12s} {k[1]:14s} {cell[k][0]:5d} rows {1e3 * cell[k][1] / cell[k][0]:8.1f} ms per row")
    order = np.argsort(-r["seconds"])[:8]
    print("  slowest rows: " + ", ".join(f"{names[int(r['config_id'][i])]} {1e3 * float(r['seconds'][i]):.1f} ms" for i in order))
PY
}
run() {  # NAME LIMIT ARGS...
  local name=$1 limit=$2
  shift 2
  rm -f "/tmp/$name.h5"
  local t0=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$FRONTIER" sweep "$@" --device cuda \
    --device-stats "$OUT/$name.json" -o "/tmp/$name.h5" 2>&1 | grep -vE "^frontier: (progress|\[)" | tail -12
  echo "== $name: rc ${PIPESTATUS[0]}, wall $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
  [ -f "$OUT/$name.json" ] && cat "$OUT/$name.json"
  [ -f "/tmp/$name.h5" ] && rows "/tmp/$name.h5"
  rm -f "/tmp/$name.h5"
}
if [ "${CALIB8B_PLAN:-}" = profile ]; then
  CAL="--calib synthetic --quantizers gptq,awq,hqq,mse,imat,rht,rht_gptq"
  run calib8b_p4096 80 --synthetic gaussian:4096x4096:bf16 $CAL --bits 2..4
  run calib8b_p14336x4096 80 --synthetic gaussian:14336x4096:bf16 $CAL --bits 4
  run calib8b_p4096x14336 120 --synthetic gaussian:4096x14336:bf16 $CAL --bits 4
  run calib8b_datafree_tf32 150 --synthetic "$spec" --calib synthetic --tf32 --bits 2..8 \
    --quantizers int,fp8,nvfp4,mx,nf4
  exit 0
fi
if [ "${CALIB8B_PLAN:-}" = model ]; then
  # (c4) the whole model's calibrated sweep (every calibrated family at 2..4
  # bits: about 65 minutes of H200 time at b24601e, so over several calls
  # and sessions): continues the dataset so far (--resume; where it can be:
  # below), stops cleanly (SIGTERM: the tensors done so far are committed)
  # at its limit, and returns the dataset as $OUT/calib8b_model.h5.gz (commit
  # it as bench/results/calib8b-model.h5.gz for the next session). GPU seconds:
  # the rows' seconds (each calibrated row's own configuration, docs/gpu.md)
  # summed per family.
  # The dataset so far can be in this warm machine's build folder (its last
  # call), the call's carry (.carry/calib8b_model.h5.gz), or the partial
  # dataset committed for a later session; the one with the most rows is
  # continued.
  D=/tmp/calib8b_model.h5
  rm -f "$D" /tmp/calib8b_cand_*.h5
  cands=("$BUILD/calib8b_model.h5")
  committed=bench/results/calib8b-model.h5.gz
  [ -n "${CALIB8B_SPEC:-}" ] && committed= # a dry run's smaller model is another run
  for g in .carry/calib8b_model.h5.gz $committed; do
    [ -f "$g" ] || continue
    c=/tmp/calib8b_cand_${#cands[@]}.h5
    gunzip -c "$g" > "$c" && cands+=("$c")
  done
  best=$(python3 - "${cands[@]}" <<'PY'
import os, sys, h5py
best, n_best = "", -1
for p in sys.argv[1:]:
    if not os.path.exists(p):
        continue
    try:
        with h5py.File(p, "r") as f:
            n = f["results"].shape[0]
    except Exception as e:
        print(f"{p}: not readable ({e}), not continued", file=sys.stderr)
        continue
    print(f"{p}: {n} rows", file=sys.stderr)
    if n > n_best:
        best, n_best = p, n
print(best)
PY
)
  [ -n "$best" ] && { echo "continuing $best"; cp "$best" "$D"; }
  resume=()
  [ -f "$D" ] && resume=(--resume)
  # the limit: MODEL_LIMIT, else what device.sh's deadline leaves less 70 s,
  # else 480 s. The executor looks at SIGTERM between tensors, so the tensor
  # under way is finished and committed (a down_proj with every calibrated
  # configuration: 54 s on the H200); SIGKILL 60 s after SIGTERM, which still
  # leaves 10 s before the deadline for the copy and the summaries.
  limit=${MODEL_LIMIT:-}
  if [ -z "$limit" ]; then
    limit=480
    [ -n "${FRONTIER_DEVICE_DEADLINE:-}" ] && limit=$(( FRONTIER_DEVICE_DEADLINE - $(date +%s) - 70 ))
  fi
  echo "sweep limit: $limit s"
  t0=$(date +%s.%N)
  timeout --foreground -s TERM --kill-after=60 "$limit" "$FRONTIER" sweep --synthetic "$spec" \
    --calib synthetic --bits 2..4 --quantizers gptq,awq,hqq,mse,imat,rht,rht_gptq --device cuda \
    --device-stats "$OUT/calib8b_model_call.json" "${resume[@]}" -o "$D" 2>&1 |
    grep -vE "^frontier: (progress|\[)" | tail -6
  echo "== calib8b_model: rc ${PIPESTATUS[0]}, wall $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s${resume:+ (resumed)}"
  [ -f "$OUT/calib8b_model_call.json" ] && cat "$OUT/calib8b_model_call.json"
  if [ -f "$D" ]; then
    gzip -c "$D" > "$OUT/calib8b_model.h5.gz" # about 60 bytes a row (the file: 400)
    cp "$D" "$BUILD/calib8b_model.h5"
    rows "$D"
  fi
  exit 0
fi
if [ "${CALIB8B_PLAN:-}" = free ]; then
  run calib8b_datafree_fp32 ${FP32_LIMIT:-300} --synthetic "$spec" --calib synthetic --bits 2..8 \
    --quantizers int,fp8,nvfp4,mx,nf4
  run calib8b_datafree_tf32 120 --synthetic "$spec" --calib synthetic --tf32 --bits 2..8 \
    --quantizers int,fp8,nvfp4,mx,nf4
  exit 0
fi
run calib8b_layer ${LAYER_LIMIT:-200} --synthetic "$layer" --calib synthetic --bits 2..4 \
  --quantizers gptq,awq,hqq,mse,imat,rht,rht_gptq
[ "${CALIB8B_PLAN:-}" = layer ] && exit 0
run calib8b_datafree_tf32 120 --synthetic "$spec" --calib synthetic --tf32 --bits 2..8 \
  --quantizers int,fp8,nvfp4,mx,nf4
run calib8b_datafree_fp32 ${FP32_LIMIT:-240} --synthetic "$spec" --calib synthetic --bits 2..8 \
  --quantizers int,fp8,nvfp4,mx,nf4
