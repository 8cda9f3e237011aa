#!/usr/bin/env python3
"""Rewrites a calibration statistics file (docs/calibration.md) for the MoE
tests (numpy only). usage: split_calib.py MODE IN OUT [MODULE EXPERT]

  split           every per-expert module (hessian [E, in, in], vectors [E, in],
                  __metadata__.<module>.expert_token_counts) becomes E ordinary
                  modules <module>.<e> (the names tests/moe/split_fixture.py
                  gives the experts of a split stack); an expert whose count is
                  0 gets what frontier documents for it: the token-weighted
                  mean of the experts that had tokens (float64, in expert
                  order, stored float32)
  zero M E        expert E of module M received no tokens: count 0, slices 0
  nan M E         a NaN in expert E's hessian of module M, at [1, 2]
  drop M          module M loses its last expert (an expert count the stack
                  does not have)
  plain M         module M's statistics without the expert axis (expert 0's)
"""
import json
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, h in header.items():
        assert h["dtype"] == "F32", (name, h["dtype"])
        b, e = h["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(h["shape"]).copy()
    return tensors, meta


def write(path, tensors, meta):
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


PARTS = ("hessian", "act_abs_mean", "act_sq_mean")
KEY = ".expert_token_counts"


def main():
    mode, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
    tensors, meta = read(src)
    if mode == "split":
        for key in [k for k in meta if k.endswith(KEY)]:
            m = key[:-len(KEY)]
            counts = json.loads(meta.pop(key))
            total = float(sum(counts))
            for p in PARTS:
                x = tensors.pop(f"{m}.{p}", None)
                if x is None:
                    continue
                fallback = np.zeros(x.shape[1:], np.float64)
                for e, n in enumerate(counts):
                    if n > 0:
                        fallback = fallback + float(n) * x[e].astype(np.float64)
                fallback = (fallback / total).astype(np.float32)
                for e, n in enumerate(counts):
                    tensors[f"{m}.{e}.{p}"] = x[e] if n > 0 else fallback
            tensors.pop(m + ".sensitivity", None)  # one per stack: not an expert's
    elif mode == "zero":
        m, e = sys.argv[4], int(sys.argv[5])
        counts = json.loads(meta[m + KEY])
        counts[e] = 0
        meta[m + KEY] = json.dumps(counts)
        for p in PARTS:
            if f"{m}.{p}" in tensors:
                tensors[f"{m}.{p}"][e] = 0
    elif mode == "nan":
        m, e = sys.argv[4], int(sys.argv[5])
        tensors[m + ".hessian"][e, 1, 2] = np.nan
    elif mode == "drop":
        m = sys.argv[4]
        meta[m + KEY] = json.dumps(json.loads(meta[m + KEY])[:-1])
        for p in PARTS:
            if f"{m}.{p}" in tensors:
                tensors[f"{m}.{p}"] = tensors[f"{m}.{p}"][:-1]
    elif mode == "plain":
        m = sys.argv[4]
        meta.pop(m + KEY)
        for p in PARTS:
            if f"{m}.{p}" in tensors:
                tensors[f"{m}.{p}"] = tensors[f"{m}.{p}"][0]
    else:
        sys.exit(f"split_calib.py: unknown mode '{mode}'")
    write(dst, tensors, meta)


if __name__ == "__main__":
    main()
