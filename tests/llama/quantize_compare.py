#!/usr/bin/env python3
"""`frontier quantize --format gguf` against the pinned llama.cpp's own
llama-quantize: every tensor of the file each writes, type and bytes.

Two one-layer llama-shaped GGUFs (written here with gguf-py: F16 attention
weights, F32 feed-forward ones and embeddings, gaussian and heavy-tailed),
one whose rows are multiples of 256 and one with stories260K's kind of rows,
which no super-block divides (96 columns: llama-quantize falls back to
Q4_0, Q5_0, Q5_1, Q8_0 or IQ4_NL; ffn_down's 172: to F16), and an
importance matrix for each in both of llama-imatrix's formats, the legacy
.dat and GGUF (the same means; every matrix but token_embd, as
llama-imatrix collects them). For Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and
IQ4_XS:

- `llama-quantize --pure MODEL OUT TYPE` and frontier with a recipe of
  ggml-<type> for every matrix: the same ggml type and the same bytes for
  every tensor;
- `llama-quantize --pure --imatrix FILE ...` and frontier with
  imat-ggml-<type> (token_embd, which the imatrix lacks, ggml-<type>) and
  `--calib FILE`, for FILE the .dat and the GGUF: the same.

usage: quantize_compare.py FRONTIER LLAMA_QUANTIZE WORK_DIR
Exits 77 (skipped) without gguf-py.
"""
import json
import struct
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import gguf
    from llama_gguf import llama_writer, write
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

TYPES = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS")
VOCAB = 256
# (name, DIM, FF): rows of 256n; rows no super-block divides
MODELS = (("llama256", 256, 512), ("fallback96", 96, 172))


def make_model(path, DIM, FF):
    rng = np.random.default_rng(20260502)
    w = llama_writer(path, DIM, FF, 1, 4, 4, VOCAB)
    matrices = {}

    def matrix(name, shape, heavy=False, f16=False):
        a = rng.standard_normal(shape).astype(np.float32) * 0.02
        if heavy:
            a /= np.sqrt(-np.log(rng.random(shape))).astype(np.float32)
        a[:, :16] *= 8.0  # columns of a larger scale, as real weights have
        a[3, :] = 0.0     # a row of zeros
        a = a.astype(np.float16) if f16 else a
        w.add_tensor(name, a)
        matrices[name] = shape[1]

    matrix("token_embd.weight", (VOCAB, DIM))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(DIM, np.float32))
    matrix("blk.0.attn_q.weight", (DIM, DIM), f16=True)
    matrix("blk.0.attn_k.weight", (DIM, DIM), heavy=True, f16=True)
    matrix("blk.0.attn_v.weight", (DIM, DIM), f16=True)
    matrix("blk.0.attn_output.weight", (DIM, DIM), f16=True)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(DIM, np.float32))
    matrix("blk.0.ffn_gate.weight", (FF, DIM))
    matrix("blk.0.ffn_up.weight", (FF, DIM), heavy=True)
    matrix("blk.0.ffn_down.weight", (DIM, FF))
    w.add_tensor("output_norm.weight", np.ones(DIM, np.float32))
    matrix("output.weight", (VOCAB, DIM))
    write(w)
    return matrices


def make_imatrix(dat, path_gguf, matrices):
    rng = np.random.default_rng(7)
    entries = {n: c for n, c in matrices.items() if n != "token_embd.weight"}
    means = {}
    for name, cols in entries.items():
        means[name] = np.exp(2.0 * rng.standard_normal(cols)).astype(np.float32)
        means[name][5] = 0.0  # a column no token reached
    # legacy .dat: int32 count; per entry int32 name length, name, int32
    # ncall, int32 nval, nval float32 sums (mean x^2 times ncall)
    out = struct.pack("<i", len(entries))
    ncall = 7
    for name, cols in entries.items():
        out += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, cols)
        out += (means[name] * np.float32(ncall)).astype("<f4").tobytes()
    Path(dat).write_bytes(out)
    # GGUF: general.type imatrix, <name>.in_sum2 [in] and <name>.counts [1]
    # (tokens), the chunk keys llama-quantize requires
    tokens = 512
    w = gguf.GGUFWriter(str(path_gguf), "imatrix")
    w.add_type("imatrix")
    w.add_array("imatrix.datasets", ["quantize_compare.py"])
    w.add_uint32("imatrix.chunk_count", 4)
    w.add_uint32("imatrix.chunk_size", 128)
    for name in entries:
        w.add_tensor(f"{name}.in_sum2", (means[name] * np.float32(tokens)).reshape(1, -1))
        w.add_tensor(f"{name}.counts", np.full((1, 1), tokens, np.float32))
    write(w)
    return set(entries)


