#!/usr/bin/env bash
# mse-, imat- and hqq- (or ggml- and imat-ggml-: QUANTIZERS ggml,ggml_imat)
# through `frontier sweep --device cuda` against `--device cpu` (docs/gpu.md,
# "mse-, imat- and hqq- on the GPU", "ggml- and imat-ggml- on the GPU"), on
# data/stories260K: once with its shipped statistics (--calib: every tensor
# has a Hessian, so out_rel_err too), once without (the data-free families
# only, no output term):
#  - every row of these families on cuda:N, and the executor counts each of
#    their (tensor, configuration) pairs as a GPU ("plugin") pair
#    (--device-stats), none as cpu;
#  - rel_err, sq_err, max_abs_err and cosine equal to the CPU's bit for bit
#    (the same w^, and fr_cuda_error_sums is the CPU's sum);
#  - out_rel_err within 1e-5 relative (the output term's GEMM sums in
#    another order: docs/gpu.md, "Output error").
# Prints the rows compared and the worst differences.
# usage: sweep_clip_gpu.sh FRONTIER_BINARY MODEL_DIR [QUANTIZERS [BITS]]
set -u
frontier=$1
model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
q=${3:-mse,imat,hqq}
bits=${4:-2..8}
# the families that need statistics: imat, ggml_imat
free=$(echo "$q" | tr ',' '\n' | grep -v -e '^imat' -e '_imat$' | paste -sd, -)

# run NAME ARGS...: the sweep on cuda (with device stats) and on cpu
run() {
  local name=$1; shift
  "$frontier" --quiet sweep "$model" "$@" --bits "$bits" --device cuda \
    --device-stats "$tmp/$name.json" -o "$tmp/$name.gpu.h5" >"$tmp/gpu.out" 2>"$tmp/gpu.err"
  local rc=$?
  if [ $rc -eq 7 ]; then
    echo "SKIP: no CUDA device ($(head -1 "$tmp/gpu.err"))"
    exit 77
  fi
  if [ $rc -ne 0 ]; then
    echo "FAIL: frontier sweep $* --device cuda exited $rc"; cat "$tmp/gpu.err"; exit 1
  fi
  "$frontier" --quiet sweep "$model" "$@" --bits "$bits" --device cpu -o "$tmp/$name.cpu.h5" \
    >/dev/null || { echo "FAIL: frontier sweep $* --device cpu"; exit 1; }
}
run calib --calib "$model/calib.safetensors" --quantizers "$q"
sets=(calib)
if [ -n "$free" ]; then
  run free --quantizers "$free"
  sets+=(free)
fi

python3 - "$tmp" "${sets[@]}" <<'PY' || exit $?
import json, math, sys
try:
    import h5py
except ImportError:
    print("SKIP: python3 has no h5py"); sys.exit(77)

def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)

FIELDS = ("rel_err", "sq_err", "max_abs_err", "cosine")

def rows(path):
    with h5py.File(path, "r") as f:
        cfg = {int(c["config_id"]): s(c["name"]) for c in f["configs"][...]}
        res = f["results"][...]
        names = res.dtype.names
        out = {}
        for r in res:
            key = (int(r["tensor_id"]), cfg[int(r["config_id"])])
            out[key] = ({k: float(r[k]) for k in FIELDS if k in names},
                        float(r["out_rel_err"]), s(r["device"]))
        return out

bad = 0
summary = []
for name in sys.argv[2:]:
    base = f"{sys.argv[1]}/{name}"
    gpu, cpu = rows(base + ".gpu.h5"), rows(base + ".cpu.h5")
    stats = json.load(open(base + ".json"))
    if set(gpu) != set(cpu):
        print(f"FAIL: {name}: rows differ: {len(gpu)} on cuda, {len(cpu)} on cpu"); sys.exit(1)
    fam = {}
    worst_out = 0.0
    n_out = 0
    for k, (fc, oc, dc) in sorted(cpu.items()):
        fg, og, dg = gpu[k]
        family = k[1].split("-", 1)[0]
        fam[family] = fam.get(family, 0) + 1
        if not dg.startswith("cuda:"):
            print(f"FAIL: {name} {k}: device {dg!r} (expected the GPU)"); bad += 1
        for f in fc:
            a, b = fg[f], fc[f]
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                print(f"FAIL: {name} {k}: {f} {a!r} on cuda, {b!r} on cpu (must be equal)"); bad += 1
        if math.isnan(oc) != math.isnan(og):
            print(f"FAIL: {name} {k}: out_rel_err {og!r} on cuda, {oc!r} on cpu"); bad += 1
        elif not math.isnan(oc):
            n_out += 1
            d = abs(og - oc) / max(abs(oc), 1e-300)
            worst_out = max(worst_out, d)
            if d > 1e-5:
                print(f"FAIL: {name} {k}: out_rel_err {og!r} on cuda, {oc!r} on cpu (1e-5)"); bad += 1
    pairs = len(cpu)
    if pairs == 0:
        print(f"FAIL: {name}: no rows"); bad += 1
    if stats.get("plugin_configs") != pairs or stats.get("cpu_configs") != 0:
        print(f"FAIL: {name}: the executor ran {stats.get('plugin_configs')} pairs on the GPU "
              f"(plugin) and {stats.get('cpu_configs')} on the cpu; expected {pairs} and 0"); bad += 1
    summary.append(f"{name}: {pairs} rows ({', '.join(f'{v} {k}' for k, v in sorted(fam.items()))}; "
                   f"{stats.get('fused_configs')} fused, {stats.get('plugin_configs')} plugin, "
                   f"{stats.get('cpu_configs')} cpu pairs), rel_err/sq_err/max_abs_err/cosine "
                   f"equal to the cpu's in all, out_rel_err in {n_out}, worst relative "
                   f"difference {worst_out:.2e}")
print("; ".join(summary) + f"; {bad} failures")
sys.exit(1 if bad else 0)
PY
