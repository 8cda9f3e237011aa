#!/usr/bin/env bash
# --isolate-plugins: a plugin whose configurations crash (SIGSEGV in
# quantize_cpu and in size_bits), abort, hang and exit() is reported per
# (tensor, configuration) with what happened, its rows go to /skipped, and
# the rest of the sweep (its good configuration and the built-ins) completes
# with the same rows as a sweep without the bad configurations.
#   isolation.sh FRONTIER CRASHY_PLUGIN DATA
set -uo pipefail
frontier=$1 plugin=$2 data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
python3 -c "import h5py" 2>/dev/null || { echo "skipped: needs python3 with h5py"; exit 77; }
model="$data/stories260K/model.safetensors"
sel='int4-g32-sym,crashy-*'
inc='layers\.0\.self_attn\.(q|k)_proj'

"$frontier" sweep "$model" --plugin "$plugin" --quantizers "$sel" --include "$inc" \
  --isolate-plugins --plugin-timeout 2 --device cpu --quiet -o "$tmp/iso.h5" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || bad "a sweep with failed pairs exits $rc, expected 1 (docs/exit-codes.md)"
for w in "crashy-segv.*quantize_cpu crashed with signal 11" "crashy-abort.*quantize_cpu crashed with signal 6" \
         "crashy-hang.*quantize_cpu did not finish within 2 s \(killed\)" \
         "crashy-exit.*quantize_cpu exited with status [0-9]+ before returning" \
         "crashy-size-segv.*size_bits crashed with signal 11"; do
  grep -Eq "$w" "$tmp/err" || bad "no message matching '$w'"
done
"$frontier" sweep "$model" --plugin "$plugin" --quantizers 'int4-g32-sym,crashy-ok' --include "$inc" \
  --device cpu --quiet -o "$tmp/ref.h5" >/dev/null 2>&1 || bad "reference sweep failed"
python3 - "$tmp/iso.h5" "$tmp/ref.h5" <<'PY' || fail=1
import sys, h5py
def load(p):
    with h5py.File(p, "r") as f:
        d = lambda v: v.decode() if isinstance(v, bytes) else v
        cfg = {int(c["config_id"]): d(c["name"]) for c in f["configs"][()]}
        ten = {int(t["tensor_id"]): d(t["name"]) for t in f["tensors"][()]}
        rows = {(ten[int(r["tensor_id"])], cfg[int(r["config_id"])]): (float(r["rel_err"]), int(r["total_bits"]))
                for r in f["results"][()]}
        skipped = {(d(s["name"]), d(s["config"])) for s in f["skipped"][()]}
    return rows, skipped
iso, skipped = load(sys.argv[1])
ref, _ = load(sys.argv[2])
ok = True
if iso != ref:
    print("FAIL: the isolated sweep's rows differ from the sweep without the bad configurations"); ok = False
want = {(t, c) for t, _ in ref for c in ("crashy-segv", "crashy-abort", "crashy-hang", "crashy-exit", "crashy-size-segv")}
if not want <= skipped:
    print(f"FAIL: /skipped lacks {sorted(want - skipped)[:3]}"); ok = False
print(f"{len(iso)} rows equal, {len(want)} failed pairs in /skipped")
sys.exit(0 if ok else 1)
PY
[ $fail = 0 ] && echo "isolation: all checks passed"
exit $fail
