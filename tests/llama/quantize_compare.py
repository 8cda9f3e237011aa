#!/usr/bin/env python3
"""`frontier quantize --format gguf` against the pinned llama.cpp's own
llama-quantize: every tensor of the file each writes, type and bytes.

A one-layer llama-shaped GGUF whose rows are multiples of 256 (written here
with gguf-py: F16 attention weights, F32 feed-forward ones and embeddings,
gaussian and heavy-tailed) and an importance matrix for it in both of
llama-imatrix's formats, the legacy .dat and GGUF (the same means; every
matrix but token_embd, as llama-imatrix collects them). For Q2_K, Q3_K,
Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS:

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
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

TYPES = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS")
DIM, FF, VOCAB = 256, 512, 256


def make_model(path):
    rng = np.random.default_rng(20260502)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(128)
    w.add_embedding_length(DIM)
    w.add_block_count(1)
    w.add_feed_forward_length(FF)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(64)
    w.add_vocab_size(VOCAB)
    w.add_file_type(1)
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
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
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
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
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


def main():
    frontier, llama_quantize, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    model, dat = work / "llama256.gguf", work / "llama256.imatrix.dat"
    imatrix_gguf = work / "llama256.imatrix.gguf"
    matrices = make_model(model)
    in_imatrix = make_imatrix(dat, imatrix_gguf, matrices)
    failures, compared, nbytes = 0, 0, 0
    for ty in TYPES:
        cfg = f"ggml-{ty.lower()}"
        for imatrix in (None, dat, imatrix_gguf):
            weighted = imatrix is not None
            label = f"{ty}{' --imatrix ' + imatrix.suffix[1:] if weighted else ''}"
            theirs, ours = work / f"llama-{label}.gguf", work / f"frontier-{label}.gguf"
            cmd = [llama_quantize, "--pure"]
            if weighted:
                cmd += ["--imatrix", str(imatrix)]
            if not run(cmd + [str(model), str(theirs), ty]):
                failures += 1
                continue
            recipe = {n: (f"imat-{cfg}" if weighted and n in in_imatrix else cfg)
                      for n in matrices}
            rpath = work / f"recipe-{label}.json"
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
            elif a == plain:  # the importance matrix was read and used
                print(f"FAIL: {label}: llama-quantize wrote the blocks it writes without one")
                failures += 1
            if set(a) != set(b):
                print(f"FAIL: {label}: tensors {sorted(set(a) ^ set(b))} in one file only")
                failures += 1
            for name in sorted(set(a) & set(b)):
                if a[name][0] != b[name][0]:
                    print(f"FAIL: {label}: '{name}' is {b[name][0]}, llama-quantize's {a[name][0]}")
                    failures += 1
                elif a[name][1] != b[name][1]:
                    x = np.frombuffer(a[name][1], np.uint8)
                    y = np.frombuffer(b[name][1], np.uint8)
                    at = int(np.flatnonzero(x != y)[0]) if x.size == y.size else -1
                    print(f"FAIL: {label}: '{name}' ({a[name][0]}) differs from byte {at}")
                    failures += 1
                elif name in matrices:
                    compared += 1
                    nbytes += len(a[name][1])
            print(f"ok {label}: {len(matrices)} matrices", flush=True)
    if failures:
        print(f"quantize_compare: {failures} failures", flush=True)
        return 1
    print(f"quantize_compare: {compared} quantized tensors ({nbytes} bytes) equal to "
          "llama-quantize's", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
