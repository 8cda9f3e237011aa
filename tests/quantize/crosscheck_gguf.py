#!/usr/bin/env python3
"""GGUF written by `frontier quantize --format gguf` against gguf-py (PyPI
`gguf`, numpy only), the reference Python implementation of ggml's types:

- gguf-py's GGUFReader opens every output (valid GGUF v3, data aligned to the
  input's general.alignment), the metadata is the input's (general.file_type
  and general.quantization_version aside), copied tensors are byte-identical;
- gguf-py's dequantize of every written ggml type equals frontier's decoding
  (test_gguf --dump) bit for bit;
- gguf-py's own quantize of the input weights gives blocks byte-identical to
  what frontier wrote (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4: gguf-py
  quantizes no other type);
- on stories260K's rows, which no super-block divides, the super-block
  types are written as llama-quantize's fallback (Q2_K and Q3_K as Q4_0,
  Q4_K as Q5_0, Q5_K as Q5_1, Q6_K as Q8_0, IQ4_XS as IQ4_NL) and ffn_down
  (172 columns) as F16, which gguf-py reads, dequantizes and quantizes alike;
- imat-ggml-q4_k and imat-ggml-iq4_xs with an importance matrix (the .dat
  `test_gguf --fixture256` writes) are read and dequantized alike;
- sweep -> allocate -> quantize --recipe writes every tensor with the
  rel_err the sweep measured (so what gguf-py reads is the dataset's Q(W)).

Inputs: data/stories260K.gguf (F16 weights, default alignment) and variants
made by data/make_gguf_fixture.py (BF16 with general.alignment 64, F32),
for the types of 32; for every type, the fixture of rows of 256 and 512
that `test_gguf --fixture256` writes (stories260K's weights regrouped and
seeded rows, F16 and F32). Exits 77 (skipped) without gguf-py.

usage: crosscheck_gguf.py FRONTIER TEST_GGUF DATA_DIR WORK_DIR
"""
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as T
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

CONFIGS = {"ggml-q8_0": T.Q8_0, "ggml-q4_0": T.Q4_0, "ggml-q4_1": T.Q4_1,
           "ggml-q5_0": T.Q5_0, "ggml-q5_1": T.Q5_1, "ggml-mxfp4": T.MXFP4,
           "ggml-iq4_nl": T.IQ4_NL}
KCONFIGS = {"ggml-q2_k": T.Q2_K, "ggml-q3_k": T.Q3_K, "ggml-q4_k": T.Q4_K,
            "ggml-q5_k": T.Q5_K, "ggml-q6_k": T.Q6_K, "ggml-iq4_xs": T.IQ4_XS}
ALL = {**CONFIGS, **KCONFIGS}
# llama-quantize's tensor_type_fallback on rows of 64
FALLBACK = {"ggml-q2_k": T.Q4_0, "ggml-q3_k": T.Q4_0, "ggml-q4_k": T.Q5_0,
            "ggml-q5_k": T.Q5_1, "ggml-q6_k": T.Q8_0, "ggml-iq4_xs": T.IQ4_NL}
QUANT_VERSION_KEYS = ("general.file_type", "general.quantization_version")

failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL: {msg}", flush=True)


def fields(reader):
    out = {}
    for name, f in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        out[name] = [bytes(np.asarray(f.parts[i]).tobytes()) for i in f.data] + [bytes(f.types)]
    return out


def weights_f32(t):
    if t.tensor_type == T.F32:
        return np.asarray(t.data, dtype=np.float32)
    if t.tensor_type == T.F16:
        return np.asarray(t.data).view(np.float16).astype(np.float32)
    if t.tensor_type == T.BF16:
        u = np.asarray(t.data).view(np.uint16).astype(np.uint32) << 16
        return u.view(np.float32)
    raise ValueError(t.tensor_type)


