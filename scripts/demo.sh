#!/usr/bin/env bash
# README command (1): installs what is missing and builds (scripts/setup.sh),
# then runs the main job on the real checkpoint in data/stories260K:
#   1. frontier inspect data/stories260K
#   2. frontier sweep data/stories260K --bits 2..8 -o out/demo/run.h5
# and prints the sweep's summary. Outputs go to out/demo/ (git-ignored);
# the previous demo's dataset is removed first, since frontier never
# overwrites a dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
FRONTIER=build/frontier
MODEL=data/stories260K
OUT=out/demo
mkdir -p "$OUT"
rm -f "$OUT/run.h5" "$OUT/run.h5.tmp"

echo
echo "== frontier inspect $MODEL"
"$FRONTIER" inspect "$MODEL"

echo
echo "== frontier sweep $MODEL --bits 2..8 -o $OUT/run.h5"
"$FRONTIER" sweep "$MODEL" --bits 2..8 -o "$OUT/run.h5"

echo
echo "The dataset is $OUT/run.h5 (schema: docs/dataset.md; h5dump -H $OUT/run.h5 shows it)."
