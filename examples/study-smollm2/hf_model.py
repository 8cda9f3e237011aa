#!/usr/bin/env python3
"""The SmolLM2 study's Hugging Face side: the GGUF release as a Hugging Face
folder, and the llama.cpp-measured sensitivities under its names.

transformers reads the GGUF (dequantizing its Q4_1 and Q8_0 blocks with
gguf-py, undoing llama.cpp's q/k row permutation) and the folder is saved in
float32, so every weight is the release's value exactly. The sensitivity
file of `frontier sensitivity` names modules as llama.cpp does
(blk.N.attn_q); the copy names them as the folder does
(model.layers.N.self_attn.q_proj; token_embd -> model.embed_tokens, whose
alpha was measured with both of its uses perturbed, the embedding being
tied to the output layer). A row permutation does not change a tensor's
sensitivity (alpha is per unit squared relative error of the whole matrix).

usage: hf_model.py GGUF SENS.safetensors OUT_DIR OUT_SENS.safetensors
Exit 77 when torch, transformers, accelerate or gguf are missing.
"""
import os
import re
import sys

try:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import accelerate  # noqa: F401
    import gguf  # noqa: F401
    from safetensors import safe_open
    from safetensors.torch import save_file
except ImportError as e:
    print(f"SKIP: {e} (pip install torch transformers accelerate gguf safetensors)")
    sys.exit(77)

NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
         "ffn_down": "mlp.down_proj"}


def hf_name(name):
    if name == "token_embd.sensitivity":
        return "model.embed_tokens.sensitivity"
    m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.sensitivity", name)
    if not m or m.group(2) not in NAMES:
        sys.exit(f"hf_model.py: no Hugging Face name for '{name}'")
    return f"model.layers.{m.group(1)}.{NAMES[m.group(2)]}.sensitivity"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("usage: ")[1].split("\n")[0])
    gguf_path, sens, out_dir, out_sens = sys.argv[1:]
    d, f = os.path.split(os.path.abspath(gguf_path))
    if not os.path.exists(os.path.join(out_dir, "config.json")):
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
        tmp = out_dir + ".tmp"
        os.makedirs(tmp, exist_ok=True)
        # save_pretrained refuses a model loaded from a GGUF ("not
        # serializable"): the weights and the config are written here instead
        sd = {k: v.contiguous() for k, v in model.state_dict().items()}
        if model.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        save_file(sd, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        cfg = model.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        cfg.dtype = torch.float32
        cfg.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(d, gguf_file=f).save_pretrained(tmp)
        os.replace(tmp, out_dir)
    with safe_open(sens, "pt") as s:
        meta = dict(s.metadata() or {})
        tensors = {hf_name(k): s.get_tensor(k) for k in s.keys()}
    meta["renamed"] = f"from {os.path.basename(sens)}: llama.cpp names -> Hugging Face names (hf_model.py)"
    save_file(tensors, out_sens + ".tmp", metadata=meta)
    os.replace(out_sens + ".tmp", out_sens)
    print(f"{out_dir}: the release in float32; {out_sens}: {len(tensors)} sensitivities renamed")


if __name__ == "__main__":
    main()
