#!/usr/bin/env python3
"""Writes data/stories260K.gguf from data/stories260K/model.safetensors.

The GGUF a llama.cpp conversion (convert_hf_to_gguf.py --outtype f16) would
give for the weights: llama.cpp tensor names, q/k rows permuted back from
Hugging Face's rotary order to llama.cpp's, 2-D weights as F16 and norms as
F32, the llama.* hyperparameters. No tokenizer (stories260K's tok512 is not
part of data/), so llama.cpp cannot run it; it is a fixture for
`frontier quantize --format gguf` and the readers.

Needs numpy only; the file is written by hand (GGUF v3, little-endian,
alignment 32), so the output does not depend on a gguf-py version and the
same input gives the same bytes.

usage: python3 data/make_gguf_fixture.py [MODEL_DIR [OUT.gguf]]
         [--dtype f16|f32|bf16] [--alignment N] [--byte-vocab]
(the defaults make the committed file; the tests make variants: BF16 or F32
weights, a general.alignment other than 32, and with --byte-vocab a file
llama.cpp runs)

--byte-vocab adds a stand-in tokenizer so that llama.cpp loads the model
(llama-perplexity in `frontier evaluate`, docs/evaluate.md): a SentencePiece
("llama") vocabulary of 512 entries laid out as tok512's are, <unk> <s> </s>,
then the 256 byte tokens <0x00>..<0xFF> at ids 3..258 (tok512's byte
fallback), then placeholders <unused259>..<unused511> where tok512's learned
pieces would be. Text becomes byte tokens only: the model's own ids for
bytes, but not the pieces it mostly saw in training, so its perplexity is
high; quantized against unquantized, the KL divergence is still a real
engine's measurement of the weights' change.
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30
GV_UINT32, GV_INT32, GV_FLOAT32, GV_STRING, GV_ARRAY = 4, 5, 6, 8, 9


def read_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[base + a:base + b], dtype="<f4").reshape(info["shape"])
    return out


def unpermute(w, n_head):
    # HF's rotary order (convert_llama_weights_to_hf viewed rows as
    # [head, half, pair] and swapped the last two) back to llama.cpp's
    # interleaved order, as convert_hf_to_gguf.py's LlamaModel.permute does:
    # rows viewed as [head, pair, half], pair and half swapped
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def to_bf16_bytes(a):
    # float32 -> bfloat16, round to nearest even (finite weights)
    u = a.astype("<f4").view("<u4").astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(ty, val):
    if ty == GV_STRING:
        return gguf_string(val)
    if ty == GV_ARRAY:
        ety, items = val
        return struct.pack("<IQ", ety, len(items)) + b"".join(gguf_value(ety, v) for v in items)
    return struct.pack({GV_UINT32: "<I", GV_INT32: "<i", GV_FLOAT32: "<f"}[ty], val)


def byte_vocab(n_vocab):
    """tok512's layout with its learned pieces replaced by placeholders."""
    # llama_token_type: 2 unknown, 3 control, 5 unused, 6 byte
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    tokens += [f"<unused{i}>" for i in range(len(tokens), n_vocab)]
    types += [5] * (n_vocab - len(types))
    return [
        ("tokenizer.ggml.model", GV_STRING, "llama"),
        ("tokenizer.ggml.tokens", GV_ARRAY, (GV_STRING, tokens)),
        ("tokenizer.ggml.scores", GV_ARRAY, (GV_FLOAT32, [0.0] * n_vocab)),
        ("tokenizer.ggml.token_type", GV_ARRAY, (GV_INT32, types)),
        ("tokenizer.ggml.unknown_token_id", GV_UINT32, 0),
        ("tokenizer.ggml.bos_token_id", GV_UINT32, 1),
        ("tokenizer.ggml.eos_token_id", GV_UINT32, 2),
    ]


