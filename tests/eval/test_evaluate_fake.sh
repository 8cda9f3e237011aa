#!/usr/bin/env bash
# frontier evaluate's whole path without llama.cpp (docs/evaluate.md):
# quantize, the reference run once and then reused, the measurement read and
# stored under /frontier/measured, against a stand-in llama-perplexity
# (fake_llama_perplexity.sh) that prints what the real one prints: the
# closing statistics when there (6 decimals); measured again when they were
# lost, the last chunk's running row when all three attempts lost them;
# three attempts and exit 1 when the last row was lost too; exit 1 naming the log when the engine fails.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
root=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
scratch evaluate-fake
tmp=$work
m=$root/data/stories260K.gguf
t=$root/data/eval/stories.txt
mkdir "$tmp/llama"
cp "$root/tests/eval/fake_llama_perplexity.sh" "$tmp/llama/llama-perplexity"
export FAKE_CALLS=$tmp/calls
"$bin" -q sweep "$m" --quantizers 'ggml-q8_0,ggml-q4_0' -o "$tmp/run.h5" >/dev/null 2>&1 || fail "sweep"
ev() { "$bin" evaluate "$m" --text "$t" --dataset "$tmp/run.h5" --ctx 128 --llama-bin "$tmp/llama" "$@"; }
# name kl_mean ppl_quant ppl_orig top1 statistics: the stored row and its JSON
row() {
  python3 - "$tmp/run.h5" "$@" <<'PY' || fail "the stored row of $1"
import json, math, sys, h5py
path, name, kl, ppl, orig, top, stats = sys.argv[1:]
rows = {r["name"].decode(): r for r in h5py.File(path, "r")["frontier/measured/rows"][...]}
r = rows[name]
j = json.loads(r["json"])
for field, want in (("kl_mean", kl), ("ppl_quant", ppl), ("ppl_orig", orig), ("top1_agreement", top)):
    assert math.isclose(r[field], float(want), rel_tol=1e-5), (field, r[field], want)
assert r["positions"] == 2 * 63 and j["tokens"]["chunks"] == 2, (r["positions"], j["tokens"])
assert j["statistics"] == stats, j["statistics"]
print(f"ok: {name}: {stats}")
PY
}

FAKE_MODE=full expect 0 ev --config ggml-q8_0
expect_err "reference logits of the unquantized model"
row ggml-q8_0 1.023204 632.872211 865.056248 0.56349 "llama-perplexity's closing statistics"
FAKE_MODE=rows expect 0 ev --config ggml-q4_0
expect_err "reusing the reference logits"
expect_err "closing statistics are missing from '$tmp/run.h5.evaluate/ggml-q4_0.kld.log': measuring again (attempt 3 of 3)"
row ggml-q4_0 1.02320 632.8722 865.0562 0.56349 "llama-perplexity's last chunk row"
[ "$(grep -c -- '--kl-divergence-base' "$FAKE_CALLS")" = 5 ] || { cat "$FAKE_CALLS"; fail "one reference run and 1 + 3 measurements expected"; }
rm -f "$FAKE_CALLS.rows"
FAKE_MODE=rows-once expect 0 ev --config ggml-q4_0 --name again
expect_err "measuring again (attempt 2 of 3)"
row again 1.023204 632.872211 865.056248 0.56349 "llama-perplexity's closing statistics"
[ "$(grep -c -- '--kl-divergence-base' "$FAKE_CALLS")" = 7 ] || { cat "$FAKE_CALLS"; fail "2 more measurements expected"; }
pass "closing statistics; lost once: measured again; lost every time: the last row; the reference run once"

: > "$FAKE_CALLS"
FAKE_MODE=truncated expect 1 ev --config ggml-q8_0 --name lost
expect_err "no KL divergence statistics from llama-perplexity (1 of 2 chunks reported)"
expect_err "printed no KL divergence statistics in 3 runs"
[ "$(grep -c -- '--kl-divergence$' "$FAKE_CALLS")" = 3 ] || { cat "$FAKE_CALLS"; fail "3 attempts expected"; }
"$bin" annotate "$tmp/run.h5" --list | grep -q "^lost" && fail "a lost measurement was stored"
pass "statistics lost three times: exit 1, nothing stored"

rm -rf "$tmp/run.h5.evaluate"
FAKE_MODE=fail expect 1 ev --config ggml-q8_0
expect_err "llama-perplexity exited with 1: llama_model_load: error loading model: fake failure (its output: '$tmp/run.h5.evaluate/base-"
ls "$tmp/run.h5.evaluate"/*.kld >/dev/null 2>&1 && fail "a failed reference run left a reference file"
ls "$tmp/run.h5.evaluate"/quantized-* >/dev/null 2>&1 && fail "a temporary GGUF was left"
pass "a failing engine: exit 1 naming its log"
echo "test_evaluate_fake: all checks passed"
