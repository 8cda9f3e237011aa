#!/usr/bin/env bash
# docs/adding-a-quantizer.md, done as a newcomer would: copies the source
# tree, adds the worked example family (examples/family-pow2: int3/4/8 with
# power-of-two group scales) with exactly the steps of that page, builds, and requires the
# suite's registry-driven checks to take the new family in:
#   1. its files into quantizers/, kernels/ and tests/quantizers/bounds/
#      (its error bounds), one line in the family table; nothing else of the
#      tree changes (checked)
#   2. build: the CLI, the configuration tests, the kernels on the GPU
#      emulator (and through nvcc when this build has CUDA)
#   3. `frontier quantizers` lists it with the traits it declares,
#      `frontier sweep` measures it, also in row blocks under --max-memory,
#      `frontier quantize` writes it dequantized and as the compressed-
#      tensors storage it declares, checked bit for bit
#   4. the configuration tests (its bounds included) and the emulated GPU
#      parity pass with it
#
#   add_example.sh SOURCE_DIR [CUDA]
# CUDA: OFF (default; what CI runs: the kernels run on the emulator) or ON
# (nvcc builds them too, and on a GPU machine gpu.parity runs them: the
# device run, scripts/device.sh, does this).
set -euo pipefail
SRC=$(cd "${1:?usage: add_example.sh SOURCE_DIR CUDA}" && pwd)
CUDA=${2:-OFF}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/frontier-family-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say() { echo "add_example: $*"; }

mkdir "$WORK/src"
for p in CMakeLists.txt frontier.pc.in core quantizers kernels frontier include tests examples; do
  cp -r "$SRC/$p" "$WORK/src/"
done
cd "$WORK/src"

