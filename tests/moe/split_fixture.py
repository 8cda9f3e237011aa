#!/usr/bin/env python3
"""Splits every 3-D expert stack of a safetensors file into E 2-D tensors
(the same bytes, named STACK.e.weight with the expert index inserted before
the last name component: `...experts.gate_up_proj` -> `...experts.gate_up_proj.3`),
and keeps every other tensor as it is. With --hf-names the experts are named
as a checkpoint with per-expert 2-D tensors names them
(`...experts.gate_up_proj` -> `...experts.3.gate_up_proj.weight`).
usage: split_fixture.py IN OUT [--hf-names]"""
import json
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
hf_names = "--hf-names" in sys.argv[3:]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    base = 8 + n
    data = f.read()
meta = header.pop("__metadata__", None)
out, blobs, offset = {}, [], 0
for name in sorted(header):
    h = header[name]
    b, e = h["data_offsets"]
    raw = data[b:e]
    if len(h["shape"]) == 3 and "experts" in name:
        E = h["shape"][0]
        per = len(raw) // E
        for x in range(E):
            if hf_names:
                head, _, proj = name.rpartition(".")
                split_name = f"{head}.{x}.{proj}.weight"
            else:
                split_name = f"{name}.{x}"
            out[split_name] = {"dtype": h["dtype"], "shape": h["shape"][1:],
                                  "data_offsets": [offset, offset + per]}
            blobs.append(raw[x * per:(x + 1) * per])
            offset += per
    else:
        out[name] = {"dtype": h["dtype"], "shape": h["shape"],
                     "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
if meta is not None:
    out["__metadata__"] = meta
text = json.dumps(out, sort_keys=True, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for b in blobs:
        f.write(b)
