#!/usr/bin/env python3
"""llama-quantize on the shapes bench_ggml times (docs/benchmarks.md, "ggml
types on the GPU against llama-quantize"): the CPU peer of bench/bench_ggml.c.

Writes a Llama-3-8B-shaped GGUF (LAYERS layers of q and o 4096 x 4096, k
and v 1024 x 4096, gate and up 14336 x 4096, down 4096 x 14336; F16,
gaussian weights of std 0.02, one random tensor per shape reused by every
layer; norms F32; a token_embd and output of 256 x 4096, which the model
loader wants and which cost nothing), then for each type runs

    llama-quantize --pure MODEL OUT TYPE THREADS

(and, with --imatrix, the same with an importance matrix of random mean
squares for the K-quants and IQ4) and takes the wall time of each run and
llama-quantize's own "quantize time" (both include reading the F16 input,
converting it to F32 and writing OUT, as a real quantization does; the file
is read once before, so it comes from the page cache). Writes JSON that
`bench_ggml --peer` reads: per type the seconds, and `params` (the
weights of the layers' matrices, what bench_ggml counts; its seconds are
scaled by the ratio).

usage: llama_quantize.py [--llama-quantize PATH] [--layers N] [--threads T]
                         [--types q4_k,...] [--imatrix] [--work DIR]
                         [--deadline SECONDS] [--json FILE]

PATH defaults to the pinned build of scripts/llama-cpp.sh (its --print-dir).
--deadline stops starting runs once that many seconds have passed (the
types run so far are kept; the JSON is rewritten after every run). Needs
numpy only (the GGUF writer is here).
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TYPES = ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "mxfp4", "q2_k", "q3_k", "q4_k", "q5_k",
         "q6_k", "iq4_nl", "iq4_xs")
WEIGHTED = ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs")
DIM, KV, FF, VOCAB = 4096, 1024, 14336, 256
# name, rows, cols (numpy shape; GGUF stores ne = cols, rows)
LAYER = (("attn_q", DIM, DIM), ("attn_k", KV, DIM), ("attn_v", KV, DIM), ("attn_output", DIM, DIM),
         ("ffn_gate", FF, DIM), ("ffn_up", FF, DIM), ("ffn_down", DIM, FF))

GGUF_U32, GGUF_F32, GGUF_STR, GGUF_ARR = 4, 6, 8, 9
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, kind, value):
    out = gguf_str(key) + struct.pack("<I", kind)
    if kind == GGUF_U32:
        return out + struct.pack("<I", value)
    if kind == GGUF_F32:
        return out + struct.pack("<f", value)
    if kind == GGUF_STR:
        return out + gguf_str(value)
    raise ValueError(kind)


def write_gguf(path, kvs, tensors):
    """kvs: [(key, kind, value)]; tensors: [(name, ndarray)] (F32 or F16)."""
    infos, offset = [], 0
    for name, a in tensors:
        kind = GGML_F16 if a.dtype == np.float16 else GGML_F32
        dims = list(reversed(a.shape))
        infos.append(gguf_str(name) + struct.pack("<I", len(dims)) +
                     b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", kind, offset))
        offset += (a.nbytes + ALIGN - 1) // ALIGN * ALIGN
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    head += b"".join(gguf_kv(*kv) for kv in kvs) + b"".join(infos)
    with open(path, "wb") as f:
        f.write(head + b"\0" * ((-len(head)) % ALIGN))
        for _, a in tensors:
            f.write(a.tobytes())
            f.write(b"\0" * ((-a.nbytes) % ALIGN))


def make_model(path, layers):
    rng = np.random.default_rng(1)
    shared = {}

    def weight(rows, cols):  # one random tensor per shape, reused by every layer
        if (rows, cols) not in shared:
            shared[rows, cols] = (rng.standard_normal((rows, cols), np.float32) * 0.02).astype(
                np.float16)
        return shared[rows, cols]

    ones = np.ones(DIM, np.float32)
    tensors = [("token_embd.weight", weight(VOCAB, DIM))]
    params = 0
    for i in range(layers):
        tensors.append((f"blk.{i}.attn_norm.weight", ones))
        for name, rows, cols in LAYER:
            tensors.append((f"blk.{i}.{name}.weight", weight(rows, cols)))
            params += rows * cols
        tensors.append((f"blk.{i}.ffn_norm.weight", ones))
    tensors += [("output_norm.weight", ones), ("output.weight", weight(VOCAB, DIM))]
    kvs = [("general.architecture", GGUF_STR, "llama"), ("general.name", GGUF_STR, "llama8b-shape"),
           ("general.file_type", GGUF_U32, 1), ("llama.context_length", GGUF_U32, 8192),
           ("llama.embedding_length", GGUF_U32, DIM), ("llama.block_count", GGUF_U32, layers),
           ("llama.feed_forward_length", GGUF_U32, FF), ("llama.attention.head_count", GGUF_U32, 32),
           ("llama.attention.head_count_kv", GGUF_U32, 8),
           ("llama.attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5),
           ("llama.rope.dimension_count", GGUF_U32, 128), ("llama.vocab_size", GGUF_U32, VOCAB)]
    write_gguf(path, kvs, tensors)
    return params, [n for n, _ in tensors if n.startswith("blk.") and not n.endswith("norm.weight")]


def write_imatrix(path, names):
    """llama-imatrix's legacy .dat: count; per entry name, ncall, nval, sums."""
    rng = np.random.default_rng(2)
    out = struct.pack("<i", len(names))
    ncall = 10
    for name in names:
        cols = FF if "ffn_down" in name else DIM
        means = np.exp(1.5 * rng.standard_normal(cols)).astype(np.float32)
        out += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, cols)
        out += (means * np.float32(ncall)).astype("<f4").tobytes()
    Path(path).write_bytes(out)