# 1. the family's files and its line in the table
cp examples/family-pow2/quantizers/* quantizers/
cp examples/family-pow2/kernels/* kernels/
cp examples/family-pow2/tests/quantizers/bounds/* tests/quantizers/bounds/
python3 - <<'PY'
import re
p = "quantizers/families.h"
s = open(p).read()
# the kernel families' list: FR_BUILTIN_FAMILIES up to its first blank line
start = s.index("#define FR_BUILTIN_FAMILIES(X)")
block = s[start:s.index("\n\n", start)]
rows = re.findall(r"\n( *X\([A-Z0-9_]+, *[a-z0-9_]+, *[^)]*\)*\))( *\\\\)?", block)
last = rows[-1][0]
assert "\\" not in rows[-1][1], "the table's last line ends without a backslash"
s = s.replace(last, last.ljust(89) + "\\\n    X(POW2, pow2, FR_NO_GGML)", 1)
open(p, "w").write(s)
PY
grep -q 'X(POW2, pow2, FR_NO_GGML)' quantizers/families.h || { echo "FAIL: table line not added"; exit 1; }
say "table: $(grep -c '^ *X(' quantizers/families.h) families"
# nothing else: the tree differs from the source by the family's own files
# and the table only
changed=$(for d in CMakeLists.txt frontier.pc.in core quantizers kernels frontier include tests; do
            diff -rq -x '*.pyc' -x __pycache__ "$SRC/$d" "./$d" 2>&1 || true
          done | sort)
want=$(printf '%s\n' "Files $SRC/quantizers/families.h and ./quantizers/families.h differ" \
       "Only in ./kernels: pow2.cu" "Only in ./kernels: pow2.cuh" \
       "Only in ./quantizers: pow2.c" "Only in ./quantizers: pow2_group.h" \
       "Only in ./tests/quantizers/bounds: pow2.inc" | sort)
[ "$changed" = "$want" ] || { echo "$changed"; echo "FAIL: the tree changed beyond the family's files and its table line"; exit 1; }
say "changed: the table line and the family's own files, nothing else"

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRONTIER_CUDA="$CUDA" \
  -DFRONTIER_BENCH=OFF -DFRONTIER_PLOTS=OFF -DFRONTIER_MPI=OFF >build.log 2>&1 ||
  { cat build.log; echo "FAIL: configure"; exit 1; }
targets=(frontier_cli test_quantizers_configs)
# the emulator where CI runs (CUDA OFF); the real kernels through nvcc and
# the device's parity test where a toolkit is (CUDA ON: the device run)
if [ "$CUDA" = ON ]; then
  targets+=(test_gpu_parity)
elif grep -q 'test_gpu_parity_emu' build/tests/gpu/Makefile 2>/dev/null; then
  targets+=(test_gpu_parity_emu)
fi
cmake --build build -j"$jobs" --target "${targets[@]}" >>build.log 2>&1 ||
  { tail -40 build.log; echo "FAIL: build with the example family"; exit 1; }
say "built ${targets[*]} (cuda $CUDA)"

# 2. the bounds the family's file holds are the test's own rows
build/tests/quantizers/test_quantizers_configs --print-bounds 2>/dev/null | grep -E '^ *\{"pow2-' >bounds.out || true
diff <(grep -E '^ *\{"pow2-' tests/quantizers/bounds/pow2.inc) bounds.out ||
  { echo "FAIL: tests/quantizers/bounds/pow2.inc is not what --print-bounds prints"; exit 1; }
say "bounds: $(tr -s ' ' <bounds.out | tr '\n' ' ')"

# 3. what a user sees
F=build/frontier
export FRONTIER_PLUGIN_PATH=none
$F quantizers >quantizers.out
grep -Eq '^pow2 .*builtin' quantizers.out || { cat quantizers.out; echo "FAIL: pow2 not listed"; exit 1; }
[ "$(grep -Ec '^  pow2-int[348]-g32 ' quantizers.out)" = 3 ] ||
  { cat quantizers.out; echo "FAIL: the three pow2 configurations not listed"; exit 1; }
$F sweep --synthetic gaussian:96x700,student-t3:64x512:bf16 --quantizers 'pow2-*,int4-g32-sym' \
  --device cpu -o sweep.h5 --quiet --verbose >sweep.out 2>&1 || { cat sweep.out; echo "FAIL: sweep"; exit 1; }
grep -E '^pow2-' sweep.out || { cat sweep.out; echo "FAIL: no summary rows"; exit 1; }
# exact sizes (b bits + 8 per group of 32: 700 columns are 22 groups), and a
# power-of-two scale is never better than int4-g32-sym's fp16 one
python3 - <<'PY'
import h5py
with h5py.File("sweep.h5", "r") as f:
    name = lambda v: v.decode() if isinstance(v, bytes) else v
    cfg = {int(c["config_id"]): name(c["name"]) for c in f["configs"][()]}
    ten = {int(t["tensor_id"]): t for t in f["tensors"][()]}
    rows = {(cfg[int(r["config_id"])], int(r["tensor_id"])): r for r in f["results"][()]}
for (c, t), r in rows.items():
    if not c.startswith("pow2-"):
        continue
    b = int(c[len("pow2-int")])
    rr, cc = int(ten[t]["rows"]), int(ten[t]["cols"])
    want = rr * cc * b + rr * (-(-cc // 32)) * 8
    assert int(r["total_bits"]) == want, (c, t, r["total_bits"], want)
    assert 0.0 < r["rel_err"] < 1.0, (c, r["rel_err"])
    if b == 4:
        assert r["rel_err"] >= rows[("int4-g32-sym", t)]["rel_err"], (c, t)
assert sum(c.startswith("pow2-") for c, _ in rows) == 6
print("add_example: sweep rows: 3 pow2 configurations on 2 tensors, exact sizes")
PY
# the traits the family declares (pow2.c), as the host lists them
$F quantizers --json >quantizers.json
python3 - <<'PY' || { echo "FAIL: the traits of pow2"; exit 1; }
import json
t = {c["name"]: c["traits"] for q in json.load(open("quantizers.json"))["quantizers"]
     for c in q["configs"]}["pow2-int4-g32"]
assert t["row_multiple"] == 1 and t["storage"] == "int-pack" and t["storage_bits"] == 4, t
assert t["storage_group_size"] == 32 and t["storage_symmetric"] and t["storage_scales"], t
PY
# --max-memory: blocked execution, bit for bit the whole tensors' rows
SPEC=gaussian:512x512,student-t3:640x1024:bf16,outliers:1000x256
$F sweep --synthetic "$SPEC" --quantizers 'pow2-*' --device cpu -o whole.h5 --quiet >sweep.out 2>&1 &&
  $F sweep --synthetic "$SPEC" --quantizers 'pow2-*' --device cpu -o blocked.h5 --quiet \
    --max-memory 1M >>sweep.out 2>&1 || { cat sweep.out; echo "FAIL: sweep --max-memory"; exit 1; }
python3 tests/sweep/blocked_check.py whole.h5 blocked.h5 'synthetic' 9 ||
  { echo "FAIL: the blocked rows of pow2 differ from the whole tensors'"; exit 1; }
python3 - <<'PY' || { echo "FAIL: pow2 skipped under --max-memory"; exit 1; }
import h5py
with h5py.File("blocked.h5", "r") as f:
    assert len(f["skipped"][()]) == 0, f["skipped"][()]
    assert len(f["results"][()]) == 9
PY
say "sweep --max-memory 1M: 3 tensors in row blocks, 9 rows bit for bit, none skipped"
# frontier quantize: dequantized, and the storage it declares
M=$SRC/data/stories260K
$F quantize "$M" --config pow2-int4-g32 --format dequantized -o deq --summary \
  >quantize.out 2>&1 || { cat quantize.out; echo "FAIL: quantize --format dequantized"; exit 1; }
$F quantize "$M" --config pow2-int4-g32 --exclude down_proj -o ct --summary >>quantize.out 2>&1 ||
  { cat quantize.out; echo "FAIL: quantize as compressed-tensors"; exit 1; }
python3 - <<'PY' || { echo "FAIL: the compressed-tensors checkpoint of pow2-int4-g32"; exit 1; }
import json
q = json.load(open("ct/config.json"))["quantization_config"]
a = q["config_groups"]["group_0"]["weights"]
assert q["format"] == "pack-quantized" and a["num_bits"] == 4 and a["group_size"] == 32, q
for r in ("deq/quantize_report.json", "ct/quantize_report.json"):
    ts = json.load(open(r))["tensors"]
    assert ts and all(t["equals_quantizer"] for t in ts if t["config"] == "pow2-int4-g32"), r
PY
say "quantize: dequantized and pack-quantized (its own scales), each tensor equal to Q(W)"

# 4. the suite's registry-driven checks with the family in
build/tests/quantizers/test_quantizers_configs >configs.out 2>&1 ||
  { tail -30 configs.out; echo "FAIL: test_quantizers_configs with the example family"; exit 1; }
say "$(tail -1 configs.out)"
if [ -x build/tests/gpu/test_gpu_parity_emu ]; then
  FRONTIER_GPU_TEST_QUICK=1 build/tests/gpu/test_gpu_parity_emu >parity.out 2>&1 ||
    { tail -30 parity.out; echo "FAIL: GPU parity (emulated) with the example family"; exit 1; }
  grep -E 'pow2' parity.out | head -4 || true
  say "$(tail -1 parity.out)"
elif [ "$CUDA" != ON ]; then
  say "the GPU emulator is not part of this build (sanitizers): parity not run"
fi
if [ -x build/tests/gpu/test_gpu_parity ]; then
  rc=0
  build/tests/gpu/test_gpu_parity >gpu.out 2>&1 || rc=$?
  if [ $rc = 77 ]; then
    say "nvcc built the family's kernels; no GPU here for the device parity: $(tail -1 gpu.out)"
  elif [ $rc != 0 ]; then
    tail -30 gpu.out; echo "FAIL: GPU parity on the device with the example family"; exit 1
  else
    say "device: $(tail -1 gpu.out)"
  fi
fi
echo "add_example: the example family went in with the documented steps"
