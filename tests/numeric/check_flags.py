#!/usr/bin/env python3
"""Checks the /results `flags` of a sweep of make_edge_model.py's checkpoint
against an independent computation in numpy (docs/dataset.md "Numeric
flags", docs/formats.md for the scale rules), and the sweep's warning lines.

  check_flags.py MODEL.safetensors RUN.h5 SWEEP_STDERR     exit 1 on a difference
"""
import json
import re
import struct
import sys

import h5py
import numpy as np

CHECKED, ALL_ZERO, SUBNORMAL, NEG_ZERO, OVER, UNDER, UNCHECKED = 1, 2, 4, 8, 16, 32, 64


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, t in header.items():
            a, b = t["data_offsets"]
            f.seek(base + a)
            out[name] = np.frombuffer(f.read(b - a), "<f4").reshape(t["shape"])
    return out


def groups(w, g):
    """Per group of g along each row: (amax, hi, lo), float32."""
    rows, cols = w.shape
    pad = -cols % g
    x = np.pad(w, ((0, 0), (0, pad)))  # zeros do not change amax, max(.,0), min(.,0)
    x = x.reshape(rows, -1, g)
    return (np.abs(x).max(axis=2), np.maximum(x.max(axis=2), 0), np.minimum(x.min(axis=2), 0))


def int_expected(w, bits, g, sym):
    amax, hi, lo = groups(w, g)
    with np.errstate(over="ignore", under="ignore"):
        if sym:
            q = amax / np.float32(2 ** (bits - 1) - 1)
            nonzero = amax > 0
        else:
            r = (hi - lo).astype(np.float32)
            q = r / np.float32(2 ** bits - 1)
            nonzero = r > 0
        s16 = q.astype(np.float32).astype(np.float16)  # round to nearest even
    f = 0
    if np.isinf(s16).any():  # rounds past 65504
        f |= OVER
    if (nonzero & (s16 == 0)).any():
        f |= UNDER
    return f


def expected(name, w, config):
    u = w.view(np.uint32)
    mag = u & 0x7FFFFFFF
    f = CHECKED
    if (mag == 0).all():
        f |= ALL_ZERO
    if ((mag != 0) & (mag < 0x00800000)).any():
        f |= SUBNORMAL
    if (u == 0x80000000).any():
        f |= NEG_ZERO
    m = re.fullmatch(r"int(\d)-g(\d+|C)-(sym|asym)", config)
    if m:
        g = w.shape[1] if m.group(2) == "C" else int(m.group(2))
        return f | int_expected(w, int(m.group(1)), g, m.group(3) == "sym")
    if config.startswith("mse-"):
        return f | UNCHECKED  # a wrapped variant: its scales are searched, not predicted
    if config == "nvfp4":
        # gs = fp32(448 * 6 / amax_tensor) at most FLT_MAX; s = e4m3(amax_g / 6 * gs),
        # which is 0 for a quotient <= 2^-10 (half the smallest subnormal, ties to even)
        amax_t = np.float32(np.abs(w).max())
        gs = np.float32(1)
        if amax_t > 0:
            with np.errstate(over="ignore"):
                gs = np.float32(2688) / amax_t
            if not np.isfinite(gs):
                gs = np.finfo(np.float32).max
                f |= OVER  # the fp32 global scale saturates
        amax, _, _ = groups(w, 16)
        with np.errstate(under="ignore"):
            v = (amax / np.float32(6)) * gs
        if ((amax > 0) & (v <= np.float32(2.0**-10))).any():
            f |= UNDER
        if (v > 464).any():
            f |= OVER
        return f
    return f  # fp8 (fp32 scales), nf4, mxfp4 on these tensors: nothing expected


def main():
    model, run, log = sys.argv[1:4]
    tensors = read_safetensors(model)
    failures = 0
    with h5py.File(run, "r") as f:
        tn = {int(t["tensor_id"]): t["name"].decode() for t in f["tensors"][()]}
        cn = {int(c["config_id"]): c["name"].decode() for c in f["configs"][()]}
        rows = f["results"][()]
    seen = set()
    for r in rows:
        t, c = tn[int(r["tensor_id"])], cn[int(r["config_id"])]
        want = expected(t, tensors[t], c)
        if c == "mxfp4" and t == "edge.subnormal.weight":
            want |= UNDER  # e8m0 exponent floor(log2 amax) - 2 < -127
        got = int(r["flags"])
        seen.add((t, c))
        if got != want:
            print(f"FAIL: {t} {c}: flags {got:#x}, expected {want:#x}")
            failures += 1
    print(f"{len(seen)} rows checked against numpy")
    # the warning lines: one per (tensor, kind), each kind where it is due
    text = open(log).read()
    lines = [l for l in text.splitlines() if "warning:" in l]
    want_lines = {
        ("edge.huge.weight", "fp16 scales overflow"): 1,
        ("edge.huge8.weight", "fp16 scales overflow"): 1,
        ("edge.over65504.weight", "fp16 scales overflow"): 1,
        ("edge.tiny.weight", "fp16 scales underflow"): 1,
        ("edge.under.weight", "fp16 scales underflow"): 1,
        ("edge.subnormal.weight", "fp16 scales underflow"): 1,
        ("edge.zero.weight", "every value is zero"): 1,
        ("edge.subnormal.weight", "holds float32 subnormal"): 1,
        ("edge.subnormal.weight", "global scale saturates"): 1,
        ("edge.subnormal.weight", "e8m0 scale exponents are clamped"): 1,
        ("edge.at65504.weight", "fp16"): 0,
        ("edge.normal.weight", ""): 0,
    }
    for (t, kind), n in want_lines.items():
        got = sum(1 for l in lines if f"'{t}'" in l and kind in l)
        if got != n:
            print(f"FAIL: {got} warning line(s) for {t} '{kind}', expected {n}")
            failures += 1
    def named(tensor, kind, config):
        return any(f"'{tensor}'" in l and kind in l and re.search(rf"[ ,]{config}[,:( ]", l)
                   for l in lines)
    for tensor, kind, config, want in (
            ("edge.huge.weight", "fp16 scales overflow", "int4-g128-sym", True),
            ("edge.huge.weight", "fp16 scales overflow", "int8-g128-sym", False),  # 1e6/127 fits
            ("edge.huge8.weight", "fp16 scales overflow", "int8-g128-sym", True),
            ("edge.over65504.weight", "fp16 scales overflow", "int4-g128-sym", True),
            ("edge.under.weight", "fp16 scales underflow", "int8-g128-sym", True),
            ("edge.notunder.weight", "fp16 scales underflow", "int8-g128-sym", False)):
        if named(tensor, kind, config) != want:
            print(f"FAIL: {config} {'not ' if want else ''}named in '{kind}' of {tensor}")
            failures += 1
    print(f"{len(lines)} warning lines checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
