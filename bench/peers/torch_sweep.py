#!/usr/bin/env python3
"""The peer of benchmark (2) (docs/gpu.md): the rel_err of every data-free
configuration of docs/formats.md with nominal bits 2..8 on one tensor,
computed the plain way in PyTorch eager on the GPU: a loop over the
configurations, each a few tensor operations on the whole tensor, no fusion,
no custom kernels. It is written to be correct and reasonable, not slow:
grouped views instead of Python loops, torch's own float8 and float16 casts
where they round as the format says, one device synchronisation per pass.

usage: torch_sweep.py --tensor W.bin --rows R --cols C [--passes N] --json OUT.json

W.bin holds the tensor as raw little-endian bf16, row-major (bench_gpu fused
--write-tensor writes it). The JSON has each configuration's rel_err, the
time of every configuration and the total of the fastest pass.
"""
import argparse
import json
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    print("SKIP: python3 has no torch")
    sys.exit(77)

NF4_CODES = [-1.0, -0.6961928, -0.5250731, -0.3949175, -0.2844414, -0.1847734,
             -0.0910500, 0.0, 0.0795803, 0.1609302, 0.2461123, 0.3379152,
             0.4407098, 0.5626170, 0.7229568, 1.0]

# element formats: (mantissa bits, smallest normal exponent, largest finite value)
E4M3 = (3, -6, 448.0)
E5M2 = (2, -14, 57344.0)
E3M2 = (2, -2, 28.0)
E2M3 = (3, 0, 7.5)
E2M1 = (1, 0, 6.0)


def configs():
    out = []
    for b in range(2, 9):
        for g in ("32", "64", "128", "256", "C", "tensor"):
            for sym in ("sym", "asym"):
                name = f"int{b}-tensor-{sym}" if g == "tensor" else f"int{b}-g{g}-{sym}"
                out.append((name, "int", dict(bits=b, group=g, sym=sym == "sym")))
    for ename, fmt in (("e4m3", E4M3), ("e5m2", E5M2)):
        for gran in ("tensor", "channel", "block128"):
            out.append((f"fp8-{ename}-{gran}", "fp8", dict(fmt=fmt, gran=gran)))
    out.append(("nvfp4", "nvfp4", {}))
    for name, fmt, emax in (("mxfp8-e4m3", E4M3, 8), ("mxfp8-e5m2", E5M2, 15),
                            ("mxfp6-e3m2", E3M2, 4), ("mxfp6-e2m3", E2M3, 2),
                            ("mxfp4", E2M1, 2), ("mxint8", None, 0)):
        out.append((name, "mx", dict(fmt=fmt, emax=emax)))
    out.append(("nf4-g64", "nf4", dict(dq=False)))
    out.append(("nf4-g64-dq", "nf4", dict(dq=True)))
    return out


def groups(w, g):
    """[rows, cols] -> [rows, ceil(cols/g), g], zero padded (zeros change no
    amax, and lo/hi include 0 anyway)."""
    rows, cols = w.shape
    pad = (-cols) % g
    if pad:
        w = torch.nn.functional.pad(w, (0, pad))
    return w.view(rows, -1, g)


def ungroup(x, cols):
    return x.reshape(x.shape[0], -1)[:, :cols]


def pow2(e):
    """2^e for integer e, exact in float32 (2^-127 included: exp2 of an
    integer is exact in double, and every such power is a float32)."""
    return torch.exp2(e.double()).float()


def round_minifloat(y, fmt):
    """Nearest value of the element format, ties to even, saturating."""
    mbits, emin, fmax = fmt
    a = y.abs()
    _, e = torch.frexp(a)                 # a = m * 2^e, m in [0.5, 1): floor(log2 a) = e - 1
    e = torch.clamp(e - 1, min=emin)
    step = pow2(e - mbits)
    r = torch.round(a / step) * step
    r = torch.clamp(r, max=fmax)
    return torch.copysign(r, y)


def q_int(w, bits, group, sym):
    rows, cols = w.shape
    if group == "tensor":
        x = w.view(1, 1, -1)
    elif group == "C":
        x = w.view(rows, 1, cols)
    else:
        x = groups(w, int(group))
    if sym:
        qmax = 2.0 ** (bits - 1) - 1
        amax = x.abs().amax(-1, keepdim=True)
        s = amax / qmax
        if group != "tensor":
            s = s.half().float()          # fp16 scale
        q = torch.clamp(torch.round(x / s), -qmax, qmax)
        xh = torch.where(s == 0, torch.zeros_like(x), q * s)
    else:
        levels = 2.0 ** bits - 1
        lo = x.amin(-1, keepdim=True).clamp(max=0)
        hi = x.amax(-1, keepdim=True).clamp(min=0)
        s = (hi - lo) / levels
        if group != "tensor":
            s = s.half().float()
        z = torch.clamp(torch.round(-lo / s), 0, levels)
        q = torch.clamp(torch.round(x / s) + z, 0, levels)
        xh = torch.where(s == 0, torch.zeros_like(x), (q - z) * s)
    if group == "tensor":
        return xh.view(rows, cols)
    if group == "C":
        return xh.view(rows, cols)
    return ungroup(xh, cols)


FP8_DTYPES = {E4M3: torch.float8_e4m3fn, E5M2: torch.float8_e5m2}


