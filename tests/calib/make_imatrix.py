#!/usr/bin/env python3
"""make_imatrix.py OUTDIR: writes the llama.cpp importance-matrix test files
(numpy; the GGUF and .dat bytes by hand, in the layout llama.cpp's
tools/imatrix writes, and, when gguf-py is installed, the good file once more
through gguf-py's GGUFWriter) for test_calib's imatrix part and
sweep_imatrix.sh.

good.imatrix.gguf      GGUF imatrix, GGUF tensor names, values mean(j, salt)
                       below times a power-of-two count, so means are exact
good_hf.imatrix.gguf   the same with Hugging Face names
good_gguf_py.imatrix.gguf  the same written by gguf-py (absent without it)
good.imatrix.dat       the legacy format, GGUF names, with the trailer
good_notrailer.dat     the same without the trailer (older llama.cpp)
experts.imatrix.gguf   blk.0.attn_q and an expert stack's entry blk.0.ffn_up_exps
                       (n_mat 4, counts 64, 32, 0, 16)
experts.imatrix.dat    the same as a legacy .dat: the stack one entry of 4 x 8
                       values, expert 2 (no token) all ones
imatrix_cases.tsv      one bad file per line: file, exit code, exact message
stories260K.imatrix.gguf / stories260K.imatrix.dat
                       data/stories260K/calib.safetensors' act_sq_mean as an
                       importance matrix (GGUF names / Hugging Face names)
"""
import json
import os
import struct
import sys

import numpy as np

if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__ if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")
             else "usage: make_imatrix.py OUTDIR")
OUT = os.path.abspath(sys.argv[1])
os.makedirs(OUT, exist_ok=True)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNT = 64.0  # tokens per module (a power of two: sum2 / count is exact)
NCALL = 8     # .dat calls (a power of two too)


def mean(n_in, salt):
    """The mean x_j^2 of test module salt: small multiples of 1/4, exact in float32;
    test_calib.c recomputes it."""
    j = np.arange(n_in)
    return (((j * 3 + salt * 5) % 11) * 0.25).astype(np.float32)


# the good modules: (GGUF name, Hugging Face name, input columns, salt)
MODULES = [
    ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 8, 0),
    ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 8, 1),
    ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", 8, 2),
    ("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", 8, 3),
    ("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 16, 4),
    ("output.weight", "lm_head.weight", 8, 5),
]

# ---------------------------------------------------------------- GGUF


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, value):
    if isinstance(value, str):
        return gguf_str(key) + struct.pack("<I", 8) + gguf_str(value)
    if isinstance(value, list):
        return (gguf_str(key) + struct.pack("<IIQ", 9, 8, len(value))
                + b"".join(gguf_str(v) for v in value))
    return gguf_str(key) + struct.pack("<II", 4, value)