def main():
    root = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description="stories260K as a GGUF fixture")
    ap.add_argument("model", nargs="?", default=str(root / "stories260K"))
    ap.add_argument("out", nargs="?", default=str(root / "stories260K.gguf"))
    ap.add_argument("--dtype", choices=("f16", "f32", "bf16"), default="f16",
                    help="of the 2-D weights (norms stay F32)")
    ap.add_argument("--alignment", type=int, default=0,
                    help="write general.alignment (default: none, i.e. 32)")
    ap.add_argument("--byte-vocab", action="store_true",
                    help="add a stand-in byte-level vocabulary so that llama.cpp runs the file")
    args = ap.parse_args()
    model, out = Path(args.model), Path(args.out)
    align = args.alignment or 32
    wtype = {"f16": GGML_F16, "f32": GGML_F32, "bf16": GGML_BF16}[args.dtype]
    cfg = json.loads((model / "config.json").read_text())
    w = read_safetensors(model / "model.safetensors")
    n_head, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dim, n_layer = cfg["hidden_size"], cfg["num_hidden_layers"]

    tensors = [("token_embd.weight", w["model.embed_tokens.weight"])]
    for i in range(n_layer):
        p = f"model.layers.{i}."
        tensors += [
            (f"blk.{i}.attn_norm.weight", w[p + "input_layernorm.weight"]),
            (f"blk.{i}.attn_q.weight", unpermute(w[p + "self_attn.q_proj.weight"], n_head)),
            (f"blk.{i}.attn_k.weight", unpermute(w[p + "self_attn.k_proj.weight"], n_kv)),
            (f"blk.{i}.attn_v.weight", w[p + "self_attn.v_proj.weight"]),
            (f"blk.{i}.attn_output.weight", w[p + "self_attn.o_proj.weight"]),
            (f"blk.{i}.ffn_norm.weight", w[p + "post_attention_layernorm.weight"]),
            (f"blk.{i}.ffn_gate.weight", w[p + "mlp.gate_proj.weight"]),
            (f"blk.{i}.ffn_up.weight", w[p + "mlp.up_proj.weight"]),
            (f"blk.{i}.ffn_down.weight", w[p + "mlp.down_proj.weight"]),
        ]
    tensors.append(("output_norm.weight", w["model.norm.weight"]))
    if "lm_head.weight" in w and not cfg.get("tie_word_embeddings"):
        tensors.append(("output.weight", w["lm_head.weight"]))

    kv = [
        ("general.architecture", GV_STRING, "llama"),
        ("general.name", GV_STRING, "stories260K"),
        # LLAMA_FTYPE_ALL_F32, _MOSTLY_F16, _MOSTLY_BF16
        ("general.file_type", GV_UINT32, {GGML_F32: 0, GGML_F16: 1, GGML_BF16: 32}[wtype]),
        ("llama.vocab_size", GV_UINT32, cfg["vocab_size"]),
        ("llama.context_length", GV_UINT32, cfg["max_position_embeddings"]),
        ("llama.embedding_length", GV_UINT32, dim),
        ("llama.block_count", GV_UINT32, n_layer),
        ("llama.feed_forward_length", GV_UINT32, cfg["intermediate_size"]),
        ("llama.rope.dimension_count", GV_UINT32, dim // n_head),
        ("llama.attention.head_count", GV_UINT32, n_head),
        ("llama.attention.head_count_kv", GV_UINT32, n_kv),
        ("llama.attention.layer_norm_rms_epsilon", GV_FLOAT32, cfg["rms_norm_eps"]),
        ("llama.rope.freq_base", GV_FLOAT32, cfg["rope_theta"]),
    ]
    if args.byte_vocab:
        kv += byte_vocab(cfg["vocab_size"])
    if args.alignment:
        kv.append(("general.alignment", GV_UINT32, args.alignment))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, ty, val in kv:
        head += gguf_string(key) + struct.pack("<I", ty)
        head += gguf_value(ty, val)
    datas, offset = [], 0
    for name, a in tensors:
        ty = wtype if a.ndim == 2 else GGML_F32
        if ty == GGML_BF16:
            data = to_bf16_bytes(a)
        else:
            data = a.astype("<f2" if ty == GGML_F16 else "<f4").tobytes()
        head += gguf_string(name) + struct.pack("<I", a.ndim)
        head += b"".join(struct.pack("<Q", d) for d in reversed(a.shape))  # ne[0] innermost
        head += struct.pack("<IQ", ty, offset)
        data += b"\0" * (-len(data) % align)
        datas.append(data)
        offset += len(data)
    head += b"\0" * (-len(head) % align)
    out.write_bytes(head + b"".join(datas))
    print(f"wrote {out}: {len(tensors)} tensors, {len(head) + offset} bytes")


if __name__ == "__main__":
    main()
