#!/usr/bin/env python3
"""Writes small safetensors checkpoints for the tests (standard library + numpy).

  make_model.py nan OUT      a NaN and an Inf tensor beside finite ones
  make_model.py small OUT SEED   a finite model of four 2-D tensors and a norm
"""
import json
import struct
import sys

import numpy as np


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        dtype = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}[arr.dtype]
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
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
    kind, out = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rng = np.random.default_rng(seed)
    g = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float32)
    if kind == "nan":
        bad_nan, bad_inf = g(64, 64), g(32, 64)
        bad_nan[1, 36] = np.nan          # element 100
        bad_inf[0, 7] = np.inf
        bad_inf[3, 3] = -np.inf
        write_safetensors(out, {
            "model.layers.0.mlp.up_proj.weight": bad_nan,
            "model.layers.0.mlp.down_proj.weight": g(64, 64),
            "model.layers.0.self_attn.q_proj.weight": bad_inf,
            "model.layers.0.input_layernorm.weight": g(64),
            "model.position_ids": np.arange(16, dtype=np.int64).reshape(1, 16),
        })
    elif kind == "small":
        write_safetensors(out, {
            "model.layers.0.self_attn.q_proj.weight": g(64, 64),
            "model.layers.0.self_attn.k_proj.weight": g(32, 64),
            "model.layers.0.mlp.up_proj.weight": g(96, 64),
            "model.layers.0.mlp.down_proj.weight": g(64, 96),
            "model.norm.weight": g(64),
        })
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
