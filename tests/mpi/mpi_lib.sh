# Helpers of the MPI shell tests, on top of tests/sweep/lib.sh. Each script
# is called as
#   bash sweep_mpi_X.sh FRONTIER_BINARY DATA_DIR MPIEXEC [FAIL_PLUGIN]
# shellcheck source=../sweep/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../sweep/lib.sh" "$1" "$2"
MPIEXEC=${3:?usage: test.sh FRONTIER_BINARY DATA_DIR MPIEXEC [FAIL_PLUGIN]}
H5TOOL="$HERE/h5tool.py"
need_python
need_builtins

# Open MPI refuses root (CI runs as root) without these, even for
# --version, and a CI machine may have fewer cores than ranks; other MPIs
# ignore the variables and take none of the flags.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIFLAGS=()
if "$MPIEXEC" --version 2>/dev/null | grep -Eq "Open MPI|OpenRTE|open-mpi"; then
  MPIFLAGS=(--allow-run-as-root --oversubscribe
            -x FRONTIER_PLUGIN_PATH -x FRONTIER_TEST_FAIL)
fi
export FRONTIER_TEST_FAIL=${FRONTIER_TEST_FAIL:-}

# mpi N ARGS...: `frontier ARGS...` as N ranks
mpi() {
  local n=$1; shift
  "$MPIEXEC" "${MPIFLAGS[@]}" -n "$n" "$FRONTIER" "$@"
}

# same A B WHAT: every table equal (timing columns aside), and equal keyed by
# names (order and ids aside)
same() {
  if python3 "$H5TOOL" same "$1" "$2" >same.txt 2>&1 &&
     python3 "$H5TOOL" same-by-name "$1" "$2" >>same.txt 2>&1; then
    pass "$3"
  else
    fail "$3"; sed 's/^/  /' same.txt >&2
  fi
}

# count PATTERN FILE: lines of FILE matching PATTERN
count() { grep -Ec -- "$1" "$2" || true; }

rows() { python3 "$H5TOOL" rows "$1" 2>/dev/null || echo unreadable; }
