#!/usr/bin/env bash
# --max-memory (docs/sweep.md, "Bounded memory"): tensors over the bound are
# evaluated in blocks of whole rows, and every row they give is bit for bit
# the default sweep's (every float column, every configuration the blocked
# path supports: the 98 built-in row-local ones, the tensor-wide int, fp8
# and nvfp4 scales through the first pass); the rest are in /skipped with
# a reason, not failed.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
# several blocks each: 512 columns -> 128-row blocks (65536-element chunks);
# 640x1024 bf16 -> 128-row blocks with fp8's 128x128 tiles; 1000x256 ends
# with a short block; 129x513 (odd columns) stays one block
SPEC=gaussian:512x512,student-t3:640x1024:bf16,outliers:1000x256,laplace:129x513
run() { "$FRONTIER" sweep --device cpu "$DATA/stories260K" --synthetic "$SPEC" --seed 3 --quiet --threads 2 -o "$@"; }
expect_rc 0 "default sweep" -- run a.h5
# 1 byte: every tensor in minimal blocks
expect_rc 0 "--max-memory 1 (every tensor blocked)" -- run b.h5 --max-memory 1
python3 "$HERE/blocked_check.py" a.h5 b.h5 '.' 3920 && pass "tiny --max-memory: rows bit for bit" ||
  fail "tiny --max-memory rows differ from the default sweep"
# 1M: the synthetic 512x512, 640x1024 and 1000x256 tensors in blocks of
# 256, 128 and 512 rows; the small ones whole, in the same run
expect_rc 0 "--max-memory 1M (three tensors blocked)" -- run c.h5 --max-memory 1M
python3 "$HERE/blocked_check.py" a.h5 c.h5 'synthetic\.[012]\.' 11727 &&
  pass "1M --max-memory: rows bit for bit" || fail "1M --max-memory rows differ"
grep -q "nf4-g64-dq" <(python3 -c "
import h5py
with h5py.File('c.h5') as f:
    for r in f['skipped'][...]:
        if r['config'] == b'nf4-g64-dq': print(r['config'].decode(), r['reason'].decode())
") && pass "nf4-g64-dq skipped on blocked tensors" || fail "nf4-g64-dq not in /skipped"
# with calibration statistics: out_rel_err accumulated over blocks (whole
# 64-row output chunks) equals the whole tensor's, bit for bit
HERE=$HERE python3 - <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, os.environ["HERE"])
from calib_check import write_safetensors
rng = np.random.default_rng(7)
# 3000 x 64: 1024-row blocks (the last one short); 200 x 640: 512-row
# blocks would exceed it, so one block
write_safetensors("calmodel.safetensors", {
    "model.layers.0.mlp.up_proj.weight": (rng.standard_normal((3000, 64)) * 0.02).astype(np.float32),
    "model.layers.0.self_attn.q_proj.weight": (rng.standard_normal((200, 640)) * 0.02).astype(np.float32),
}, {"format": "pt"})
PY
python3 "$HERE/calib_check.py" write calmodel.safetensors cal.safetensors
CQ='int4*,int8-tensor-asym,fp8*,nvfp4,mx*,nf4*'
expect_rc 0 "--calib, default" -- "$FRONTIER" sweep --device cpu calmodel.safetensors --calib cal.safetensors \
  --quantizers "$CQ" --quiet --threads 2 -o ca.h5
expect_rc 0 "--calib, --max-memory 1" -- "$FRONTIER" sweep --device cpu calmodel.safetensors --calib cal.safetensors \
  --quantizers "$CQ" --quiet --threads 2 -o cb.h5 --max-memory 1
python3 "$HERE/blocked_check.py" ca.h5 cb.h5 '.' 40 && python3 - <<'PY' && pass "--calib rows bit for bit, out_rel_err included" || fail "--calib blocked rows differ"
import h5py, numpy as np
r = h5py.File("cb.h5", "r")["results"][...]
assert len(r) and np.all(np.isfinite(r["out_rel_err"])), "out_rel_err missing"
PY
# the same with the diagonal only (--diagonal-output-error): the diagonal's
# output error over blocks equals the whole tensor's, bit for bit
python3 "$HERE/calib_check.py" write calmodel.safetensors cald.safetensors diag-only
expect_rc 0 "--diagonal-output-error, default" -- "$FRONTIER" sweep --device cpu calmodel.safetensors \
  --calib cald.safetensors --diagonal-output-error --quantizers "$CQ" --quiet --threads 2 -o da.h5
expect_rc 0 "--diagonal-output-error, --max-memory 1" -- "$FRONTIER" sweep --device cpu calmodel.safetensors \
  --calib cald.safetensors --diagonal-output-error --quantizers "$CQ" --quiet --threads 2 -o db.h5 --max-memory 1
python3 "$HERE/blocked_check.py" da.h5 db.h5 '.' 40 && python3 - <<'PY' && pass "diagonal rows bit for bit in blocks" || fail "diagonal blocked rows differ"
import h5py, numpy as np
f = h5py.File("db.h5", "r")
r = f["results"][...]
assert len(r) and np.all(np.isfinite(r["out_rel_err"])), "out_rel_err missing"
assert {t["out_error"] for t in f["tensors"][...]} == {b"diagonal"}
PY
# a NaN and an Inf in the third block (with and without a first pass): the
# tensor is skipped with the default sweep's reason, naming the counts and
# the first element
HERE=$HERE python3 - <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, os.environ["HERE"])
from calib_check import write_safetensors
w = (np.random.default_rng(8).standard_normal((2048, 256)) * 0.02).astype(np.float32)
w[600, 3], w[700, 5] = np.nan, np.inf
write_safetensors("nan.safetensors", {"model.layers.0.mlp.up_proj.weight": w,
                                      "model.layers.0.mlp.down_proj.weight": w[:512] * 0}, {})
