#!/usr/bin/env bash
# allocate / pareto --expert-units on data/tiny-moe (docs/analysis.md,
# "Expert units"): the fused 3-D stacks of layer 0 split into per-expert 2-D
# tensors `mlp.experts.N.gate_up_proj.weight` (the same bytes) and swept;
# allocated with --expert-units, every expert of a (layer, projection) gets
# the configuration the fused sweep's stack row gets at the same budget
# (the fused run also with --expert-units, for its 2-D layer 1), with the
# same totals bit for bit: a stack's row is the sum of its experts in expert
# order, which is how a unit sums them, and the units come in the same
# order. Without the option the
# 2-D experts are allocated one by one and some budget splits a unit.
# usage: units_moe.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: units_moe.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: units_moe.sh FRONTIER_BINARY DATA_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch moe-units
need_python numpy h5py
model=$data/tiny-moe
q=nvfp4,int4-tensor-sym,fp8-e4m3-tensor,int4-g128-asym,int3-gC-sym,int8-g128-sym,mxfp4,int2-g32-asym
python3 "$here/split_fixture.py" "$model/model.safetensors" split.safetensors --hf-names || exit 1
"$frontier" --quiet sweep "$model" --quantizers "$q" --device cpu -o fused.h5 >/dev/null 2>err.txt ||
  { fail "sweep of tiny-moe"; cat err.txt; }
"$frontier" --quiet sweep split.safetensors --quantizers "$q" --device cpu -o split.h5 >/dev/null 2>err.txt ||
  { fail "sweep of the split checkpoint"; cat err.txt; }

for b in 2.6 3.0 3.7 4.3 4.6 5.2 6.5 8.2; do
  "$frontier" --quiet allocate fused.h5 --budget $b --no-store --expert-units -o fused_$b.json >/dev/null 2>err.txt ||
    { fail "allocate fused $b"; cat err.txt; }
  "$frontier" --quiet allocate split.h5 --budget $b --no-store --expert-units -o units_$b.json >/dev/null 2>err.txt ||
    { fail "allocate --expert-units $b"; cat err.txt; }
  "$frontier" --quiet allocate split.h5 --budget $b --no-store -o plain_$b.json >/dev/null 2>err.txt ||
    { fail "allocate split $b"; cat err.txt; }
done
python3 - <<'PY' || fail "--expert-units against the fused stacks"
import glob, json, re, sys
bad, split_seen = 0, 0
for f in sorted(glob.glob("fused_*.json")):
    b = f[len("fused_"):-len(".json")]
    fused, units, plain = (json.load(open(f"{k}_{b}.json")) for k in ("fused", "units", "plain"))
    # the fused recipe's choice for each stack, for each of its experts
    want = {}
    for name, cfg in fused["recipe"].items():
        m = re.match(r"(.*\.experts)\.(gate_up_proj|down_proj)$", name)
        if m:
            for e in range(4):
                want[f"{m.group(1)}.{e}.{m.group(2)}.weight"] = cfg
        else:
            want[name] = cfg
    if units["recipe"] != want:
        diff = {k: (units["recipe"].get(k), want.get(k)) for k in set(want) | set(units["recipe"])
                if units["recipe"].get(k) != want.get(k)}
        print(f"FAIL: budget {b}: --expert-units recipe differs from the fused one: {diff}")
        bad += 1
    for k in ("total_bits", "numel", "err_sum", "norm_sum", "rel_err", "capacity_bits"):
        if units[k] != fused[k]:
            print(f"FAIL: budget {b}: {k} {units[k]!r} != fused {fused[k]!r}")
            bad += 1
    if units["n_tensors"] != fused["n_tensors"] + 6:   # 2 stacks of 4 -> 8 tensors
        print(f"FAIL: budget {b}: {units['n_tensors']} tensors in the recipe")
        bad += 1
    # without the option the 2-D experts of layer 0 are free to differ
    for proj in ("gate_up_proj", "down_proj"):
        cfgs = {plain["recipe"][f"model.layers.0.mlp.experts.{e}.{proj}.weight"] for e in range(4)}
        split_seen += len(cfgs) > 1
print(f"ok: {len(glob.glob('fused_*.json'))} budgets: --expert-units gives the fused stacks' choices "
      f"and totals bit for bit; {split_seen} (budget, projection) splits without the option")
sys.exit(1 if bad or split_seen == 0 else 0)
PY

# pareto --expert-units: one unit per (layer, projection), 5 in all (2 in layer 0, 3 in layer 1)
"$frontier" pareto split.h5 --by class --expert-units --no-store --verbose >p_units.txt 2>err.txt &&
  grep -q '^expert: 5 of 5 units' p_units.txt && grep -q '^attn_q: 2 of 2 units' p_units.txt &&
  pass "pareto --by class --expert-units: 5 expert units" || { fail "pareto --expert-units"; cat p_units.txt err.txt; }
"$frontier" pareto split.h5 --by class --no-store --verbose >p_plain.txt 2>err.txt &&
  grep -q '^expert: 20 of 20 tensors' p_plain.txt && pass "pareto --by class: 20 stored expert tensors" ||
  { fail "pareto --by class"; cat p_plain.txt err.txt; }
# the class points are the same sums either way (as printed)
diff <(grep -v '^expert:\|^attn\|^mlp\|^embed\|^lm_head\|^other\|^norm\|^#' p_units.txt | awk '{print $1, $3, $4}') \
     <(grep -v '^expert:\|^attn\|^mlp\|^embed\|^lm_head\|^other\|^norm\|^#' p_plain.txt | awk '{print $1, $3, $4}') >/dev/null &&
  pass "pareto class points unchanged by --expert-units" || fail "pareto points changed by --expert-units"
"$frontier" pareto split.h5 --by tensor --expert-units --no-store --verbose >p_t.txt 2>err.txt &&
  grep -q '^model.layers.1.mlp.experts.\*.up_proj.weight: 1 of 1 units' p_t.txt &&
  pass "pareto --by tensor --expert-units: a table per unit" || { fail "pareto --by tensor --expert-units"; cat err.txt; }

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
