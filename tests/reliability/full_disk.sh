#!/usr/bin/env bash
# Write failures: a full disk, an I/O error, a failing fsync, a
# read-only filesystem and a missing folder, for sweep, merge, export and
# the tables pareto stores. Each must end with exit 5 and one line naming
# the file, never a crash; the last committed dataset must stay readable
# (h5py and frontier) and `sweep --resume` must finish it once space is
# free. The full disk is a small tmpfs when this runs as root and may
# mount one, else (and for EIO and fsync in any case) the LD_PRELOAD shim
# failwrite.c.
#   bash full_disk.sh FRONTIER DATA SHIM.so
source "$(dirname "$0")/../sweep/lib.sh"
SHIM=${3:?usage: full_disk.sh FRONTIER DATA SHIM.so}
H5TOOL="$HERE/../sweep/h5tool.py"
need_python
need_builtins
M="$DATA/stories260K"
Q=(--quantizers 'int4*,nvfp4,fp8-e4m3-tensor' --quiet)

# one_error CODE WHAT FILE -- COMMAND: exit CODE, exactly one line on
# stderr, a frontier error naming FILE
one_error() {
  local code=$1 what=$2 file=$3; shift 4
  expect_rc "$code" "$what" -- "$@" || return 1
  local lines
  lines=$(wc -l <err.txt)
  if [ "$lines" -ne 1 ] || ! grep -q "^frontier: error: .*'[^']*$file[^']*'" err.txt; then
    fail "$what: expected one error line naming '$file', got:"; sed 's/^/  stderr: /' err.txt >&2
    return 1
  fi
  pass "$what: one line: $(cat err.txt)"
}

no_leftovers() { # DIR WHAT: no temporary file left beside the outputs
  local left
  left=$(find "$1" -name '*.tmp*' -o -name '*frontier-tmp*' | head -3)
  [ -z "$left" ] && pass "$2: no temporary file left" || fail "$2: left $left"
}

readable() { # FILE WHAT: h5py and frontier read it
  python3 "$H5TOOL" rows "$1" >/dev/null 2>&1 && pass "$2: h5py reads it" ||
    fail "$2: h5py cannot read '$1'"
  # (a commit made before the first row has none: pareto says so, once it read the file)
  if "$FRONTIER" pareto "$1" --no-store >/dev/null 2>err2.txt || grep -q "has no results" err2.txt; then
    pass "$2: frontier reads it"
  else
    fail "$2: frontier cannot read '$1'"; sed 's/^/  stderr: /' err2.txt >&2
  fi
}

expect_rc 0 "reference run" -- "$FRONTIER" sweep "$M" -o ref.h5 "${Q[@]}"
expect_rc 0 "part A" -- "$FRONTIER" sweep "$M" -o a.h5 "${Q[@]}" --include 'layers\.[0-2]\.'
expect_rc 0 "part B" -- "$FRONTIER" sweep "$M" -o b.h5 "${Q[@]}" --include 'layers\.[3-4]\.|embed'
ref_size=$(stat -c %s ref.h5)

# ---- a full disk: a tmpfs where one can be mounted ----
SMALL="$WORK/small"
mkdir -p "$SMALL"
mounted=0
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=$((ref_size * 3 / 2)) frontier-test "$SMALL" 2>/dev/null; then
  mounted=1
  trap 'umount "$SMALL" 2>/dev/null; rm -rf "$WORK"' EXIT
  echo "full disk: a tmpfs of $((ref_size * 3 / 2)) bytes at $SMALL"
  # commits as often as possible, so that some succeed before the disk fills
  one_error 5 "sweep onto a full disk" run.h5 -- \
    "$FRONTIER" sweep "$M" -o "$SMALL/run.h5" "${Q[@]}" --threads 1 --commit-interval 0.001
  grep -q "no space left on device" err.txt && pass "says the disk is full" || fail "no ENOSPC in the message"
  no_leftovers "$SMALL" "full sweep"
  readable "$SMALL/run.h5" "the last commit"
  mount -o remount,size=$((ref_size * 4)) "$SMALL" && pass "space freed"
  expect_rc 0 "--resume once space is free" -- "$FRONTIER" sweep "$M" -o "$SMALL/run.h5" "${Q[@]}" --resume
  python3 "$H5TOOL" same ref.h5 "$SMALL/run.h5" && pass "resumed = uninterrupted run" ||
    fail "the resumed run differs from the reference"

  # fill the disk to the last block: every write fails from now on
  cp ref.h5 "$SMALL/store.h5"
  rm -f "$SMALL/run.h5"
  dd if=/dev/zero of="$SMALL/filler" bs=4096 2>/dev/null
  before=$(sha256sum <"$SMALL/store.h5")
  one_error 5 "merge onto a full disk" all.h5 -- "$FRONTIER" merge a.h5 b.h5 -o "$SMALL/all.h5"
  [ ! -e "$SMALL/all.h5" ] && pass "no merged file" || fail "a merged file was left"
  # svg and png need a build with cairo (FRONTIER_PLOTS): try each on a
  # disk with room first
  formats="csv json tex gnuplot"
  for fmt in svg png; do
    if "$FRONTIER" -q export ref.h5 --format "$fmt" -o "$WORK/probe.$fmt" >/dev/null 2>&1; then
      formats="$formats $fmt"
    else
      echo "skipped: export $fmt (this build writes no $fmt figures)"
    fi
  done
  for fmt in $formats; do
    ext=$fmt; [ "$fmt" = gnuplot ] && ext=gp
    # (gnuplot writes out.dat, then out.gp: either may be named)
    one_error 5 "export $fmt onto a full disk" "out." -- \
      "$FRONTIER" export ref.h5 --format "$fmt" -o "$SMALL/out.$ext"
    [ ! -e "$SMALL/out.$ext" ] && pass "no partial out.$ext" || fail "a partial out.$ext was left"
  done
  # (--objective error: the default objective would warn of no sensitivity first)
  one_error 5 "allocate -o onto a full disk" recipe.json -- \
    "$FRONTIER" allocate ref.h5 --budget 4.5 --objective error --no-store -o "$SMALL/recipe.json"
  one_error 5 "pareto storing into a dataset on a full disk" store.h5 -- "$FRONTIER" pareto "$SMALL/store.h5"
  [ "$(sha256sum <"$SMALL/store.h5")" = "$before" ] && pass "the dataset is unchanged" ||
    fail "pareto changed the dataset on a full disk"
  no_leftovers "$SMALL" "full disk"
  rm -f "$SMALL/filler"

  # read-only
  mount -o remount,ro "$SMALL"
  one_error 5 "sweep onto a read-only filesystem" run.h5 -- "$FRONTIER" sweep "$M" -o "$SMALL/run.h5" "${Q[@]}"
  grep -q "read-only" err.txt && pass "says read-only" || fail "no EROFS in the message"
  one_error 5 "pareto on a read-only filesystem" store.h5 -- "$FRONTIER" pareto "$SMALL/store.h5"
  readable "$SMALL/store.h5" "read-only dataset"
  umount "$SMALL" && mounted=0