def fp8_cast(y, fmt):
    # clamp first: torch's cast does not saturate
    return y.clamp(-fmt[2], fmt[2]).to(FP8_DTYPES[fmt]).float()


def q_fp8(w, fmt, gran):
    rows, cols = w.shape
    if gran == "tensor":
        s = w.abs().amax() / fmt[2]
        return torch.where(s == 0, torch.zeros_like(w), fp8_cast(w / s, fmt) * s)
    if gran == "channel":
        s = w.abs().amax(1, keepdim=True) / fmt[2]
        return torch.where(s == 0, torch.zeros_like(w), fp8_cast(w / s, fmt) * s)
    pr, pc = (-rows) % 128, (-cols) % 128
    x = torch.nn.functional.pad(w, (0, pc, 0, pr))
    R, C = x.shape
    t = x.view(R // 128, 128, C // 128, 128)
    s = t.abs().amax(dim=(1, 3), keepdim=True) / fmt[2]
    xh = torch.where(s == 0, torch.zeros_like(t), fp8_cast(t / s, fmt) * s)
    return xh.view(R, C)[:rows, :cols]


def q_nvfp4(w):
    rows, cols = w.shape
    amax_t = w.abs().amax()
    gs = torch.where(amax_t > 0, 448.0 * 6.0 / amax_t, torch.ones_like(amax_t))
    x = groups(w, 16)
    amax = x.abs().amax(-1, keepdim=True)
    s = torch.clamp(amax / 6.0 * gs, max=448.0).to(torch.float8_e4m3fn).float()
    y = round_minifloat(x * gs / s, E2M1)
    xh = torch.where(s == 0, torch.zeros_like(x), y * s / gs)
    return ungroup(xh, cols)


def q_mx(w, fmt, emax):
    rows, cols = w.shape
    x = groups(w, 32)
    amax = x.abs().amax(-1, keepdim=True)
    _, e = torch.frexp(amax)
    e = torch.where(amax > 0, (e - 1 - emax).clamp(-127, 127), torch.full_like(e, -127))
    scale = pow2(e)
    y = x / scale
    if fmt is None:                        # MXINT8: k/64, k in -127..127
        r = torch.clamp(torch.round(y * 64.0), -127, 127) / 64.0
    else:
        r = round_minifloat(y, fmt)
    return ungroup(r * scale, cols)


def q_nf4(w, dq, codes):
    rows, cols = w.shape
    x = groups(w, 64)
    a = x.abs().amax(-1, keepdim=True)
    if dq:
        flat = a.reshape(-1)
        m = flat.double().mean().float()
        n = flat.numel()
        pad = (-n) % 256
        d = torch.nn.functional.pad(flat - m, (0, pad)).view(-1, 256)
        c = d.abs().amax(-1, keepdim=True) / 127.0
        k = torch.where(c != 0, torch.clamp(torch.round(d / c), -127, 127), torch.zeros_like(d))
        a = (k * c + m).reshape(-1)[:n].view(a.shape)
    y = x / a
    # nearest code, ties to the smaller one: argmin keeps the first minimum
    idx = torch.argmin((y.unsqueeze(-1) - codes).abs(), dim=-1)
    xh = torch.where(a == 0, torch.zeros_like(x), codes[idx] * a)
    return ungroup(xh, cols)


def run(w, cfgs, codes):
    out, secs = {}, {}
    w_norm = torch.linalg.norm(w)
    for name, family, p in cfgs:
        t0 = time.perf_counter()
        if family == "int":
            xh = q_int(w, p["bits"], p["group"], p["sym"])
        elif family == "fp8":
            xh = q_fp8(w, p["fmt"], p["gran"])
        elif family == "nvfp4":
            xh = q_nvfp4(w)
        elif family == "mx":
            xh = q_mx(w, p["fmt"], p["emax"])
        else:
            xh = q_nf4(w, p["dq"], codes)
        out[name] = torch.linalg.norm(w - xh) / w_norm
        torch.cuda.synchronize()
        secs[name] = time.perf_counter() - t0
    return {k: float(v) for k, v in out.items()}, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tensor", required=True)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=14336)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    raw = np.fromfile(args.tensor, dtype=np.uint16)
    if raw.size != args.rows * args.cols:
        print(f"torch_sweep: {args.tensor} holds {raw.size} bf16 values, not {args.rows} x {args.cols}")
        return 1
    dev = torch.device("cuda")
    w = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16).to(dev).view(args.rows, args.cols).float()
    codes = torch.tensor(NF4_CODES, dtype=torch.float32, device=dev)
    cfgs = configs()
    best = None
    for _ in range(max(1, args.passes)):  # the first pass also warms up (allocator, kernels)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        rel, secs = run(w, cfgs, codes)
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
        if best is None or total < best[0]:
            best = (total, rel, secs)
    total, rel, secs = best
    result = {
        "peer": "pytorch eager",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "rows": args.rows, "cols": args.cols,
        "n_configs": len(cfgs),
        "total_seconds": total,
        "configs": {k: {"rel_err": rel[k], "seconds": secs[k]} for k in rel},
    }
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"torch {torch.__version__} on {result['device']}: {len(cfgs)} configurations in "
          f"{total:.3f} s (fastest of {args.passes} passes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
