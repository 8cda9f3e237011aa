#!/usr/bin/env bash
# Runs HERE, on the development machine, before a device call: fetches what
# the GPU machine lacks (it has no package registry) into .carry/ (ignored by
# git), so that the call can carry it:
#   scripts/device-prepare.sh
#   device tool: command "bash scripts/device.sh", carry [".carry"]
# The GPU machine (Ubuntu 24.04: nvcc 13, cmake, ninja, gcc 13, HDF5 1.10,
# OpenBLAS/LAPACKE, python3 with torch/numpy/h5py/ml_dtypes) has no cJSON and
# no cairo; cJSON comes from Debian's .deb files (a plain C library needing
# only libc), cairo is optional (figures are skipped there).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/debs
(
  cd .carry/debs
  if ! ls libcjson1_*.deb libcjson-dev_*.deb >/dev/null 2>&1; then
    apt-get download libcjson1 libcjson-dev 2>/dev/null ||
      { apt-get update -qq && apt-get download libcjson1 libcjson-dev; }
  fi
)
# what is being measured: the copy on the device machine has no .git
{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "branch $(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)"
  echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    echo "uncommitted changes to tracked files:"
    git status --porcelain --untracked-files=no
  fi
} > .carry/commit.txt
ls -l .carry/debs
cat .carry/commit.txt
