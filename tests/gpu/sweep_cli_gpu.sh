#!/usr/bin/env bash
# `frontier sweep --device cuda` against `--device cpu` on a synthetic model:
# the same rows, rel_err within 1e-6 relative, the device column naming the
# GPU; `--device auto` picks the GPU when there is one.
# usage: sweep_cli_gpu.sh FRONTIER_BINARY
set -u
frontier=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the families with kernels (the host ones run on the CPU, device "cpu")
kernel_families=int,fp8,nvfp4,mx,nf4
spec="gaussian:256x1000:bf16,student-t3:129x257:f16,outliers:1x4096:f32,laplace:512x384:bf16"

"$frontier" --quiet sweep --synthetic "$spec" --quantizers "$kernel_families" --device cuda -o "$tmp/gpu.h5" 2>"$tmp/gpu.err"
rc=$?
if [ $rc -eq 7 ]; then
  echo "SKIP: no CUDA device ($(head -1 "$tmp/gpu.err"))"
  exit 77
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: frontier sweep --device cuda exited $rc"; cat "$tmp/gpu.err"; exit 1
fi
"$frontier" --quiet sweep --synthetic "$spec" --quantizers "$kernel_families" --device cpu -o "$tmp/cpu.h5" || { echo "FAIL: cpu sweep"; exit 1; }
"$frontier" --quiet sweep --synthetic "$spec" --quantizers "$kernel_families" --device auto -o "$tmp/auto.h5" || { echo "FAIL: auto sweep"; exit 1; }

python3 - "$tmp/gpu.h5" "$tmp/cpu.h5" "$tmp/auto.h5" <<'PY' || exit $?
import sys
try:
    import h5py
except ImportError:
    print("SKIP: python3 has no h5py"); sys.exit(77)

def rows(path):
    with h5py.File(path, "r") as f:
        res = f["results"][...]
        cfg = {int(c["config_id"]): c["name"].decode() if isinstance(c["name"], bytes) else str(c["name"])
               for c in f["configs"][...]}
        out = {}
        for r in res:
            dev = r["device"].decode() if isinstance(r["device"], bytes) else str(r["device"])
            out[(int(r["tensor_id"]), cfg[int(r["config_id"])])] = (float(r["rel_err"]), dev)
        return out

gpu, cpu, auto = rows(sys.argv[1]), rows(sys.argv[2]), rows(sys.argv[3])
bad = 0
if set(gpu) != set(cpu):
    print(f"FAIL: rows differ: {len(gpu)} on cuda, {len(cpu)} on cpu"); sys.exit(1)
for k, (re_cpu, dev_cpu) in cpu.items():
    re_gpu, dev_gpu = gpu[k]
    if not dev_gpu.startswith("cuda:") or dev_cpu != "cpu":
        print(f"FAIL: {k}: devices {dev_gpu!r} / {dev_cpu!r}"); bad += 1
    if abs(re_gpu - re_cpu) > 1e-6 * max(abs(re_cpu), abs(re_gpu)):
        print(f"FAIL: {k}: rel_err {re_gpu!r} on cuda, {re_cpu!r} on cpu"); bad += 1
if any(not dev.startswith("cuda:") for _, dev in auto.values()):
    print("FAIL: --device auto did not use the GPU"); bad += 1
print(f"{len(cpu)} rows compared, {bad} failures")
sys.exit(1 if bad else 0)
PY
