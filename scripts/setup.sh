#!/usr/bin/env bash
# Installs what frontier needs on Debian 12 / Ubuntu (skipping what is already
# installed), then configures and builds it in build/.
#   scripts/setup.sh            install + build (CUDA path when nvcc is present)
#   scripts/setup.sh --test-tools   also the tools some tests use (LaTeX with
#                               pgfplots, gnuplot) so those tests run rather than skip
#   scripts/setup.sh --cli      build only the frontier command (what scripts/demo.sh
#                               runs), not the tests and benchmarks; the compiler's
#                               output goes to build/setup.log and is shown on failure
#   FRONTIER_SKIP_INSTALL=1 scripts/setup.sh   build only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake pkg-config libhdf5-dev hdf5-tools libcjson-dev
  libopenblas-dev liblapacke-dev libcairo2-dev libssl-dev libopenmpi-dev openmpi-bin
  clang)
PIP_PACKAGES=(numpy ml_dtypes h5py gguf)
cli_only=0
for arg in "$@"; do
  case "$arg" in
    --test-tools) APT_PACKAGES+=(texlive-latex-base texlive-pictures gnuplot-nox valgrind) ;;
    --cli) cli_only=1 ;;
    *) echo "scripts/setup.sh: unknown option '$arg' (--test-tools, --cli)" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "${FRONTIER_SKIP_INSTALL:-0}" != 1 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # python3 and pip may come from elsewhere (pyenv): ask apt only when absent
  python3 -m pip --version >/dev/null 2>&1 || missing+=(python3 python3-pip)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "frontier setup: installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  need_pip=()
  for m in "${PIP_PACKAGES[@]}"; do python3 -c "import $m" 2>/dev/null || need_pip+=("$m"); done
  if [ "${#need_pip[@]}" -gt 0 ]; then
    echo "frontier setup: pip installing ${need_pip[*]}"
    python3 -m pip install -q "${need_pip[@]}" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "${need_pip[@]}"
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FRONTIER_CMAKE_ARGS:-} >/dev/null
if [ "$cli_only" = 1 ]; then
  # The test and benchmark targets stay configured, so scripts/test.sh
  # (which runs this script without --cli) builds them in the same folder.
  echo "frontier setup: building build/frontier (log: build/setup.log)"
  if ! cmake --build build -j"$jobs" --target frontier_cli >build/setup.log 2>&1; then
    tail -n 40 build/setup.log >&2
    echo "frontier setup: the build failed (the whole log: build/setup.log)" >&2
    exit 1
  fi
else
  cmake --build build -j"$jobs"
fi
