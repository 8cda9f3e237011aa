#!/usr/bin/env python3
"""Copies a safetensors file keeping only some of its tensors (byte for
byte, the metadata kept), for tests that need statistics with a module
missing or with the diagonal alone.

  safetensors_filter.py SRC DST (--keep REGEX | --drop REGEX)

--keep: the tensors whose name matches REGEX (re.search); --drop: all but
those. Fails when the filter removes nothing or everything.
"""
import json
import re
import struct
import sys


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("--keep", "--drop"):
        sys.exit(__doc__.split("\n\n")[1])
    src, dst, how, pattern = sys.argv[1:]
    b = open(src, "rb").read()
    n = struct.unpack_from("<Q", b)[0]
    head = json.loads(b[8:8 + n])
    names = [k for k in head if k != "__metadata__"]
    kept = [k for k in names if bool(re.search(pattern, k)) == (how == "--keep")]
    if not kept or len(kept) == len(names):
        sys.exit(f"safetensors_filter.py: {how} {pattern!r} keeps {len(kept)} of {len(names)} tensors")
    out, blobs, off = {}, [], 0
    if "__metadata__" in head:
        out["__metadata__"] = head["__metadata__"]
    for k in kept:
        lo, hi = head[k]["data_offsets"]
        blobs.append(b[8 + n + lo:8 + n + hi])
        out[k] = dict(head[k], data_offsets=[off, off + hi - lo])
        off += hi - lo
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    main()
