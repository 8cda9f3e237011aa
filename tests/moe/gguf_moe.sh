#!/usr/bin/env bash
# data/tiny-moe.gguf (data/make_moe_fixture.py --gguf): the same weights as
# data/tiny-moe with llama.cpp's names, every layer's experts as stacks
# blk.N.ffn_{gate,up,down}_exps [E, out, in]:
# - it is what the script writes (when gguf-py is installed)
# - its stacks' rows equal the safetensors layouts' rows bit for bit:
#   blk.0.ffn_down_exps the fused stack mlp.experts.down_proj (rows and
#   --split-experts rows), blk.1's stacks the sums in expert order of the 2-D
#   experts mlp.experts.N.*_proj.weight (each /expert_results row that 2-D
#   tensor's row); every other tensor the row of its safetensors namesake
# - pareto --by class shows attention against experts on it
# - frontier quantize --format gguf of the stacks: the report's rel_err is
#   the sweep's row bit for bit (each expert's its /expert_results row), and gguf-py's dequantize of the file gives
#   each expert the rel_err of its /expert_results row
# usage: gguf_moe.sh FRONTIER_BINARY DATA_DIR
set -u
CHECKS_COUNT=1
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/checks.sh"
frontier=${1:?usage: gguf_moe.sh FRONTIER_BINARY DATA_DIR}
data=${2:?usage: gguf_moe.sh FRONTIER_BINARY DATA_DIR}
scratch moe-gguf
need_python numpy h5py
model=$data/tiny-moe
gg=$data/tiny-moe.gguf
[ -f "$gg" ] || { echo "FAIL: no $gg (python3 data/make_moe_fixture.py --gguf data/tiny-moe.gguf)"; exit 1; }
if python3 -c 'import gguf' 2>/dev/null; then
  python3 "$data/make_moe_fixture.py" -o remade --gguf remade.gguf >/dev/null &&
    cmp -s remade.gguf "$gg" && pass "data/tiny-moe.gguf is what make_moe_fixture.py --gguf writes" ||
    fail "data/tiny-moe.gguf differs from what data/make_moe_fixture.py --gguf writes"
else
  echo "note: gguf-py not installed: the fixture is not remade"
fi

q=nvfp4,int4-tensor-sym,fp8-e4m3-tensor,fp8-e4m3-block128,int4-g32-asym,int3-gC-sym,mxfp4,nf4-g64,ggml-q4_0,ggml-q8_0,ggml-q5_1,ggml-mxfp4
"$frontier" --quiet sweep "$gg" --quantizers "$q" --split-experts --device cpu -o gguf.h5 >/dev/null 2>err.txt ||
  { fail "sweep of tiny-moe.gguf"; cat err.txt; }
"$frontier" --quiet sweep "$model" --quantizers "$q" --split-experts --device cpu -o st.h5 >/dev/null 2>err.txt ||
  { fail "sweep of tiny-moe"; cat err.txt; }

python3 - gguf.h5 st.h5 <<'PY' || fail "GGUF rows against the safetensors rows"
import sys, h5py
FIELDS = ("bits_per_weight", "total_bits", "rel_err", "sqnr_db", "max_abs_err", "cosine", "sq_err")
def load(path):
    f = h5py.File(path, "r")
    t = {int(x["tensor_id"]): x["name"].decode() for x in f["tensors"][...]}
    norms = {x["name"].decode(): float(x["sq_norm"]) for x in f["tensors"][...]}
    c = {int(x["config_id"]): x["name"].decode() for x in f["configs"][...]}
    rows = {(t[int(r["tensor_id"])], c[int(r["config_id"])]): {k: r[k].item() for k in FIELDS}
            for r in f["results"][...]}
    ex = {(t[int(r["tensor_id"])], c[int(r["config_id"])], int(r["expert"])): {k: r[k].item() for k in FIELDS}
          for r in f["expert_results"][...]}
    return rows, ex, norms
g, gx, gn = load(sys.argv[1])
s, sx, sn = load(sys.argv[2])
same = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight"}
for L in range(2):
    for gname, hf in (("attn_q", "self_attn.q_proj"), ("attn_k", "self_attn.k_proj"),
                      ("attn_v", "self_attn.v_proj"), ("attn_output", "self_attn.o_proj"),
                      ("ffn_gate_inp", "mlp.gate")):
        same[f"blk.{L}.{gname}.weight"] = f"model.layers.{L}.{hf}.weight"
same["blk.0.ffn_down_exps.weight"] = "model.layers.0.mlp.experts.down_proj"
configs = sorted({k[1] for k in g})
bad = checked = 0
def differ(label, a, b):
    global bad
    if a != b:
        bad += 1
        if bad <= 8:
            print(f"FAIL: {label}: {a} != {b}")
for gname, sname in same.items():
    for c in configs:
        checked += 1
        differ(f"{gname} {c}", g.get((gname, c)), s.get((sname, c)))
        if gname.endswith("_exps.weight"):
            for e in range(4):
                differ(f"{gname} {c} expert {e}", gx.get((gname, c, e)), sx.get((sname, c, e)))