def check(frontier, test_gguf, model, work, label, args, expect):
    out = work / f"{label}.gguf"
    cmd = [frontier, "quantize", str(model), *args, "--format", "gguf", "-o", str(out),
           "--force", "--summary"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{label}: {' '.join(cmd)}: {r.stderr.strip()}")
        return
    dump = work / f"{label}.dump"
    subprocess.run([test_gguf, "--dump", str(out), str(dump)], check=True)
    src, dst = gguf.GGUFReader(model), gguf.GGUFReader(out)
    if dst.alignment != src.alignment:
        fail(f"{label}: alignment {dst.alignment}, the input's is {src.alignment}")
    fi, fo = fields(src), fields(dst)
    for k, v in fi.items():
        if k not in QUANT_VERSION_KEYS and fo.get(k) != v:
            fail(f"{label}: metadata '{k}' differs")
    if int(dst.fields["general.quantization_version"].contents()) != 2:
        fail(f"{label}: general.quantization_version")
    n_types = set()
    for ti, to in zip(src.tensors, dst.tensors, strict=True):
        if ti.name != to.name or list(ti.shape) != list(to.shape):
            fail(f"{label}: tensor '{to.name}' {list(to.shape)} for '{ti.name}' {list(ti.shape)}")
            continue
        if to.data_offset % dst.alignment:
            fail(f"{label}: '{to.name}' at {to.data_offset}, not aligned to {dst.alignment}")
        want = expect(ti.name)
        if want is None:
            if to.tensor_type != ti.tensor_type or \
                    np.asarray(to.data).tobytes() != np.asarray(ti.data).tobytes():
                fail(f"{label}: copied '{ti.name}' differs")
            continue
        if to.tensor_type != want:
            fail(f"{label}: '{to.name}' is {to.tensor_type.name}, not {want.name}")
            continue
        n_types.add(want)
        ours = np.fromfile(dump / f"{to.name}.f32", dtype=np.float32)
        theirs = gguf.quants.dequantize(np.asarray(to.data), want).astype(np.float32).ravel()
        if ours.shape != theirs.shape or not np.array_equal(ours.view(np.uint32),
                                                            theirs.view(np.uint32)):
            bad = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
            fail(f"{label}: '{to.name}' ({want.name}): gguf-py dequantizes {bad.size} elements "
                 f"differently, first {bad[:1]}")
        if label.startswith("rows256") and to.name == "blk.0.ffn_up.weight":
            # seeded rows down to scale 1e-40: a subnormal step, whose
            # inverse overflows, where ggml's conversion is undefined and
            # gguf-py's numpy casts give their own codes
            continue
        w = weights_f32(ti).reshape(-1, int(ti.shape[0]))  # rows of ne0
        try:
            blocks = gguf.quants.quantize(w, want)
        except NotImplementedError:  # gguf-py quantizes the legacy types only
            continue
        if np.asarray(blocks).tobytes() != np.asarray(to.data).tobytes():
            a = np.frombuffer(np.asarray(blocks).tobytes(), np.uint8)
            b = np.frombuffer(np.asarray(to.data).tobytes(), np.uint8)
            at = int(np.flatnonzero(a != b)[0]) if a.size == b.size else -1
            fail(f"{label}: '{to.name}' ({want.name}): gguf-py's quantize differs at byte {at}")
    print(f"ok {label}: {len(dst.tensors)} tensors, types {sorted(t.name for t in n_types)}",
          flush=True)


def main():
    frontier, test_gguf, data, work = sys.argv[1:5]
    data, work = Path(data), Path(work)
    work.mkdir(parents=True, exist_ok=True)
    maker = Path(__file__).resolve().parents[2] / "data" / "make_gguf_fixture.py"
    models = {"f16": data / "stories260K.gguf"}
    for label, extra in (("bf16-align64", ["--dtype", "bf16", "--alignment", "64"]),
                         ("f32", ["--dtype", "f32"])):
        models[label] = work / f"stories260K-{label}.gguf"
        subprocess.run([sys.executable, str(maker), str(data / "stories260K"),
                        str(models[label]), *extra], check=True, capture_output=True)

    def one(cfg):
        def expect(name):
            matrix = name.endswith(".weight") and "norm" not in name and name != "token_embd.weight"
            return CONFIGS[cfg] if matrix and "ffn_down" not in name else None
        return expect

    def mixed(name):
        if name == "token_embd.weight":
            return T.Q8_0
        if "norm" in name or "ffn_down" in name:
            return None
        return {"attn_q": T.Q5_1, "attn_k": T.MXFP4, "attn_v": T.Q5_0,
                "attn_output": T.Q4_1}.get(name.split(".")[2], T.Q4_0)

    import json
    for mlabel, model in models.items():
        for cfg in CONFIGS:
            check(frontier, test_gguf, model, work, f"{mlabel}-{cfg}",
                  ["--config", cfg, "--exclude", "ffn_down"], one(cfg))
        names = [t.name for t in gguf.GGUFReader(model).tensors]
        inv = {v: k for k, v in CONFIGS.items()}
        recipe = {"format": "frontier-recipe",
                  "recipe": {n: inv[mixed(n)] for n in names if mixed(n) is not None}}
        rpath = work / f"{mlabel}-mixed.json"
        rpath.write_text(json.dumps(recipe))
        check(frontier, test_gguf, model, work, f"{mlabel}-mixed", ["--recipe", str(rpath)], mixed)
    # rows of 64 hold no super-block and ffn_down's 172 no block: stored as
    # llama-quantize stores them
    for cfg in list(KCONFIGS) + ["ggml-q4_0"]:
        def fallback(name, cfg=cfg):
            matrix = name.endswith(".weight") and "norm" not in name and name != "token_embd.weight"
            return None if not matrix else T.F16 if "ffn_down" in name else FALLBACK.get(cfg, T.Q4_0)
        check(frontier, test_gguf, models["f16"], work, f"fallback-{cfg}", ["--config", cfg],
              fallback)
    # every type on rows of 256 and 512, and a recipe of the super-block types
    rows256, dat = work / "rows256.gguf", work / "rows256.imatrix.dat"
    subprocess.run([test_gguf, "--fixture256", str(data), str(rows256), str(dat)], check=True)

    def matrix(name):
        return name.endswith(".weight") and "norm" not in name and name != "token_embd.weight"

    for cfg, ty in ALL.items():
        check(frontier, test_gguf, rows256, work, f"rows256-{cfg}", ["--config", cfg],
              lambda name, ty=ty: ty if matrix(name) else None)
    for cfg in ("imat-ggml-q4_k", "imat-ggml-iq4_xs"):  # llama-quantize --imatrix's blocks
        check(frontier, test_gguf, rows256, work, f"rows256-{cfg}",
              ["--config", cfg, "--calib", str(dat)],
              lambda name, ty=ALL[cfg[5:]]: ty if matrix(name) else None)
    kmix = {"token_embd.weight": "ggml-iq4_xs", "blk.0.attn_q.weight": "ggml-q6_k",
            "blk.0.attn_k.weight": "ggml-q3_k", "blk.0.ffn_gate.weight": "ggml-q4_k",
            "blk.0.ffn_down.weight": "ggml-q5_k", "blk.0.ffn_up.weight": "ggml-q2_k"}
    rpath = work / "rows256-mixed.json"
    rpath.write_text(json.dumps({"format": "frontier-recipe", "recipe": kmix}))
    check(frontier, test_gguf, rows256, work, "rows256-mixed", ["--recipe", str(rpath)],
          lambda name: ALL[kmix[name]] if name in kmix else None)
    # the path of the README: sweep the ggml family, allocate, write: what
    # is written has the rel_err the sweep measured
    for label, model, extra, budget in (("allocated-5bit", models["f16"], ["--exclude", "ffn_down"], "5"),
                                        ("rows256-allocated-4bit", rows256, [], "4")):
        h5, rpath = work / f"{label}.h5", work / f"{label}.json"
        h5.unlink(missing_ok=True)
        for cmd in ([frontier, "sweep", str(model), "--quantizers", "ggml-*", *extra,
                     "--device", "cpu", "-o", str(h5), "--quiet"],
                    [frontier, "allocate", str(h5), "--budget", budget, "-o", str(rpath)]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{' '.join(cmd)}: {r.stderr.strip()}")
        if not rpath.exists():
            continue
        chosen = json.loads(rpath.read_text())["recipe"]
        check(frontier, test_gguf, model, work, label, ["--recipe", str(rpath)],
              lambda name: ALL[chosen[name]] if name in chosen else None)
        report = json.loads((work / f"{label}.gguf.report.json").read_text())
        for t in report["tensors"]:
            if not t["equals_quantizer"] or t["rel_err"] != t["rel_err_recipe"]:
                fail(f"{label}: '{t['name']}' written with rel_err {t['rel_err']}, "
                     f"measured {t['rel_err_recipe']}")
        print(f"ok {label}: types {sorted(set(chosen.values()))}", flush=True)
    if failures:
        print(f"crosscheck_gguf: {failures} failures", flush=True)
        return 1
    print("crosscheck_gguf: gguf-py agrees on every tensor", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
