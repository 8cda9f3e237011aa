#!/usr/bin/env bash
# The pinned llama.cpp that frontier's llama.cpp test group, engine
# measurements and `frontier sensitivity` (its static libllama, found by
# frontier/engine/llama.cmake) use: the copy vendored in the
# llama-cpp-python 0.3.36 source distribution on PyPI (its vendor/llama.cpp),
# built once into a cache and reused. Nothing else of llama-cpp-python is
# built or installed.
#
#   scripts/llama-cpp.sh [--cache DIR] [--jobs N] [--print-dir] [--source FILE]
#
#   --cache DIR   where the source and the build are kept
#                 (default: $XDG_CACHE_HOME/frontier, else ~/.cache/frontier)
#   --jobs N      parallel compile jobs (default: the number of cores)
#   --print-dir   print the folder holding the built programs and exit 0
#                 when the build is there, 1 when it is not (builds nothing)
#   --source FILE the vendored tree as `--pack FILE` wrote it (a machine
#                 without PyPI: the device machine), instead of the download
#   --pack FILE   write the vendored tree of the checked source distribution,
#                 without what the build does not read (models, docs, tests,
#                 examples; about 7.5 MB), to FILE (.tar.xz) and exit
#
# The source distribution is checked against its sha256 before anything of
# it is used. The build is CPU only (no CUDA, no curl, no server), static,
# Release, and makes llama-quantize, llama-perplexity, llama-imatrix (the
# SmolLM2 study's importance matrix) and libllama; it takes about 10 minutes
# on 2 cores. The result is
# DIR/llama.cpp-0.3.36/build/bin with a stamp file saying what it is.
set -euo pipefail

VERSION=0.3.36
SDIST=llama_cpp_python-$VERSION.tar.gz
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
TARGETS=(llama-quantize llama-perplexity llama-imatrix llama)

cache=${XDG_CACHE_HOME:-$HOME/.cache}/frontier
jobs=$(nproc 2>/dev/null || echo 2)
print_dir=0
source_tar=
pack=
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --print-dir) print_dir=1; shift ;;
    --source) source_tar=$2; shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "llama-cpp.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

root=$cache/llama.cpp-$VERSION
bin=$root/build/bin
stamp=$root/build/frontier-stamp
# without AMX (below): a build made with it is made again
want_stamp="llama-cpp-python $VERSION sha256 $SHA256 targets ${TARGETS[*]} no-amx"
[ -n "$source_tar" ] && want_stamp="$want_stamp source $(basename "$source_tar")"

if [ -z "$pack" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] &&
   [ -x "$bin/llama-quantize" ] && [ -x "$bin/llama-perplexity" ]; then
  echo "$bin"
  exit 0
fi
[ "$print_dir" = 1 ] && exit 1

mkdir -p "$root"
src=$root/src
if [ -n "$source_tar" ]; then
  [ -f "$source_tar" ] || { echo "llama-cpp.sh: no file '$source_tar'" >&2; exit 1; }
  if [ ! -f "$src/CMakeLists.txt" ]; then
    rm -rf "$src" && mkdir -p "$src" && tar xJf "$source_tar" -C "$src"
  fi
elif [ ! -f "$root/$SDIST" ] || ! echo "$SHA256  $root/$SDIST" | sha256sum -c --quiet - 2>/dev/null; then
  echo "llama-cpp.sh: downloading the llama-cpp-python $VERSION source distribution" >&2
  rm -f "$root/$SDIST"
  python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$root" >&2
fi
if [ -z "$source_tar" ] && ! echo "$SHA256  $root/$SDIST" | sha256sum -c --quiet - >&2; then
  echo "llama-cpp.sh: '$root/$SDIST' does not have the pinned sha256 $SHA256" >&2
  exit 1
fi
if [ -z "$source_tar" ] && [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$src" "$root/unpack"
  mkdir -p "$root/unpack"
  tar xzf "$root/$SDIST" -C "$root/unpack" "llama_cpp_python-$VERSION/vendor/llama.cpp"
  mv "$root/unpack/llama_cpp_python-$VERSION/vendor/llama.cpp" "$src"
  rm -rf "$root/unpack"
fi
if [ -n "$pack" ]; then
  tar -C "$src" -cJf "$pack" --exclude=./models --exclude=./docs --exclude=./media \
    --exclude=./gguf-py --exclude=./benches --exclude=./tests --exclude=./examples \
    --exclude=./conversion .
  echo "llama-cpp.sh: the vendored llama.cpp of llama-cpp-python $VERSION in $pack" >&2
  exit 0
fi
echo "llama-cpp.sh: building ${TARGETS[*]} in $root/build ($jobs jobs)" >&2
# Native, but without the AMX tile instructions: on a Xeon with AMX the
# vendored ggml's AMX matrix kernels crash (SIGSEGV in
# ggml_backend_amx_mul_mat, llama-perplexity and llama-imatrix on the
# SmolLM2 GGUF, 2026-12-05). An explicit -mno-amx-* outranks what
# -march=native implies, whatever their order; the kernels then are the
# AVX-512/AVX2 ones a CPU without AMX runs.
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
rm -f "$root/build/CMakeCache.txt"
cmake -S "$src" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_APP=OFF -DGGML_CUDA=OFF -DGGML_NATIVE=ON \
  -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >"$root/configure.log" 2>&1 ||
  { echo "llama-cpp.sh: configure failed, see $root/configure.log" >&2; exit 1; }
cmake --build "$root/build" -j"$jobs" --target "${TARGETS[@]}" >"$root/build.log" 2>&1 ||
  { echo "llama-cpp.sh: build failed, see $root/build.log" >&2; exit 1; }
echo "$want_stamp" >"$stamp"
echo "$bin"
