#!/usr/bin/env bash
# `frontier quantizers`: the human listing with plugins from --plugin and
# FRONTIER_PLUGIN_PATH, the warnings for broken plugins found by discovery,
# exit 6 for a broken --plugin, FRONTIER_PLUGIN_PATH=none, usage errors.
#   quantizers_cli.sh FRONTIER PLUGIN_DIR TERNARY_DIR
set -euo pipefail
frontier=$1
dir=$2
ternary_dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
expect_eq() { # name expected-file actual-file
  diff -u "$2" "$3" >&2 || bad "$1"
}
contains() { # name haystack-file needle-file
  local hay needle
  hay=$(cat "$2")
  needle=$(cat "$3")
  if [[ "$hay" != *"$needle"* ]]; then
    printf -- '--- expected to contain:\n%s\n--- in:\n%s\n' "$needle" "$hay" >&2
    bad "$1"
  fi
}
count_line() { tail -n 1 "$1"; }
totals() { # quantizers configurations -> the listing's last line
  local q=s c=s
  [ "$1" = 1 ] && q=
  [ "$2" = 1 ] && c=
  echo "$1 quantizer$q, $2 configuration$c"
}

# The built-ins alone (whatever this build has), for the totals below.
FRONTIER_PLUGIN_PATH=none "$frontier" quantizers >"$tmp/builtin" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || bad "built-in listing wrote to stderr: $(cat "$tmp/err")"
read -r nq _ nc _ < <(count_line "$tmp/builtin" | tr -d ',')

# 1. a folder of test plugins: broken ones warned and skipped, others listed
rc=0
FRONTIER_PLUGIN_PATH="$dir" "$frontier" quantizers >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || bad "listing with broken plugins on the path exited $rc"
cat >"$tmp/want_err" <<END
frontier: warning: plugin '$dir/libbad_abi.so' has ABI version 7, this frontier supports 1 to 2 (skipped)
frontier: warning: plugin '$dir/libbad_cudaflag.so': quantizer 'bad_cudaflag' sets FRONTIER_Q_HAS_CUDA but has neither quantize_cuda nor sweep_cuda (skipped)
frontier: warning: plugin '$dir/libbad_cudafn.so': quantizer 'bad_cudafn' has a CUDA function but does not set FRONTIER_Q_HAS_CUDA (skipped)
frontier: warning: plugin '$dir/libbad_dupself.so': configuration 'dupself-a' is listed twice (skipped)
frontier: warning: plugin '$dir/libbad_flags.so': quantizer 'bad_flags' sets unknown flag bits 0x200 (ABI version 2 knows 0xf) (skipped)
frontier: warning: plugin '$dir/libbad_noentry.so' does not export 'frontier_plugin_entry' (skipped)
frontier: warning: plugin '$dir/libbad_null.so' returned no descriptor from 'frontier_plugin_entry' (skipped)
frontier: warning: plugin '$dir/libbad_params.so': configuration 'params-list' has params_json that is not a JSON object: '[1, 2]' (skipped)
frontier: warning: plugin '$dir/libbad_size.so' has a descriptor of 64 bytes, ABI version 2 needs at least 72 (skipped)
frontier: warning: plugin '$dir/libgood_dup.so': configuration 'good-f32' is already registered by quantizer 'good' (from '$dir/libgood.so') (skipped)
END
expect_eq "warnings for broken plugins on FRONTIER_PLUGIN_PATH" "$tmp/want_err" "$tmp/err"
cat >"$tmp/want" <<END
good 0.0.1 ($dir/libgood.so) [deterministic]
  a test plugin (good)
END
contains "good plugin listed" "$tmp/out" "$tmp/want"
grep -Eq '^  good-f32 +32  \{"dtype":"f32"\}$' "$tmp/out" || bad "good-f32 row"
grep -q "^misbehave 0.0.1 ($dir/libmisbehave.so) \[deterministic\]$" "$tmp/out" || bad "misbehave listed"
[ "$(grep -Ec '^  misbehave-[a-z0-9-]+ +32  \{\}$' "$tmp/out")" = 9 ] || bad "9 misbehave configurations"
# the "older" plugin (a descriptor that ends after quantize_cpu) is listed like any other
grep -q "^older 0.0.1 ($dir/libolder.so) \[deterministic\]$" "$tmp/out" || bad "older plugin listed"
[ "$(count_line "$tmp/out")" = "$(totals $((nq + 3)) $((nc + 11)))" ] ||
  bad "totals: $(count_line "$tmp/out")"

