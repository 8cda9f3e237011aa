#!/usr/bin/env bash
# frontier annotate (docs/dataset.md, "/frontier/measured") on the shipped
# eval results of the stories260K study (data/eval/stories260K, written
# by scripts/study_stories260K.py; no torch here): round trip of every value,
# re-annotation replacing a row, the dataset's own tables still reading
# (checksums), and bad inputs with their exit codes: bad JSON, not an eval
# result, an unknown configuration, an unknown recipe.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
bin=$1
root=$2
evals=$root/data/eval/stories260K
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# quick (the sanitizer builds): every 6th configuration's result and 3
# recipes, and a sweep of only the configurations they name (the whole
# sweep takes 150 s under ASan); otherwise all results over --bits 2..8
files=$(ls "$evals"/*.json | grep -v summary.json)
sweep_sel=(--bits 2..8)
if [ "${3:-}" = quick ]; then
  # shellcheck disable=SC2086
  sel=$(python3 - "$evals" $files <<'PY'
import json, os, sys
evals, files = sys.argv[1], sys.argv[2:]
configs = [f for f in files if "config" in json.load(open(f))]
recipes = [f for f in files if "recipe" in json.load(open(f))]
chosen = configs[::6] + recipes[::max(1, len(recipes) // 3)][:3]
# the demo's recipe, which carries allocate's prediction (predicted_kl)
chosen += [f for f in recipes if os.path.basename(f) == "demo-3.5.json" and f not in chosen]
names = set()
for f in chosen:
    d = json.load(open(f))
    if "config" in d:
        names.add(d["config"])
    else:
        names.update(json.load(open(os.path.join(evals, d["recipe"])))["recipe"].values())
print(",".join(sorted(names)))
print(" ".join(chosen))
PY
  ) || fail "cannot choose the quick subset"
  sweep_sel=(--quantizers "$(echo "$sel" | head -1)")
  files=$(echo "$sel" | tail -1 | tr ' ' '\n')
fi
expect 0 "$bin" -q sweep "$root/data/stories260K" "${sweep_sel[@]}" --calib "$root/data/stories260K/calib.safetensors" -o "$tmp/run.h5"
n=$(echo "$files" | wc -l)
[ "$n" -ge 10 ] || fail "only $n shipped eval results"
# shellcheck disable=SC2086
expect 0 "$bin" annotate "$tmp/run.h5" $files
expect_err "stored $n measured results under /frontier/measured"
expect 0 "$bin" annotate "$tmp/run.h5" --list
[ "$(grep -c -E ' (config|recipe) ' "$tmp/out")" = "$n" ] || { cat "$tmp/out"; fail "--list does not show $n rows"; }
cp "$tmp/out" "$tmp/list1"
# every kl_mean and ppl back as given (printed to 5 digits)
python3 - "$tmp/list1" $files <<'PY' || fail "values differ"
import json, sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1]).read().splitlines()[1:]}
for f in sys.argv[2:]:
    d = json.load(open(f))
    r = rows[d["name"]]
    assert r[1] == ("config" if "config" in d else "recipe"), (f, r)
    assert abs(float(r[3]) - d["kl_mean"]) <= 1e-4 * abs(d["kl_mean"]) + 1e-12, (f, r[3], d["kl_mean"])
    assert abs(float(r[4]) - d["ppl_quant"]) <= 1e-4 * d["ppl_quant"], (f, r[4])
PY
# the dataset itself still reads (its checksums) and pareto/allocate still run
expect 0 "$bin" pareto "$tmp/run.h5" --no-store
# pareto --json lists the measured rows beside the points (kl_mean as stored)
expect 0 "$bin" pareto "$tmp/run.h5" --no-store --json
python3 - "$tmp/out" "$n" <<'PY' || fail "pareto --json: measured rows"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measured"]
assert len(m) == int(sys.argv[2]), (len(m), sys.argv[2])
for r in m:
    assert r["kind"] in ("config", "recipe") and r["kl_mean"] is not None, r
    if r["kind"] == "config":
        assert r["rel_err"] is not None, r  # the configuration's point beside it
# a recipe of the sensitivity objective keeps its prediction (the recipe's
# predicted_kl) beside what was measured; the others have none
demo = [r for r in m if r["name"] == "demo-3.5"]
assert demo, "the demo's recipe is not among the measured rows"
if demo:
    assert abs(demo[0]["predicted_kl"] - 7.8577244020471761) < 1e-9, demo
for r in m:
    if r["name"].startswith("alloc-"):
        assert r["predicted_kl"] is None, r
PY
expect 0 "$bin" allocate "$tmp/run.h5" --budget 3.5 --summary
# allocate stored /frontier/allocation_3.5 through its own transaction: measured stays
expect 0 "$bin" annotate "$tmp/run.h5"
[ "$(grep -c -E ' (config|recipe) ' "$tmp/out")" = "$n" ] || fail "rows lost after allocate"
# export --measured draws them (tex: no cairo needed); csv is refused; no rows: exit 4
expect 0 "$bin" export "$tmp/run.h5" --measured -o "$tmp/kl.tex"
grep -q "Mean KL divergence (nats)" "$tmp/kl.tex" || fail "export --measured: no KL axis"
grep -q "recipes (allocations)" "$tmp/kl.tex" || fail "export --measured: no recipe series"
# the demo's recipe (allocate's sensitivity objective) carries its prediction:
# drawn beside the measurement, listed by pareto --json (checked above)
grep -q "recipes, predicted" "$tmp/kl.tex" || fail "export --measured: no predicted series"
expect 2 "$bin" export "$tmp/run.h5" --measured -o "$tmp/kl.csv"
"$bin" -q sweep "$root/data/stories260K" --bits 8..8 -o "$tmp/bare.h5" >/dev/null 2>&1
expect 4 "$bin" export "$tmp/bare.h5" --measured -o "$tmp/kl2.tex"
# re-annotating a name replaces its row
one=$(echo "$files" | head -1)
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['kl_mean']=123.5; json.dump(d,open(sys.argv[2],'w'))" "$one" "$tmp/one.json"
cp -r "$evals/recipes" "$tmp/" 2>/dev/null
expect 0 "$bin" annotate "$tmp/run.h5" "$tmp/one.json" --list
[ "$(grep -c -E ' (config|recipe) ' "$tmp/out")" = "$n" ] || fail "re-annotation added a row"
grep -q " 123.5 " "$tmp/out" || { cat "$tmp/out"; fail "re-annotation did not replace the row"; }
# bad inputs: nothing changes
cp "$tmp/run.h5" "$tmp/before.h5"
echo '{"format": "frontier-eval", "kl_mean": ' > "$tmp/bad.json"
expect 4 "$bin" annotate "$tmp/run.h5" "$tmp/bad.json"
expect_err "not JSON"
echo '{"kl_mean": 1}' > "$tmp/notev.json"
expect 4 "$bin" annotate "$tmp/run.h5" "$tmp/notev.json"
expect_err "not an eval result"
echo '{"format": "frontier-eval", "config": "int9-g7-sym", "kl_mean": 1}' > "$tmp/unk.json"
expect 2 "$bin" annotate "$tmp/run.h5" "$one" "$tmp/unk.json"
expect_err "unknown configuration 'int9-g7-sym'"
echo '{"format": "frontier-eval", "recipe": "nowhere.json", "kl_mean": 1}' > "$tmp/unkr.json"
expect 2 "$bin" annotate "$tmp/run.h5" "$tmp/unkr.json"
expect_err "unknown recipe: cannot read"
echo '{"recipe": {"model.layers.0.nope.weight": "int4-g32-sym"}}' > "$tmp/r.json"
echo '{"format": "frontier-eval", "recipe": "r.json", "kl_mean": 1}' > "$tmp/unkr2.json"
expect 2 "$bin" annotate "$tmp/run.h5" "$tmp/unkr2.json"
expect_err "a tensor not in the dataset"
cmp -s "$tmp/run.h5" "$tmp/before.h5" || fail "a refused annotation changed the dataset"
echo "test_annotate: all checks passed"