def tensors(path):
    r = gguf.GGUFReader(str(path))
    return {t.name: (t.tensor_type.name, np.asarray(t.data).tobytes()) for t in r.tensors}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(map(str, cmd))}: exit {r.returncode}\n{r.stderr[-2000:]}",
              flush=True)
        return False
    return True


def compare_model(frontier, llama_quantize, work, name, dim, ff):
    """Returns (failures, tensors compared, their bytes)."""
    model, dat = work / f"{name}.gguf", work / f"{name}.imatrix.dat"
    imatrix_gguf = work / f"{name}.imatrix.gguf"
    matrices = make_model(model, dim, ff)
    in_imatrix = make_imatrix(dat, imatrix_gguf, matrices)
    failures, compared, nbytes = 0, 0, 0
    for ty in TYPES:
        cfg = f"ggml-{ty.lower()}"
        for imatrix in (None, dat, imatrix_gguf):
            weighted = imatrix is not None
            label = f"{name} {ty}{' --imatrix ' + imatrix.suffix[1:] if weighted else ''}"
            tag = label.replace(" ", "_")
            theirs, ours = work / f"llama-{tag}.gguf", work / f"frontier-{tag}.gguf"
            cmd = [llama_quantize, "--pure"]
            if weighted:
                cmd += ["--imatrix", str(imatrix)]
            if not run(cmd + [str(model), str(theirs), ty]):
                failures += 1
                continue
            recipe = {n: (f"imat-{cfg}" if weighted and n in in_imatrix else cfg)
                      for n in matrices}
            rpath = work / f"recipe-{tag}.json"
            rpath.write_text(json.dumps({"format": "frontier-recipe", "recipe": recipe}))
            cmd = [frontier, "quantize", str(model), "--recipe", str(rpath), "--format", "gguf",
                   "-o", str(ours), "--force"]
            if weighted:
                cmd += ["--calib", str(imatrix)]
            if not run(cmd):
                failures += 1
                continue
            a, b = tensors(theirs), tensors(ours)
            if not weighted:
                plain = a
            elif a == plain and any(a[n][0] not in ("Q8_0", "F16") for n in in_imatrix):
                # the importance matrix was read and used (Q8_0 and F16 take none)
                print(f"FAIL: {label}: llama-quantize wrote the blocks it writes without one")
                failures += 1
            if set(a) != set(b):
                print(f"FAIL: {label}: tensors {sorted(set(a) ^ set(b))} in one file only")
                failures += 1
            for tname in sorted(set(a) & set(b)):
                if a[tname][0] != b[tname][0]:
                    print(f"FAIL: {label}: '{tname}' is {b[tname][0]}, llama-quantize's {a[tname][0]}")
                    failures += 1
                elif a[tname][1] != b[tname][1]:
                    x = np.frombuffer(a[tname][1], np.uint8)
                    y = np.frombuffer(b[tname][1], np.uint8)
                    at = int(np.flatnonzero(x != y)[0]) if x.size == y.size else -1
                    print(f"FAIL: {label}: '{tname}' ({a[tname][0]}) differs from byte {at}")
                    failures += 1
                elif tname in matrices:
                    compared += 1
                    nbytes += len(a[tname][1])
            print(f"ok {label}: {len(matrices)} matrices, types "
                  f"{' '.join(sorted({a[n][0] for n in matrices}))}", flush=True)
    return failures, compared, nbytes


def main():
    frontier, llama_quantize, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    failures, compared, nbytes = 0, 0, 0
    for name, dim, ff in MODELS:
        f, c, b = compare_model(frontier, llama_quantize, work, name, dim, ff)
        failures, compared, nbytes = failures + f, compared + c, nbytes + b
    if failures:
        print(f"quantize_compare: {failures} failures", flush=True)
        return 1
    print(f"quantize_compare: {compared} quantized tensors ({nbytes} bytes) equal to "
          "llama-quantize's", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
