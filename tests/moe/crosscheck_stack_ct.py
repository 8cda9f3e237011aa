#!/usr/bin/env python3
"""compressed-tensors' own unpacking of frontier's expert-stack layout
(optional: torch and compressed-tensors; exits 77, a skip, without them).

`frontier quantize --format compressed-tensors` of data/tiny-moe's stacks
[4, out, in] under int<b> channel and group configurations (sym and asym)
and fp8: compressed-tensors' `unpack_from_int32` (which unpacks an N-D
tensor slice by slice) on `<stack>_packed` with `<stack>_shape`, and on
`<stack>_zero_point` along dim 0, then (q - z) * s in float32, and the fp8
codes times their [E, ...] scales broadcast per expert, must equal
frontier's dequantized output of the same configuration bit for bit (both
rounded to the model's BF16).

usage: crosscheck_stack_ct.py FRONTIER DATA_DIR WORK_DIR
"""
import os
import subprocess
import sys

try:
    import torch
    from safetensors.torch import load_file
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
except ImportError as e:  # the optional group
    print(f"SKIP: {e} (pip install torch compressed-tensors)")
    sys.exit(77)

frontier, data, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
model = os.path.join(data, "tiny-moe")
env = dict(os.environ, FRONTIER_PLUGIN_PATH="none")
failures = 0
for config in ("int4-gC-sym", "int4-g32-asym", "int8-g64-sym", "int3-gC-asym", "int2-g32-asym",
               "fp8-e4m3-tensor", "fp8-e4m3-channel", "fp8-e4m3-block128"):
    outs = {}
    for fmt in ("compressed-tensors", "dequantized"):
        out = os.path.join(work, f"{config}-{fmt}")
        r = subprocess.run([frontier, "--quiet", "quantize", model, "--config", config, "--include",
                            r"layers\.0\.mlp\.experts", "--format", fmt, "-o", out, "--force"],
                           capture_output=True, text=True, env=env)
        if r.returncode:
            print(f"FAIL: {config} {fmt}: {r.stderr.strip()}")
            failures += 1
        outs[fmt] = load_file(os.path.join(out, "model.safetensors"))
    ct, dq = outs["compressed-tensors"], outs["dequantized"]
    bits = int(config[3]) if config.startswith("int") else 8
    for s in ("model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"):
        ref = dq[s].float()
        E, rows, cols = ref.shape
        if config.startswith("int"):
            shape = torch.Size(ct[s + "_shape"].tolist())
            q = unpack_from_int32(ct[s + "_packed"], bits, shape).float()
            scale = ct[s + "_scale"].float()
            groups = scale.shape[-1]
            if s + "_zero_point" in ct:
                z = unpack_from_int32(ct[s + "_zero_point"], bits, torch.Size([E, rows, groups]),
                                      packed_dim=0).float()
            else:
                z = torch.zeros_like(scale)
            per = cols // groups
            w = (q.view(E, rows, groups, per) - z[..., None]) * scale[..., None]
            w = w.view(E, rows, cols)
        else:
            codes = ct[s].float()
            scale = ct[s + "_scale"].float()
            if scale.shape == (E, 1):
                w = codes * scale[:, :, None]
            elif scale.shape == (E, rows, 1):
                w = codes * scale
            else:  # [E, ceil(rows/128), ceil(cols/128)] tiles
                full = scale.repeat_interleave(128, 1).repeat_interleave(128, 2)[:, :rows, :cols]
                w = codes * full
        got = w.to(torch.bfloat16).float()
        if not torch.equal(got, ref):
            bad = (got != ref).nonzero()[0].tolist()
            print(f"FAIL: {config} {s}: compressed-tensors' unpacking gives {got[tuple(bad)].item()!r} "
                  f"at {bad}, frontier's dequantized {ref[tuple(bad)].item()!r}")
            failures += 1
    if not failures:
        print(f"ok: {config}: both stacks unpacked by compressed-tensors equal frontier's dequantized")
sys.exit(1 if failures else 0)
