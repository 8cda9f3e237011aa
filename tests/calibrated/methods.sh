#!/usr/bin/env bash
# The calibrated and optimised variants on data/stories260K with its shipped
# statistics: a sweep of every 2- and 3-bit configuration, then
# methods_check.py compares each with plain round-to-nearest.
set -euo pipefail
FRONTIER=$1 DATA=$2 WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
python3 -c "import h5py, numpy" 2>/dev/null || { echo "skipped: needs python3 with numpy and h5py"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
"$FRONTIER" sweep "$DATA/stories260K" --calib "$DATA/stories260K/calib.safetensors" --device cpu \
  --bits 2,3 -o "$WORK/run.h5" --quiet >"$WORK/sweep.log" 2>&1 || { cat "$WORK/sweep.log"; exit 1; }
python3 "$HERE/methods_check.py" "$WORK/run.h5"
