#!/usr/bin/env python3
"""Writes a safetensors checkpoint of numeric edge cases (numpy):

  make_edge_model.py OUT

  edge.huge.weight     64x256 F32, |values| up to 1e6: int4 sym's fp16 scale
                       amax/7 overflows 65504 (int8 sym's amax/127 does not)
  edge.huge8.weight    64x256 F32, |values| up to 1e7: int8 sym's overflows too
  edge.tiny.weight     64x256 F32, |values| up to 1e-9: fp16 scales round to 0
  edge.zero.weight     64x256 F32, all +0 and some -0
  edge.subnormal.weight 64x256 F32, values around 1e-40 (float32 subnormals)
  edge.normal.weight   64x256 F32, N(0, 0.02): no flag but "checked"
  edge.at65504.weight  N(0, 0.02) and one 458632: amax/7 = 65518.9 rounds to
                       65504 in fp16 (ordinary rounding, no overflow)
  edge.over65504.weight ... and one 458640: amax/7 = 65520 rounds past 65504
  edge.under.weight    N(0, 0.02), but row 0's first 128 values at most
                       127 * 2^-25: int8 sym's quotient is 2^-25, which fp16
                       rounds (ties to even) to 0
  edge.notunder.weight the same with the next float32 up: rounds to 2^-24
"""
import json
import struct
import sys

import numpy as np


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    rng = np.random.default_rng(15)
    u = lambda: rng.uniform(-1, 1, (64, 256)).astype(np.float32)
    zero = np.zeros((64, 256), np.float32)
    zero[::3, ::5] = -0.0
    sub = (u() * np.float32(1e-40)).astype(np.float32)
    g = lambda: (rng.standard_normal((64, 256)) * 0.02).astype(np.float32)

    def spike(a, v):
        a[0, 0] = np.float32(v)
        return a

    def tiny_group(a, amax):
        a[0, :128] = (rng.uniform(-1, 1, 128) * 1e-9).astype(np.float32)
        a[0, 5] = amax
        return a
    write_safetensors(sys.argv[1], {
        "edge.huge.weight": u() * np.float32(1e6),
        "edge.huge8.weight": u() * np.float32(1e7),
        "edge.tiny.weight": u() * np.float32(1e-9),
        "edge.zero.weight": zero,
        "edge.subnormal.weight": sub,
        "edge.normal.weight": g(),
        "edge.at65504.weight": spike(g(), 458632.0),
        "edge.over65504.weight": spike(g(), 458640.0),
        "edge.under.weight": tiny_group(g(), np.float32(127 * 2.0**-25)),
        "edge.notunder.weight": tiny_group(g(), np.nextafter(np.float32(127 * 2.0**-25),
                                                             np.float32(1))),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
