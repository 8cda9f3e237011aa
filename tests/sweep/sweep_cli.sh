#!/usr/bin/env bash
# frontier sweep on bad input: each case a clear error, the documented exit
# code, and no damage to an existing output. NaN/Inf tensors are skipped and
# the run completes.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
PY="python3 $HERE"

$PY/make_model.py nan nan.safetensors
$PY/make_model.py small small.safetensors 1
Q=(--quantizers 'int4-g32-sym,int8-tensor-sym')

# -- a model with NaN and Inf tensors: reported, recorded, the run completes
expect_rc 0 "NaN/Inf tensors are skipped, the run completes" -- \
  "$FRONTIER" sweep nan.safetensors -o nan.h5 "${Q[@]}"
expect_stderr "skipping 'model.layers.0.mlp.up_proj.weight' in 'nan.safetensors': non-finite weights: 1 NaN and 0 Inf \(first at element 100\)" \
  "the NaN tensor is named with its file"
expect_stderr "skipping 'model.layers.0.self_attn.q_proj.weight' in 'nan.safetensors': non-finite weights: 0 NaN and 2 Inf \(first at element 7\)" \
  "the Inf tensor is named with its file"
if python3 - <<'PY'; then pass "NaN/Inf tensors in /skipped, the finite tensor measured"; else fail "NaN run: tables"; fi
import h5py
f = h5py.File("nan.h5", "r")
skipped = {(r["name"].decode(), r["config"].decode()): r["reason"].decode() for r in f["skipped"][...]}
assert "non-finite" in skipped[("model.layers.0.mlp.up_proj.weight", "")], skipped
assert "non-finite" in skipped[("model.layers.0.self_attn.q_proj.weight", "")], skipped
assert "1-D" in skipped[("model.layers.0.input_layernorm.weight", "")], skipped
assert skipped[("model.position_ids", "")], skipped  # the reader's or the sweep's reason
names = {r["name"].decode() for r in f["tensors"][...]}
res = f["results"][...]
measured = {f["tensors"][...][i]["name"].decode() for i in set(res["tensor_id"])}
assert measured == {"model.layers.0.mlp.down_proj.weight"}, measured
assert len(res) == 2, len(res)
PY

# -- selection errors (usage, exit 2), before anything is written
expect_rc 2 "unknown quantizer" -- "$FRONTIER" sweep small.safetensors -o a.h5 --quantizers nosuch
expect_stderr "no quantizer or configuration matches 'nosuch'" "names the unknown quantizer"
expect_rc 2 "glob matching nothing" -- "$FRONTIER" sweep small.safetensors -o a.h5 --quantizers 'int4*,zz*'
expect_stderr "no quantizer or configuration matches 'zz\*'" "names the glob"
expect_rc 2 "empty bit range" -- "$FRONTIER" sweep small.safetensors -o a.h5 --bits 8..2
expect_stderr "empty bit range '8..2'" "names the range"
expect_rc 2 "bits selecting nothing" -- "$FRONTIER" sweep small.safetensors -o a.h5 --bits 1
expect_rc 2 "malformed bits" -- "$FRONTIER" sweep small.safetensors -o a.h5 --bits 2-8
expect_rc 2 "bad --include regex" -- "$FRONTIER" sweep small.safetensors -o a.h5 --include '('
expect_stderr "invalid --include regex '\('" "names the regex"
expect_rc 2 "bad --exclude regex" -- "$FRONTIER" sweep small.safetensors -o a.h5 --exclude 'a[b'
expect_stderr "invalid --exclude regex 'a\[b'" "names the regex"
expect_rc 2 "bad --device" -- "$FRONTIER" sweep small.safetensors -o a.h5 --device tpu
expect_rc 2 "bad synthetic spec" -- "$FRONTIER" sweep --synthetic gauss:8x8 -o a.h5
expect_stderr "unknown distribution 'gauss'" "names the distribution"
expect_rc 2 "no output" -- "$FRONTIER" sweep small.safetensors
expect_rc 2 "unknown option" -- "$FRONTIER" sweep small.safetensors -o a.h5 --frobnicate
[ -e a.h5 ] && fail "a usage error created the output"

# -- devices
# CUDA_VISIBLE_DEVICES= hides any GPU, so this holds on GPU machines too
CUDA_VISIBLE_DEVICES= expect_rc 7 "--device cuda without a usable GPU" -- "$FRONTIER" sweep small.safetensors -o a.h5 --device cuda:0 "${Q[@]}"
[ -e a.h5 ] && fail "a device error created the output"

