#!/usr/bin/env python3
"""Recomputes int4-g32-sym and int8-tensor-sym on data/stories260K with numpy,
independently of frontier (docs/formats.md),
and compares with `frontier sweep --json` and the rows of its dataset.

  golden_stories.py MODEL.safetensors SUMMARY.json RUN.h5
"""
import json
import struct
import sys

import h5py
import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def int_sym_groups(w, bits, group):
    """int<b>-g<g>-sym: per group of g along a row, s = fp16(amax / qmax),
    q = clamp(rint(x / s), -qmax, qmax), x^ = q * s; a short last group keeps
    its own scale. Float32 arithmetic throughout."""
    rows, cols = w.shape[0], int(np.prod(w.shape[1:]))
    m = w.reshape(rows, cols).astype(np.float32)
    qmax = np.float32(2 ** (bits - 1) - 1)
    out = np.zeros_like(m)
    n_groups = 0
    for g0 in range(0, cols, group):
        x = m[:, g0:g0 + group]
        amax = np.max(np.abs(x), axis=1, keepdims=True)
        s = (amax / qmax).astype(np.float16).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.clip(np.rint(x / s), -qmax, qmax)
        out[:, g0:g0 + group] = np.where(s == 0, np.float32(0), (q * s).astype(np.float32))
        n_groups += 1
    total_bits = bits * rows * cols + 16 * rows * n_groups
    return out, total_bits


def int_sym_tensor(w, bits):
    """int<b>-tensor-sym: one fp32 scale s = amax / qmax for the tensor."""
    m = w.astype(np.float32)
    qmax = np.float32(2 ** (bits - 1) - 1)
    s = np.float32(np.max(np.abs(m)) / qmax)
    q = np.clip(np.rint(m / s), -qmax, qmax)
    return (q * s).astype(np.float32), bits * m.size + 32


def main():
    model, summary_path, run_path = sys.argv[1:4]
    tensors = {k: v for k, v in read_safetensors(model).items() if v.ndim >= 2}
    summary = {c["name"]: c for c in json.load(open(summary_path))["configs"]}
    f = h5py.File(run_path, "r")
    names = [n.decode() for n in f["tensors"]["name"]]
    configs = [n.decode() for n in f["configs"]["name"]]
    rows = f["results"][...]
    ok = True
    for config, fn in [("int4-g32-sym", lambda w: int_sym_groups(w, 4, 32)),
                       ("int8-tensor-sym", lambda w: int_sym_tensor(w, 8))]:
        sq_err = sq_norm = bits = numel = 0.0
        cid = configs.index(config)
        for name, w in tensors.items():
            w_hat, tb = fn(w)
            d = w.astype(np.float64).reshape(w_hat.shape) - w_hat.astype(np.float64)
            e, n2 = float(np.sum(d * d)), float(np.sum(w.astype(np.float64) ** 2))
            sq_err += e
            sq_norm += n2
            bits += tb
            numel += w.size
            row = rows[(rows["tensor_id"] == names.index(name)) & (rows["config_id"] == cid)]
            assert len(row) == 1, (name, config)
            rel = np.sqrt(e / n2)
            if row["total_bits"][0] != tb or abs(row["rel_err"][0] - rel) > 1e-9 * rel:
                print(f"{config} on {name}: frontier {row['total_bits'][0]} bits rel_err "
                      f"{row['rel_err'][0]!r}, numpy {tb} bits rel_err {rel!r}")
                ok = False
        bpw, rel = bits / numel, np.sqrt(sq_err / sq_norm)
        got = summary[config]
        print(f"{config}: numpy {bpw:.6f} bits/w rel_err {rel:.9f}; frontier "
              f"{got['bits_per_weight']:.6f} bits/w rel_err {got['rel_err']:.9f}")
        # cJSON prints 15 significant digits when they read back within
        # DBL_EPSILON: compare the summary at 1e-12
        if abs(got["bits_per_weight"] - bpw) > 1e-12 * bpw or abs(got["rel_err"] - rel) > 1e-9 * rel:
            ok = False
        if got["tensors"] != len(tensors):
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
