#!/usr/bin/env python3
"""Writes the reader test inputs into OUTDIR (Python standard library only).

good files  + expected.json (what test_readers must find in them)
  dtypes.safetensors   every safetensors dtype, all 2^16 F16/BF16 patterns
  same.{safetensors,gguf,onnx}  the same tensors in the three formats
  all.gguf, v2.gguf    GGUF metadata of every value type, ggml tensor types
  onnx/model.onnx      every ONNX storage (raw_data, typed fields, external
                       data, Constant nodes) + onnx/weights.bin
  sharded/             data/stories260K split into 3 shards + index.json
bad files   + bad/cases.tsv (file, exit code, text the one-line error holds)

Expected float values are computed here independently of frontier's C
converters: struct's IEEE half ('e') and single ('f') codecs, and the OCP
FP8 table values written out by hand.
"""
import json
import math
import os
import shutil
import struct
import sys

OUT = sys.argv[1]
STORIES = sys.argv[2] if len(sys.argv) > 2 else None
os.makedirs(OUT, exist_ok=True)
os.makedirs(os.path.join(OUT, "bad"), exist_ok=True)
expected = {}


def f32_bits(x):
    """float32 bit pattern of x (round to nearest, like a C cast); inf if it overflows."""
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0x7F800000 if x > 0 else 0xFF800000


def bits_of_half(h):
    return f32_bits(struct.unpack("<e", struct.pack("<H", h))[0])


def write(path, data):
    full = os.path.join(OUT, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)
    return full


# ---------------------------------------------------------------- safetensors

def safetensors(tensors, metadata=None, header_text=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    text = (header_text if header_text is not None else json.dumps(header)).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # the writer's alignment padding
    return struct.pack("<Q", len(text)) + text + data


def st_header_only(text, data=b""):
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def pack_f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def pack_f16(vals):
    return b"".join(struct.pack("<e", v) for v in vals)


def bf16_of(v):
    bits = f32_bits(v)
    assert bits & 0xFFFF == 0, v  # only values exact in bfloat16
    return bits >> 16


def pack_bf16(vals):
    return b"".join(struct.pack("<H", bf16_of(v)) for v in vals)


def entry(name, dtype, shape, cls, values=None, skip=False, scale=None, kind_dtype=None):
    e = {"name": name, "dtype": dtype, "shape": list(shape), "class": cls, "skip": skip}
    if values is not None:
        e["bits"] = values
    if scale is not None:
        e["scale"] = scale
    if kind_dtype is not None:
        e["canonical"] = kind_dtype
    return e


# OCP 8-bit floating point spec (v1.0, 2023), tables 1-2, written out by hand.
E4M3_CASES = [
    (0x00, 0.0), (0x80, -0.0), (0x01, 2.0**-9), (0x07, 7 * 2.0**-9), (0x08, 2.0**-6),
    (0x31, 0.5625), (0x38, 1.0), (0x3C, 1.5), (0x40, 2.0), (0x7E, 448.0), (0xFE, -448.0),
    (0x7F, float("nan")),
]
E5M2_CASES = [
    (0x00, 0.0), (0x80, -0.0), (0x01, 2.0**-16), (0x3C, 1.0), (0x7B, 57344.0), (0xFB, -57344.0),
    (0x7C, float("inf")), (0xFC, float("-inf")), (0x7E, float("nan")), (0x44, 4.0),
]


def make_dtypes():
    f32_vals = [0.0, -0.0, 2.0**-149, 3.4028234663852886e38, float("inf"), float("nan")]
    f16_all = bytes(b for h in range(65536) for b in struct.pack("<H", h))
    bf16_all = f16_all  # the same 2^16 patterns, read as bfloat16
    f64_vals = [0.1, -2.5, 1e300, 1e-50, 3.0000001]
    t = [
        ("f32", "F32", [2, 3], pack_f32(f32_vals)),
        ("f16_all", "F16", [65536], f16_all),
        ("bf16_all", "BF16", [256, 256], bf16_all),
        ("e4m3", "F8_E4M3", [len(E4M3_CASES)], bytes(b for b, _ in E4M3_CASES)),
        ("e4m3_all", "F8_E4M3", [256], bytes(range(256))),
        ("e4m3fn_alias", "F8_E4M3FN", [2, 2], bytes([0x38, 0x40, 0xB8, 0x00])),
        ("e5m2", "F8_E5M2", [len(E5M2_CASES)], bytes(b for b, _ in E5M2_CASES)),
        ("e5m2_all", "F8_E5M2", [16, 16], bytes(range(256))),
        ("f64", "F64", [5], b"".join(struct.pack("<d", v) for v in f64_vals)),
        ("i32", "I32", [3], struct.pack("<3i", 1, -2, 3)),
        ("flags", "BOOL", [2], bytes([1, 0])),
        ("u8", "U8", [4], bytes([1, 2, 3, 4])),
        ("empty", "F32", [0, 4], b""),
        ("scalar", "F32", [], pack_f32([2.5])),
        ("fp8.weight", "F8_E4M3", [2, 2], bytes([0x38, 0x40, 0x3C, 0x00])),
        ("fp8.weight_scale_inv", "F32", [1], pack_f32([0.5])),
        ("e8m0", "F8_E8M0", [4], bytes([127, 128, 126, 0])),
        ("f4", "F4", [6], bytes([0x21, 0x43, 0x65])),
    ]
    write("dtypes.safetensors", safetensors(t, metadata={"format": "pt", "note": "frontier test"}))
    e = [
        entry("f32", "F32", [2, 3], "other", [f32_bits(v) for v in f32_vals]),
        entry("f16_all", "F16", [65536], "other", [bits_of_half(h) for h in range(65536)]),
        entry("bf16_all", "BF16", [256, 256], "other", [h << 16 for h in range(65536)]),
        entry("e4m3", "F8_E4M3", [len(E4M3_CASES)], "other", [f32_bits(v) for _, v in E4M3_CASES]),
        entry("e4m3_all", "F8_E4M3", [256], "other"),
        entry("e4m3fn_alias", "F8_E4M3FN", [2, 2], "other", [f32_bits(v) for v in (1.0, 2.0, -1.0, 0.0)],
              kind_dtype="F8_E4M3"),
        entry("e5m2", "F8_E5M2", [len(E5M2_CASES)], "other", [f32_bits(v) for _, v in E5M2_CASES]),
        entry("e5m2_all", "F8_E5M2", [16, 16], "other", [bits_of_half(b << 8) for b in range(256)]),
        entry("f64", "F64", [5], "other", [f32_bits(v) for v in f64_vals]),
        entry("i32", "I32", [3], "other", skip=True),
        entry("flags", "BOOL", [2], "other", skip=True),
        entry("u8", "U8", [4], "other", skip=True),
        entry("empty", "F32", [0, 4], "other", []),
        entry("scalar", "F32", [], "other", [f32_bits(2.5)]),
        entry("fp8.weight", "F8_E4M3", [2, 2], "other", [f32_bits(v) for v in (1.0, 2.0, 1.5, 0.0)],
              scale="fp8.weight_scale_inv"),
        entry("fp8.weight_scale_inv", "F32", [1], "other", [f32_bits(0.5)]),
        entry("e8m0", "F8_E8M0", [4], "other", skip=True),
        entry("f4", "F4", [6], "other", skip=True),
    ]
    expected["dtypes.safetensors"] = {
        "kind": "safetensors", "tensors": e,
        "metadata": {"__metadata__": {"format": "pt", "note": "frontier test"}},
    }


# ---------------------------------------------------------------- GGUF

GGUF_TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7,
              "str": 8, "arr": 9, "u64": 10, "i64": 11, "f64": 12}
