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

    python3 data/make_moe_fixture.py [-o data/tiny-moe] [--dtype bf16|f32]
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
    args = ap.parse_args()
    os.makedirs(args.output, exist_ok=True)
    write_safetensors(os.path.join(args.output, "model.safetensors"),
                      tensors(np.random.default_rng(args.seed)), args.dtype)
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
