#!/usr/bin/env bash
# Run-time checks of quantizer results, as the sweep sees them: a plugin whose
# configurations return NaN/Inf, leave an element unwritten, report sizes 0 or
# 2^63, or fail with an error code (with and without set_error) is reported
# per (tensor, configuration) with the exact message, and the other
# configurations still run.
#   runtime_checks.sh PLUGIN_DRIVER PLUGIN_DIR
set -euo pipefail
driver=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect_eq() { # name expected-file actual-file
  if ! diff -u "$2" "$3"; then
    echo "FAIL: $1" >&2
    fail=1
  fi
}

m="$dir/libmisbehave.so"
t='blk.0.attn_q.weight'
from="(quantizer 'misbehave' from '$m')"

rc=0
"$driver" --no-builtins --plugin "$m" run-all 4 6 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: run with failures exited $rc, expected 1" >&2; fail=1; }
cat >"$tmp/want_err" <<END
frontier: error: config 'misbehave-nan' on tensor '$t': quantize_cpu output is nan at row 3, col 5 $from
frontier: error: config 'misbehave-inf' on tensor '$t': quantize_cpu output is inf at row 0, col 0 $from
frontier: error: config 'misbehave-unwritten' on tensor '$t': quantize_cpu output is nan at row 3, col 5 $from
frontier: error: config 'misbehave-size0' on tensor '$t': size_bits returned 0 bits, outside [1, 2^63) $from
frontier: error: config 'misbehave-size-huge' on tensor '$t': size_bits returned 9223372036854775808 bits, outside [1, 2^63) $from
frontier: error: config 'misbehave-error' on tensor '$t': quantize_cpu failed (invalid argument): group size 7 does not divide 6 columns $from
frontier: error: config 'misbehave-error-silent' on tensor '$t': quantize_cpu failed (internal error, code 4) $from
frontier: error: config 'misbehave-nomem' on tensor '$t': quantize_cpu failed (out of memory): cannot allocate the codebook $from
END
echo "ok misbehave-ok 768 0" >"$tmp/want_out"
expect_eq "misbehaving configurations are reported" "$tmp/want_err" "$tmp/err"
expect_eq "the working configuration still runs" "$tmp/want_out" "$tmp/out"

# Discovered from a folder next to broken plugins: the broken ones are
# skipped with a warning, the good one and the misbehaving one both run.
rc=0
FRONTIER_PLUGIN_PATH="$dir" "$driver" --no-builtins --discover run-all 2 3 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: discovered run exited $rc, expected 1" >&2; fail=1; }
grep -q '^ok good-f32 192 0$' "$tmp/out" || { echo "FAIL: good-f32 did not run" >&2; fail=1; }
grep -q '^ok misbehave-ok 192 0$' "$tmp/out" || { echo "FAIL: misbehave-ok did not run" >&2; fail=1; }
[ "$(grep -c '(skipped)$' "$tmp/err")" = 10 ] || { echo "FAIL: expected 10 skipped plugins" >&2; cat "$tmp/err" >&2; fail=1; }
[ "$(grep -c "^frontier: error: config 'misbehave-" "$tmp/err")" = 8 ] || { echo "FAIL: expected 8 failed configurations" >&2; fail=1; }

# An explicit plugin that cannot be loaded is an error (exit 6).
rc=0
"$driver" --no-builtins --plugin "$dir/libbad_abi.so" run-all 2 3 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 6 ] || { echo "FAIL: explicit broken plugin exited $rc, expected 6" >&2; fail=1; }
echo "frontier: error: plugin '$dir/libbad_abi.so' has ABI version 7, this frontier supports 1 to 2" >"$tmp/want_err"
expect_eq "explicit broken plugin" "$tmp/want_err" "$tmp/err"
[ ! -s "$tmp/out" ] || { echo "FAIL: output despite a failed --plugin" >&2; fail=1; }

[ "$fail" = 0 ] && echo "runtime checks: all passed"
exit "$fail"
