#!/usr/bin/env python3
"""Writes a Llama-8B-shaped bf16 safetensors file of N layers (random normal
weights, std 0.02) for the streaming benchmark: a real file on disk, so the
GPU path has to move every byte host -> device.

    python3 bench/make_llama_layers.py OUT.safetensors [LAYERS]
"""
import json
import struct
import sys

import numpy as np

SHAPES = [("self_attn.q_proj", (4096, 4096)), ("self_attn.k_proj", (1024, 4096)),
          ("self_attn.v_proj", (1024, 4096)), ("self_attn.o_proj", (4096, 4096)),
          ("mlp.gate_proj", (14336, 4096)), ("mlp.up_proj", (14336, 4096)),
          ("mlp.down_proj", (4096, 14336))]


def main():
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rng = np.random.default_rng(0)
    header, offset, names = {}, 0, []
    for layer in range(layers):
        for part, shape in SHAPES:
            name = f"model.layers.{layer}.{part}.weight"
            n = shape[0] * shape[1] * 2
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
            names.append((name, shape))
            offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, shape in names:
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            # bf16 by truncation of the float32 bits (fine for a benchmark input)
            f.write((w.view(np.uint32) >> 16).astype(np.uint16).tobytes())
    print(f"wrote {out}: {layers} layers, {offset / 1e9:.2f} GB of bf16")


if __name__ == "__main__":
    main()
