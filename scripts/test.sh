#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the normal
# configuration (CUDA code compiled when a toolkit is present) and an
# ASan+UBSan configuration, and runs CTest on both, then a named subset of
# the CPU tests once more under valgrind memcheck (scripts/valgrind_tests.py).
# GPU tests report
# themselves as skipped on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test-tools
jobs=$(nproc 2>/dev/null || echo 2)

echo "== tests (build/) =="
# label `optional`: heavy cross-checks (torch), run on demand with -L optional
ctest --test-dir build --output-on-failure -j"$jobs" -LE optional

echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFRONTIER_SANITIZE=ON -DFRONTIER_CUDA=OFF \
  -DFRONTIER_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "no-sanitize|optional"
echo "== a subset of the CPU tests under valgrind memcheck (build/) =="
# The compiled C test programs of these CTest tests (scripts and Python-driven
# tests are left out: valgrind would trace bash and python), each run with the
# command, folder and environment CTest gives it, after the run above made
# their fixtures. Any memcheck error fails the step (docs/security.md).
VALGRIND_TESTS='^(calib_files|calib_imatrix|fuzz_corpus_.*|readers_classify|readers_protobuf|readers_good_files|quantizers_numerics|quantizers_configs|sweep\.dataset|plugins\.registry)$'
scripts/valgrind_tests.py build "$VALGRIND_TESTS" "$jobs"
echo "frontier: all test configurations passed"