# -- inputs
expect_rc 3 "missing model" -- "$FRONTIER" sweep missing.safetensors -o a.h5 "${Q[@]}"
echo "not a model" > junk.safetensors
expect_rc 4 "malformed model" -- "$FRONTIER" sweep junk.safetensors -o a.h5 "${Q[@]}"
[ -e a.h5 ] && fail "an input error created the output"

# -- outputs
expect_rc 5 "unwritable output" -- "$FRONTIER" sweep small.safetensors -o no/such/dir/a.h5 "${Q[@]}"
expect_stderr "cannot write 'no/such/dir/a.h5': no such file or directory" "names the output"
expect_rc 0 "a first run" -- "$FRONTIER" sweep small.safetensors -o run.h5 "${Q[@]}" --quiet
before=$(sha256sum run.h5)
expect_rc 5 "existing output without --resume" -- "$FRONTIER" sweep small.safetensors -o run.h5 "${Q[@]}"
expect_stderr "'run.h5' already exists; use --resume" "explains --resume"
expect_rc 9 "--resume on another model" -- "$FRONTIER" sweep nan.safetensors -o run.h5 --resume "${Q[@]}"
expect_stderr "cannot resume 'run.h5': it was made from another model" "says why"
$PY/make_model.py small other.safetensors 2   # same names and shapes, other weights
expect_rc 9 "--resume on a model with the same tensors but other weights" -- \
  "$FRONTIER" sweep other.safetensors -o run.h5 --resume "${Q[@]}"
[ "$(sha256sum run.h5)" = "$before" ] || fail "a refused run changed the existing output"
cp run.h5 v2.h5
python3 "$HERE/h5tool.py" set-attr v2.h5 schema_version 2
before_v2=$(sha256sum v2.h5)
expect_rc 9 "--resume on another schema version" -- "$FRONTIER" sweep small.safetensors -o v2.h5 --resume "${Q[@]}"
expect_stderr "schema version 2" "names the version"
[ "$(sha256sum v2.h5)" = "$before_v2" ] || fail "--resume on another schema changed the file"
echo "plain text" > text.h5
expect_rc 4 "--resume on a file that is not a dataset" -- "$FRONTIER" sweep small.safetensors -o text.h5 --resume "${Q[@]}"
[ "$(cat text.h5)" = "plain text" ] || fail "--resume on a non-dataset changed it"
expect_rc 0 "--resume of a complete run" -- "$FRONTIER" sweep small.safetensors -o run.h5 --resume "${Q[@]}"
python3 "$HERE/h5tool.py" same run.h5 run.h5 || fail "complete run unreadable"
expect_rc 0 "--resume on a missing output starts a new run" -- "$FRONTIER" sweep small.safetensors -o fresh.h5 --resume "${Q[@]}"
python3 "$HERE/h5tool.py" same run.h5 fresh.h5 || fail "a run started by --resume differs"

# -- --json summary, selection by glob and bits, include/exclude, min-numel
# (the "it's" alternative matches nothing: it checks the quoting of the
# recorded command line)
expect_rc 0 "json summary" -- "$FRONTIER" sweep small.safetensors -o j.h5 --quantizers 'int*' --bits 4,8 \
  --include "mlp|attn|it's" --exclude 'k_proj' --min-numel 5000 --json --quiet
if python3 - <<'PY'; then pass "json summary content"; else fail "json summary content"; fi
import json
s = json.load(open("out.txt"))
names = {c["name"] for c in s["configs"]}
assert names and all(n.startswith(("int4-", "int8-")) for n in names), names
# q_proj (4096 elements) is below --min-numel, k_proj excluded: up and down remain
assert s["tensors"] == 2, s
assert all(c["tensors"] == 2 for c in s["configs"]), s
assert s["skipped_tensors"] == 1, s   # q_proj: fewer than --min-numel (the norm is not matched by --include)
PY
if python3 - <<'PY'; then pass "command_line attribute splits back into the arguments"; else fail "command_line attribute"; fi
import shlex
import h5py
line = h5py.File("j.h5", "r").attrs["command_line"]
line = line.decode() if isinstance(line, bytes) else line
want = ["frontier", "sweep", "small.safetensors", "-o", "j.h5", "--quantizers", "int*", "--bits", "4,8",
        "--include", "mlp|attn|it's", "--exclude", "k_proj", "--min-numel", "5000", "--json", "--quiet"]
assert shlex.split(line) == want, line
PY
finish
