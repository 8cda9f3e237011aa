# Helpers for the sweep area's shell tests. Each test script is called as
#   bash test.sh FRONTIER_BINARY DATA_DIR
# and runs in a fresh scratch folder; it exits 0 (pass), 1 (fail) or 77
# (skipped, with the reason printed).
set -u
FRONTIER=${1:?usage: test.sh FRONTIER_BINARY DATA_DIR}
DATA=${2:?usage: test.sh FRONTIER_BINARY DATA_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/frontier-sweep-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export FRONTIER_PLUGIN_PATH=none   # only built-ins: results must not depend on the machine
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# expect_rc CODE DESCRIPTION -- COMMAND...: runs COMMAND (stdout/stderr kept in
# out.txt/err.txt) and checks its exit status.
expect_rc() {
  local want=$1 what=$2; shift 3
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$what: exit $got, expected $want"; sed 's/^/  stderr: /' err.txt >&2
    return 1
  fi
  pass "$what (exit $got)"
  return 0
}

# expect_stderr PATTERN DESCRIPTION: the last command's stderr matches (grep -E).
expect_stderr() {
  if grep -Eq -- "$1" err.txt; then pass "$2"; else
    fail "$2: stderr lacks /$1/"; sed 's/^/  stderr: /' err.txt >&2; fi
}

need_python() {
  if ! python3 -c 'import numpy, h5py' 2>/dev/null; then
    echo "SKIP: python3 with numpy and h5py is needed (pip install numpy h5py)"
    exit 77
  fi
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"; exit 0
}

# The shell tests sweep with the built-in quantizers.
need_builtins() {
  if ! "$FRONTIER" quantizers 2>/dev/null | grep -q 'int4-g32-sym'; then
    echo "SKIP: the built-in quantizers are not registered in this build (quantizers/builtin.c)"
    exit 77
  fi
}
