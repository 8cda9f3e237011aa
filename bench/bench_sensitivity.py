#!/usr/bin/env python3
"""Benchmark: `frontier sensitivity` (per-tensor alphas through llama.cpp)
on a GGUF model, against a wall-time target.

    python3 bench/bench_sensitivity.py --frontier BUILD/frontier --model M.gguf
        --text FILE [--threads auto|N] [--target-s 600] [--json OUT]
        [--work DIR] [-- EXTRA frontier sensitivity OPTIONS]

Runs `frontier sensitivity MODEL --text FILE -o WORK/sens.safetensors` with
its defaults (2 sequences x 128 tokens, the ggml-q4_0 error as the
perturbation, the llama.cpp self-check), times it from start to the
written file, and reads the file back: how many tensors got an alpha, the
smallest and largest. The default target is the one for SmolLM2-135M on
the 2-core development machine: 10 minutes (docs/benchmarks.md). Prints a
table; --json writes the figures. Exit 0 when it finished (within the
target or not: the table says which), 1 when it failed.
"""
import argparse
import json
import os
import platform
import struct
import subprocess
import sys
import tempfile
import time


def read_alphas(path):
    """{module: alpha} of a safetensors file's .sensitivity tensors (float32 [2])."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for k, v in header.items():
            if k == "__metadata__" or not k.endswith(".sensitivity"):
                continue
            if v["dtype"] != "F32" or v["shape"] != [2]:
                sys.exit(f"bench_sensitivity: {path}: {k} is {v['dtype']} {v['shape']}, not F32 [2]")
            f.seek(base + v["data_offsets"][0])
            out[k[:-len(".sensitivity")]] = struct.unpack("<2f", f.read(8))[0]
        return out, header.get("__metadata__", {})


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frontier", required=True, help="the frontier binary")
    ap.add_argument("--model", required=True, help="a GGUF model")
    ap.add_argument("--text", required=True, help="the text the KL divergence is measured on")
    ap.add_argument("--threads", default="auto")
    ap.add_argument("--target-s", type=float, default=600.0, help="the target (default 600 s)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--work", help="folder for the output (default: a temporary one)")
    args = ap.parse_args(argv)

    work = args.work or tempfile.mkdtemp(prefix="bench_sensitivity.")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "sens.safetensors")
    cmd = [args.frontier, "sensitivity", args.model, "--text", args.text, "-o", out, "--force",
           "--threads", args.threads, *extra]
    print("run:", " ".join(cmd), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-3000:], sep="\n")
        print(f"bench_sensitivity: frontier sensitivity failed (exit {r.returncode})")
        return 1
    alphas, meta = read_alphas(out)
    if not alphas:
        print(f"bench_sensitivity: {out} holds no .sensitivity tensor")
        return 1
    lo = min(alphas, key=alphas.get)
    hi = max(alphas, key=alphas.get)
    fig = {
        "benchmark": "frontier sensitivity (llama.cpp)", "model": os.path.basename(args.model),
        "text": os.path.basename(args.text), "options": extra, "threads": args.threads,
        "cpu": cpu_name(), "cores": os.cpu_count(), "tensors": len(alphas),
        "alpha_min": [lo, alphas[lo]], "alpha_max": [hi, alphas[hi]],
        "metadata": meta, "wall_s": round(wall, 1), "target_s": args.target_s,
        "within_target": wall <= args.target_s,
    }
    rows = [("model", fig["model"]), ("CPU", f"{fig['cpu']}, {fig['cores']} cores"),
            ("tensors with an alpha", str(len(alphas))),
            ("smallest alpha", f"{alphas[lo]:.4g} ({lo})"), ("largest alpha", f"{alphas[hi]:.4g} ({hi})"),
            ("wall time", f"{wall:.1f} s"),
            (f"target {args.target_s:.0f} s", "met" if fig["within_target"] else "NOT met")]
    print()
    for k, v in rows:
        print(f"{k:<24} {v}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(fig, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
