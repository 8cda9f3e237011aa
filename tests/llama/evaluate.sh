#!/usr/bin/env bash
# frontier evaluate through the pinned llama.cpp (docs/evaluate.md):
# stories260K with the stand-in byte vocabulary (make_gguf_fixture.py
# --byte-vocab, so llama.cpp loads it), swept with ggml-q8_0 and ggml-q4_0,
# each evaluated by llama-perplexity on data/eval/stories.txt (--ctx 128):
# both rows stored under /frontier/measured with the text's sha256, the
# reference logits computed once and reused, KLD(q8_0) < KLD(q4_0) and
# q8_0 agreeing on more top tokens; then an allocated recipe evaluated, and
# pareto showing the measured rows beside the predictions.
#   evaluate.sh FRONTIER LLAMA_BIN_DIR REPO_ROOT
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
llama=$2
root=$3
[ -x "$llama/llama-perplexity" ] || { echo "SKIP: no llama-perplexity in '$llama' (scripts/llama-cpp.sh builds it)"; exit 77; }
python3 -c "import numpy, h5py" 2>/dev/null || { echo "SKIP: python3 with numpy and h5py needed"; exit 77; }
scratch evaluate
tmp=$work
m=$tmp/stories260K.gguf
t=$root/data/eval/stories.txt
python3 "$root/data/make_gguf_fixture.py" "$root/data/stories260K" "$m" --byte-vocab >/dev/null || fail "make_gguf_fixture.py --byte-vocab"
"$bin" -q sweep "$m" --quantizers 'ggml-q8_0,ggml-q4_0' -o "$tmp/run.h5" >/dev/null 2>&1 || fail "sweep"

ev() { "$bin" evaluate "$m" --text "$t" --dataset "$tmp/run.h5" --ctx 128 --llama-bin "$llama" "$@"; }
expect 0 ev --config ggml-q4_0
cat "$tmp/out"
expect_err "reference logits of the unquantized model"
expect 0 ev --config ggml-q8_0 -o "$tmp/q8.gguf"
cat "$tmp/out"
expect_err "reusing the reference logits"
[ -s "$tmp/q8.gguf" ] || fail "-o did not keep the quantized file"
[ "$(ls "$tmp/run.h5.evaluate"/*.kld | wc -l)" = 1 ] || fail "one reference file expected"
ls "$tmp/run.h5.evaluate"/quantized-* >/dev/null 2>&1 && fail "the temporary GGUF was left"
pass "two evaluations, one reference run"

python3 - "$tmp/run.h5" "$t" <<'PY' || fail "the stored measurements"
import hashlib, json, sys
import h5py
rows = {r["name"].decode(): r for r in h5py.File(sys.argv[1], "r")["frontier/measured/rows"][...]}
assert set(rows) == {"ggml-q4_0", "ggml-q8_0"}, rows.keys()
sha = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
for name, r in rows.items():
    j = json.loads(r["json"])
    assert r["kind"] == b"config" and j["config"] == name, j
    assert j["tokens"]["sha256"] == sha and j["tokens"]["file"] == sys.argv[2], j["tokens"]
    assert j["tokens"]["ctx"] == 128 and j["tokens"]["chunks"] > 0, j["tokens"]
    assert r["positions"] == j["tokens"]["chunks"] * 63, (r["positions"], j["tokens"])
    assert r["kl_mean"] > 0 and r["ppl_quant"] > 0 and r["ppl_orig"] > 0, name
    assert 0 < r["top1_agreement"] <= 1, name
    assert "llama-perplexity" in j["engine_path"], j
q8, q4 = rows["ggml-q8_0"], rows["ggml-q4_0"]
# one reference run: the same unquantized perplexity, to the digit (evaluate
# measures again when llama-perplexity loses its closing statistics)
assert q8["ppl_orig"] == q4["ppl_orig"], (q8["ppl_orig"], q4["ppl_orig"])
assert q8["kl_mean"] < q4["kl_mean"], ("KLD q8_0 >= q4_0", q8["kl_mean"], q4["kl_mean"])
assert q8["top1_agreement"] > q4["top1_agreement"], (q8["top1_agreement"], q4["top1_agreement"])
print(f"ok: KLD q8_0 {q8['kl_mean']:.6g} < q4_0 {q4['kl_mean']:.6g}; same top "
      f"{q8['top1_agreement']:.4f} > {q4['top1_agreement']:.4f}")
PY

"$bin" -q allocate "$tmp/run.h5" --budget 9 -o "$tmp/mix.json" --no-store >/dev/null 2>&1 || fail "allocate"
expect 0 ev --recipe "$tmp/mix.json"
cat "$tmp/out"
grep -q "^mix (recipe" "$tmp/out" || fail "the recipe's row"
"$bin" annotate "$tmp/run.h5" --list | grep -q "^mix  *recipe" || fail "annotate --list lacks the recipe"
expect 0 "$bin" pareto "$tmp/run.h5" --no-store
grep -q "measured" "$tmp/out" || { cat "$tmp/out"; fail "pareto does not show the measured rows"; }
pass "a recipe evaluated; pareto shows what was measured"
echo "evaluate.sh: all checks passed"
