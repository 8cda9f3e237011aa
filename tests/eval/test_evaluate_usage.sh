#!/usr/bin/env bash
# frontier evaluate's refusals (docs/evaluate.md), all made before
# llama-perplexity runs, so no llama.cpp is needed: a missing --text or
# --dataset, --recipe with --config, a model that is not a .gguf, a bad
# --ctx (2); an unreadable model, text or dataset, or no llama-perplexity in
# --llama-bin (3); a configuration the dataset lacks (2); an -o that exists
# (5). Nothing is left beside the dataset by a refusal.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
root=$2
scratch evaluate-usage
tmp=$work
m=$root/data/stories260K.gguf
t=$root/data/eval/stories.txt
"$bin" -q sweep "$m" --quantizers ggml-q8_0 -o "$tmp/run.h5" >/dev/null 2>&1 || fail "sweep"
mkdir "$tmp/nollama"
e() { expect "$1" "$bin" evaluate "${@:2}"; }

e 2 "$m" --config ggml-q8_0 --dataset "$tmp/run.h5"
expect_err "no --text FILE"
e 2 "$m" --config ggml-q8_0 --text "$t"
expect_err "no --dataset RUN.h5"
e 2 "$m" --text "$t" --dataset "$tmp/run.h5"
expect_err "give --recipe FILE or --config CONFIG"
e 2 "$m" --config ggml-q8_0 --recipe r.json --text "$t" --dataset "$tmp/run.h5"
expect_err "exclude each other"
e 2 "$root/data/stories260K" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5"
expect_err "is not a .gguf"
e 2 "$m" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5" --ctx 4
expect_err "invalid --ctx"
e 2 "$m" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5" --chunks 0
expect_err "invalid --chunks"
pass "usage errors exit 2"

e 3 "$m" --config ggml-q8_0 --text "$tmp/missing.txt" --dataset "$tmp/run.h5"
expect_err "cannot read --text '$tmp/missing.txt'"
e 3 "$m" --config ggml-q8_0 --text "$tmp" --dataset "$tmp/run.h5"
expect_err "cannot read --text"
e 3 "$tmp/missing.gguf" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5"
expect_err "cannot read '$tmp/missing.gguf'"
e 3 "$m" --config ggml-q8_0 --text "$t" --dataset "$tmp/missing.h5"
e 3 "$m" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5" --llama-bin "$tmp/nollama"
expect_err "no executable llama-perplexity in --llama-bin"
pass "unreadable inputs and a missing llama-perplexity exit 3"

e 2 "$m" --config int4-g32-sym --text "$t" --dataset "$tmp/run.h5" --llama-bin "$tmp/nollama"
expect_err "unknown configuration 'int4-g32-sym'"
e 3 "$m" --recipe "$tmp/missing.json" --text "$t" --dataset "$tmp/run.h5"
expect_err "cannot read --recipe"
pass "a choice the dataset lacks exits 2 before anything runs"

touch "$tmp/exists.gguf"
e 5 "$m" --config ggml-q8_0 --text "$t" --dataset "$tmp/run.h5" -o "$tmp/exists.gguf"
expect_err "exists: evaluate does not replace it"
pass "an existing -o exits 5 before anything runs"

[ ! -e "$tmp/run.h5.evaluate" ] || fail "a refusal left $tmp/run.h5.evaluate"
"$bin" evaluate --help | grep -q "kl-divergence-base" || fail "--help"
echo "test_evaluate_usage: all checks passed"