SCALAR_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
              11: "<q", 12: "<d"}


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    if vtype == 8:
        return gguf_str(value)
    if vtype == 9:
        etype, items = value
        out = struct.pack("<IQ", etype, len(items))
        for item in items:
            out += gguf_value(etype, item)
        return out
    return struct.pack(SCALAR_FMT[vtype], value)


def gguf(kvs, tensors, version=3, alignment=32, offset_fix=None, raw_counts=None):
    """kvs: list of (key, type name, value); tensors: (name, C-order shape, ggml type, bytes)."""
    n_t, n_kv = (len(tensors), len(kvs)) if raw_counts is None else raw_counts
    out = b"GGUF" + struct.pack("<IQQ", version, n_t, n_kv)
    for key, tname, value in kvs:
        vt = GGUF_TYPES[tname]
        out += gguf_str(key) + struct.pack("<I", vt) + gguf_value(vt, value)
    offsets, off = [], 0
    for name, shape, gtype, raw in tensors:
        offsets.append(off)
        off += len(raw)
        off += (alignment - off % alignment) % alignment
    for i, (name, shape, gtype, raw) in enumerate(tensors):
        o = offsets[i] if offset_fix is None or i not in offset_fix else offset_fix[i]
        out += gguf_str(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))  # ne[0] innermost
        out += struct.pack("<IQ", gtype, o)
    out += b"\0" * ((alignment - len(out) % alignment) % alignment)
    for i, (name, shape, gtype, raw) in enumerate(tensors):
        out += raw
        out += b"\0" * ((alignment - len(raw) % alignment) % alignment)
    return out


