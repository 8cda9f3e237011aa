#!/usr/bin/env python3
"""compressed-tensors' own decompressor against frontier (optional: torch and
compressed-tensors; exits 77, a skip, without them).

For each configuration: `frontier quantize --format compressed-tensors` and
`--format dequantized --fused-global-scale` of the same model; the config.json
must validate as compressed-tensors' QuantizationConfig (pydantic, extra fields
forbidden), and every quantized module decompressed by the compressor that
compressed-tensors registers for its format must equal frontier's dequantized
tensor: bit for bit for pack-quantized and float-quantized (both compute
code * scale in float32), within 2 ulp for nvfp4-pack-quantized (compressed-
tensors computes code * (scale / global_scale) and returns bfloat16, frontier
(code * scale) / global_scale in float32: compared in bfloat16, at most 1 ulp
apart), and bit for bit for mxfp4-pack-quantized (its decompressor returns
bfloat16 too, but code * 2^(e - 127) is exact in bfloat16). For mxfp4 the
stored scale bytes are also checked against frontier's rule (e + 127 with e =
floor(log2 amax) - 2 over each block of 32 of the input).

usage: crosscheck_ct.py FRONTIER MODEL_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    from safetensors.torch import load_file
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
except ImportError as e:  # the optional group
    print(f"SKIP: {e} (pip install torch compressed-tensors)")
    sys.exit(77)

CASES = [
    # (config or recipe, extra arguments)
    ("nvfp4", ["--exclude", "down_proj"]),
    ("int4-g32-asym", ["--exclude", "down_proj"]),
    ("int3-g64-sym", ["--exclude", "down_proj"]),
    ("int5-gC-asym", []),
    ("int7-gC-sym", []),
    ("int8-g32-sym", ["--exclude", "down_proj"]),
    ("fp8-e4m3-tensor", []),
    ("fp8-e4m3-channel", []),
    ("fp8-e4m3-block128", []),
    ("mxfp4", ["--exclude", "down_proj"]),
    ("nvfp4-fused", ["--include", "(q|k|v|gate|up)_proj"]),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{r.stdout}{r.stderr}")


def ulps(a, b):
    ai = a.view(np.int32).astype(np.int64)
    bi = b.view(np.int32).astype(np.int64)
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = np.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    return np.abs(ai - bi)


def main():
    frontier, model, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = 0
    for config, extra in CASES:
        ct = os.path.join(work, f"ct-{config}")
        dq = os.path.join(work, f"dq-{config}")
        run([frontier, "-q", "quantize", model, "--config", config, *extra, "-o", ct,
             "--format", "compressed-tensors", "--force", "--summary"])
        run([frontier, "-q", "quantize", model, "--config", config, *extra, "-o", dq,
             "--format", "dequantized", "--fused-global-scale", "--force", "--summary"])
        qc = QuantizationConfig.model_validate(
            json.load(open(os.path.join(ct, "config.json")))["quantization_config"])
        sd = load_file(os.path.join(ct, "model.safetensors"))
        ref = load_file(os.path.join(dq, "model.safetensors"))
        worst, n = 0, 0
        for scheme in qc.config_groups.values():
            cls = BaseCompressor.get_value_from_registry(scheme.format)
            for module in scheme.targets:
                local = {k[len(module) + 1:]: v for k, v in sd.items()
                         if k.startswith(module + ".")}
                got_t = cls.decompress(local, scheme)["weight"]
                want_t = ref[module + ".weight"].to(torch.float32)
                if got_t.dtype == torch.bfloat16:
                    # compressed-tensors' nvfp4 decompressor returns bfloat16:
                    # compare in bfloat16 ulps with frontier's value rounded to it
                    got = got_t.view(torch.int16).numpy().astype(np.int64)
                    want = want_t.to(torch.bfloat16).view(torch.int16).numpy().astype(np.int64)
                    got = np.where(got < 0, -(got & 0x7FFF), got)
                    want = np.where(want < 0, -(want & 0x7FFF), want)
                    d = np.abs(got - want)
                    d[(got == 0) & (want == 0)] = 0
                else:
                    got = got_t.to(torch.float32).numpy()
                    want = want_t.numpy()
                    d = ulps(got.copy(), want.copy())
                    d[(got == 0) & (want == 0)] = 0  # -0 == +0
                worst = max(worst, int(d.max()))
                n += 1
        if qc.format == "mxfp4-pack-quantized":
            # the E8M0 byte of each block: frontier's floor rule, biased by 127
            src = load_file(os.path.join(model, "model.safetensors"))
            for scheme in qc.config_groups.values():
                for module in scheme.targets:
                    w = src[module + ".weight"].to(torch.float32).numpy()
                    amax = np.abs(w.reshape(w.shape[0], -1, 32)).max(axis=2)
                    e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2,
                                 -127).clip(-127, 127)
                    got = sd[module + ".weight_scale"].numpy().astype(np.int64)
                    if not np.array_equal(got, (e + 127).astype(np.int64)):
                        worst = max(worst, 1 << 20)
                        print(f"FAIL {module}.weight_scale is not e + 127")
        limit = 1 if qc.format == "nvfp4-pack-quantized" else 0
        ok = worst <= limit
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {config:20s} {qc.format:22s} {n} modules, "
              f"largest difference {worst} ulp (allowed {limit})")
    sys.exit(1 if failures else 0)


main()