def gguf(tensors, kv=None, align=32):
    """tensors: list of (name, ne (innermost first), ggml type, raw bytes)."""
    if kv is None:
        kv = {"general.type": "imatrix", "imatrix.chunk_count": 4, "imatrix.chunk_size": 16,
              "imatrix.datasets": ["test.txt"]}
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    head += b"".join(gguf_kv(k, v) for k, v in kv.items())
    data, infos = b"", b""
    for name, ne, ggml_type, raw in tensors:
        infos += gguf_str(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        infos += struct.pack("<IQ", ggml_type, len(data))
        data += raw + b"\0" * (-len(raw) % align)
    head += infos
    head += b"\0" * (-len(head) % align)
    return head + data


def f32(a):
    return np.asarray(a, dtype="<f4").tobytes()


def entry(name, n_in, salt, count=COUNT, sum2=None, in_sum=False):
    """llama.cpp's tensors of one weight (n_mat 1: ggml trims ne to [in] and [1])."""
    s2 = mean(n_in, salt).astype(np.float64) * count if sum2 is None else sum2
    out = [(name + ".in_sum2", [n_in], 0, f32(s2)), (name + ".counts", [1], 0, f32([count]))]
    if in_sum:
        out.append((name + ".in_sum", [n_in], 0, f32(np.zeros(n_in))))
    return out


def good(names):
    t = []
    for i, (g, h, n_in, salt) in enumerate(MODULES):
        t += entry(g if names == "gguf" else h, n_in, salt, in_sum=(i == 1))
    return t


def write(name, data):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


GOOD = gguf(good("gguf"))
write("good.imatrix.gguf", GOOD)
write("good_hf.imatrix.gguf", gguf(good("hf")))

try:
    import gguf as gguf_py
except ImportError:
    gguf_py = None
if gguf_py is not None:
    path = os.path.join(OUT, "good_gguf_py.imatrix.gguf")
    w = gguf_py.GGUFWriter(path, arch="imatrix")
    w.add_type("imatrix")
    w.add_uint32("imatrix.chunk_count", 4)
    for g, _, n_in, salt in MODULES:
        # numpy shape [n_mat, in] -> ne [in, n_mat] (gguf-py keeps the 1)
        w.add_tensor(g + ".in_sum2", (mean(n_in, salt).astype(np.float64) * COUNT)
                     .astype(np.float32).reshape(1, n_in))
        w.add_tensor(g + ".counts", np.array([[COUNT]], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

# ---------------------------------------------------------------- .dat


def dat_entry(name, values, ncall=NCALL, nval=None):
    b = name.encode()
    values = np.asarray(values, dtype="<f4")
    return (struct.pack("<i", len(b)) + b
            + struct.pack("<ii", ncall, len(values) if nval is None else nval) + values.tobytes())


def dat(entries, n=None, trailer=b"default"):
    if trailer == b"default":
        trailer = struct.pack("<i", 4) + struct.pack("<i", 8) + b"test.txt"
    return struct.pack("<i", len(entries) if n is None else n) + b"".join(entries) + trailer


def good_dat_entries(names="gguf"):
    return [dat_entry(g if names == "gguf" else h, mean(n_in, salt).astype(np.float64) * NCALL)
            for g, h, n_in, salt in MODULES]


GOOD_DAT = dat(good_dat_entries())
write("good.imatrix.dat", GOOD_DAT)
write("good_notrailer.dat", dat(good_dat_entries(), trailer=b""))
write("good_chunks_only.dat", dat(good_dat_entries(), trailer=struct.pack("<i", 4)))

# ---------------------------------------------------------------- bad cases

cases = []
PREFIX = "cannot read calibration '{path}': "
Q = "blk.0.attn_q.weight"


def case(name, code, message, data):
    path = write(name, data)
    cases.append((name, str(code), message.replace("{path}", path)))


m8 = mean(8, 0).astype(np.float64) * COUNT
# GGUF
case("model.gguf", 4, PREFIX + 'a GGUF file whose general.type is "model", not "imatrix" (a '
     "model, not a llama.cpp importance matrix?)",
     gguf([(Q, [8, 8], 0, f32(np.zeros(64)))], kv={"general.type": "model"}))
case("model_untyped.gguf", 4, PREFIX + "tensor 'blk.0.attn_q.weight' is not <name>.in_sum2, "
     "<name>.counts or <name>.in_sum (a model, not a llama.cpp importance matrix?)",
     gguf([(Q, [8, 8], 0, f32(np.zeros(64)))], kv={}))
case("unknown_part.gguf", 4, PREFIX + "tensor 'blk.0.attn_q.weight.in_sum3' is not <name>.in_sum2, "
     "<name>.counts or <name>.in_sum (a model, not a llama.cpp importance matrix?)",
     gguf(entry(Q, 8, 0) + [(Q + ".in_sum3", [8], 0, f32(m8))]))
case("no_entries.gguf", 4, PREFIX + "the importance matrix has no entries", gguf([]))
case("no_counts.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2 without counts",
     gguf(entry(Q, 8, 0)[:1]))
case("no_sum2.gguf", 4, PREFIX + "module 'blk.0.attn_q': counts without in_sum2",
     gguf(entry(Q, 8, 0)[1:]))
case("f16.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2 is F16, not F32",
     gguf([(Q + ".in_sum2", [8], 1, np.asarray(m8, "<f2").tobytes())] + entry(Q, 8, 0)[1:]))
case("rank3.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2 is [1, 1, 8], not [in] or "
     "[n_mat, in]", gguf([(Q + ".in_sum2", [8, 1, 1], 0, f32(m8))] + entry(Q, 8, 0)[1:]))
case("empty.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2 is [0], empty",
     gguf([(Q + ".in_sum2", [0], 0, b"")] + entry(Q, 8, 0)[1:]))
case("counts_shape.gguf", 4, PREFIX + "module 'blk.0.attn_q': counts is [2], in_sum2 is [8] (one "
     "count per matrix)", gguf(entry(Q, 8, 0)[:1] + [(Q + ".counts", [2], 0, f32([64, 64]))]))
case("in_sum_shape.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum is [4], in_sum2 is [8]",
     gguf(entry(Q, 8, 0) + [(Q + ".in_sum", [4], 0, f32(np.zeros(4)))]))
# an expert stack's entry (n_mat 4): each expert's in_sum2 row and count; expert 2
# received no token (count 0, zeros), so it gets the token-weighted fallback
EXP = "blk.0.ffn_up_exps.weight"
EXP_COUNTS = [64.0, 32.0, 0.0, 16.0]


def experts(counts=EXP_COUNTS, sum2=None):
    s2 = (np.stack([mean(8, e) * c for e, c in enumerate(counts)]).astype(np.float64)
          if sum2 is None else sum2)
    return [(EXP + ".in_sum2", [8, len(counts)], 0, f32(s2)),
            (EXP + ".counts", [1, len(counts)], 0, f32(counts))]


write("experts.imatrix.gguf", gguf(entry(Q, 8, 0) + experts()))
# the same stack in a legacy .dat (llama.cpp's save_imatrix_legacy): one entry of
# 4 x 8 values (mean x ncall) and no counts; expert 2 (no token) is stored as all ones
DAT_STACK = np.stack([mean(8, e) if c > 0 else np.ones(8, np.float32)
                      for e, c in enumerate(EXP_COUNTS)])
write("experts.imatrix.dat", dat([dat_entry(Q, mean(8, 0).astype(np.float64) * NCALL),
                                  dat_entry(EXP, DAT_STACK.astype(np.float64).ravel() * NCALL)]))
case("experts_negative.gguf", 4, PREFIX + "module 'blk.0.ffn_up_exps': counts[1] = -1 is negative",
     gguf(experts(counts=[64.0, -1.0, 0.0, 16.0])))
e_nan = np.stack([mean(8, e) * c for e, c in enumerate(EXP_COUNTS)]).astype(np.float64)
e_nan[1, 3] = np.nan
case("experts_nan.gguf", 4, PREFIX + "module 'blk.0.ffn_up_exps': in_sum2[1, 3] is nan",
     gguf(experts(sum2=e_nan)))
e_zero = np.stack([mean(8, e) * c for e, c in enumerate(EXP_COUNTS)]).astype(np.float64)
e_zero[2, 1] = 0.25
case("experts_no_tokens.gguf", 4, PREFIX + "module 'blk.0.ffn_up_exps': in_sum2[2, 1] = 0.25 for "
     "expert 2, whose count is 0", gguf(experts(sum2=e_zero)))
nan = m8.copy()
nan[3] = np.nan
case("nan.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2[3] is nan",
     gguf(entry(Q, 8, 0, sum2=nan)))
inf = m8.copy()
inf[5] = np.inf
case("inf.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2[5] is inf",
     gguf(entry(Q, 8, 0, sum2=inf)))
neg = m8.copy()
neg[2] = -1
case("negative.gguf", 4, PREFIX + "module 'blk.0.attn_q': in_sum2[2] = -1 is negative",
     gguf(entry(Q, 8, 0, sum2=neg)))
case("count_zero.gguf", 4, PREFIX + "module 'blk.0.attn_q': counts[0] = 0 is not positive (no "
     "tokens reached it)", gguf(entry(Q, 8, 0, count=0.0, sum2=m8)))
case("count_nan.gguf", 4, PREFIX + "module 'blk.0.attn_q': counts[0] is nan",
     gguf(entry(Q, 8, 0, count=float("nan"), sum2=m8)))
case("truncated.gguf", 4, "cannot read '{path}': tensor 'output.weight.in_sum2': data [384, +32) "
     "past the end of the file (%d bytes)" % (len(GOOD) - 40), GOOD[:-40])
case("twice.gguf", 4, PREFIX + "tensor 'blk.0.attn_q.weight.in_sum2' appears twice",
     gguf(entry(Q, 8, 0) + entry(Q, 8, 0)))
case("twice_hf.gguf", 4, PREFIX + "module 'blk.0.attn_q' appears twice",
     gguf(entry(Q, 8, 0) + entry("blk.0.attn_q", 8, 0)))

# .dat
d8 = mean(8, 0).astype(np.float64) * NCALL
case("short.dat", 4, PREFIX + "2 bytes: too short for a llama.cpp imatrix .dat (an int32 entry "
     "count first)", b"\1\0")
case("zero_entries.dat", 4, PREFIX + "imatrix entry count 0 is not positive",
     struct.pack("<i", 0) + b"\0" * 12)
case("count_lies.dat", 4, PREFIX + "imatrix entry count 1000 does not fit in the file (%d bytes)"
     % len(dat([dat_entry(Q, d8)], n=1000)), dat([dat_entry(Q, d8)], n=1000))
case("count_plus_one.dat", 4, PREFIX + "entry 2 of 2: truncated at offset 67 (its name length)",
     dat([dat_entry(Q, d8)], n=2, trailer=b""))
case("count_minus_one.dat", 4, PREFIX + "79 bytes after entry 1 are not a .dat trailer (int32 chunk "
     "count, int32 length, dataset name): is the entry count right?",
     dat([dat_entry(Q, d8), dat_entry("blk.0.attn_k.weight", d8)], n=1))
lying_name = struct.pack("<ii", 1, 1000000) + Q.encode() + b"\0" * 40
case("name_length_lies.dat", 4, PREFIX + "entry 1 of 1: name length 1000000 at offset 4 is not "
     "within the file (%d bytes)" % len(lying_name), lying_name)
neg_name = struct.pack("<ii", 1, -5) + Q.encode() + b"\0" * 40
case("name_length_negative.dat", 4, PREFIX + "entry 1 of 1: name length -5 at offset 4 is not "
     "within the file (%d bytes)" % len(neg_name), neg_name)
nval_lies = dat([dat_entry(Q, d8, nval=1000)])
case("nval_lies.dat", 4, PREFIX + "module 'blk.0.attn_q': nval 1000 needs 4000 bytes at offset 35, "
     "the file has %d" % len(nval_lies), nval_lies)
case("nval_zero.dat", 4, PREFIX + "module 'blk.0.attn_q': nval 0 is not positive",
     dat([dat_entry(Q, [], nval=0)]))
case("ncall_zero.dat", 4, PREFIX + "module 'blk.0.attn_q': ncall 0 is not positive",
     dat([dat_entry(Q, d8, ncall=0)]))
TWO = dat(good_dat_entries()[:2], trailer=b"")
case("truncated_values.dat", 4, PREFIX + "module 'blk.0.attn_k': nval 8 needs 32 bytes at offset "
     "98, the file has 110", TWO[:110])
case("truncated_name_length.dat", 4, PREFIX + "entry 2 of 2: truncated at offset 67 (its name "
     "length)", TWO[:69])
case("truncated_ncall.dat", 4, PREFIX + "module 'blk.0.attn_k': truncated at offset 94 (its ncall "
     "and nval)", TWO[:95])
case("truncated_count.dat", 4, PREFIX + "imatrix entry count 6 does not fit in the file (69 bytes)",
     GOOD_DAT[:69])
dn = d8.copy()
dn[3] = np.nan
case("nan.dat", 4, PREFIX + "module 'blk.0.attn_q': value[3] is nan", dat([dat_entry(Q, dn)]))
dneg = d8.copy()
dneg[2] = -1
case("negative.dat", 4, PREFIX + "module 'blk.0.attn_q': value[2] = -1 is negative",
     dat([dat_entry(Q, dneg)]))
case("twice.dat", 4, PREFIX + "module 'blk.0.attn_q' appears twice",
     dat([dat_entry(Q, d8), dat_entry(Q, d8)]))
case("trailer_garbage.dat", 4, PREFIX + "18 bytes after entry 1 are not a .dat trailer (int32 chunk "
     "count, int32 length, dataset name): is the entry count right?",
     dat([dat_entry(Q, d8)], trailer=struct.pack("<ii", 4, 8) + b"test.txt" + b"\0\0"))
case("random.bin", 4, PREFIX + "not a safetensors file nor a llama.cpp importance matrix (imatrix "
     ".gguf or .dat)", b"\0\0\0\0 this is no calibration file")

with open(os.path.join(OUT, "imatrix_cases.tsv"), "w") as f:
    for c in cases:
        f.write("\t".join(c) + "\n")

# ---------------------------------------------------------------- stories260K


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        a, z = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + a:8 + n + z], dtype="<f4").reshape(v["shape"])
    return out


def gguf_name(hf):
    table = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    if hf == "lm_head":
        return "output"
    parts = hf.split(".")
    return "blk.%s.%s" % (parts[2], table[".".join(parts[3:5])])


calib = read_safetensors(os.path.join(ROOT, "data", "stories260K", "calib.safetensors"))
sq = {k[:-len(".act_sq_mean")]: v for k, v in sorted(calib.items()) if k.endswith(".act_sq_mean")}
STORIES_COUNT = 16384.0  # the file's token_count, a power of two
write("stories260K.imatrix.gguf", gguf(
    [t for m, v in sq.items()
     for t in entry(gguf_name(m) + ".weight", len(v), 0, count=STORIES_COUNT,
                    sum2=v.astype(np.float64) * STORIES_COUNT)]))
write("stories260K.imatrix.dat",
      dat([dat_entry(m + ".weight", v.astype(np.float64) * NCALL) for m, v in sq.items()]))
