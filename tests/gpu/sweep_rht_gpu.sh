#!/usr/bin/env bash
# `frontier sweep` of rht+<config> and rht+gptq-* on the GPU against the CPU
# (docs/gpu.md, "RHT on the GPU"), data/stories260K with its shipped
# statistics, once with --calib and once data-free:
#  - every row on cuda:N, and the executor counts them as GPU rows
#    (--device-stats: "plugin_configs" = the rows, "cpu_configs" = 0);
#  - rht+<data-free base>: rel_err, max_abs_err and cosine bit for bit (the
#    rotation is the CPU's float32 arithmetic, the base kernels are bitwise
#    and so are fr_cuda_error_sums), out_rel_err within 1e-5 (the output
#    term's GEMM order, docs/gpu.md "Output error");
#  - rht+gptq: MODE exact (the CPU emulation, whose GPTQ is bitwise): as
#    above; MODE device: rel_err and out_rel_err within 5e-3, GPTQ's sweep
#    tolerance (gpu.sweep_calib). The worst differences are printed.
# usage: sweep_rht_gpu.sh FRONTIER_BINARY MODEL_DIR MODE [QUANTIZERS [FREE_QUANTIZERS [BITS]]]
set -u
frontier=$1
model=$2
mode=$3
q=${4:-rht,rht_gptq}
free_q=${5:-rht}
bits=${6:-2..4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
calib=(--calib "$model/calib.safetensors")

run() { # NAME DEVICE QUANTIZERS [ARGS...]
  local name=$1 dev=$2 list=$3
  shift 3
  "$frontier" --quiet sweep "$model" --quantizers "$list" --bits "$bits" --device "$dev" "$@" \
    -o "$tmp/$name.h5" >"$tmp/$name.out" 2>"$tmp/$name.err"
}

run gpu cuda "$q" "${calib[@]}" --device-stats "$tmp/gpu.json"
rc=$?
if [ $rc -eq 7 ]; then
  echo "SKIP: no CUDA device ($(head -1 "$tmp/gpu.err"))"
  exit 77
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: frontier sweep --calib --device cuda exited $rc"; cat "$tmp/gpu.err"; exit 1
fi
run cpu cpu "$q" "${calib[@]}" || { echo "FAIL: cpu sweep"; cat "$tmp/cpu.err"; exit 1; }
run gpu_free cuda "$free_q" --device-stats "$tmp/gpu_free.json" ||
  { echo "FAIL: data-free cuda sweep"; cat "$tmp/gpu_free.err"; exit 1; }
run cpu_free cpu "$free_q" || { echo "FAIL: data-free cpu sweep"; cat "$tmp/cpu_free.err"; exit 1; }

python3 - "$tmp" "$mode" <<'PY' || exit $?
import json, math, os, sys
try:
    import h5py
except ImportError:
    print("SKIP: python3 has no h5py"); sys.exit(77)
tmp, mode = sys.argv[1], sys.argv[2]

def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)

def rows(name):
    with h5py.File(os.path.join(tmp, name + ".h5"), "r") as f:
        cfg = {int(c["config_id"]): s(c["name"]) for c in f["configs"][...]}
        return {(int(r["tensor_id"]), cfg[int(r["config_id"])]):
                (float(r["rel_err"]), float(r["max_abs_err"]), float(r["cosine"]),
                 float(r["out_rel_err"]), s(r["device"])) for r in f["results"][...]}

def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))

def near(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(abs(a), abs(b)) + 1e-300

def rel(a, b):
    return 0.0 if same(a, b) else abs(a - b) / max(abs(b), 1e-300)

bad = 0
worst = {"rht_out": 0.0, "gptq_rel": 0.0, "gptq_out": 0.0}
counts = {"rht": 0, "gptq": 0, "out": 0}
for gname, cname in (("gpu", "cpu"), ("gpu_free", "cpu_free")):
    gpu, cpu = rows(gname), rows(cname)
    if set(gpu) != set(cpu) or not cpu:
        print(f"FAIL: {gname}: rows differ: {len(gpu)} on cuda, {len(cpu)} on cpu"); bad += 1
        continue
    with open(os.path.join(tmp, gname + ".json")) as f:
        st = json.load(f)
    if st.get("cpu_configs") != 0 or st.get("plugin_configs") != len(gpu):
        print(f"FAIL: {gname}: {st.get('fused_configs')} fused, {st.get('plugin_configs')} "
              f"plugin, {st.get('cpu_configs')} cpu configurations for {len(gpu)} rows "
              "(every rht row should run on the GPU)"); bad += 1
    for k, (rc, mc, cc, oc, _) in cpu.items():
        rg, mg, cg, og, dg = gpu[k]
        gptq = k[1].startswith("rht+gptq-")
        counts["gptq" if gptq else "rht"] += 1
        if not dg.startswith("cuda:"):
            print(f"FAIL: {k}: device {dg!r} (expected the GPU)"); bad += 1
        if not gptq or mode == "exact":
            for what, a, b in (("rel_err", rg, rc), ("max_abs_err", mg, mc), ("cosine", cg, cc)):
                if not same(a, b):
                    print(f"FAIL: {k}: {what} {a!r} on cuda, {b!r} on cpu (expected equal)")
                    bad += 1
            tol_out = 1e-5
        else:
            if not near(rg, rc, 5e-3):
                print(f"FAIL: {k}: rel_err {rg!r} on cuda, {rc!r} on cpu"); bad += 1
            worst["gptq_rel"] = max(worst["gptq_rel"], rel(rg, rc))
            tol_out = 5e-3
        if not near(og, oc, tol_out):
            print(f"FAIL: {k}: out_rel_err {og!r} on cuda, {oc!r} on cpu"); bad += 1
        if not math.isnan(oc):
            counts["out"] += 1
            key = "gptq_out" if gptq else "rht_out"
            worst[key] = max(worst[key], rel(og, oc))
        if gptq and mode == "exact":
            worst["gptq_rel"] = max(worst["gptq_rel"], rel(rg, rc))
if counts["rht"] == 0 or counts["gptq"] == 0 or counts["out"] == 0:
    print(f"FAIL: {counts['rht']} rht+ rows, {counts['gptq']} rht+gptq rows, "
          f"{counts['out']} with out_rel_err"); bad += 1
print(f"{counts['rht']} rht+ rows (rel_err, max_abs_err, cosine bit for bit), {counts['gptq']} "
      f"rht+gptq rows ({'bit for bit' if mode == 'exact' else 'within 5e-3'}); worst relative "
      f"differences: rht+ out_rel_err {worst['rht_out']:.2e}, rht+gptq rel_err "
      f"{worst['gptq_rel']:.2e} / out_rel_err {worst['gptq_out']:.2e}; {bad} failures")
sys.exit(1 if bad else 0)
PY