def llama_quantize_path():
    here = Path(__file__).resolve().parents[2]
    r = subprocess.run(["bash", str(here / "scripts/llama-cpp.sh"), "--print-dir"],
                       capture_output=True, text=True)
    return str(Path(r.stdout.strip()) / "llama-quantize") if r.returncode == 0 else None


def run_one(exe, model, out, ty, threads, imatrix):
    cmd = [exe, "--pure"] + (["--imatrix", str(imatrix)] if imatrix else [])
    # llama-quantize's ftype names: MXFP4 is MXFP4_MOE (llama.h LLAMA_FTYPE_MOSTLY_MXFP4_MOE)
    cmd += [str(model), str(out), "MXFP4_MOE" if ty == "mxfp4" else ty.upper(), str(threads)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        why = (" (SIGILL: built for another CPU; scripts/llama-cpp.sh builds it with "
               "GGML_NATIVE on the machine it runs on)" if r.returncode == -4 else "")
        print(f"llama_quantize.py: {' '.join(cmd)} exited {r.returncode}{why}\n"
              f"{r.stderr[-1500:]}", file=sys.stderr)
        return None
    m = re.search(r"quantize time =\s*([0-9.]+) ms", r.stdout + r.stderr)
    out_bytes = out.stat().st_size if out.exists() else 0
    out.unlink(missing_ok=True)
    return {"seconds": wall, "quantize_seconds": float(m.group(1)) / 1e3 if m else None,
            "out_bytes": out_bytes, "command": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-quantize")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--imatrix", action="store_true")
    ap.add_argument("--work", default="/tmp/frontier-llama-quantize")
    ap.add_argument("--deadline", type=float, default=0.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    exe = a.llama_quantize or llama_quantize_path()
    if not exe or not Path(exe).exists():
        print("llama_quantize.py: no llama-quantize (scripts/llama-cpp.sh builds it; "
              "--llama-quantize PATH)", file=sys.stderr)
        return 77
    start = time.time()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    model, out = work / "llama8b-shape.gguf", work / "out.gguf"
    params, matrices = make_model(model, a.layers)
    with open(model, "rb") as f:  # into the page cache
        while f.read(1 << 26):
            pass
    made = time.time() - start
    imatrix = work / "imatrix.dat"
    if a.imatrix:
        write_imatrix(imatrix, matrices)
    print(f"{model}: {a.layers} layers, {params:.4g} weights in the layers' matrices, "
          f"{model.stat().st_size / 1e9:.2f} GB, written in {made:.1f} s; {a.threads} threads")
    res = {"llama_quantize": exe, "layers": a.layers, "params": params, "threads": a.threads,
           "cpu": cpu_name(), "types": {}, "imatrix": {}}
    runs = [(t, False) for t in a.types.split(",")]
    runs += [(t, True) for t in a.types.split(",") if a.imatrix and t in WEIGHTED]
    for ty, weighted in runs:
        if a.deadline and time.time() - start > a.deadline:
            print(f"deadline: {ty}{' --imatrix' if weighted else ''} and the rest not run")
            break
        r = run_one(exe, model, out, ty, a.threads, imatrix if weighted else None)
        if r is None:
            return 1
        res["imatrix" if weighted else "types"][ty] = r
        if a.json:  # after every run: a call that times out keeps what it measured
            Path(a.json).write_text(json.dumps(res, indent=1))
        print(f"{ty:7s}{' --imatrix' if weighted else '':10s} {r['seconds']:8.2f} s "
              f"(quantize time {r['quantize_seconds']} s), {r['out_bytes'] / 1e9:.2f} GB",
              flush=True)
    total = sum(r["seconds"] for r in res["types"].values())
    print(f"llama-quantize, {len(res['types'])} types without an imatrix: {total:.1f} s "
          f"({total * 6.98e9 / params:.1f} s scaled to the 32 layers' 6.98e9 weights)")
    model.unlink(missing_ok=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
