#!/bin/sh
# sensitivity_cli.sh FRONTIER HAVE_LLAMA DATA WORK: `frontier sensitivity`
# without a runnable model. Usage errors exit 2 in any build; a build
# without libllama exits 10 saying how to get it; a build with it exits 3
# for a model or text that cannot be read, 4 for a GGUF llama.cpp cannot
# build (data/stories260K.gguf has no tokenizer), 5 for an output that
# exists, and 2 for a calibrated --perturb-config.
set -u
frontier=$1 have_llama=$2 data=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fails=0
text=$work/text.txt
printf 'It was a bright cold day in April, and the clocks were striking thirteen.\n' >"$text"

# expect CODE PATTERN ARGS...: the exit code, and PATTERN (grep -E) in stderr
expect() {
  code=$1 pattern=$2
  shift 2
  "$frontier" sensitivity "$@" >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" != "$code" ] || ! grep -Eq -- "$pattern" "$work/err"; then
    echo "FAIL: frontier sensitivity $* exited $rc (expected $code, stderr matching '$pattern'):"
    cat "$work/err"
    fails=$((fails + 1))
  fi
}

gguf=$data/stories260K.gguf
expect 2 "no model given" --text "$text" -o "$work/o.safetensors"
expect 2 "no text given" "$gguf" -o "$work/o.safetensors"
expect 2 "no output given" "$gguf" --text "$text"
expect 2 "invalid --levels 'natural,0.1'" "$gguf" --text "$text" -o "$work/o" --levels natural,0.1
expect 2 "invalid --levels '0'" "$gguf" --text "$text" -o "$work/o" --levels 0
expect 2 "needs --levels" "$gguf" --text "$text" -o "$work/o" --perturb gaussian --levels natural
expect 2 "unknown --perturb 'uniform'" "$gguf" --text "$text" -o "$work/o" --perturb uniform
expect 2 "--perturb-config goes with --perturb quant" "$gguf" --text "$text" -o "$work/o" \
  --perturb gaussian --perturb-config ggml-q4_0
expect 2 "invalid --seq-len '1'" "$gguf" --text "$text" -o "$work/o" --seq-len 1
expect 2 "invalid --threads 'many'" "$gguf" --text "$text" -o "$work/o" --threads many
expect 2 "one model only" "$gguf" "$gguf" --text "$text" -o "$work/o"
"$frontier" sensitivity --help >"$work/help" 2>&1 || { echo "FAIL: --help exited $?"; fails=$((fails + 1)); }
grep -q "allocate RUN.h5 --budget BITS --calib OUT.safetensors" "$work/help" ||
  { echo "FAIL: --help does not say how the file is used"; fails=$((fails + 1)); }

if [ "$have_llama" = 1 ]; then
  expect 3 "cannot open '$work/missing.gguf'" "$work/missing.gguf" --text "$text" -o "$work/o"
  expect 3 "cannot open '$work/missing.txt'" "$gguf" --text "$work/missing.txt" -o "$work/o"
  expect 4 "stories260K.gguf" "$gguf" --text "$text" -o "$work/o"
  expect 2 "unknown --perturb-config 'int3-nope'" "$gguf" --text "$text" -o "$work/o" \
    --perturb-config int3-nope
  expect 2 "needs calibration statistics" "$gguf" --text "$text" -o "$work/o" \
    --perturb-config gptq-int4-g32-sym
  : >"$work/exists.safetensors"
  expect 5 "already exists" "$gguf" --text "$text" -o "$work/exists.safetensors"
  [ ! -s "$work/exists.safetensors" ] || { echo "FAIL: an existing output was changed"; fails=$((fails + 1)); }
else
  expect 10 "needs libllama.*scripts/llama-cpp.sh" "$gguf" --text "$text" -o "$work/o"
fi
[ ! -e "$work/o" ] || { echo "FAIL: a failed run left '$work/o'"; fails=$((fails + 1)); }

if [ "$fails" != 0 ]; then
  echo "sensitivity_cli: $fails check(s) failed"
  exit 1
fi
echo "sensitivity_cli: all checks passed (libllama in this build: $have_llama)"