def make_gguf():
    tokens = ["tok%d" % i for i in range(1000)]
    kvs = [
        ("general.architecture", "str", "llama"),
        ("general.alignment", "u32", 64),
        ("llama.block_count", "u32", 2),
        ("test.u8", "u8", 200), ("test.i8", "i8", -5), ("test.u16", "u16", 60000),
        ("test.i16", "i16", -300), ("test.u32", "u32", 4000000000), ("test.i32", "i32", -70000),
        ("test.f32", "f32", 1.5), ("test.f32_nan", "f32", float("nan")), ("test.bool", "bool", True),
        ("test.u64", "u64", 2**60), ("test.i64", "i64", -3), ("test.f64", "f64", 0.25),
        ("test.arr_small", "arr", (5, [1, 2, 3])),
        ("test.nested", "arr", (9, [(5, [1, 2]), (5, [3])])),
        ("tokenizer.ggml.tokens", "arr", (8, tokens)),
        ("tokenizer.ggml.scores", "arr", (6, [0.5] * 1000)),
        ("test.long_string", "str", "x" * 2000),
    ]
    emb = [(i - 16) * 0.25 for i in range(32)]
    q = [(i - 8) * 0.5 for i in range(16)]
    exps = [(i - 12) * 0.125 for i in range(24)]
    f64 = [0.5, -1.25, 1e-50, 7.0]
    head = [i * 0.5 for i in range(8)]
    tensors = [
        ("token_embd.weight", [8, 4], 0, pack_f32(emb)),
        ("blk.0.attn_q.weight", [4, 4], 1, pack_f16(q)),
        ("blk.0.ffn_gate_exps.weight", [2, 3, 4], 30, pack_bf16(exps)),
        ("blk.0.attn_k.weight", [2, 256], 12, bytes(2 * 144)),
        ("blk.0.attn_v.weight", [1, 64], 8, bytes(2 * 34)),
        ("blk.0.ffn_up.weight", [2, 2], 28, b"".join(struct.pack("<d", v) for v in f64)),
        ("pos_ids", [3], 26, struct.pack("<3i", 0, 1, 2)),
        ("blk.0.future.weight", [4], 99, bytes(4)),
        ("output.weight", [2, 4], 0, pack_f32(head)),
    ]
    write("all.gguf", gguf(kvs, tensors, alignment=64))
    expected["all.gguf"] = {
        "kind": "gguf",
        "tensors": [
            entry("token_embd.weight", "F32", [8, 4], "embed", [f32_bits(v) for v in emb]),
            entry("blk.0.attn_q.weight", "F16", [4, 4], "attn_q", [f32_bits(v) for v in q]),
            entry("blk.0.ffn_gate_exps.weight", "BF16", [2, 3, 4], "expert", [f32_bits(v) for v in exps]),
            entry("blk.0.attn_k.weight", "Q4_K", [2, 256], "attn_k", skip=True),
            entry("blk.0.attn_v.weight", "Q8_0", [1, 64], "attn_v", skip=True),
            entry("blk.0.ffn_up.weight", "F64", [2, 2], "mlp_up", [f32_bits(v) for v in f64]),
            entry("pos_ids", "I32", [3], "other", skip=True),
            entry("blk.0.future.weight", "GGML_TYPE_99", [4], "other", skip=True),
            entry("output.weight", "F32", [2, 4], "lm_head", [f32_bits(v) for v in head]),
        ],
        "metadata": {
            "gguf_version": 3, "general.architecture": "llama", "general.alignment": 64,
            "test.u8": 200, "test.i8": -5, "test.u16": 60000, "test.i16": -300,
            "test.u32": 4000000000, "test.i32": -70000, "test.f32": 1.5, "test.f32_nan": "nan",
            "test.bool": True, "test.u64": str(2**60), "test.i64": -3, "test.f64": 0.25,
            "test.arr_small": [1, 2, 3],
            "test.nested": {"type": "array", "element_type": "array", "length": 2},
            "tokenizer.ggml.tokens": {"type": "array", "element_type": "string", "length": 1000},
            "tokenizer.ggml.scores": {"type": "array", "element_type": "float32", "length": 1000},
            "test.long_string": {"type": "string", "length": 2000},
        },
    }
    write("v2.gguf", gguf([("general.architecture", "str", "llama")],
                         [("blk.1.ffn_down.weight", [2, 3], 0, pack_f32([1, 2, 3, 4, 5, 6]))], version=2))
    expected["v2.gguf"] = {"kind": "gguf", "tensors": [
        entry("blk.1.ffn_down.weight", "F32", [2, 3], "mlp_down", [f32_bits(v) for v in range(1, 7)])],
        "metadata": {"gguf_version": 2}}