# 2. the example plugin on the path
FRONTIER_PLUGIN_PATH="$ternary_dir" "$frontier" quantizers >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || bad "ternary listing wrote to stderr: $(cat "$tmp/err")"
cat >"$tmp/want" <<END
ternary 1.0.0 ($ternary_dir/libternary.so) [deterministic]
  TWN ternary weights {-alpha, 0, +alpha}, threshold 0.7 mean|w|, trits packed 5 per byte
END
contains "ternary listed" "$tmp/out" "$tmp/want"
for c in tensor row g64; do
  grep -Eq "^  ternary-$c +1.6  \{\"group_size\":" "$tmp/out" || bad "ternary-$c row"
done
[ "$(count_line "$tmp/out")" = "$(totals $((nq + 1)) $((nc + 3)))" ] ||
  bad "ternary totals: $(count_line "$tmp/out")"

# 3. --plugin, both spellings; the same file also on the path is no duplicate
FRONTIER_PLUGIN_PATH="$ternary_dir" "$frontier" quantizers --plugin "$dir/libgood.so" \
  --plugin="$ternary_dir/libternary.so" >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || bad "--plugin listing wrote to stderr: $(cat "$tmp/err")"
grep -q "^good 0.0.1 ($dir/libgood.so)" "$tmp/out" || bad "--plugin good"
grep -q "^ternary 1.0.0 ($ternary_dir/libternary.so)" "$tmp/out" || bad "--plugin= ternary"
[ "$(count_line "$tmp/out")" = "$(totals $((nq + 2)) $((nc + 4)))" ] ||
  bad "--plugin totals: $(count_line "$tmp/out")"

# 4. FRONTIER_PLUGIN_PATH=none disables discovery but not --plugin
FRONTIER_PLUGIN_PATH=none "$frontier" quantizers --plugin "$dir/libgood.so" >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || bad "none + --plugin wrote to stderr"
grep -q "^good 0.0.1" "$tmp/out" || bad "none + --plugin good"
[ "$(count_line "$tmp/out")" = "$(totals $((nq + 1)) $((nc + 1)))" ] ||
  bad "none totals: $(count_line "$tmp/out")"

# 5. a broken --plugin is an error: exit 6, nothing on stdout
for case in "libbad_abi.so|plugin '$dir/libbad_abi.so' has ABI version 7, this frontier supports 1 to 2" \
            "libbad_noentry.so|plugin '$dir/libbad_noentry.so' does not export 'frontier_plugin_entry'" \
            "libgood_dup.so|ok"; do
  file=${case%%|*}
  want=${case#*|}
  rc=0
  FRONTIER_PLUGIN_PATH=none "$frontier" quantizers --plugin "$dir/$file" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$want" = ok ]; then
    [ "$rc" = 0 ] || bad "$file alone exited $rc"
  else
    [ "$rc" = 6 ] || bad "--plugin $file exited $rc, expected 6"
    echo "frontier: error: $want" >"$tmp/want_err"
    expect_eq "--plugin $file message" "$tmp/want_err" "$tmp/err"
    [ ! -s "$tmp/out" ] || bad "--plugin $file printed a listing"
  fi
done
rc=0
FRONTIER_PLUGIN_PATH=none "$frontier" quantizers --plugin "$dir/libgood.so" --plugin "$dir/libgood_dup.so" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 6 ] || bad "duplicate --plugin exited $rc, expected 6"
echo "frontier: error: plugin '$dir/libgood_dup.so': configuration 'good-f32' is already registered by quantizer 'good' (from '$dir/libgood.so')" >"$tmp/want_err"
expect_eq "duplicate --plugin message" "$tmp/want_err" "$tmp/err"
rc=0
"$frontier" quantizers --plugin /nonexistent/libx.so >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 6 ] || bad "missing --plugin exited $rc"
echo "frontier: error: cannot load plugin '/nonexistent/libx.so': cannot open shared object file: No such file or directory" >"$tmp/want_err"
expect_eq "missing --plugin message" "$tmp/want_err" "$tmp/err"

# 6. usage
for args in "--bogus" "extra" "--plugin" "--plugin="; do
  rc=0
  # shellcheck disable=SC2086
  "$frontier" quantizers $args >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || bad "'quantizers $args' exited $rc, expected 2"
  grep -q "^(see 'frontier quantizers --help')$" "$tmp/err" || bad "'quantizers $args' usage hint"
done
"$frontier" quantizers --help >"$tmp/out"
grep -q '^usage: frontier quantizers \[--json\] \[--plugin FILE\]\.\.\.$' "$tmp/out" || bad "--help usage line"
grep -q 'FRONTIER_PLUGIN_PATH=none' "$tmp/out" || bad "--help mentions none"

[ "$fail" = 0 ] && echo "frontier quantizers: all checks passed"
exit "$fail"
