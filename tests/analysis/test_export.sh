#!/usr/bin/env bash
# Every export format written (test_export) and read back (check_export.py).
set -euo pipefail
exe=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" "$dir"
python3 "$here/check_export.py" "$dir"
