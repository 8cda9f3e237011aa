# Helpers shared by the shell tests (tests/sweep has its own lib.sh, which
# also parses the arguments and makes the scratch folder). Source it right
# after `set -u`, before any cd:
#   source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
# with CHECKS_COUNT=1 set first for a test that counts failures and goes on.
#   pass MSG          prints "ok: MSG"
#   fail MSG          prints "FAIL: MSG"; counted in $failures (CHECKS_COUNT=1,
#                     on stderr) or the test exits 1 (the default)
#   expect CODE CMD   runs CMD with its stdout and stderr in $tmp/out and
#                     $tmp/err (tmp: the test's scratch folder); fails, showing
#                     both, unless it exits with CODE
#   expect_err TEXT   the last expect's stderr matches TEXT (grep)
# shellcheck shell=bash
failures=0
if [ "${CHECKS_COUNT:-0}" = 1 ]; then
  fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
else
  fail() { echo "FAIL: $*"; exit 1; }
fi
pass() { echo "ok: $*"; }
expect() {
  local want=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    cat "$tmp/out" "$tmp/err"
    fail "'$*' exited $rc, expected $want"
  fi
}
expect_err() { grep -q -- "$1" "$tmp/err" || { cat "$tmp/err"; fail "stderr lacks '$1'"; }; }
# scratch NAME      $work: a fresh folder under $TMPDIR (removed at exit),
#                   made the working folder; only the built-in quantizers
#                   (FRONTIER_PLUGIN_PATH=none)
scratch() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/frontier-$1.XXXXXX") || exit 1
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  export FRONTIER_PLUGIN_PATH=none
}
# need_python MOD.. skips the test (exit 77) unless python3 imports them all
need_python() {
  python3 -c "import $(IFS=,; echo "$*")" 2>/dev/null || { echo "SKIP: python3 lacks $*"; exit 77; }
}
