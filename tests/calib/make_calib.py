#!/usr/bin/env python3
"""make_calib.py OUTDIR: writes the calibration-statistics test files
(numpy only; the safetensors bytes by hand, as tests/readers/make_inputs.py
does) for test_calib.

good.safetensors       the layout of docs/calibration.md, values from
                       input(t, j) below so test_calib recomputes them in C
unaligned.safetensors  the same tensors with the data section at an odd
                       offset (the reader copies instead of mapping)
cases.tsv              one bad or borderline file per line:
                       file, stage, exit code, weight, exact message
                       stage "open": fr_calib_open fails;
                       "values": it opens, fr_calib_check_values and a
                       lookup of weight fail; "ok": both succeed
"""
import json
import os
import struct
import sys

import numpy as np

OUT = os.path.abspath(sys.argv[1])
os.makedirs(OUT, exist_ok=True)
TOKENS = 16


def inputs(n_in, salt):
    """x[t, j] = ((t * 5 + j * 3 + t * j + salt) % 7) - 3: small integers, so every
    mean below is exact in float32 and test_calib can recompute it."""
    t = np.arange(TOKENS)[:, None]
    j = np.arange(n_in)[None, :]
    return (((t * 5 + j * 3 + t * j + salt) % 7) - 3).astype(np.float64)


def stats(n_in, salt, dead=()):
    x = inputs(n_in, salt)
    for j in dead:
        x[:, j] = 0
    h = (x.T @ x / TOKENS).astype(np.float32)
    return {
        "hessian": h,
        "act_abs_mean": np.abs(x).mean(axis=0).astype(np.float32),
        "act_sq_mean": (x * x).mean(axis=0).astype(np.float32),
    }


