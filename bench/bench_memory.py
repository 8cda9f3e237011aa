#!/usr/bin/env python3
"""Peak resident memory of a CPU sweep as a function of the largest tensor.

For each size S (MiB of stored BF16 data) writes a safetensors checkpoint of
real random data (Gaussian, std 0.02; written to disk, not a sparse file):
one large tensor [S MiB / (2 * cols), cols] plus four small 1024x1024 ones,
then runs

    frontier sweep FILE -o OUT.h5 --device cpu --quantizers int4-g128-sym,nvfp4

under /usr/bin/time -v and records its peak RSS ("Maximum resident set
size") and wall time. Prints a table and writes JSON.

  bench/bench_memory.py --frontier build/frontier --sizes 64,256,1024,2048 \
      --dir /tmp/frontier-mem --json memory.json [--threads N]
      [--total-gib G]   also one checkpoint of G GiB made of 1 GiB tensors
      [--keep]          keep the checkpoints (they are removed by default)
      [--extra ARG]...  more sweep arguments (e.g. --extra=--max-memory=1G)

Standard library + numpy. Not a test: it takes minutes and needs disk.
"""
import argparse
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

COLS = 4096
CHUNK_ELEMS = 16 << 20  # elements generated and written at a time


def bf16_chunk(rng, n):
    x = (rng.standard_normal(n, dtype=np.float32) * np.float32(0.02))
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def write_checkpoint(path, tensors, seed):
    """tensors: list of (name, rows, cols); BF16, data streamed to disk."""
    header, offset = {}, 0
    for name, rows, cols in tensors:
        nbytes = rows * cols * 2
        header[name] = {"dtype": "BF16", "shape": [rows, cols],
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, rows, cols in tensors:
            left = rows * cols
            while left:
                n = min(left, CHUNK_ELEMS)
                f.write(bf16_chunk(rng, n).tobytes())
                left -= n
        f.flush()
        os.fsync(f.fileno())
    return 8 + len(text) + offset


def run_sweep(frontier, model, out, threads, extra):
    if os.path.exists(out):
        os.remove(out)
    cmd = ["/usr/bin/time", "-v", frontier, "-q", "sweep", model, "-o", out, "--device", "cpu",
           "--quantizers", "int4-g128-sym,nvfp4"]
    if threads:
        cmd += ["--threads", str(threads)]
    cmd += extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"sweep of {model} failed (exit {p.returncode})")
    return int(m.group(1)) * 1024, wall, " ".join(cmd[2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frontier", required=True)
    ap.add_argument("--sizes", default="64,256,1024,2048", help="MiB of the largest tensor")
    ap.add_argument("--dir", default="/tmp/frontier-mem")
    ap.add_argument("--json", default=None)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--total-gib", type=float, default=0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--extra", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    small = [(f"model.layers.0.self_attn.{p}_proj.weight", 1024, 1024) for p in "qkvo"]
    cases = []
    for s in [int(x) for x in a.sizes.split(",") if x]:
        rows = (s << 20) // (2 * COLS)
        cases.append((f"largest {s} MiB", [("model.layers.0.mlp.up_proj.weight", rows, COLS)] + small))
    if a.total_gib > 0:
        n = max(1, int(round(a.total_gib)))
        rows = (1 << 30) // (2 * COLS)
        big = [(f"model.layers.{i}.mlp.up_proj.weight", rows, COLS) for i in range(n)]
        cases.append((f"checkpoint {n} GiB (1 GiB tensors)", big))
    results = []
    for k, (label, tensors) in enumerate(cases):
        model = os.path.join(a.dir, f"mem{k}.safetensors")
        out = os.path.join(a.dir, f"mem{k}.h5")
        t0 = time.time()
        size = write_checkpoint(model, tensors, seed=k)
        write_s = time.time() - t0
        largest = max(r * c * 2 for _, r, c in tensors)
        rss, wall, cmd = run_sweep(a.frontier, model, out, a.threads, a.extra)
        results.append({"case": label, "file_bytes": size, "largest_tensor_bytes": largest,
                        "largest_tensor_elements": largest // 2, "n_tensors": len(tensors),
                        "peak_rss_bytes": rss, "sweep_wall_s": round(wall, 2),
                        "write_s": round(write_s, 2), "command": cmd})
        r = results[-1]
        print(f"{label:36s} file {size / 2**20:9.0f} MiB  largest {largest / 2**20:7.0f} MiB "
              f"({largest // 2:>11d} el)  peak RSS {rss / 2**20:8.0f} MiB "
              f"({rss / largest:5.2f}x largest)  sweep {wall:7.1f} s", flush=True)
        if not a.keep:
            os.remove(model)
        if os.path.exists(out):
            os.remove(out)
    if a.json:
        doc = {"benchmark": "bench/bench_memory.py", "date": time.strftime("%Y-%m-%d"),
               "host": platform.node(), "cpus": os.cpu_count(),
               "threads": a.threads or os.cpu_count(), "results": results}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if not a.keep:
        shutil.rmtree(a.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
