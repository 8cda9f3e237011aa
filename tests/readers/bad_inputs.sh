#!/usr/bin/env bash
# Every bad input of cases.tsv (written by make_inputs.py): `frontier inspect`
# exits with the documented code, prints nothing on stdout, and prints
# exactly one line on stderr that names the file and says what is wrong.
set -u
frontier=$1 inputs=$2
failures=0 n=0
while IFS=$'\t' read -r path code text; do
  n=$((n + 1))
  "$frontier" inspect "$path" >"$inputs/bad.out" 2>"$inputs/bad.err"
  rc=$?
  err=$(cat "$inputs/bad.err")
  lines=$(wc -l <"$inputs/bad.err")
  why=
  [ "$rc" = "$code" ] || why="exit code $rc, want $code"
  [ -s "$inputs/bad.out" ] && why="$why; wrote to stdout"
  [ "$lines" = 1 ] || why="$why; $lines lines on stderr"
  case "$err" in *"'$path"*|*"'$path/"*) ;; *) why="$why; does not name '$path'" ;; esac
  case "$err" in *"$text"*) ;; *) why="$why; lacks \"$text\"" ;; esac
  case "$err" in *.) why="$why; ends with a full stop" ;; esac
  if [ -n "$why" ]; then
    echo "FAIL $path: $why"
    echo "  stderr: $err"
    failures=$((failures + 1))
  fi
done <"$inputs/bad/cases.tsv"
rm -f "$inputs/bad.out" "$inputs/bad.err"
if [ "$n" -lt 50 ]; then echo "FAIL: only $n cases in cases.tsv"; exit 1; fi
[ "$failures" = 0 ] && echo "bad_inputs: all $n bad inputs rejected as documented"
[ "$failures" = 0 ]