def safetensors(tensors, metadata, pad_to=8, extra_header=b"", header_text=None):
    """tensors: list of (name, dtype, shape, bytes). pad_to 8 aligns the data
    like the safetensors writer; another value misaligns it on purpose."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off, data = 0, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    text = (header_text if header_text is not None else json.dumps(header)).encode() + extra_header
    while (8 + len(text)) % pad_to:
        text += b" "
    return struct.pack("<Q", len(text)) + text + data


def f32(name, array):
    array = np.array(array, dtype="<f4", order="C")  # ascontiguousarray would make 0-d 1-d
    return (name, "F32", array.shape, array.tobytes())


def module(name, parts):
    return [f32(f"{name}.{part}", value) for part, value in parts.items()]


def write(name, data):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


META = {"token_count": str(TOKENS), "model": "test", "tool": "make_calib.py"}
M = "model.layers.0.self_attn.q_proj"


def good_tensors():
    q0 = stats(8, 0)
    down = stats(16, 1, dead=(3,))
    return (module(M, q0) + [f32(M + ".sensitivity", np.array([0.25, 0.5]))]
            + module("model.layers.0.mlp.down_proj", {"act_sq_mean": down["act_sq_mean"]})
            + module("model.layers.1.self_attn.k_proj", stats(8, 2))
            + module("model.layers.1.self_attn.v_proj", stats(8, 3))
            + module("transformer.h.0.attn.c_attn", stats(8, 4))
            + [f32("lm_head.sensitivity", np.array([1.5]))]
            + module("model.layers.9.mlp.up_proj", stats(8, 5))
            + module("model.embed_tokens", {"act_abs_mean": stats(4, 6)["act_abs_mean"]}))


write("good.safetensors", safetensors(good_tensors(), META))
unaligned = safetensors(good_tensors(), META, pad_to=1, extra_header=b" ")
if (8 + struct.unpack("<Q", unaligned[:8])[0]) % 4 == 0:
    unaligned = safetensors(good_tensors(), META, pad_to=1, extra_header=b"  ")
write("unaligned.safetensors", unaligned)

# ---------------------------------------------------------------- cases

cases = []
PREFIX = "cannot read calibration '{path}': "


def case(name, stage, code, weight, message, data):
    path = write(name + ".safetensors", data) if data is not None else os.path.join(OUT, name)
    cases.append((os.path.basename(path), stage, str(code), weight, message.replace("{path}", path)))


def one(parts, metadata=META, **kw):
    return safetensors(module(M, parts), metadata, **kw)


base = stats(8, 0)
W = M + ".weight"

# open: the header and the layout
case("missing", "open", 3, "-", "cannot open '{path}': no such file or directory", None)
case("empty", "open", 4, "-", "cannot read '{path}': empty file", b"")
case("gguf", "open", 4, "-", PREFIX + 'a GGUF file with no general.type "imatrix" and no '
     "<name>.in_sum2 tensor: not a llama.cpp importance matrix",
     b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
case("onnx", "open", 4, "-", PREFIX + "not a safetensors file nor a llama.cpp importance matrix "
     "(imatrix .gguf or .dat)", b"\x08\x07\x12\x04test" + b"\x00" * 8)
truncated = one(base)
case("truncated", "open", 4, "-",
     "cannot read '{path}': tensor '%s.act_sq_mean': data_offsets [288, 320] outside the "
     "310-byte data section" % M, truncated[:-10])
case("no_metadata", "open", 4, "-", PREFIX + "__metadata__ has no token_count", one(base, None))
case("no_token_count", "open", 4, "-", PREFIX + "__metadata__ has no token_count",
     one(base, {"model": "test"}))
case("token_count_zero", "open", 4, "-", PREFIX + "token_count '0' is not a positive integer",
     one(base, {"token_count": "0"}))
case("token_count_text", "open", 4, "-", PREFIX + "token_count '12x' is not a positive integer",
     one(base, {"token_count": "12x"}))
case("token_count_negative", "open", 4, "-", PREFIX + "token_count '-5' is not a positive integer",
     one(base, {"token_count": "-5"}))
h16 = base["hessian"].astype("<f2")
case("f16", "open", 4, "-", PREFIX + f"module '{M}': hessian is F16, not F32",
     safetensors([(M + ".hessian", "F16", h16.shape, h16.tobytes())], META))
SQ = "not square [in, in] (or [E, in, in] per expert)"
case("not_square", "open", 4, "-", PREFIX + f"module '{M}': hessian is [8, 4], {SQ}",
     one({"hessian": base["hessian"][:, :4]}))
case("hessian_rank1", "open", 4, "-", PREFIX + f"module '{M}': hessian is [8], {SQ}",
     one({"hessian": base["act_sq_mean"]}))
case("experts_not_square", "open", 4, "-", PREFIX + f"module '{M}': hessian is [2, 8, 4], {SQ}",
     one({"hessian": np.stack([base["hessian"][:, :4]] * 2)}))
case("vector_rank0", "open", 4, "-",
     PREFIX + f"module '{M}': act_abs_mean is [], not [in] (or [E, in] per expert)",
     one({"act_abs_mean": np.float32(1.0)}))
case("vector_rank3", "open", 4, "-",
     PREFIX + f"module '{M}': act_sq_mean is [1, 2, 4], not [in] (or [E, in] per expert)",
     one({"act_sq_mean": np.ones((1, 2, 4))}))
case("empty_hessian", "open", 4, "-", PREFIX + f"module '{M}': hessian is [0, 0], empty",
     one({"hessian": np.zeros((0, 0))}))
case("sq_disagrees", "open", 4, "-", PREFIX + f"module '{M}': act_sq_mean is [4], the hessian is [8, 8]",
     one({"hessian": base["hessian"], "act_sq_mean": base["act_sq_mean"][:4]}))
case("vectors_disagree", "open", 4, "-",
     PREFIX + f"module '{M}': act_sq_mean is [4], the act_abs_mean is [8]",
     one({"act_abs_mean": base["act_abs_mean"], "act_sq_mean": base["act_sq_mean"][:4]}))
# per-expert statistics (a leading expert axis): layout and token counts
H2 = np.stack([base["hessian"]] * 2)
SQ2 = np.stack([base["act_sq_mean"]] * 2)
KEY = M + ".expert_token_counts"


def counts(text):
    return dict(META, **{KEY: text})


case("experts_no_counts", "open", 4, "-",
     PREFIX + f"module '{M}' has per-expert statistics (2 experts) but __metadata__ has no "
     f"'{KEY}' (the token count of each expert)", one({"hessian": H2}))
case("experts_counts_length", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}' has 1 token counts, the module's statistics have 2 experts",
     one({"hessian": H2}, counts("[16]")))
case("experts_counts_not_list", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}' is not a JSON list of token counts",
     one({"hessian": H2}, counts("16")))
case("experts_count_above_total", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}': expert 1's token count 17 is not an integer in "
     "0..token_count (16)", one({"hessian": H2}, counts("[16, 17]")))
case("experts_count_negative", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}': expert 0's token count -1 is not an integer in "
     "0..token_count (16)", one({"hessian": H2}, counts("[-1, 4]")))
case("experts_count_text", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}': expert 1's token count not a number is not an integer in "
     "0..token_count (16)", one({"hessian": H2}, counts('[3, "4"]')))
case("experts_counts_without_axis", "open", 4, "-",
     PREFIX + f"__metadata__ '{KEY}': '{M}' has no per-expert statistics (no leading expert axis)",
     one(base, counts("[16, 16]")))
case("experts_counts_no_module", "open", 4, "-",
     PREFIX + f"__metadata__ 'model.x.expert_token_counts': 'model.x' is no module of the file",
     one(base, dict(META, **{"model.x.expert_token_counts": "[1]"})))
case("experts_axis_one_side", "open", 4, "-",
     PREFIX + f"module '{M}': act_sq_mean is [8], the hessian is [2, 8, 8]: one has a leading "
     "expert axis, the other not", one({"hessian": H2, "act_sq_mean": base["act_sq_mean"]},
                                       counts("[16, 16]")))
case("experts_counts_disagree", "open", 4, "-",
     PREFIX + f"module '{M}': act_sq_mean is [3, 8], the hessian is [2, 8, 8]",
     one({"hessian": H2, "act_sq_mean": np.stack([base["act_sq_mean"]] * 3)}, counts("[16, 16]")))
case("experts_none", "open", 4, "-", PREFIX + f"module '{M}': hessian is [0, 8, 8], empty",
     one({"hessian": np.zeros((0, 8, 8))}, counts("[]")))
case("sensitivity_3", "open", 4, "-", PREFIX + f"module '{M}': sensitivity is [3], not [1] or [2]",
     one({"sensitivity": np.ones(3)}))
case("unknown_name", "open", 4, "-",
     PREFIX + f"tensor '{M}.hessain' is not <module>.hessian, .act_abs_mean, .act_sq_mean or "
     ".sensitivity", safetensors([f32(M + ".hessain", base["hessian"])], META))
case("bare_name", "open", 4, "-",
     PREFIX + "tensor 'hessian' is not <module>.hessian, .act_abs_mean, .act_sq_mean or "
     ".sensitivity", safetensors([f32("hessian", base["hessian"])], META))
dup = ('{"__metadata__": {"token_count": "16"}, '
       f'"{M}.act_sq_mean": {{"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, '
       f'"{M}.act_sq_mean": {{"dtype": "F32", "shape": [8], "data_offsets": [32, 64]}}}}')
case("duplicate", "open", 4, "-", PREFIX + f"tensor '{M}.act_sq_mean' appears twice",
     safetensors([], None, header_text=dup) + base["act_sq_mean"].tobytes() * 2)


# values: each found when the module is first used
def g(v):
    return "%g" % float(np.float32(v))


def with_change(part, index, value, parts=None):
    parts = {k: v.copy() for k, v in (parts or base).items()}
    parts[part][index] = value
    return one(parts)


case("nan", "values", 4, W, PREFIX + f"module '{M}': hessian[2, 3] is nan",
     with_change("hessian", (2, 3), np.nan))
case("inf", "values", 4, W, PREFIX + f"module '{M}': act_abs_mean[5] is inf",
     with_change("act_abs_mean", 5, np.inf))
case("minus_inf", "values", 4, W, PREFIX + f"module '{M}': act_sq_mean[0] is -inf",
     with_change("act_sq_mean", 0, -np.inf))
case("negative_diagonal", "values", 4, W, PREFIX + f"module '{M}': hessian[3, 3] = -0.5 is negative",
     with_change("hessian", (3, 3), -0.5))
case("negative_sq", "values", 4, W, PREFIX + f"module '{M}': act_sq_mean[2] = -1 is negative",
     one({"act_sq_mean": np.array([1, 1, -1, 1], dtype=np.float32)}))
case("negative_abs", "values", 4, W, PREFIX + f"module '{M}': act_abs_mean[1] = -0.25 is negative",
     one({"act_abs_mean": np.array([1, -0.25, 1, 1], dtype=np.float32)}))
max_h = float(np.abs(base["hessian"]).max())
tol = 1e-4 * max_h
h = base["hessian"].copy()
h[1, 6] += np.float32(3 * tol)
case("asymmetric", "values", 4, W,
     PREFIX + f"module '{M}': hessian is not symmetric: [1, 6] = {g(h[1, 6])}, [6, 1] = "
     f"{g(h[6, 1])} (tolerance 0.0001 x max|H| = {'%g' % tol})",
     one({"hessian": h}))
h = base["hessian"].copy()
h[6, 1] += np.float32(0.5 * tol)
case("nearly_symmetric", "ok", 0, W, "", one({"hessian": h}))
lower = np.tril(base["hessian"])  # a writer that stored one triangle
first = next((i, j) for i in range(8) for j in range(i + 1, 8) if abs(lower[j, i]) > tol)
case("one_triangle", "values", 4, W,
     PREFIX + f"module '{M}': hessian is not symmetric: [{first[0]}, {first[1]}] = 0, "
     f"[{first[1]}, {first[0]}] = {g(lower[first[1], first[0]])} "
     f"(tolerance 0.0001 x max|H| = {'%g' % tol})", one({"hessian": lower}))
sq = base["act_sq_mean"].copy()
sq[4] *= np.float32(1.01)
case("diag_differs", "values", 4, W,
     PREFIX + f"module '{M}': act_sq_mean[4] = {g(sq[4])} differs from hessian[4, 4] = "
     f"{g(base['hessian'][4, 4])} (act_sq_mean is diag(H))",
     one({"hessian": base["hessian"], "act_sq_mean": sq}))
sq = base["act_sq_mean"].copy()
sq[4] *= np.float32(1.0005)
case("diag_nearly", "ok", 0, W, "", one({"hessian": base["hessian"], "act_sq_mean": sq}))
case("dead_input", "ok", 0, W, "", one(stats(8, 0, dead=(2, 5))))

# per-expert values: each expert checked as a module of its own, named
def expert_change(part, index, value):
    parts = {"hessian": H2.copy(), "act_abs_mean": np.stack([base["act_abs_mean"]] * 2),
             "act_sq_mean": SQ2.copy()}
    parts[part][index] = value
    return one(parts, counts("[16, 16]"))


case("experts_nan", "values", 4, W, PREFIX + f"module '{M}': expert 1: hessian[2, 3] is nan",
     expert_change("hessian", (1, 2, 3), np.nan))
case("experts_negative_sq", "values", 4, W,
     PREFIX + f"module '{M}': expert 1: act_sq_mean[2] = -1 is negative",
     expert_change("act_sq_mean", (1, 2), -1))
h = H2.copy()
h[1, 1, 6] += np.float32(3 * tol)
case("experts_asymmetric", "values", 4, W,
     PREFIX + f"module '{M}': expert 1: hessian is not symmetric: [1, 6] = {g(h[1, 1, 6])}, "
     f"[6, 1] = {g(h[1, 6, 1])} (tolerance 0.0001 x max|H| = {'%g' % tol})",
     one({"hessian": h}, counts("[16, 16]")))
sq = SQ2.copy()
sq[0, 4] *= np.float32(1.01)
case("experts_diag_differs", "values", 4, W,
     PREFIX + f"module '{M}': expert 0: act_sq_mean[4] = {g(sq[0, 4])} differs from hessian[4, 4] "
     f"= {g(base['hessian'][4, 4])} (act_sq_mean is diag(H))",
     one({"hessian": H2, "act_sq_mean": sq}, counts("[16, 16]")))

# experts.safetensors: a fused stack's statistics, 3 experts of 8 inputs
# (expert e from inputs(8, 10 + e); expert 1 received no token: zeros),
# counts 16, 0, 8 (test_calib_experts recomputes the fallback); a
# second stack whose experts all had none; a plain module for the
# one-sided lookups
STACK = "model.layers.0.mlp.experts.gate_up_proj"
ex = [stats(8, 10 + e) for e in range(3)]
ex[1] = {k: np.zeros_like(v) for k, v in ex[1].items()}
exp_parts = {k: np.stack([ex[e][k] for e in range(3)]) for k in ex[0]}
DEAD = "model.layers.1.mlp.experts.down_proj"
dead_parts = {k: np.zeros((2,) + v.shape, np.float32) for k, v in stats(8, 0).items()}
exp_meta = dict(META, **{STACK + ".expert_token_counts": "[16, 0, 8]",
                         DEAD + ".expert_token_counts": "[0, 0]"})
write("experts.safetensors",
      safetensors(module(STACK, exp_parts) + [f32(STACK + ".sensitivity", np.array([2.0, 0.125]))]
                  + module(DEAD, dead_parts) + module(M, base), exp_meta))

with open(os.path.join(OUT, "cases.tsv"), "w") as f:
    for row in cases:
        f.write("\t".join(row) + "\n")
print(f"make_calib.py: {len(cases)} cases in {OUT}")
