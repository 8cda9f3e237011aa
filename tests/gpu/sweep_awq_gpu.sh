#!/usr/bin/env bash
# `frontier sweep --calib --quantizers awq...` on the GPU against the CPU
# (docs/gpu.md, "AWQ on the GPU"), data/stories260K with its shipped
# statistics:
#  - the executor's summary counts every awq configuration as a GPU
#    ("plugin") one and none as cpu; every awq row says cuda:N;
#  - exact (the CPU emulation, gpu_emu.sweep_awq): every awq row's sq_err,
#    rel_err, max_abs_err and cosine equal the CPU sweep's bit for bit
#    (the emulation's output errors are the CPU's, so the same exponent and
#    the same w^), out_rel_err within 1e-5 (the executor's output term in
#    512-row chunks against the CPU's);
#  - device (gpu.sweep_awq): rows with the CPU's sums bit for bit are rows
#    with the CPU's exponent (given the exponent, the search is exact), and
#    must have out_rel_err within 1e-5; the others are exponent choices that
#    flipped between errors equal to rounding (cuBLAS sums in another
#    order): counted and printed, at most 5% of the rows, rel_err and
#    out_rel_err within 1e-2.
# usage: sweep_awq_gpu.sh FRONTIER_BINARY MODEL_DIR QUANTIZERS BITS exact|device
set -u
frontier=$1
model=$2
q=$3
bits=$4
mode=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep "$model" --calib "$model/calib.safetensors" --quantizers "$q" --bits "$bits")

"$frontier" "${args[@]}" --device cuda -o "$tmp/gpu.h5" >"$tmp/gpu.out" 2>"$tmp/gpu.err"
rc=$?
if [ $rc -eq 7 ]; then
  echo "SKIP: no CUDA device ($(head -1 "$tmp/gpu.err"))"
  exit 77
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: frontier sweep --calib --device cuda exited $rc"; cat "$tmp/gpu.err"; exit 1
fi
"$frontier" --quiet "${args[@]}" --device cpu -o "$tmp/cpu.h5" >/dev/null || { echo "FAIL: cpu sweep"; exit 1; }
summary=$(grep -o '[0-9]* fused, [0-9]* plugin, [0-9]* cpu configurations' "$tmp/gpu.err" | tail -1)
echo "executor: $summary"

python3 - "$tmp/gpu.h5" "$tmp/cpu.h5" "$mode" "$summary" <<'PY' || exit $?
import math, re, sys
try:
    import h5py
except ImportError:
    print("SKIP: python3 has no h5py"); sys.exit(77)

def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)

def rows(path):
    with h5py.File(path, "r") as f:
        cfg = {int(c["config_id"]): s(c["name"]) for c in f["configs"][...]}
        out = {}
        for r in f["results"][...]:
            out[(int(r["tensor_id"]), cfg[int(r["config_id"])])] = {
                k: (s(r[k]) if k == "device" else float(r[k]))
                for k in ("sq_err", "rel_err", "max_abs_err", "cosine", "out_rel_err", "device")}
        return out

gpu, cpu, mode = rows(sys.argv[1]), rows(sys.argv[2]), sys.argv[3]
m = re.match(r"(\d+) fused, (\d+) plugin, (\d+) cpu", sys.argv[4])
bad = 0
if set(gpu) != set(cpu):
    print(f"FAIL: rows differ: {len(gpu)} on cuda, {len(cpu)} on cpu"); sys.exit(1)
awq = [k for k in cpu if k[1].startswith("awq-")]
if not m:
    print("FAIL: no executor summary line"); bad += 1
elif int(m.group(2)) != len(awq) or int(m.group(3)) != 0:
    print(f"FAIL: {len(awq)} awq rows, but the executor ran {m.group(2)} plugin and "
          f"{m.group(3)} cpu configurations"); bad += 1

def rel(a, b):
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-300)

worst = {"rel_err": 0.0, "out_rel_err": 0.0, "flipped_rel": 0.0, "flipped_out": 0.0}
flipped = 0
for k in awq:
    c, g = cpu[k], gpu[k]
    if not g["device"].startswith("cuda:"):
        print(f"FAIL: {k}: device {g['device']!r} (expected the GPU)"); bad += 1
    same = all(g[f] == c[f] for f in ("sq_err", "rel_err", "max_abs_err", "cosine"))
    d_rel, d_out = rel(g["rel_err"], c["rel_err"]), rel(g["out_rel_err"], c["out_rel_err"])
    if math.isnan(c["out_rel_err"]) or math.isnan(g["out_rel_err"]):
        print(f"FAIL: {k}: out_rel_err {g['out_rel_err']} on cuda, {c['out_rel_err']} on cpu"); bad += 1
    if same:
        worst["out_rel_err"] = max(worst["out_rel_err"], d_out)
        if d_out > 1e-5:
            print(f"FAIL: {k}: out_rel_err {g['out_rel_err']!r} on cuda, {c['out_rel_err']!r} on cpu"); bad += 1
        continue
    if mode == "exact":
        print(f"FAIL: {k}: not the cpu's bits: {g} on cuda, {c} on cpu"); bad += 1
        continue
    flipped += 1
    worst["flipped_rel"] = max(worst["flipped_rel"], d_rel)
    worst["flipped_out"] = max(worst["flipped_out"], d_out)
    print(f"note: {k}: another exponent on cuda: rel_err {g['rel_err']:.6g} / {c['rel_err']:.6g}, "
          f"out_rel_err {g['out_rel_err']:.6g} / {c['out_rel_err']:.6g}")
    if d_rel > 1e-2 or d_out > 1e-2:
        print(f"FAIL: {k}: rel_err or out_rel_err differs by more than 1e-2"); bad += 1
if flipped > 0.05 * len(awq):
    print(f"FAIL: {flipped} of {len(awq)} awq rows chose another exponent (more than 5%)"); bad += 1
if not awq:
    print("FAIL: no awq rows"); bad += 1
print(f"{len(awq)} awq rows compared ({mode}): {len(awq) - flipped} with the cpu's bits "
      f"(worst out_rel_err difference {worst['out_rel_err']:.2e}), {flipped} with another "
      f"exponent (worst rel_err {worst['flipped_rel']:.2e}, out_rel_err "
      f"{worst['flipped_out']:.2e}); {bad} failures")
sys.exit(1 if bad else 0)
PY