# ---------------------------------------------------------------- ONNX (protobuf by hand)

def varint(v):
    if v < 0:
        v += 1 << 64  # int64 fields are two's complement, 10 bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def f_varint(field, v):
    return tag(field, 0) + varint(v)


def f_bytes(field, b):
    b = b.encode() if isinstance(b, str) else b
    return tag(field, 2) + varint(len(b)) + b


FLOAT, UINT8, INT32, INT64, FLOAT16, DOUBLE, BFLOAT16, E4M3, E5M2 = 1, 2, 6, 7, 10, 11, 16, 17, 19


def tensor_proto(name=None, dims=(), data_type=FLOAT, raw=None, float_data=None, int32_data=None,
                 double_data=None, int64_data=None, external=None, dims_packed=False,
                 float_unpacked=None, extra=b""):
    out = b""
    if dims_packed:
        out += f_bytes(1, b"".join(varint(d) for d in dims))
    else:
        out += b"".join(f_varint(1, d) for d in dims)
    out += f_varint(2, data_type)
    if float_data is not None:
        out += f_bytes(4, pack_f32(float_data))
    if float_unpacked is not None:
        out += tag(4, 5) + struct.pack("<f", float_unpacked)
    if int32_data is not None:
        out += f_bytes(5, b"".join(varint(v) for v in int32_data))
    if int64_data is not None:
        out += f_bytes(7, b"".join(varint(v) for v in int64_data))
    if name is not None:
        out += f_bytes(8, name)
    if raw is not None:
        out += f_bytes(9, raw)
    if double_data is not None:
        out += f_bytes(10, b"".join(struct.pack("<d", v) for v in double_data))
    if external is not None:
        for k, v in external:
            out += f_bytes(13, f_bytes(1, k) + f_bytes(2, v))
        out += f_varint(14, 1)
    return out + extra


def attribute(name, t=None, f=None, g=None):
    out = f_bytes(1, name)
    if f is not None:
        out += tag(2, 5) + struct.pack("<f", f) + f_varint(20, 1)
    if t is not None:
        out += f_bytes(5, t) + f_varint(20, 4)
    if g is not None:
        out += f_bytes(6, g) + f_varint(20, 5)
    return out


def node(op, inputs=(), outputs=(), attrs=(), domain=None, name=None):
    out = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    if name:
        out += f_bytes(3, name)
    out += f_bytes(4, op)
    out += b"".join(f_bytes(5, a) for a in attrs)
    if domain is not None:
        out += f_bytes(7, domain)
    return out


def graph(nodes=(), initializers=(), name="g"):
    return (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name) +
            b"".join(f_bytes(5, t) for t in initializers))


def model(graph_bytes, opset=17):
    return (f_varint(1, 8) + f_bytes(2, "frontier-tests") + f_bytes(3, "1.0") +
            f_bytes(7, graph_bytes) + f_bytes(8, f_bytes(1, "") + f_varint(2, opset)))


