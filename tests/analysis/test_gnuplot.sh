#!/usr/bin/env bash
# The gnuplot scripts run and draw (skipped, visibly, without gnuplot).
set -euo pipefail
exe=$1
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" "$dir" >/dev/null
cd "$dir"
for f in out sqnr; do
  gnuplot -e "term='svg size 340,255'; outfile='$f.gnuplot.svg'" "$f.gp" 2>"$f.err" || { cat "$f.err"; exit 1; }
  if grep -qi 'warning\|error' "$f.err"; then cat "$f.err"; echo "FAIL: gnuplot complained"; exit 1; fi
  python3 -c "import sys, xml.etree.ElementTree as ET; r = ET.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg') and len(list(r.iter())) > 50" "$f.gnuplot.svg"
done
echo "gnuplot scripts draw"