else
  echo "full disk: no tmpfs can be mounted here; the shim stands in for it"
fi

# ---- the shim: ENOSPC after N bytes, EIO, a failing fsync ----
# (an ASan build would object to a library preloaded before its runtime)
shim() { env LD_PRELOAD="$SHIM" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  FR_FAILWRITE_PATTERN="$1" FR_FAILWRITE_AFTER="$2" \
  FR_FAILWRITE_ERRNO="$3" FR_FAILWRITE_FSYNC="${4:-0}" "${@:6}"; }
mkdir -p out
# the first commit (no rows yet) fits in 400 kB, the final one does not
one_error 5 "sweep: ENOSPC after 400 kB (shim)" s.h5 -- \
  shim s.h5 400000 28 0 -- "$FRONTIER" sweep "$M" -o out/s.h5 "${Q[@]}"
grep -q "no space left on device" err.txt && pass "says the disk is full" || fail "no ENOSPC"
no_leftovers out "shim sweep"
if [ -e out/s.h5 ]; then
  readable out/s.h5 "the shim's last commit"
  expect_rc 0 "--resume after the shim" -- "$FRONTIER" sweep "$M" -o out/s.h5 "${Q[@]}" --resume
  python3 "$H5TOOL" same ref.h5 out/s.h5 && pass "resumed = uninterrupted run" || fail "resumed run differs"
else
  fail "the first commit did not survive"
fi
one_error 5 "sweep: EIO (shim)" e.h5 -- shim e.h5 0 5 0 -- "$FRONTIER" sweep "$M" -o out/e.h5 "${Q[@]}"
grep -q "input/output error" err.txt && pass "says input/output error" || fail "no EIO in the message"
one_error 5 "sweep: fsync fails (shim)" f.h5 -- shim f.h5 999999999 5 1 -- "$FRONTIER" sweep "$M" -o out/f.h5 "${Q[@]}"
one_error 5 "merge: ENOSPC (shim)" m.h5 -- shim m.h5 0 28 0 -- "$FRONTIER" merge a.h5 b.h5 -o out/m.h5
[ ! -e out/m.h5 ] && pass "no merged file" || fail "a merged file was left"
# (not the figures: cairo writes them through stdio calls inside libcairo
# that the shim cannot see; the tmpfs above covers them)
for fmt in csv json; do
  one_error 5 "export $fmt: ENOSPC (shim)" "x.$fmt" -- \
    shim "x.$fmt" 0 28 0 -- "$FRONTIER" export ref.h5 --format "$fmt" -o "out/x.$fmt"
  [ ! -e "out/x.$fmt" ] && pass "no partial x.$fmt" || fail "a partial x.$fmt was left"
done
no_leftovers out "shim"

# ---- a missing folder ----
one_error 5 "sweep into a missing folder" run.h5 -- "$FRONTIER" sweep "$M" -o gone/run.h5 "${Q[@]}"
grep -q "no such file or directory" err.txt && pass "says the folder is missing" || fail "no ENOENT"
one_error 5 "merge into a missing folder" all.h5 -- "$FRONTIER" merge a.h5 b.h5 -o gone/all.h5
one_error 5 "export into a missing folder" x.csv -- "$FRONTIER" export ref.h5 --format csv -o gone/x.csv
finish
