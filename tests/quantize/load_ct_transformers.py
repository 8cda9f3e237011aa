#!/usr/bin/env python3
"""frontier's compressed-tensors checkpoints loaded by transformers (optional:
torch, transformers and compressed-tensors; exits 77, a skip, without them).

For stories260K (LlamaForCausalLM, tied embedding): `frontier quantize
--format compressed-tensors` of several configurations and of a recipe that
`frontier allocate --target compressed-tensors` chose, and the same with
`--format dequantized --fused-global-scale` (the dequantized twin: the
compressed-tensors writer gives q/k/v and gate/up one NVFP4 global scale, as
vLLM loads them, docs/quantize.md "The fused-scale rule"). Each compressed-tensors folder
must load with AutoModelForCausalLM.from_pretrained (compressed-tensors
decompresses it: CompressedTensorsConfig(run_compressed=False)) and give the
twin's logits on the same tokens: within float32 rounding for the pack- and
float-quantized formats, within bfloat16 rounding of the weights for nvfp4
and mxfp4 (compressed-tensors decompresses those to bfloat16, and leaves
them so in this float32 model, whose forward then fails on the mixed dtypes:
the test casts the loaded model to float32), stated as a relative bound on
the logits below.

usage: load_ct_transformers.py FRONTIER DATA_DIR WORK_DIR
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import torch
    from transformers import AutoModelForCausalLM, CompressedTensorsConfig
    import compressed_tensors  # noqa: F401  (the loader transformers calls)
except ImportError as e:  # the optional group
    print(f"SKIP: {e} (pip install torch transformers compressed-tensors)")
    sys.exit(77)

# (name, quantize arguments, whether compressed-tensors rounds the weights to
# bfloat16). The bound on max |logits - twin| / max |twin|: 1e-5 when it
# does not; when it does (nvfp4: code * (scale / global_scale) computed in
# bfloat16, within 2 bfloat16 ulp of frontier's float32 value, as
# quantize.crosscheck_compressed_tensors checks weight by weight), twice what
# rounding the twin's Linear weights to bfloat16 does to its logits.
CASES = [
    ("int4-g32-asym", ["--config", "int4-g32-asym", "--exclude", "down_proj"], False),
    ("int8-gC-sym", ["--config", "int8-gC-sym"], False),
    ("fp8-e4m3-channel", ["--config", "fp8-e4m3-channel"], False),
    ("fp8-e4m3-block128", ["--config", "fp8-e4m3-block128"], False),
    ("nvfp4", ["--config", "nvfp4", "--exclude", "down_proj"], True),
    ("mxfp4", ["--config", "mxfp4", "--exclude", "down_proj"], False),  # exact in bfloat16
    ("nvfp4-fused", ["--config", "nvfp4-fused", "--include", "(q|k|v|gate|up)_proj"], True),
]

failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL: {msg}", flush=True)


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, args))}\n{r.stdout}{r.stderr}")
    return r


def logits(folder, compressed, bf16_linear=False):
    kw = {"torch_dtype": torch.float32}
    if compressed:
        kw["quantization_config"] = CompressedTensorsConfig(run_compressed=False)
    model = AutoModelForCausalLM.from_pretrained(str(folder), **kw)
    # compressed-tensors 0.20.1 leaves nvfp4 and mxfp4 weights decompressed
    # in bfloat16 in a float32 model, whose forward then fails ("expected
    # m1 and m2 to have the same dtype"); every bfloat16 value is a float32
    model = model.float()
    model.eval()
    if bf16_linear:  # the twin with its Linear weights rounded to bfloat16
        for mod in model.modules():
            if isinstance(mod, torch.nn.Linear) and mod is not model.get_output_embeddings():
                mod.weight.data = mod.weight.data.to(torch.bfloat16).float()
    ids = (torch.arange(1, 97, dtype=torch.long) * 37 % 509 + 3)[None, :]
    with torch.no_grad():
        return model(ids).logits.float()


def check(name, ct, dq, bf16):
    try:
        got = logits(ct, True)
    except Exception as e:  # a loader failure is this test's finding
        fail(f"{name}: transformers + compressed-tensors cannot load '{ct}': "
             f"{type(e).__name__}: {e}")
        return
    want = logits(dq, False)
    bound = 1e-5
    if bf16:
        rounded = logits(dq, False, bf16_linear=True)
        bound = max(bound, 2 * float((rounded - want).abs().max() / want.abs().max()))
    rel = float((got - want).abs().max() / want.abs().max())
    if not rel <= bound:
        fail(f"{name}: logits differ from the dequantized twin's by {rel:.3g} of their "
             f"largest (bound {bound:.3g})")
    else:
        print(f"ok: {name}: loads; logits within {rel:.2e} of the dequantized twin's "
              f"(bound {bound:.2e})", flush=True)


def main():
    frontier, data, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    model = data / "stories260K"
    for name, args, bf16 in CASES:
        ct, dq = work / f"{name}-ct", work / f"{name}-dq"
        run(frontier, "-q", "quantize", model, *args, "--format", "compressed-tensors", "-o", ct)
        run(frontier, "-q", "quantize", model, *args, "--format", "dequantized",
            "--fused-global-scale", "-o", dq)
        check(name, ct, dq, bf16)
    # a recipe allocate chose for the format: mixed schemes, the tied
    # embedding left as it is
    h5 = work / "run.h5"
    run(frontier, "-q", "sweep", model, "--quantizers",
        "nvfp4,int4-g32-sym,int8-gC-sym,fp8-e4m3-channel,mxfp4", "-o", h5)
    recipe = work / "recipe.json"
    run(frontier, "-q", "allocate", h5, "--budget", "5.5", "--target", "compressed-tensors",
        "--no-store", "-o", recipe)
    chosen = {t["config"] for t in json.loads(recipe.read_text())["tensors"]}
    ct, dq = work / "recipe-ct", work / "recipe-dq"
    run(frontier, "-q", "quantize", model, "--recipe", recipe, "--format", "compressed-tensors",
        "-o", ct)
    run(frontier, "-q", "quantize", model, "--recipe", recipe, "--format", "dequantized",
        "--fused-global-scale", "-o", dq)
    check(f"allocate --target compressed-tensors ({', '.join(sorted(chosen))})", ct, dq,
          bool(chosen & {"nvfp4", "nvfp4-fused"}))
    if failures:
        print(f"load_ct_transformers: {failures} failure(s)")
        return 1
    print("load_ct_transformers: every checkpoint loads in transformers + compressed-tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
