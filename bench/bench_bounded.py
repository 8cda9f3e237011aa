#!/usr/bin/env python3
"""The bounded-memory run: a ~30 GB checkpoint swept on the CPU under --max-memory.

Writes a BF16 safetensors checkpoint of real random data (Gaussian, std
0.02, streamed to disk and fsync()ed: not a sparse file) into DIR, made of
--tensors tensors of --tensor-mib MiB each ([rows, 4096]; default 28 x 1 GiB
= 30.1 GB), runs

    frontier -q sweep FILE -o OUT.h5 --device cpu --quantizers CONFIGS \
        --max-memory SIZE

under /usr/bin/time -v, records peak RSS ("Maximum resident set size") and
wall time, prints a table, writes JSON, and deletes the checkpoint (unless
--keep). The checkpoint is reused when --reuse is given and a file of the
expected size is already there (it takes minutes to write).

  bench/bench_bounded.py --frontier build-cpu/frontier --dir /var/tmp/fr30 \
      --json bounded-30gb.json [--max-memory 1G] [--tensors 28]
      [--tensor-mib 1024] [--quantizers int4-g128-sym,nvfp4,fp8-e4m3-block128]
      [--threads N] [--write-only] [--reuse] [--keep] [--extra ARG]...

Standard library + numpy. Not a test: it takes the better part of an hour
on two cores and needs 30 GB of disk.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_memory import COLS, write_checkpoint  # noqa: E402


def expected_size(tensors):
    header = {}
    offset = 0
    for name, rows, cols in tensors:
        n = rows * cols * 2
        header[name] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return 8 + len(text) + offset


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frontier", required=True)
    ap.add_argument("--dir", required=True, help="where the checkpoint goes (needs ~30 GB)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--tensors", type=int, default=28)
    ap.add_argument("--tensor-mib", type=int, default=1024)
    ap.add_argument("--quantizers", default="int4-g128-sym,nvfp4,fp8-e4m3-block128")
    ap.add_argument("--max-memory", default="1G")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--write-only", action="store_true")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--extra", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rows = (a.tensor_mib << 20) // (2 * COLS)
    tensors = [(f"model.layers.{i}.mlp.up_proj.weight", rows, COLS) for i in range(a.tensors)]
    model = os.path.join(a.dir, "bounded.safetensors")
    out = os.path.join(a.dir, "bounded.h5")
    write_s = None
    if not (a.reuse and os.path.exists(model) and os.path.getsize(model) == expected_size(tensors)):
        t0 = time.time()
        write_checkpoint(model, tensors, seed=30)
        write_s = time.time() - t0
        print(f"wrote {model}: {os.path.getsize(model) / 1e9:.2f} GB in {write_s:.0f} s", flush=True)
    if a.write_only:
        return 0
    size = os.path.getsize(model)
    if os.path.exists(out):
        os.remove(out)
    cmd = ["/usr/bin/time", "-v", a.frontier, "-q", "sweep", model, "-o", out, "--device", "cpu",
           "--quantizers", a.quantizers]
    if a.max_memory:
        cmd += ["--max-memory", a.max_memory]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    cmd += a.extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"sweep of {model} failed (exit {p.returncode})")
    rss = int(m.group(1)) * 1024
    # what the dataset holds: rows measured and configurations skipped
    counts = {}
    try:
        import h5py
        with h5py.File(out, "r") as f:
            counts["results"] = int(f["results"].shape[0])
            counts["skipped"] = int(f["skipped"].shape[0]) if "skipped" in f else 0
    except Exception as e:  # h5py missing: the figures above still stand
        counts["error"] = str(e)
    largest = rows * COLS * 2
    r = {"file_bytes": size, "n_tensors": a.tensors, "largest_tensor_bytes": largest,
         "largest_tensor_elements": largest // 2, "quantizers": a.quantizers,
         "max_memory": a.max_memory, "peak_rss_bytes": rss, "sweep_wall_s": round(wall, 1),
         "write_s": round(write_s, 1) if write_s is not None else None,
         "dataset": counts, "command": " ".join(cmd[2:])}
    print(f"file {size / 1e9:.2f} GB ({a.tensors} x {largest / 2**20:.0f} MiB)  "
          f"--max-memory {a.max_memory}  peak RSS {rss / 2**20:.0f} MiB  "
          f"sweep {wall:.0f} s  rows {counts.get('results')}  skipped {counts.get('skipped')}",
          flush=True)
    if a.json:
        doc = {"benchmark": "bench/bench_bounded.py", "date": time.strftime("%Y-%m-%d"),
               "host": platform.node(), "cpus": os.cpu_count(),
               "threads": a.threads or os.cpu_count(), "results": [r]}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if os.path.exists(out):
        os.remove(out)
    if not a.keep:
        os.remove(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
