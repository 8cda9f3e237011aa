#!/usr/bin/env python3
"""MPI scale-out benchmark (docs/scale-out.md): one Llama-70B-shaped
synthetic sweep (80 layers of q, k, v, o, gate, up, down in bf16, every
data-free configuration of 2..8 bits) with 1, 2 and 4 MPI ranks, on the GPU
(the ranks share it when there is one) or on the CPU. Prints a table and
writes JSON: wall time of the command, the sweep's own time, the busy time of
each rank (the balance of the split), and whether every run wrote the same
rows as the one-rank run.

  bench_mpi.py --frontier build/frontier [--device cuda|cpu] [--ranks 1,2,4]
               [--layers 80] [--scale 1] [--bits 2..8] [--quantizers LIST]
               [--json bench-mpi.json]

--layers and --scale shrink the model (every dimension divided by --scale)
for a smoke run on a small machine: --layers 2 --scale 16 takes seconds.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
H5TOOL = os.path.join(HERE, "..", "tests", "sweep", "h5tool.py")


def llama70b_spec(layers, scale):
    """Llama-2/3 70B: hidden 8192, 8 KV heads of 128, intermediate 28672."""
    h, kv, ff = 8192 // scale, 1024 // scale, 28672 // scale
    return ",".join([
        f"gaussian:{h}x{h}:bf16*{2 * layers}",        # q_proj, o_proj
        f"gaussian:{kv}x{h}:bf16*{2 * layers}",       # k_proj, v_proj
        f"student-t3:{ff}x{h}:bf16*{2 * layers}",     # gate_proj, up_proj
        f"student-t3:{h}x{ff}:bf16*{layers}",         # down_proj
    ]), layers * (2 * h * h + 2 * kv * h + 3 * ff * h)


def mpi_command(mpiexec, ranks):
    cmd = [mpiexec, "-n", str(ranks)]
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                                 env=mpi_env()).stdout
    except OSError:
        version = ""
    if re.search(r"Open MPI|OpenRTE|open-mpi", version):
        cmd += ["--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd += ["--allow-run-as-root"]
    return cmd


def mpi_env():
    env = dict(os.environ)
    env.setdefault("FRONTIER_PLUGIN_PATH", "none")
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def run_one(args, spec, ranks, work):
    out = os.path.join(work, f"ranks{ranks}.h5")
    stats = os.path.join(work, f"ranks{ranks}-device.json")
    cmd = mpi_command(args.mpiexec, ranks) + [
        args.frontier, "sweep", "--synthetic", spec, "--bits", args.bits,
        "--quantizers", args.quantizers,
        "--device", args.device, "-o", out, "--json", "--device-stats", stats]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env())
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"bench_mpi: {ranks} rank(s) failed with exit {p.returncode}")
    summary = json.loads(p.stdout)
    busy = []
    m = re.search(r"seconds busy per rank: ([0-9. ]+)", p.stderr)
    if m:
        busy = [float(x) for x in m.group(1).split()]
    else:
        busy = [summary.get("seconds", 0.0)]
    device_stats = {}
    if os.path.exists(stats):
        with open(stats) as f:
            device_stats = json.load(f)
    return {
        "ranks": ranks,
        "wall_s": wall,
        "sweep_s": summary.get("seconds"),
        "rows": summary.get("rows"),
        "device": summary.get("device"),
        "busy_s": busy,
        "balance": (sum(busy) / len(busy) / max(busy)) if busy and max(busy) > 0 else None,
        "gpu_s": device_stats.get("gpu_s"),
        "generate_s": device_stats.get("generate_s"),
        "cpu_configs": device_stats.get("cpu_configs"),
        "output": out,
    }


def same_rows(a, b):
    p = subprocess.run([sys.executable, H5TOOL, "same", a, b], capture_output=True, text=True)
    return p.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frontier", required=True, help="the frontier binary (built with MPI)")
    ap.add_argument("--mpiexec", default=shutil.which("mpirun") or "mpirun")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (ranks share the GPUs)")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--layers", type=int, default=80)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--bits", default="2..8")
    ap.add_argument("--quantizers", default="int,fp8,nvfp4,mx,nf4",
                    help="the families with GPU kernels (default): the host-only ones (mse, "
                         "hqq, rht, ...) would time the CPU, not the GPU")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads per rank (default: the "
                    "node's cores divided among its ranks)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="keep the datasets in this folder")
    args = ap.parse_args()
    spec, params = llama70b_spec(args.layers, args.scale)
    ranks = [int(r) for r in args.ranks.split(",")]
    work = args.keep or tempfile.mkdtemp(prefix="bench-mpi-")
    os.makedirs(work, exist_ok=True)
    results = []
    try:
        for n in ranks:
            for suffix in (".h5", "-device.json"):
                path = os.path.join(work, f"ranks{n}{suffix}")
                if os.path.exists(path):
                    os.remove(path)
            results.append(run_one(args, spec, n, work))
        for r in results:
            r["same_rows_as_first"] = same_rows(results[0]["output"], r["output"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    first = results[0]["sweep_s"] or results[0]["wall_s"]
    print(f"Llama-70B-shaped synthetic sweep: {args.layers} layers, dims / {args.scale}, "
          f"{params / 1e9:.2f}e9 parameters, --bits {args.bits} --quantizers {args.quantizers}, "
          f"--device {args.device}, "
          f"{socket.gethostname()}")
    print(f"{'ranks':>5} {'wall s':>8} {'sweep s':>8} {'speedup':>7} {'balance':>7} "
          f"{'gpu s':>7} {'rows':>7} same  busy per rank (s)")
    for r in results:
        sweep = r["sweep_s"] or r["wall_s"]
        print(f"{r['ranks']:>5} {r['wall_s']:>8.2f} {sweep:>8.2f} {first / sweep:>7.2f} "
              f"{(r['balance'] or 0):>7.2f} {(r['gpu_s'] or 0):>7.2f} {r['rows']:>7} "
              f"{'yes ' if r['same_rows_as_first'] else 'NO  '} "
              f"{' '.join(f'{b:.2f}' for b in r['busy_s'])}")
    if args.json:
        for r in results:
            r.pop("output", None)
        with open(args.json, "w") as f:
            json.dump({"benchmark": "mpi-llama70b", "spec": spec, "parameters": params,
                       "layers": args.layers, "scale": args.scale, "bits": args.bits,
                       "quantizers": args.quantizers,
                       "device": args.device, "host": socket.gethostname(),
                       "cpus": os.cpu_count(), "results": results}, f, indent=2)
            f.write("\n")
    return 0 if all(r["same_rows_as_first"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
