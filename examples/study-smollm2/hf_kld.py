#!/usr/bin/env python3
"""The SmolLM2 study's second engine: candidates evaluated by transformers
(PyTorch) against a reference on a held-out text. A candidate or reference
is a GGUF (transformers dequantizes each tensor with gguf-py and runs its own
LlamaForCausalLM) or a Hugging Face folder.

Scored as llama-perplexity --kl-divergence scores, so the two engines'
figures compare: the text tokenized once (the reference's tokenizer, as
transformers builds it), cut into chunks of CTX tokens, the first token of
each chunk replaced by BOS (always; llama-perplexity does it only when the
model's GGUF says add_bos_token), and the positions CTX/2 .. CTX-2 of each
chunk scored (their next-token distributions). Per candidate: mean KL divergence
KL(reference || candidate) in nats with its standard error, perplexity of the
text's own next tokens, and the rate at which the top token equals the
reference's.

usage: hf_kld.py --reference REF --text FILE [--ctx 128] [--cache F.pt]
                 [--out RESULTS.tsv] [--threads N] NAME=CANDIDATE ...
Appends one line per candidate to --out (name, mean_kld, kld_stderr, ppl,
ppl_reference, same_top_pct, positions); a name already there is skipped.
Exit 77 when torch, transformers, gguf or accelerate are missing.
"""
import argparse
import math
import os
import sys
import time

try:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import accelerate  # noqa: F401  (transformers needs it to load a GGUF)
    import gguf  # noqa: F401  (transformers dequantizes with gguf-py)
except ImportError as e:
    print(f"SKIP: {e} (pip install torch transformers accelerate gguf)")
    sys.exit(77)


def load(path):
    """A GGUF file (transformers dequantizes it) or a Hugging Face folder."""
    if os.path.isdir(path):
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    d, f = os.path.split(os.path.abspath(path))
    return AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()


def tokenizer(path):
    if os.path.isdir(path):
        return AutoTokenizer.from_pretrained(path)
    d, f = os.path.split(os.path.abspath(path))
    return AutoTokenizer.from_pretrained(d, gguf_file=f)


def chunks(ids, ctx, bos):
    n = len(ids) // ctx
    if n == 0:
        sys.exit(f"hf_kld.py: the text has {len(ids)} tokens, fewer than one chunk of {ctx}")
    x = torch.tensor(ids[: n * ctx]).view(n, ctx).clone()
    if bos is not None:
        x[:, 0] = bos
    return x


@torch.no_grad()
def scored_logprobs(model, x, ctx, batch=4):
    first = ctx // 2
    out = []
    for i in range(0, x.shape[0], batch):
        logits = model(x[i:i + batch]).logits[:, first:ctx - 1, :].float()
        out.append(torch.log_softmax(logits, dim=-1))
    return torch.cat(out)  # [chunks, ctx/2 - 1, vocab]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--cache", help="the reference's scored log-probabilities, kept between runs")
    ap.add_argument("--out", default="-")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("candidates", nargs="*", metavar="NAME=PATH")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    done = set()
    if a.out != "-" and os.path.exists(a.out):
        done = {line.split("\t")[0] for line in open(a.out) if line.strip()}
    todo = []
    for c in a.candidates:
        name, sep, path = c.partition("=")
        if not sep or not name or not path:
            sys.exit(f"hf_kld.py: '{c}' is not NAME=PATH")
        if name not in done:
            todo.append((name, path))
    if not todo:
        return
    tok = tokenizer(a.reference)
    ids = tok(open(a.text, encoding="utf-8").read(), add_special_tokens=False).input_ids
    x = chunks(ids, a.ctx, tok.bos_token_id)
    target = x[:, a.ctx // 2 + 1:]  # the tokens the scored positions predict
    key = (os.path.abspath(a.reference), os.path.abspath(a.text), a.ctx, x.sum().item())
    ref = None
    if a.cache and os.path.exists(a.cache):
        c = torch.load(a.cache)
        if c["key"] == key:
            ref = c["logp"]
    if ref is None:
        t = time.time()
        ref = scored_logprobs(load(a.reference), x, a.ctx)
        print(f"reference {a.reference}: {x.shape[0]} chunks of {a.ctx}, "
              f"{time.time() - t:.0f} s", file=sys.stderr)
        if a.cache:
            torch.save({"key": key, "logp": ref}, a.cache + ".tmp")
            os.replace(a.cache + ".tmp", a.cache)
    nll_ref = -ref.gather(-1, target.unsqueeze(-1)).mean().item()
    out = sys.stdout if a.out == "-" else open(a.out, "a")
    for name, path in todo:
        t = time.time()
        q = scored_logprobs(load(path), x, a.ctx)
        kld = (ref.exp() * (ref - q)).sum(-1).flatten().double()
        n = kld.numel()
        mean = kld.mean().item()
        err = kld.std().item() / math.sqrt(n)
        nll = -q.gather(-1, target.unsqueeze(-1)).mean().item()
        same = (q.argmax(-1) == ref.argmax(-1)).double().mean().item() * 100
        print(f"{name}\t{mean:.6g}\t{err:.3g}\t{math.exp(nll):.4f}\t{math.exp(nll_ref):.4f}"
              f"\t{same:.3f}\t{n}", file=out, flush=True)
        print(f"{name}: mean KLD {mean:.6g} +/- {err:.2g}, PPL {math.exp(nll):.4f} "
              f"(reference {math.exp(nll_ref):.4f}), same top {same:.2f}% over {n} positions, "
              f"{time.time() - t:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
