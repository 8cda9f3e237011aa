#!/usr/bin/env python3
"""Writes data/tiny-moe/: a tiny mixture-of-experts checkpoint with RANDOM
weights (structure only, no training), numpy only.

Two decoder layers of a Qwen3-MoE-like model (hidden 64, 4 experts of
intermediate size 64, 4 heads of 16, 2 kv heads, vocab 128), BF16:

  layer 0: transformers-5 fused experts, 3-D stacks
           mlp.experts.gate_up_proj [E, 2*intermediate, hidden]
           mlp.experts.down_proj    [E, hidden, intermediate]
  layer 1: per-expert 2-D tensors (the layout before transformers 5)
           mlp.experts.N.gate_proj.weight / up_proj / down_proj

plus attention (q/k/v/o), the router (mlp.gate), norms, the embedding and
lm_head. The same command gives the same bytes (fixed seed, sorted header).

With --gguf PATH it also writes the same weights as a GGUF file (gguf-py,
the `gguf` PyPI package), with llama.cpp's qwen3moe tensor names and
layout: both layers' experts as stacks `blk.N.ffn_gate_exps.weight`,
`ffn_up_exps`, `ffn_down_exps` ([E, out, in] in C order, GGUF dims reversed),
layer 0's from the halves of its fused gate_up_proj (gate rows first),
layer 1's from its 2-D experts stacked in expert order; the other tensors
`token_embd`, `blk.N.attn_q` / `attn_k` / `attn_v` / `attn_output`,
`ffn_gate_inp` (the router), `attn_norm`, `ffn_norm`, `output_norm`,
`output`. The values are the safetensors file's BF16 values stored as BF16, norms
as F32 (--dtype f32: all F32), so both files hold the same numbers.

    python3 data/make_moe_fixture.py [-o data/tiny-moe] [--dtype bf16|f32]
                                     [--gguf data/tiny-moe.gguf]
"""
import argparse
import json
import os
import struct

import numpy as np

HIDDEN, INTER, EXPERTS, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 64, 64, 4, 4, 2, 16, 128


def bf16_bytes(a):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def tensors(rng):
    out = {}

    def w(name, *shape, scale=None):
        fan_in = shape[-1]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        out[name] = (rng.standard_normal(shape) * s).astype(np.float32)

    w("model.embed_tokens.weight", VOCAB, HIDDEN, scale=0.02)
    for layer in range(2):
        p = f"model.layers.{layer}."
        out[p + "input_layernorm.weight"] = np.ones(HIDDEN, np.float32)
        out[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN, np.float32)
        w(p + "self_attn.q_proj.weight", HEADS * HEAD_DIM, HIDDEN)
        w(p + "self_attn.k_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        w(p + "self_attn.v_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        w(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM)
        w(p + "mlp.gate.weight", EXPERTS, HIDDEN)
        if layer == 0:
            # transformers 5: gate rows first, then up rows, per expert
            w(p + "mlp.experts.gate_up_proj", EXPERTS, 2 * INTER, HIDDEN)
            w(p + "mlp.experts.down_proj", EXPERTS, HIDDEN, INTER)
            # experts of very different scales, so per-expert scopes matter
            for name in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):
                scales = np.array([1.0, 0.25, 4.0, 0.05], np.float32)[:, None, None]
                out[p + name] = out[p + name] * scales
        else:
            for e in range(EXPERTS):
                q = f"{p}mlp.experts.{e}."
                w(q + "gate_proj.weight", INTER, HIDDEN)
                w(q + "up_proj.weight", INTER, HIDDEN)
                w(q + "down_proj.weight", HIDDEN, INTER)
    out["model.norm.weight"] = np.ones(HIDDEN, np.float32)
    w("lm_head.weight", VOCAB, HIDDEN, scale=0.02)
    return out


def bf16_round(a):
    """float32 -> the float32 of its bfloat16 (what the safetensors file holds)."""
    u = np.frombuffer(bf16_bytes(a), dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).reshape(a.shape)


def gguf_tensors(named):
    """The safetensors names -> llama.cpp's (qwen3moe), experts as stacks."""
    out = {"token_embd.weight": named["model.embed_tokens.weight"],
           "output_norm.weight": named["model.norm.weight"],
           "output.weight": named["lm_head.weight"]}
    for layer in range(2):
        p, b = f"model.layers.{layer}.", f"blk.{layer}."
        for hf, gg in (("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm"),
                       ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                       ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                       ("mlp.gate", "ffn_gate_inp")):
            out[b + gg + ".weight"] = named[p + hf + ".weight"]
        if layer == 0:
            gate_up = named[p + "mlp.experts.gate_up_proj"]
            out[b + "ffn_gate_exps.weight"] = gate_up[:, :INTER, :]
            out[b + "ffn_up_exps.weight"] = gate_up[:, INTER:, :]
            out[b + "ffn_down_exps.weight"] = named[p + "mlp.experts.down_proj"]
        else:
            for hf, gg in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"),
                           ("down_proj", "ffn_down_exps")):
                out[b + gg + ".weight"] = np.stack(
                    [named[f"{p}mlp.experts.{e}.{hf}.weight"] for e in range(EXPERTS)])
    return out


def write_gguf(path, named, dtype):
    import gguf  # the gguf PyPI package (gguf-py), only for --gguf

    w = gguf.GGUFWriter(path, "qwen3moe")
    w.add_name("tiny-moe (random weights, data/make_moe_fixture.py)")
    w.add_block_count(2)
    w.add_context_length(128)
    w.add_embedding_length(HIDDEN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_expert_count(EXPERTS)
    w.add_expert_used_count(2)
    w.add_expert_feed_forward_length(INTER)
    w.add_layer_norm_rms_eps(1e-6)
    for name in sorted(named):
        a = np.ascontiguousarray(bf16_round(named[name]))
        if dtype == "bf16" and a.ndim > 1:   # norms stay F32, as llama.cpp converts them
            bits = np.frombuffer(bf16_bytes(a), dtype="<u2").reshape(a.shape)
            w.add_tensor(name, bits, raw_shape=a.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, a.astype("<f4"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_safetensors(path, named, dtype):
    header, blobs, offset = {}, [], 0
    for name in sorted(named):
        a = named[name]
        data = bf16_bytes(a) if dtype == "bf16" else a.astype("<f4").tobytes()
        header[name] = {"dtype": "BF16" if dtype == "bf16" else "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt", "note": "random weights (data/make_moe_fixture.py)"}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--output", default=os.path.join(here, "tiny-moe"))
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--gguf", metavar="PATH", help="also write the weights as a GGUF file")
    args = ap.parse_args()
    os.makedirs(args.output, exist_ok=True)
    named = tensors(np.random.default_rng(args.seed))
    write_safetensors(os.path.join(args.output, "model.safetensors"), named, args.dtype)
    if args.gguf:
        write_gguf(args.gguf, gguf_tensors(named), args.dtype)
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
              "hidden_size": HIDDEN, "moe_intermediate_size": INTER, "num_experts": EXPERTS,
              "num_experts_per_tok": 2, "num_attention_heads": HEADS,
              "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "num_hidden_layers": 2,
              "vocab_size": VOCAB, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16" if args.dtype == "bf16" else "float32",
              "_note": "random weights, structure only; layer 0 fused 3-D experts, layer 1 "
                       "per-expert 2-D tensors (data/make_moe_fixture.py)"}
    with open(os.path.join(args.output, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