def make_onnx():
    raw = [(i - 3) * 0.75 for i in range(6)]
    fd = [1.0, -2.0, 0.5]
    f16 = [1.0, -0.5, 65504.0, 2.0**-24]
    f16_bits = [struct.unpack("<H", struct.pack("<e", v))[0] for v in f16]
    bf = [1.5, -3.0]
    dd = [0.1, 2.0]
    e4 = [0x38, 0x7E, 0x01]
    e5 = [0x3C, 0x7B, 0x01]
    ext = [10.0, 20.0, 30.0, 40.0]
    ext2 = [-1.0, -2.0, -3.0]
    qkv = [(i - 6) * 0.0625 for i in range(12)]
    conv = [i * 0.125 for i in range(18)]
    # external file: 8 junk bytes, then ext at 8, ext2 at 24
    write("onnx/weights.bin", b"JUNKJUNK" + pack_f32(ext) + pack_f32(ext2))
    inits = [
        tensor_proto("w_raw", [2, 3], FLOAT, raw=pack_f32(raw)),
        tensor_proto("w_float_data", [3], FLOAT, float_data=fd),
        tensor_proto("w_f16_int32", [4], FLOAT16, int32_data=f16_bits),
        tensor_proto("w_bf16_int32", [2], BFLOAT16, int32_data=[bf16_of(v) for v in bf]),
        tensor_proto("w_bf16_raw", [2], BFLOAT16, raw=pack_bf16(bf)),
        tensor_proto("w_double", [2], DOUBLE, double_data=dd),
        tensor_proto("w_e4m3_raw", [3], E4M3, raw=bytes(e4)),
        tensor_proto("w_e5m2_int32", [3], E5M2, int32_data=e5),
        tensor_proto("w_ext", [2, 2], FLOAT, external=[("location", "weights.bin"), ("offset", "8"),
                                                       ("length", "16")]),
        tensor_proto("w_ext_nolen", [3], FLOAT, external=[("location", "weights.bin"), ("offset", "24")]),
        tensor_proto("ids", [3], INT64, int64_data=[1, -2, 3]),
        tensor_proto("w_scalar", [], FLOAT, float_unpacked=0.375),
        tensor_proto("w_dims_packed", [2, 2], FLOAT, raw=pack_f32([1, 2, 3, 4]), dims_packed=True),
        tensor_proto("w_empty_f16", [0], FLOAT16),
        tensor_proto("backbone.conv1.weight", [2, 1, 3, 3], FLOAT, raw=pack_f32(conv)),
    ]
    sub = graph([node("Constant", outputs=["inside_subgraph"],
                      attrs=[attribute("value", t=tensor_proto(None, [1], FLOAT, raw=pack_f32([9.0])))])],
                name="then")
    nodes = [
        node("Constant", outputs=["blocks.0.attn.qkv.weight"],
             attrs=[attribute("value", t=tensor_proto("ignored_own_name", [2, 6], FLOAT, raw=pack_f32(qkv)))]),
        node("Constant", outputs=["just_a_float"], attrs=[attribute("value_float", f=1.0)]),
        node("Constant", outputs=["blocks.0.mlp.fc1.bias"], domain="ai.onnx",
             attrs=[attribute("value", t=tensor_proto(None, [2], FLOAT, float_data=[0.25, -0.25]))]),
        node("MatMul", inputs=["x", "w_raw"], outputs=["y"], name="mm"),
        node("If", inputs=["cond"], outputs=["z"], attrs=[attribute("then_branch", g=sub)]),
    ]
    write("onnx/model.onnx", model(graph(nodes, inits, name="test-graph")))
    B = lambda vals: [f32_bits(v) for v in vals]
    expected["onnx/model.onnx"] = {"kind": "onnx", "tensors": [
        entry("blocks.0.attn.qkv.weight", "FLOAT", [2, 6], "attn_qkv", B(qkv)),
        entry("blocks.0.mlp.fc1.bias", "FLOAT", [2], "mlp_up", B([0.25, -0.25])),
        entry("w_raw", "FLOAT", [2, 3], "other", B(raw)),
        entry("w_float_data", "FLOAT", [3], "other", B(fd)),
        entry("w_f16_int32", "FLOAT16", [4], "other", B(f16)),
        entry("w_bf16_int32", "BFLOAT16", [2], "other", B(bf)),
        entry("w_bf16_raw", "BFLOAT16", [2], "other", B(bf)),
        entry("w_double", "DOUBLE", [2], "other", B(dd)),
        entry("w_e4m3_raw", "FLOAT8E4M3FN", [3], "other", B([1.0, 448.0, 2.0**-9])),
        entry("w_e5m2_int32", "FLOAT8E5M2", [3], "other", B([1.0, 57344.0, 2.0**-16])),
        entry("w_ext", "FLOAT", [2, 2], "other", B(ext)),
        entry("w_ext_nolen", "FLOAT", [3], "other", B(ext2)),
        entry("ids", "INT64", [3], "other", skip=True),
        entry("w_scalar", "FLOAT", [], "other", B([0.375])),
        entry("w_dims_packed", "FLOAT", [2, 2], "other", B([1, 2, 3, 4])),
        entry("w_empty_f16", "FLOAT16", [0], "other", []),
        entry("backbone.conv1.weight", "FLOAT", [2, 1, 3, 3], "conv", B(conv)),
    ], "metadata": {"ir_version": 8, "producer_name": "frontier-tests", "graph_name": "test-graph",
                    "initializers": 15, "constant_nodes": 2,
                    "opset_import": [{"domain": "", "version": 17}]}}


# ---------------------------------------------------------------- one model, three formats

