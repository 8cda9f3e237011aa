#!/usr/bin/env bash
# A dataset with a byte flipped at many offsets: every reading command
# (pareto, allocate, export, merge, sweep --resume) gives the intact
# result or refuses (corruption.py). docs/security.md.
#   bash corruption.sh FRONTIER DATA
source "$(dirname "$0")/../sweep/lib.sh"
need_python
need_builtins
if python3 "$HERE/../reliability/corruption.py" "$FRONTIER" "$DATA/stories260K" "$WORK" "${FR_CORRUPTION_OFFSETS:-48}"; then
  pass "corruption"
else
  fail "corruption"
fi
finish
