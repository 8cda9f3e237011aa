#!/usr/bin/env python3
"""Optional cross-check (ctest label `optional`): NVFP4 and MX quantize-
dequantize against compressed-tensors' and torchao's implementations.

Needs torch, compressed-tensors and torchao (CPU is enough); exits 77 when
they are missing. See docs/crosscheck.md for how to run it and the result.

Deliberate differences from the references, named and checked separately:
  nvfp4 vs both references:
    - lower clamp of block scales: docs/formats.md lets a group whose E4M3 scale
      rounds to 0 reconstruct to 0; compressed-tensors replaces a zero scale
      by the E4M3 eps (0.125), torchao clamps every block scale to E4M3's
      smallest normal (2^-6), so its groups with a subnormal scale (2^-9 ..
      2^-7) take coarser codes. Checked: zero-scale groups are all 0 here;
      subnormal-scale groups are compared with compressed-tensors (which
      keeps them) and only counted against torchao.
    - dequantization order: docs/formats.md writes E2M1(x * gs / s) * s / gs;
      compressed-tensors computes x / (s / gs) and code * (s / gs); torchao
      uses x * ((1 / pts) / s) and code * s * pts with pts = amax / 2688.
      The E2M1 codes and E4M3 scales agree; the reconstructions differ in the
      last bits. Checked: the same code everywhere (relative difference far
      below one E2M1 step), and |difference| <= 4 ulp.
  mx (torchao, ScaleCalculationMode.FLOOR, the OCP MX v1.0 rule): none;
    reconstructions must be bit-identical.
"""
import os
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
try:
    import logging
    logging.disable(logging.WARNING)
    import numpy as np
    import torch
    from torchao.prototype.mx_formats.mx_tensor import MXTensor
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import fake_quantize
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam
except Exception as e:  # ImportError, or a torch that cannot load
    print(f"skipped: {type(e).__name__}: {e} "
          "(pip install torch compressed-tensors torchao)")
    sys.exit(77)

DUMP = sys.argv[1]
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def ours(cfg, x):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        x.numpy().astype("<f4").tofile(src)
        subprocess.run([DUMP, "quantize", cfg, str(x.shape[0]), str(x.shape[1]), src, dst],
                       check=True)
        return torch.from_numpy(np.fromfile(dst, dtype="<f4").reshape(x.shape))


def tensors():
    g = torch.Generator().manual_seed(1234)
    yield "gaussian 128x1024", torch.randn(128, 1024, generator=g) * 0.02
    yield "gaussian 64x4096", torch.randn(64, 4096, generator=g)
    t = torch.distributions.StudentT(3.0).sample((256, 512))
    yield "student-t3 256x512", t.float()
    x = torch.randn(32, 256, generator=g) * 100.0
    x[:, :16] = 0.0           # all-zero groups / blocks
    x[:, 32:48] *= 1e-9       # groups whose NVFP4 scale underflows E4M3
    x[:, 64:80] *= 1e-5       # groups whose NVFP4 scale is an E4M3 subnormal
    x[:, 96:112] *= 3e-5
    yield "zero, tiny and small groups 32x256", x


def ulp_diff(a, b):
    ai = a.view(torch.int32).to(torch.int64)
    bi = b.view(torch.int32).to(torch.int64)
    ai = torch.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = torch.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    return (ai - bi).abs()


def compare_nvfp4(tag, ref_name, x, ref, o, clamps_subnormal_scales):
    groups = x.reshape(x.shape[0], -1, 16)
    gs = 448.0 * 6.0 / x.abs().max()
    s = (groups.abs().amax(-1) / 6.0 * gs).to(torch.float8_e4m3fn).float()
    per_elem = lambda m: m.unsqueeze(-1).expand_as(groups).reshape(x.shape)
    # groups that reconstruct to 0 here because their E4M3 scale rounds to 0
    mask = per_elem(s == 0)
    if (o[mask] != 0).any():
        fail(f"nvfp4 {tag}: a group with a zero scale is not 0")
    n_clamped = int((ref[mask] != 0).sum())
    keep = ~mask
    if clamps_subnormal_scales:
        sub = per_elem((s > 0) & (s < 2.0 ** -6))
        n_sub, n_sub_diff = int(sub.sum()), int((o[sub] != ref[sub]).sum())
        keep &= ~sub
        print(f"  torchao's 2^-6 clamp: {n_sub} elements in groups with a subnormal scale, "
              f"{n_sub_diff} of them reconstruct differently (named difference)")
    a, b = o[keep], ref[keep]
    rel = (a - b).abs() / torch.maximum(a.abs(), b.abs()).clamp_min(1e-38)
    code_diff = int((rel > 1e-5).sum())
    ulps = ulp_diff(a, b)
    identical = float((a == b).float().mean())
    if code_diff:
        fail(f"nvfp4 {tag}: {code_diff} elements take another code than {ref_name}")
    if int(ulps.max()) > 4:
        fail(f"nvfp4 {tag}: {int(ulps.max())} ulp from {ref_name}")
    print(f"nvfp4 vs {ref_name}, {tag}: codes equal on all {a.numel()} elements, "
          f"{identical:.1%} bit-identical, max {int(ulps.max())} ulp; {int(mask.sum())} elements "
          f"in zero-scale groups ({n_clamped} nonzero in {ref_name}: lower clamp)")


def check_nvfp4(tag, x):
    o = ours("nvfp4", x)
    # compressed-tensors (the NVFP4 preset's weight arguments)
    args = QuantizationArgs(num_bits=4, type="float", strategy="tensor_group", group_size=16,
                            symmetric=True, scale_dtype=torch.float8_e4m3fn,
                            zp_dtype=torch.float8_e4m3fn)
    gs = generate_gparam(x.min(), x.max())
    xg = x.reshape(x.shape[0], -1, 16)
    scale, zp = calculate_qparams(xg.amin(-1), xg.amax(-1), args, global_scale=gs)
    ref = fake_quantize(x, scale, zp, args, global_scale=gs)
    compare_nvfp4(tag, "compressed-tensors", x, ref, o, False)
    # torchao
    t = NVFP4Tensor.to_nvfp4(x.contiguous(), per_tensor_scale=per_tensor_amax_to_scale(x.abs().max()))
    compare_nvfp4(tag, "torchao", x, t.dequantize(torch.float32), o, True)


MX = [("mxfp4", torch.float4_e2m1fn_x2), ("mxfp8-e4m3", torch.float8_e4m3fn),
      ("mxfp8-e5m2", torch.float8_e5m2)]


def check_mx(tag, x):
    for cfg, dt in MX:
        ref = MXTensor.to_mx(x.contiguous(), dt, block_size=32,
                             scaling_mode=ScaleCalculationMode.FLOOR).dequantize(torch.float32)
        o = ours(cfg, x)
        same = (o == ref)
        if not same.all():
            fail(f"{cfg} {tag}: {int((~same).sum())} elements differ from torchao")
        else:
            print(f"{cfg} vs torchao (FLOOR), {tag}: all {x.numel()} elements bit-identical")


for tag, x in tensors():
    check_nvfp4(tag, x)
    check_mx(tag, x)
print(f"{failures} failed" if failures else "all cross-checks against compressed-tensors and torchao passed")
sys.exit(1 if failures else 0)