def make_same():
    q = [(i - 16) * 0.125 for i in range(32)]
    up = [(i - 7) * 0.5 for i in range(15)]
    up[0] = 2.0**-24  # an F16 subnormal
    emb = [(i - 16) * 2.0**-3 for i in range(32)]
    down = [i * 1.5 for i in range(15)]
    norm = [1.0 + i / 8 for i in range(8)]
    st = [
        ("model.layers.0.self_attn.q_proj.weight", "F32", [4, 8], pack_f32(q)),
        ("model.layers.0.mlp.up_proj.weight", "F16", [3, 5], pack_f16(up)),
        ("model.embed_tokens.weight", "BF16", [2, 16], pack_bf16(emb)),
        ("model.layers.0.mlp.down_proj.weight", "F32", [5, 3], pack_f32(down)),
        ("model.norm.weight", "F32", [8], pack_f32(norm)),
    ]
    write("same.safetensors", safetensors(st))
    gtype = {"F32": 0, "F16": 1, "BF16": 30}
    write("same.gguf", gguf([("general.architecture", "str", "llama")],
                            [(n, s, gtype[d], raw) for n, d, s, raw in st]))
    write("same.onnx.data", pack_f32([0.0, 0.0]) + pack_f32(down))
    up_bits = [struct.unpack("<H", struct.pack("<e", v))[0] for v in up]
    inits = [
        tensor_proto(st[0][0], [4, 8], FLOAT, raw=pack_f32(q)),
        tensor_proto(st[1][0], [3, 5], FLOAT16, int32_data=up_bits),
        tensor_proto(st[2][0], [2, 16], BFLOAT16, raw=pack_bf16(emb)),
        tensor_proto(st[3][0], [5, 3], FLOAT, external=[("location", "same.onnx.data"), ("offset", "8"),
                                                      ("length", "60")]),
    ]
    nodes = [node("Constant", outputs=[st[4][0]], attrs=[attribute("value", t=tensor_proto(
        None, [8], FLOAT, float_data=norm))])]
    write("same.onnx", model(graph(nodes, inits)))


# ---------------------------------------------------------------- sharded stories260K

