#!/usr/bin/env bash
# scripts/device.sh (the GPU machine's driver) checked where there is no
# GPU: it parses, every plan of its table dry-runs (each step has its
# function, each repository file a step names exists, each build target is
# defined by a CMake file), docs/benchmarks.md's table names every plan,
# and each of the three dry-run checks catches a fault planted in a copy of
# the driver.
set -uo pipefail
root=${1:?usage: device_plans.sh SOURCE_DIR}
drv=$root/scripts/device.sh
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash -n "$drv" || fail "scripts/device.sh does not parse"
plans=$(bash "$drv" list | awk '{print $1}')
[ "$(echo "$plans" | wc -w)" -ge 5 ] || fail "scripts/device.sh list shows too few plans: $plans"
for p in accept tests fused e2e gptq mpi profile; do
  echo "$plans" | grep -qx "$p" || fail "no plan '$p' in the table"
done
bash "$drv" dry-run all > "$tmp/all.out" 2> "$tmp/all.err" || { cat "$tmp/all.out" "$tmp/all.err"; fail "dry run of every plan"; }
[ -s "$tmp/all.err" ] && { cat "$tmp/all.err"; fail "the dry run wrote errors"; }
# every plan printed its dry run, and docs/benchmarks.md's plan table (the
# doc a user reads first) names it
for p in $plans; do
  grep -q "^plan $p: " "$tmp/all.out" || fail "plan $p printed nothing"
  grep -q "^| \`$p\`\|^| \`[a-z0-9-]*\`, .*\`$p\`" "$root/docs/benchmarks.md" ||
    fail "plan $p is not in docs/benchmarks.md's table of plans"
done
# the acceptance plan: the GPU tests, the fused sweep and the 8B sweep in one call
accept=$(bash "$drv" dry-run accept) || fail "dry run of accept"
for s in "ctest .* -L gpu" "bench_gpu fused --tensor" "frontier sweep --synthetic .* --device cuda --device-stats"; do
  echo "$accept" | grep -q -- "$s" || { echo "$accept"; fail "the accept plan does not run '$s'"; }
done
echo "$accept" | grep -q -- "-> \$OUT: summary.txt summary.json" || fail "the accept plan writes no summary.json"
bash "$drv" dry-run no-such-plan > /dev/null 2>&1 && fail "an unknown plan dry-runs"

# planted faults, each in a copy of the driver beside the real tree
plant() {  # plant NAME SED-EXPRESSION EXPECTED-MESSAGE
  local d=$tmp/$1
  mkdir -p "$d/scripts"
  for f in bench tests examples data CMakeLists.txt; do ln -s "$root/$f" "$d/$f"; done
  for f in "$root"/scripts/*; do
    [ "$(basename "$f")" = device.sh ] || ln -s "$f" "$d/scripts/"
  done
  sed "$2" "$drv" > "$d/scripts/device.sh"
  [ "$1" = none ] && { bash "$d/scripts/device.sh" dry-run all > /dev/null || fail "an unchanged copy fails"; return; }
  cmp -s "$drv" "$d/scripts/device.sh" && fail "plant $1: the sed expression changed nothing"
  if bash "$d/scripts/device.sh" dry-run all > "$d/out" 2> "$d/err"; then
    fail "plant $1: the dry run passed"
  fi
  grep -q "$3" "$d/err" || { cat "$d/err"; fail "plant $1: no '$3'"; }
  echo "plant $1: caught ($(head -1 "$d/err"))"
}
plant none '' ''
plant step 's/| gpu-tests fused e2e-8b /| gpu-tests fused e2e-9b /' "names step 'e2e-9b'"
plant file 's|bench/peers/torch_sweep.py|bench/peers/torch_sweeps.py|' "names bench/peers/torch_sweeps.py, which is not in the repository"
plant target 's/| bench_gpu  /| bench_gpux /' "builds bench_gpux, which no CMake file defines"
echo "ok: $(echo $plans | wc -w) plans dry-run"
