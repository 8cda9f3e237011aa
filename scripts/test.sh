#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the normal
# configuration (CUDA code compiled when a toolkit is present) and an
# ASan+UBSan configuration, and runs CTest on both. GPU tests report
# themselves as skipped on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

echo "== tests (build/) =="
# label `optional`: heavy cross-checks (torch), run on demand with -L optional
ctest --test-dir build --output-on-failure -j"$jobs" -LE optional

echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFRONTIER_SANITIZE=ON -DFRONTIER_CUDA=OFF \
  -DFRONTIER_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "no-sanitize|optional"
echo "frontier: all test configurations passed"