def make_sharded():
    if not STORIES:
        return
    with open(STORIES, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None)
    names = list(header)
    data = blob[8 + n:]
    d = os.path.join(OUT, "sharded")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cuts = [0, len(names) // 3, 2 * len(names) // 3, len(names)]
    weight_map = {}
    # shards listed in reverse so the reader's own ordering is exercised
    for k in reversed(range(3)):
        shard = "model-%05d-of-%05d.safetensors" % (k + 1, 3)
        ts = []
        for name in names[cuts[k]:cuts[k + 1]]:
            e = header[name]
            b, end = e["data_offsets"]
            ts.append((name, e["dtype"], e["shape"], data[b:end]))
            weight_map[name] = shard
        with open(os.path.join(d, shard), "wb") as f:
            f.write(safetensors(ts, metadata=meta))
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": len(data)}, "weight_map": weight_map}, f, indent=1)
    cfg = os.path.join(os.path.dirname(STORIES), "config.json")
    if os.path.exists(cfg):
        shutil.copy(cfg, d)


# ---------------------------------------------------------------- bad inputs

cases = []


def bad(name, data, code, text):
    """text: what the one-line message must contain besides the file's path."""
    path = write(os.path.join("bad", name), data) if data is not None else os.path.join(OUT, "bad", name)
    cases.append((path, code, text))


def make_bad():
    ok = [("w", "F32", [2, 2], pack_f32([1, 2, 3, 4]))]
    hdr = lambda obj, data=b"": st_header_only(json.dumps(obj), data)
    # safetensors
    bad("missing.safetensors", None, 3, "no such file")
    bad("empty.safetensors", b"", 4, "empty file")
    bad("short.safetensors", b"\x05\0\0", 4, "shorter than the 8-byte header length")
    bad("header_past_end.safetensors", struct.pack("<Q", 1000) + b"{}", 4,
        "header length 1000 exceeds the file size 10")
    bad("bad_json.safetensors", st_header_only('{"w": {"dtype": "F32",'), 4, "header is not valid JSON")
    bad("not_object.safetensors", st_header_only("[1, 2, 3]"), 4, "header is not a JSON object")
    bad("trailing.safetensors", st_header_only("{} xx"), 4, "bytes after its JSON object")
    bad("entry_not_object.safetensors", hdr({"w": 3}), 4, "tensor 'w': entry is not a JSON object")
    bad("offsets_out_of_range.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, pack_f32([1, 2, 3])), 4,
        "tensor 'w': data_offsets [0, 16] outside the 12-byte data section")
    bad("offsets_reversed.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}, bytes(16)), 4,
        "tensor 'w': data_offsets [8, 4] end before they begin")
    bad("offsets_overlap.safetensors",
        hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)), 4,
        "tensors 'a' and 'b' overlap")
    bad("offsets_mismatch.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}, bytes(12)), 4,
        "tensor 'w': data_offsets [0, 12] hold 12 bytes, shape [2, 2] x F32 needs 16")
    bad("negative_dim.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [-2, 2], "data_offsets": [0, 16]}}, bytes(16)), 4,
        "tensor 'w': negative dimension")
    bad("fractional_dim.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': dimension 0 is not an integer")
    bad("overflow_dims.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': shape [4294967296, 4294967296] has more than 2^63 elements")
    bad("huge_dim.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [2**63], "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': dimension 0 is not an integer below 2^53")
    bad("unknown_dtype.safetensors",
        hdr({"w": {"dtype": "F17", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': unknown dtype 'F17'")
    bad("missing_dtype.safetensors", hdr({"w": {"shape": [1], "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': \"dtype\" is missing")
    bad("duplicate_names.safetensors",
        st_header_only('{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                       '"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(8)), 4,
        "duplicate tensor name 'w'")
    bad("metadata_not_object.safetensors", hdr({"__metadata__": [1]}), 4, "\"__metadata__\" is not a JSON object")
    bad("rank9.safetensors",
        hdr({"w": {"dtype": "F32", "shape": [1] * 9, "data_offsets": [0, 4]}}, bytes(4)), 4,
        "tensor 'w': rank 9 exceeds the supported 8")
    # sharded folders
    d = os.path.join(OUT, "bad", "missing_shard")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model-00001-of-00002.safetensors"), "wb") as f:
        f.write(safetensors(ok))
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"w": "model-00001-of-00002.safetensors",
                                  "v": "model-00002-of-00002.safetensors"}}, f)
    cases.append((d, 3, "cannot open '%s/model-00002-of-00002.safetensors': no such file" % d))
    d = os.path.join(OUT, "bad", "tensor_not_in_shard")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model-00001-of-00001.safetensors"), "wb") as f:
        f.write(safetensors(ok))
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"w": "model-00001-of-00001.safetensors",
                                  "lost": "model-00001-of-00001.safetensors"}}, f)
    cases.append((d, 4, "tensor 'lost' is missing from its shard"))
    d = os.path.join(OUT, "bad", "shard_outside")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"w": "../elsewhere.safetensors"}}, f)
    cases.append((d, 4, "tensor 'w': shard is not a file name inside the folder"))
    d = os.path.join(OUT, "bad", "no_model_folder")
    os.makedirs(d, exist_ok=True)
    cases.append((d, 3, "holds neither model.safetensors nor model.safetensors.index.json"))

    # GGUF
    good_t = [("w", [2, 2], 0, pack_f32([1, 2, 3, 4]))]
    g = gguf([("general.architecture", "str", "llama")], good_t)
    bad("bad_magic.gguf", b"GGUX" + g[4:], 4, "bad magic")
    bad("version1.gguf", g[:4] + struct.pack("<I", 1) + g[8:], 4, "unsupported GGUF version 1")
    bad("version4.gguf", g[:4] + struct.pack("<I", 4) + g[8:], 4, "unsupported GGUF version 4")
    hdr_len = len(b"GGUF") + 4 + 16 + len(gguf_str("general.architecture")) + 4 + len(gguf_str("llama"))
    bad("truncated_tensor_info.gguf", g[:hdr_len + 12], 4, "truncated tensor info")
    bad("truncated_header.gguf", g[:10], 4, "truncated header")
    bad("truncated_metadata.gguf", g[:hdr_len - 3], 4, "truncated metadata value")
    bad("offset_past_end.gguf", gguf([], good_t, offset_fix={0: 1 << 20}), 4,
        "tensor 'w': data [1048576, +16) past the end of the file")
    bad("offset_misaligned.gguf", gguf([], good_t, offset_fix={0: 4}), 4,
        "tensor 'w': offset 4 is not a multiple of the alignment 32")
    bad("huge_counts.gguf", gguf([], good_t, raw_counts=(1 << 40, 0)), 4, "more than the file holds")
    bad("bad_alignment.gguf", gguf([("general.alignment", "u32", 48)], good_t), 4,
        "general.alignment is not a power of two")
    bad("bad_value_type.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_str("k") + struct.pack("<I", 77),
        4, "unknown metadata value type 77")
    bad("duplicate_key.gguf", gguf([("a", "u8", 1), ("a", "u8", 2)], good_t), 4, "duplicate metadata key 'a'")
    bad("duplicate_tensor.gguf", gguf([], good_t + good_t), 4, "duplicate tensor name 'w'")
    bad("q4k_row.gguf", gguf([], [("w", [1, 100], 12, bytes(144))]), 4,
        "tensor 'w': row of 100 elements is not a whole number of Q4_K blocks (256)")
    bad("dim_beyond_int64.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + gguf_str("w") +
        struct.pack("<IQ", 1, 1 << 63) + struct.pack("<IQ", 0, 0), 4, "tensor 'w': dimension 0 is")
    bad("overflow_dims.gguf", gguf([], [("w", [1 << 32, 1 << 32], 0, b"")]), 4,
        "tensor 'w': shape [4294967296, 4294967296] has more than 2^63 elements")
    bad("deep_arrays.gguf", gguf([("a", "arr", (9, [(9, [(9, [(9, [(9, [(5, [1])])])])])]))], []), 4,
        "metadata arrays nested deeper than")

    # ONNX
    good = model(graph([], [tensor_proto("w", [2, 2], FLOAT, raw=pack_f32([1, 2, 3, 4]))]))
    bad("empty.onnx", b"", 4, "empty file")
    bad("truncated_varint.onnx", b"\x08\xff\xff", 4, "truncated varint at byte 1 (in ModelProto)")
    bad("truncated_message.onnx", good[:-2], 4, "length past the end of the message")
    bad("graph_wire_type.onnx", f_varint(1, 8) + f_varint(7, 1), 4,
        "ModelProto.graph has wire type varint, expected length-delimited")
    bad("group_wire_type.onnx", f_varint(1, 8) + tag(7, 3), 4, "unsupported wire type (group)")
    bad("raw_data_wire_type.onnx",
        model(graph([], [tensor_proto("w", [1], FLOAT, extra=f_varint(9, 4))])), 4,
        "TensorProto.raw_data has wire type varint")
    bad("raw_data_short.onnx", model(graph([], [tensor_proto("w", [2, 2], FLOAT, raw=pack_f32([1, 2, 3]))])), 4,
        "tensor 'w': raw_data holds 12 bytes, dims [2, 2] x FLOAT need 16")
    bad("float_data_short.onnx", model(graph([], [tensor_proto("w", [4], FLOAT, float_data=[1, 2])])), 4,
        "tensor 'w': float_data holds 8 bytes, dims [4] x FLOAT need 16")
    bad("int32_data_count.onnx", model(graph([], [tensor_proto("w", [3], FLOAT16, int32_data=[1, 2])])), 4,
        "tensor 'w': int32_data holds 2 elements, dims [3] need 3")
    bad("int32_data_range.onnx", model(graph([], [tensor_proto("w", [1], FLOAT16, int32_data=[70000])])), 4,
        "tensor 'w': int32_data has a malformed or out-of-range FLOAT16 element")
    bad("no_data.onnx", model(graph([], [tensor_proto("w", [2], FLOAT)])), 4, "tensor 'w': no data for dims [2]")
    bad("negative_dim.onnx", model(graph([], [tensor_proto("w", [-1, 2], FLOAT, raw=b"")])), 4,
        "tensor 'w': negative dimension in [-1, 2]")
    bad("overflow_dims.onnx", model(graph([], [tensor_proto("w", [1 << 40, 1 << 40], FLOAT, raw=b"")])), 4,
        "tensor 'w': dims [1099511627776, 1099511627776] have more than 2^63 elements")
    bad("no_data_type.onnx", model(graph([], [tensor_proto("w", [1], 0, raw=b"\0")])), 4,
        "tensor 'w': no valid data_type")
    bad("no_graph.onnx", f_varint(1, 8) + f_bytes(2, "x"), 4, "no graph")
    bad("constant_bad_tensor.onnx",
        model(graph([node("Constant", outputs=["c"], attrs=[attribute("value", t=tensor_proto(
            None, [2], FLOAT, raw=pack_f32([1])))])])), 4, "tensor 'c': raw_data holds 4 bytes")
    bad("duplicate.onnx", model(graph([], [tensor_proto("w", [1], FLOAT, raw=pack_f32([1]))] * 2)), 4,
        "duplicate tensor name 'w'")
    ext = lambda loc, off="0", ln="16": tensor_proto("w", [2, 2], FLOAT, external=[
        ("location", loc), ("offset", off), ("length", ln)])
    bad("external_missing.onnx", model(graph([], [ext("nowhere.bin")])), 3,
        "external data of tensor 'w'")
    write("bad/short.bin", pack_f32([1, 2]))
    bad("external_short.onnx", model(graph([], [ext("short.bin")])), 4,
        "tensor 'w': external data [0, +16) past the end of")
    bad("external_outside.onnx", model(graph([], [ext("../short.bin")])), 4,
        "external data location '../short.bin' leaves the model's folder")
    bad("external_bad_offset.onnx", model(graph([], [ext("short.bin", off="x1")])), 4,
        "tensor 'w': external_data offset is not a whole number")
    # neither format
    bad("random.bin", b"\x01\x02\x03 this is no model", 4, "not a safetensors, GGUF or ONNX file")
    with open(os.path.join(OUT, "bad", "cases.tsv"), "w") as f:
        for path, code, text in cases:
            f.write("%s\t%d\t%s\n" % (path, code, text))


make_dtypes()
make_gguf()
make_onnx()
make_same()
make_sharded()
make_bad()
with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f)
