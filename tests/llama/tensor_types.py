#!/usr/bin/env python3
"""The llama.cpp tensor-type file beside a recipe, applied by the pinned
llama-quantize: every tensor the recipe gives a configuration with a
llama.cpp type is named in the file, and llama-quantize
--tensor-type-file writes each of them as that type (its llama_cpp_type in
the recipe), whatever the base type on its command line.

data/stories260K.gguf swept over the legacy ggml types (ffn_down, 172
columns, is left out: no 32-block type fits it), `frontier allocate
--budget B -o recipe.json` at three budgets, then `llama-quantize
--tensor-type-file recipe.tensor-types.txt MODEL OUT q8_0`; the types are
read back with gguf-py.

usage: tensor_types.py FRONTIER LLAMA_QUANTIZE DATA_DIR WORK_DIR
Exits 77 (skipped) without gguf-py.
"""
import json
import subprocess
import sys
from pathlib import Path

try:
    import gguf
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

CONFIGS = "ggml-q4_0,ggml-q4_1,ggml-q5_0,ggml-q5_1,ggml-q8_0,ggml-mxfp4"


def run(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def main():
    frontier, quantize, data, work = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    work.mkdir(parents=True, exist_ok=True)
    model = data / "stories260K.gguf"
    sweep = work / "sweep.h5"
    sweep.unlink(missing_ok=True)
    run(frontier, "sweep", model, "--quantizers", CONFIGS, "--exclude", "ffn_down", "-o", sweep)
    failures = 0
    for budget in ("4.6", "5.5", "7.0"):
        recipe = work / f"recipe-{budget}.json"
        types = work / f"recipe-{budget}.tensor-types.txt"
        out = work / f"out-{budget}.gguf"
        run(frontier, "allocate", sweep, "--budget", budget, "-o", recipe, "--no-store")
        r = json.loads(recipe.read_text())
        want = {t["name"]: t["llama_cpp_type"] for t in r["tensors"]}
        lines = [l for l in types.read_text().splitlines() if l]
        if len(lines) != len(want) or any(v is None for v in want.values()):
            print(f"FAIL: budget {budget}: {len(lines)} lines in {types.name} for "
                  f"{len(want)} tensors ({sum(v is None for v in want.values())} without a type)")
            failures += 1
            continue
        run(quantize, "--tensor-type-file", types, model, out, "q8_0")
        got = {t.name: t.tensor_type.name.lower() for t in gguf.GGUFReader(str(out)).tensors}
        bad = [(n, w, got.get(n)) for n, w in want.items() if got.get(n) != w]
        changed = sum(w != "q8_0" for w in want.values())
        if bad:
            print(f"FAIL: budget {budget}: {len(bad)} tensors not as the recipe says, e.g. {bad[:3]}")
            failures += 1
        else:
            print(f"budget {budget}: {len(want)} tensors as the recipe says "
                  f"({changed} of them not the base type q8_0)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