# layer 1: the stacks against the 2-D experts, summed in expert order
for gname, proj in (("ffn_gate_exps", "gate_proj"), ("ffn_up_exps", "up_proj"), ("ffn_down_exps", "down_proj")):
    stack = f"blk.1.{gname}.weight"
    parts = [f"model.layers.1.mlp.experts.{e}.{proj}.weight" for e in range(4)]
    n = 0.0
    for p in parts:
        n += sn[p]
    differ(f"{stack} sq_norm", gn[stack], n)
    for c in configs:
        checked += 1
        rs = [s[(p, c)] for p in parts]
        err = 0.0
        for r in rs:
            err += r["sq_err"]
        row = g[(stack, c)]
        differ(f"{stack} {c} sq_err", row["sq_err"], err)
        differ(f"{stack} {c} total_bits", row["total_bits"], sum(r["total_bits"] for r in rs))
        differ(f"{stack} {c} max_abs_err", row["max_abs_err"], max(r["max_abs_err"] for r in rs))
        for e in range(4):
            differ(f"{stack} {c} expert {e}", gx[(stack, c, e)], rs[e])
print(f"ok: {checked} (tensor, configuration) rows of tiny-moe.gguf equal the safetensors layouts' "
      f"rows bit for bit ({len(configs)} configurations)")
sys.exit(1 if bad else 0)
PY

if "$frontier" pareto gguf.h5 --by class --no-store --verbose >pareto.txt 2>err.txt; then
  grep -q '^expert: 6 of 6 tensors' pareto.txt && grep -q '^attn_q: 2 of 2 tensors' pareto.txt &&
    pass "pareto --by class on tiny-moe.gguf: attn_q against 6 expert stacks" ||
    { fail "pareto --by class groups"; cat pareto.txt; }
else
  fail "pareto --by class"; cat err.txt
fi

# quantize --format gguf: what is written is what was measured
for c in ggml-q4_0 ggml-q8_0 ggml-q5_1 ggml-mxfp4; do
  "$frontier" --quiet quantize "$gg" --config $c --format gguf -o q-$c.gguf >/dev/null 2>err.txt ||
    { fail "quantize --format gguf $c"; cat err.txt; continue; }
  python3 - q-$c.gguf.report.json $c gguf.h5 "$gg" q-$c.gguf <<'PY' && pass "$c: the GGUF stacks' rel_err are the sweep's rows" || fail "$c GGUF report or read-back"
import sys, json, h5py
import numpy as np
report, config, h5, src, out = sys.argv[1:6]
f = h5py.File(h5, "r")
t = {int(x["tensor_id"]): x["name"].decode() for x in f["tensors"][...]}
c = {int(x["config_id"]): x["name"].decode() for x in f["configs"][...]}
rows = {(t[int(r["tensor_id"])], c[int(r["config_id"])]): float(r["rel_err"]) for r in f["results"][...]}
xr = {(t[int(r["tensor_id"])], c[int(r["config_id"])], int(r["expert"])): float(r["rel_err"])
      for r in f["expert_results"][...]}
r = json.load(open(report))
bad = stacks = 0
for q in r["tensors"]:
    if q["rel_err"] != rows[(q["name"], config)] or not q["equals_quantizer"]:
        print(f"FAIL: {q['name']}: report {q['rel_err']!r}, sweep {rows[(q['name'], config)]!r}")
        bad += 1
    if q["name"].endswith("_exps.weight"):
        stacks += 1
        for e in range(4):
            w = xr[(q["name"], config, e)]
            if q["expert_rel_err"][e] != w or q["expert_rel_err_quantizer"][e] != w:
                print(f"FAIL: {q['name']} expert {e}: report {q['expert_rel_err'][e]!r}, sweep {w!r}")
                bad += 1
try:
    import gguf
except ImportError:
    print("note: no gguf-py: the file is not read back")
    sys.exit(1 if bad or stacks != 6 else 0)
a, b = gguf.GGUFReader(src), gguf.GGUFReader(out)
ta = {x.name: x for x in a.tensors}
n = 0
for x in b.tensors:
    if not x.name.endswith("_exps.weight"):
        continue
    w = gguf.quants.dequantize(np.asarray(ta[x.name].data), ta[x.name].tensor_type).astype(np.float64)
    wh = gguf.quants.dequantize(np.asarray(x.data), x.tensor_type).astype(np.float64)
    w, wh = w.reshape(4, -1), wh.reshape(4, -1)
    for e in range(4):
        got = np.sqrt(((w[e] - wh[e]) ** 2).sum() / (w[e] ** 2).sum())
        want = xr[(x.name, config, e)]
        if abs(got - want) > 1e-12 * want:
            print(f"FAIL: {x.name} expert {e}: read back {got!r}, sweep {want!r}")
            bad += 1
        n += 1
print(f"{stacks} stacks in the report, {n} experts read back with gguf-py")
sys.exit(1 if bad or stacks != 6 or n != 24 else 0)
PY
done

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