PY
for q in int4-g32-sym nvfp4; do
  expect_rc 0 "NaN tensor, $q, default" -- "$FRONTIER" sweep --device cpu nan.safetensors --quantizers $q -o na-$q.h5
  expect_rc 0 "NaN tensor, $q, --max-memory 1" -- "$FRONTIER" sweep --device cpu nan.safetensors --quantizers $q \
    -o nb-$q.h5 --max-memory 1
  expect_stderr "skipping 'model.layers.0.mlp.up_proj.weight' in 'nan.safetensors': non-finite weights: 1 NaN and 1 Inf \(first at element 153603\)" \
    "$q: the warning names file, tensor, counts and first element"
  python3 "$HERE/h5tool.py" same na-$q.h5 nb-$q.h5 && pass "$q: same /skipped and rows as the default sweep" ||
    fail "$q: the NaN tensor's handling differs"
done
# numeric edge cases spread over blocks: the flags gathered block by block
# equal the whole tensor's (scales that overflow in one block, underflow in
# another, subnormals and -0 in a third; nvfp4's global scale, tensor scopes)
HERE=$HERE python3 - <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, os.environ["HERE"])
from calib_check import write_safetensors
w = (np.random.default_rng(9).standard_normal((2048, 256)) * 0.02).astype(np.float32)
w[300, :40] *= 1e8           # fp16 group scales overflow
w[1500, :] *= 1e-7           # ... and underflow
w[1900, 7] = np.float32(1e-40)  # a subnormal
w[1901, 9] = -0.0
write_safetensors("edge.safetensors", {"model.layers.0.mlp.up_proj.weight": w}, {})
PY
EQ='int4*,int8-g32-sym,fp8*,nvfp4,mx*,nf4-g64'
expect_rc 0 "edge cases, default" -- "$FRONTIER" sweep --device cpu edge.safetensors --quantizers "$EQ" -o ea.h5 --quiet
expect_rc 0 "edge cases, --max-memory 1" -- "$FRONTIER" sweep --device cpu edge.safetensors --quantizers "$EQ" \
  -o eb.h5 --quiet --max-memory 1
python3 - <<'PY' && pass "the edge cases raise overflow, underflow, subnormal and -0 flags" ||
import h5py, numpy as np
f = np.bitwise_or.reduce(h5py.File("ea.h5", "r")["results"]["flags"])
assert f & 0x10 and f & 0x20 and f & 0x4 and f & 0x8, hex(f)
PY
  fail "the edge-case tensor raises no scale flags"
python3 "$HERE/h5tool.py" same ea.h5 eb.h5 && pass "flags gathered over blocks equal the whole tensor's" ||
  fail "blocked flags differ"
# a file tensor whose blocks are converted in several pieces (4 M elements
# between page releases): 4096 x 4096 BF16 under 64M = two blocks of 8 M
python3 - <<'PY'
import json, struct
import numpy as np
x = (np.random.default_rng(10).standard_normal(4096 * 4096, dtype=np.float32) * np.float32(0.02))
b = (x.view(np.uint32) >> 16).astype("<u2").tobytes()
h = json.dumps({"model.layers.0.mlp.up_proj.weight": {"dtype": "BF16", "shape": [4096, 4096],
                "data_offsets": [0, len(b)]}}).encode()
h += b" " * (-len(h) % 8)
open("big.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b)
PY
expect_rc 0 "4096x4096 BF16, default" -- "$FRONTIER" sweep --device cpu big.safetensors --quantizers int4-g128-sym,nvfp4 \
  -o ga.h5 --quiet
expect_rc 0 "4096x4096 BF16, --max-memory 64M" -- "$FRONTIER" sweep --device cpu big.safetensors \
  --quantizers int4-g128-sym,nvfp4 -o gb.h5 --quiet --max-memory 64M
python3 "$HERE/h5tool.py" same ga.h5 gb.h5 && pass "two 8 M-element blocks, each converted in pieces: same rows" ||
  fail "the pieced blocks' rows differ"
# a plugin's configurations are not blocked (its descriptor cannot say it
# is row-local): skipped with the reason, the built-in one measured, exit 0
PLUGIN=$(dirname "$FRONTIER")/examples/plugins/libternary.so
if [ -f "$PLUGIN" ]; then
  expect_rc 0 "plugin under --max-memory" -- "$FRONTIER" sweep --device cpu --synthetic gaussian:512x512 \
    --plugin "$PLUGIN" --quantizers 'ternary*,int4-g128-sym' -o pl.h5 --quiet --max-memory 1
  python3 - <<'PY' && pass "plugin configurations in /skipped with the reason" || fail "plugin rows under --max-memory"
import h5py
with h5py.File("pl.h5", "r") as f:
    assert f["results"].shape[0] == 1
    why = {r["config"].decode(): r["reason"].decode() for r in f["skipped"][...]}
assert set(why) == {"ternary-g64", "ternary-row", "ternary-tensor"}, why
assert all("plugin" in w and w.endswith("needs the whole tensor; raise --max-memory") for w in why.values()), why
PY
fi
expect_rc 2 "--max-memory with --device cuda" -- run d.h5 --max-memory 1G --device cuda
expect_stderr "CPU executor only" "the message says why"
expect_rc 2 "bad --max-memory" -- run e.h5 --max-memory 12X
expect_stderr "invalid --max-memory '12X'" "the message names the value"
finish
