#!/usr/bin/env python3
"""kld.py: measured model quality of a quantized checkpoint.

For a local Hugging Face causal LM folder (the original) and its quantized
weights Q(W) -- a checkpoint written by `frontier quantize --format
dequantized` (a .safetensors file or a folder), or a recipe / a single
configuration that this script hands to `frontier quantize --format
dequantized` itself -- it measures on held-out token sequences:

  kl_mean     mean over all predicted positions of KL(p_orig || p_quant),
              the next-token distributions, in nats (what llama.cpp's
              `llama-perplexity --kl-divergence` reports as "Mean KLD");
  ppl_quant   perplexity exp(mean next-token NLL) of the quantized model;
  ppl_orig    the same for the original.

Held-out sequences: --tokens FILE (.npy or .txt, as capture.py reads them),
or (default) --n-sequences sequences of --seq-len tokens sampled from the
original model by the same sampler as examples/calibration/capture.py with
--seed (default 5678, not capture.py's 1234, so they are not the
calibration sequences). Every position but the first of each sequence is
predicted.

The JSON (--output, else stdout) holds everything needed to reproduce the
number: the command, the model's and checkpoint's sha256, the recipe or
configuration, the token source, seed and a sha256 of the ids, versions.
`frontier annotate RUN.h5 EVAL.json` stores it in a dataset.

Needs torch, transformers, safetensors, numpy (CPU is enough for small
models). Example:

    python3 examples/eval/kld.py data/stories260K --config int4-g32-sym -o int4.json
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "calibration"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import capture  # noqa: E402  (sampler, token files, hashes)

TOOL = "frontier examples/eval/kld.py"


def checkpoint_files(path):
    if os.path.isfile(path):
        return [path]
    files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".safetensors"))
    if not files:
        sys.exit(f"kld.py: {path}: no .safetensors files")
    return files


def load_quantized(model_dir, ckpt, dtype, attn):
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn)
    sd = {}
    for f in checkpoint_files(ckpt):
        sd.update(load_file(f))
    missing, unexpected = model.load_state_dict(sd, strict=False)
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    missing = [k for k in missing if k not in tied]
    if missing or unexpected:
        sys.exit(f"kld.py: {ckpt} does not fit {model_dir}: missing {missing[:5]}, "
                 f"unexpected {unexpected[:5]}")
    if tied:
        model.tie_weights()
    return model.eval()


@torch.no_grad()
def log_probs(model, seqs, batch):
    out = []
    for b in capture.batches(seqs, batch):
        ids = torch.tensor(b, dtype=torch.long)
        logits = model(input_ids=ids, use_cache=False).logits[:, :-1, :]
        out.append(torch.log_softmax(logits.double(), dim=-1).reshape(-1, logits.shape[-1]))
    return torch.cat(out)


def targets(seqs):
    return torch.tensor([t for s in seqs for t in s[1:]], dtype=torch.long)


def main():
    ap = argparse.ArgumentParser(description="Mean next-token KL divergence and perplexity of a "
                                 "quantized checkpoint against its original.")
    ap.add_argument("model", help="the original model folder")
    q = ap.add_mutually_exclusive_group(required=True)
    q.add_argument("--dequantized", help="Q(W): a .safetensors file or folder (frontier quantize "
                   "--format dequantized)")
    q.add_argument("--recipe", help="a recipe JSON (frontier allocate -o): quantized here")
    q.add_argument("--config", help="one configuration for the default tensors: quantized here")
    ap.add_argument("--frontier", default=os.environ.get("FRONTIER", "frontier"),
                    help="the frontier binary for --recipe/--config (default $FRONTIER or frontier)")
    ap.add_argument("--name", help="what the result is stored under (default: the recipe's file "
                    "name without .json, or the configuration)")
    ap.add_argument("--tokens", help="held-out token ids (.npy or .txt); default: self-sampled")
    ap.add_argument("--n-sequences", type=int, default=16, help="sampled sequences (default 16)")
    ap.add_argument("--seq-len", type=int, default=256, help="tokens per sequence (default 256)")
    ap.add_argument("--seed", type=int, default=5678, help="sampling seed (default 5678)")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calib", help="calibration statistics for frontier quantize (a recipe "
                    "or configuration that needs them: GPTQ, AWQ, imatrix)")
    ap.add_argument("-o", "--output", help="JSON output (default stdout)")
    args = ap.parse_args()

    t0 = time.time()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dtype, attn = torch.float32, "eager"
    orig = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype,
                                                attn_implementation=attn).eval()
    cfg = orig.config

    if args.tokens:
        seqs = capture.read_token_file(args.tokens, args.seq_len)[:args.n_sequences]
        token_src = {"kind": "file", "file": os.path.basename(args.tokens),
                     "sha256": capture.sha256_file(args.tokens)}
    else:
        bos = cfg.bos_token_id if isinstance(getattr(cfg, "bos_token_id", None), int) else 1
        seqs = capture.sample_sequences(orig, args.n_sequences, args.seq_len, args.temperature,
                                        args.seed, bos, args.batch_size)
        token_src = {"kind": "self-sampled", "seed": args.seed, "temperature": args.temperature,
                     "sampler": "examples/calibration/capture.py sample_sequences"}
    seqs = [s for s in seqs if len(s) >= 2]
    if not seqs:
        sys.exit("kld.py: no sequence of 2 or more tokens")
    ids_hash = hashlib.sha256(json.dumps(seqs).encode()).hexdigest()

    tmp = None
    ckpt, source = args.dequantized, {"dequantized": args.dequantized}
    name = args.name
    try:
        if not ckpt:
            tmp = tempfile.mkdtemp(prefix="kld-")
            ckpt = os.path.join(tmp, "q")
            cmd = [args.frontier, "quantize", args.model, "-o", ckpt, "--format", "dequantized",
                   "--summary"]
            if args.calib:
                cmd += ["--calib", args.calib]
            if args.recipe:
                cmd += ["--recipe", args.recipe]
                source = {"recipe": args.recipe, "recipe_sha256": capture.sha256_file(args.recipe)}
                name = name or os.path.splitext(os.path.basename(args.recipe))[0]
            else:
                cmd += ["--config", args.config]
                source = {"config": args.config}
                name = name or args.config
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"kld.py: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
            source["quantize_command"] = " ".join(cmd)
        name = name or os.path.basename(os.path.normpath(ckpt))
        quant = load_quantized(args.model, ckpt, dtype, attn)
        source["checkpoint_sha256"] = [capture.sha256_file(f) for f in checkpoint_files(ckpt)]
        ref = log_probs(orig, seqs, args.batch_size)
        lq = log_probs(quant, seqs, args.batch_size)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    tgt = targets(seqs)
    kl = (ref.exp() * (ref - lq)).sum(dim=-1)
    nll_o = -ref.gather(1, tgt[:, None]).squeeze(1)
    nll_q = -lq.gather(1, tgt[:, None]).squeeze(1)
    n = kl.numel()
    weight_files = capture.model_weight_files(args.model)
    out = {
        "format": "frontier-eval",
        "version": 1,
        "name": name,
        **source,
        "model": os.path.basename(os.path.normpath(args.model)),
        "model_sha256": {f: capture.sha256_file(os.path.join(args.model, f)) for f in weight_files},
        "tokens": {**token_src, "n_sequences": len(seqs), "seq_len": max(len(s) for s in seqs),
                   "predicted_positions": n, "ids_sha256": ids_hash},
        "kl_mean": float(kl.mean()),
        "kl_stderr": float(kl.std() / np.sqrt(n)),
        "kl_p99": float(torch.quantile(kl.float(), 0.99)),
        "ppl_quant": float(torch.exp(nll_q.mean())),
        "ppl_orig": float(torch.exp(nll_o.mean())),
        "top1_agreement": float((ref.argmax(-1) == lq.argmax(-1)).double().mean()),
        "forward": f"PyTorch {torch.__version__}, transformers {transformers.__version__}, "
                   f"float32, cpu, eager, {args.threads} thread(s)",
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "tool": TOOL,
        "seconds": round(time.time() - t0, 2),
    }
    text = json.dumps(out, indent=2) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
