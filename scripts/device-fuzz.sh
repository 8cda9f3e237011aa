#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE (16 cores): every libFuzzer target at once, one
# process each, for SECONDS, from the committed seeds or from a previous
# run's corpus. The fuzzers are built here on the development machine
# (clang, -DFRONTIER_FUZZ=ON) and carried with the shared libraries they
# link (that machine has no package registry), docs/security.md:
#   scripts/device-fuzz.sh pack            (here: .carry/fuzz.tar.xz)
#   device tool: command "bash scripts/device-fuzz.sh run 300", carry [".carry"]
# A second call continues from the corpus the first left in /tmp/fuzz (or,
# on a fresh machine, from .carry/fuzz-corpus.tar.gz, the first call's
# $OUT/corpus.tar.gz). Logs, final stats and any crash inputs go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${FUZZ_TARGETS:-"safetensors gguf onnx calib imatrix recipe dataset"}
case "${1:-}" in
pack)
  rm -rf .carry/fuzz && mkdir -p .carry/fuzz/bin .carry/fuzz/lib
  for t in $TARGETS; do cp build-fuzz/tests/fuzz/fuzz_$t .carry/fuzz/bin/; done
  # the libraries they link, less the C runtime the device has in a newer version
  for t in $TARGETS; do ldd build-fuzz/tests/fuzz/fuzz_$t | awk '{print $3}'; done | sort -u |
    grep -v '^$' | grep -vE 'libc\.so|libm\.so|libresolv|libgcc_s|libstdc\+\+|ld-linux|libpthread|libdl\.so|librt\.so' |
    xargs -I{} cp -L {} .carry/fuzz/lib/
  tar -C .carry -cJf .carry/fuzz.tar.xz fuzz && rm -rf .carry/fuzz
  ls -l .carry/fuzz.tar.xz
  ;;
run)
  secs=${2:?seconds}
  out=${OUT:-/tmp/fuzz-out}
  mkdir -p "$out" /tmp/fuzz
  [ -d /tmp/fuzz/fuzz ] || tar -C /tmp/fuzz -xJf .carry/fuzz.tar.xz
  # fuzz_recipe reads data/stories260K from the path compiled into it
  mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data
  if [ ! -d /tmp/fuzz/corpus ]; then
    mkdir -p /tmp/fuzz/corpus
    if [ -f .carry/fuzz-corpus.tar.gz ]; then
      tar -C /tmp/fuzz -xzf .carry/fuzz-corpus.tar.gz
    fi
    for t in $TARGETS; do
      mkdir -p /tmp/fuzz/corpus/$t
      cp -n tests/fuzz/corpus/$t/* /tmp/fuzz/corpus/$t/ 2>/dev/null || true
    done
  fi
  export LD_LIBRARY_PATH=/tmp/fuzz/fuzz/lib
  pids=""
  for t in $TARGETS; do
    dict=""
    [ -f tests/fuzz/$t.dict ] && dict="-dict=$PWD/tests/fuzz/$t.dict"
    asan="abort_on_error=0"
    [ "$t" = dataset ] && asan="allocator_may_return_null=1:max_allocation_size_mb=1024"
    mkdir -p "$out/artifacts/$t"
    ( cd "$out/artifacts/$t" &&
      ASAN_OPTIONS=$asan LSAN_OPTIONS=suppressions=$OLDPWD/tests/fuzz/lsan.supp \
        /tmp/fuzz/fuzz/bin/fuzz_$t -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 $dict /tmp/fuzz/corpus/$t >"$out/fuzz-$t.log" 2>&1
      echo "exit $?" >>"$out/fuzz-$t.log" ) &
    pids="$pids $!"
  done
  wait $pids || true
  for t in $TARGETS; do
    printf '%-12s %s %s corpus %s\n' "$t" "$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$out/fuzz-$t.log" || echo 'no stats')" \
      "$(tail -1 "$out/fuzz-$t.log")" "$(ls /tmp/fuzz/corpus/$t | wc -l)"
  done | tee "$out/summary.txt"
  tar -C /tmp/fuzz -czf "$out/corpus.tar.gz" corpus
  find "$out/artifacts" -type f | head -50
  ;;
*)
  echo "usage: scripts/device-fuzz.sh pack | run SECONDS" >&2
  exit 2
  ;;
esac
