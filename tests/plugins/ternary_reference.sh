#!/usr/bin/env bash
# The example ternary plugin against an independent reference in Python.
#   ternary_reference.sh PLUGIN_DRIVER LIBTERNARY.so REFERENCE.py
set -euo pipefail
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "skipped: python module numpy is not installed (pip install numpy)"; exit 77; }
exec python3 "$3" "$1" "$2"
