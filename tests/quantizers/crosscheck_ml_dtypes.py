#!/usr/bin/env python3
"""Cross-checks frontier's element-format rounding against ml_dtypes.

For each format, the inputs are every representable value (decoded by
ml_dtypes from every bit pattern), every midpoint between neighbours, the
floats just above and below each midpoint, values past the largest finite
value, and random floats across the format's range. fr_numerics_dump rounds
them with quantizers/numerics.h; ml_dtypes rounds them with its own casts.

Deliberate differences from ml_dtypes, named and checked separately:
  - saturation: past +-max (beyond the midpoint to the next, nonexistent,
    value) ml_dtypes gives NaN (float8_e4m3fn) or Inf (float8_e5m2);
    frontier saturates to +-max (docs/formats.md, "Element formats").
  - e8m0: the MX scale is 2^floor(log2 amax) (OCP MX v1.0 section 6.3);
    ml_dtypes' float8_e8m0fnu cast rounds to the nearest power of two.
    Checked: every code decodes the same, and frontier's scale equals
    ml_dtypes' cast of 2^floor(log2 x) (an exact power, so no rounding).
  - fp16 (numpy.float16): overflow to Inf past 65520; frontier saturates.
Usage: crosscheck_ml_dtypes.py PATH/TO/fr_numerics_dump
Exit 77 when numpy or ml_dtypes is missing.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e} (pip install numpy ml_dtypes)")
    sys.exit(77)

DUMP = sys.argv[1]
RNG = np.random.default_rng(20240601)

FORMATS = {
    # name: (ml_dtypes type, bits per code)
    "e4m3": (ml_dtypes.float8_e4m3fn, 8),
    "e5m2": (ml_dtypes.float8_e5m2, 8),
    "e3m2": (ml_dtypes.float6_e3m2fn, 6),
    "e2m3": (ml_dtypes.float6_e2m3fn, 6),
    "e2m1": (ml_dtypes.float4_e2m1fn, 4),
    "fp16": (np.float16, 16),
}

failures = 0


def fail(msg):
    global failures
    failures += 1
    if failures <= 30:
        print("FAIL:", msg)


def run_dump(fmt, x):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        x.astype("<f4").tofile(src)
        subprocess.run([DUMP, "round", fmt, src, dst], check=True)
        return np.fromfile(dst, dtype="<f4")


def representable(t, bits):
    if bits == 16:
        codes = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    else:
        codes = np.arange(1 << bits, dtype=np.uint8).view(t)
    v = codes.astype(np.float32)
    return np.unique(v[np.isfinite(v) & (v >= 0)])  # sorted, +0 once


def probes(values, fmax):
    mids = ((values[:-1].astype(np.float64) + values[1:]) / 2).astype(np.float32)
    up = np.nextafter(mids, np.float32(np.inf))
    down = np.nextafter(mids, np.float32(0))
    top_ulp = values[-1] - values[-2]
    past = np.array([np.nextafter(fmax, np.float32(np.inf)), fmax + top_ulp / 2,
                     np.nextafter(fmax + top_ulp / 2, np.float32(np.inf)),
                     fmax + top_ulp, 2 * fmax, 1e30, np.finfo(np.float32).max],
                    dtype=np.float32)
    rand = (RNG.uniform(-1, 1, 200000) * fmax * 1.2).astype(np.float32)
    tiny = (RNG.uniform(-1, 1, 20000) * values[1] * 4).astype(np.float32)
    x = np.concatenate([values, mids, up, down, past, rand, tiny])
    return np.concatenate([x, -x])


def check_format(name, t, bits):
    values = representable(t, bits)
    fmax = np.float32(values[-1])
    if fmax != np.float32(ml_dtypes.finfo(t).max if bits != 16 else np.finfo(np.float16).max):
        fail(f"{name}: largest representable {fmax} is not finfo.max")
    x = probes(values, fmax)
    ours = run_dump(name, x)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(t).astype(np.float32)
    beyond = ~np.isfinite(ref) | (np.abs(x) > fmax)
    # the named difference: saturation instead of NaN/Inf (float6/float4
    # saturate in ml_dtypes too; there both agree)
    sat_ok = np.abs(ours[beyond]) == fmax
    if not sat_ok.all():
        fail(f"{name}: {int((~sat_ok).sum())} values past max do not saturate")
    if (np.sign(ours[beyond]) != np.sign(x[beyond])).any():
        fail(f"{name}: saturation loses the sign")
    n_nonfinite_ref = int((~np.isfinite(ref)).sum())
    same = ours[~beyond].view(np.uint32) == ref[~beyond].view(np.uint32)  # sign of zero included
    if not same.all():
        bad = np.flatnonzero(~same)[:5]
        xs = x[~beyond][bad]
        fail(f"{name}: {int((~same).sum())} values differ, e.g. {xs} -> {ours[~beyond][bad]} vs "
             f"ml_dtypes {ref[~beyond][bad]}")
    print(f"{name}: {int(same.sum())} values identical to {t.__name__ if hasattr(t, '__name__') else t}; "
          f"{int(beyond.sum())} past max saturate ({n_nonfinite_ref} of them NaN/Inf in the reference)")


def check_e8m0():
    t = ml_dtypes.float8_e8m0fnu
    codes = np.arange(255, dtype=np.uint8).view(t).astype(np.float32)  # 255 is NaN
    # every code 0..254 is 2^(code-127); frontier's scale of an exact power is itself
    ours = run_dump("e8m0", codes)
    if not (ours == codes).all():
        fail("e8m0: a code does not decode to its own scale")
    k = np.arange(-149, 128)
    p = np.ldexp(np.float32(1), k).astype(np.float32)
    with np.errstate(over="ignore"):
        x = np.concatenate([p, p * np.float32(1.5), np.nextafter(p * 2, np.float32(0)),
                            (np.abs(RNG.standard_normal(200000)) *
                             10.0 ** RNG.integers(-40, 38, 200000)).astype(np.float32)])
    x = x[np.isfinite(x) & (x > 0)].astype(np.float32)
    ours = run_dump("e8m0", x)
    _, e = np.frexp(x)  # x = f * 2^e, f in [0.5, 1): floor(log2 x) = e - 1
    floor_pow = np.ldexp(np.float32(1), np.clip(e - 1, -127, 127)).astype(np.float32)
    ref = floor_pow.astype(t).astype(np.float32)
    if not (ours == ref).all():
        bad = np.flatnonzero(ours != ref)[:5]
        fail(f"e8m0: {x[bad]} -> {ours[bad]} vs ml_dtypes {ref[bad]}")
    nearest = x.astype(t).astype(np.float32)
    print(f"e8m0: {x.size} scales identical to float8_e8m0fnu(2^floor(log2 x)); "
          f"{int((nearest != ours).sum())} differ from ml_dtypes' round-to-nearest cast (named difference: "
          "MX floors)")


for fmt, (t, bits) in FORMATS.items():
    check_format(fmt, t, bits)
check_e8m0()
print(f"{failures} failed" if failures else "all cross-checks against ml_dtypes passed")
sys.exit(1 if failures else 0)
