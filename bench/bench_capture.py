#!/usr/bin/env python3
"""Benchmark: calibration statistics and sensitivities of an 8B-shaped Llama
through examples/calibration/capture.py, the command a user runs.

It writes a Hugging Face folder of a Llama-3-8B-shaped model with random
weights (transformers' own initialisation, seeded; bf16; 32 layers of
hidden 4096, intermediate 14336, 32 query and 8 key-value heads, vocabulary
128256, untied output layer), random token ids (seeded; the weights are
random, so real text would tell nothing more), then times capture.py on it:
statistics (H = mean x x^T, mean |x|, mean x^2 of all 225 nn.Linear inputs)
over --n-sequences x --seq-len tokens, and the sensitivity of every one of
the 225 weights (3 noise levels x --sensitivity-sequences sequences each).
The folder is made before the clock starts; the time is capture.py's wall
time, from start to the written file, and its own split (load, tokens,
statistics, sensitivity, write), and where capture.py kept its float64
sums (--stats-device auto: the GPU when they fit beside a batch, else the
host; 66 GB for this shape).

    python3 bench/bench_capture.py --work DIR [--device cuda] [--json OUT]
        [--layers 32] [--shape llama-8b|tiny] [--n-sequences 64] [--seq-len 512]
        [--sensitivity-sequences 8] [--target-s 900] [--keep]
        [--model DIR] [--tokens-source random|self]

--model times an existing folder instead (docs/benchmarks.md: SmolLM2-135M-
Instruct); --tokens-source self lets capture.py sample its own sequences
from the model (its default source) instead of random ids.

Prints a table; with --json writes the figures. Exit 0 when capture.py
finished (within --target-s or not: the table says which), 1 when it failed,
77 when torch or transformers are missing. --shape tiny is a 2-layer model
of width 64 for checking the script itself on a CPU.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {
    # Llama-3-8B (meta-llama/Meta-Llama-3-8B's config.json, its shapes only)
    "llama-8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                     num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                     bos_token_id=128000, eos_token_id=128001, rms_norm_eps=1e-5),
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=1024, bos_token_id=1, eos_token_id=2,
                 rms_norm_eps=1e-5),
}


def make_model(folder, shape, layers, device):
    """Makes the model folder (config.json, safetensors shards); its seconds."""
    t0 = time.time()
    cfg = LlamaConfig(num_hidden_layers=layers, tie_word_embeddings=False, **SHAPES[shape])
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, max_shard_size="4GB")
    os.replace(tmp, folder)
    del model
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="folder for the model, the tokens and the output")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shape", default="llama-8b", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--model-dir", help="where to make the model folder (default: --work; /dev/shm "
                    "keeps the 16 GB of an 8B model off a small disk)")
    ap.add_argument("--model", help="time this model folder instead of making one (--shape, --layers unused)")
    ap.add_argument("--tokens-source", default="random", choices=["random", "self"],
                    help="random token ids (default), or capture.py's own sampling from the model")
    ap.add_argument("--n-sequences", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--sensitivity-sequences", type=int, default=8)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--attn-implementation", default="sdpa")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--target-s", type=float, default=900.0, help="the target (default 900 s)")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="stop capture.py when this many seconds have passed since the script "
                         "started, making the model included (a device call's limit)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the statistics file (tens of GB at 8B)")
    args = ap.parse_args()

    t_start = time.time()
    os.makedirs(args.work, exist_ok=True)
    if args.model_dir:
        os.makedirs(args.model_dir, exist_ok=True)
    folder = args.model or os.path.join(args.model_dir or args.work, f"{args.shape}-{args.layers}")
    made_s = 0.0
    if not os.path.exists(os.path.join(folder, "config.json")):
        if args.model:
            sys.exit(f"bench_capture: {args.model}: no config.json")
        made_s = make_model(folder, args.shape, args.layers, args.device)
    model_bytes = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        vocab = json.load(f)["vocab_size"]
    source = []
    if args.tokens_source == "random":
        tokens = os.path.join(args.work, "tokens.npy")
        rng = np.random.default_rng(0)
        np.save(tokens, rng.integers(0, vocab, size=(args.n_sequences, args.seq_len), dtype=np.int64))
        source = ["--tokens", tokens]
    out = os.path.join(args.work, "stats.safetensors")
    cmd = [sys.executable, os.path.join(ROOT, "examples", "calibration", "capture.py"), folder,
           "-o", out, *source, "--seq-len", str(args.seq_len),
           "--n-sequences", str(args.n_sequences),
           "--sensitivity-sequences", str(args.sensitivity_sequences),
           "--device", args.device, "--dtype", args.dtype,
           "--attn-implementation", args.attn_implementation, "--threads", str(args.threads)]
    print("capture:", " ".join(cmd), flush=True)
    t0 = time.time()
    timeout = None if args.deadline_s is None else args.deadline_s - (t0 - t_start)
    try:
        # capture.py's progress lines (stderr) pass through: a long run shows where it is
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"bench_capture: capture.py stopped after {time.time() - t0:.0f} s, unfinished "
              f"(its progress lines above say how far it got)")
        return 1
    wall = time.time() - t0
    if r.returncode != 0:
        print(r.stdout[-3000:])
        print(f"bench_capture: capture.py failed (exit {r.returncode})")
        return 1
    times = {}
    m = re.search(r"^times: (.*)$", r.stdout, re.M)
    for part in (m.group(1).split(", ") if m else []):
        k, v, _ = part.rsplit(" ", 2)
        times[k] = float(v)
    sums = re.search(r"^sums: (\d+) bytes of float64 on (\S+)$", r.stdout, re.M)
    head = r.stdout.splitlines()[0]
    ms = re.search(r": (\d+) modules, (\d+) sequences, (\d+) tokens, (\d+) tensors, (\d+) bytes", head)
    sens = re.search(r"^sensitivity: (\d+) modules, (\d+) levels, (\w+)(.*), ([\d.]+) s$", r.stdout, re.M)
    out_bytes = os.path.getsize(out)
    if not args.keep:
        os.remove(out)
    gpu = torch.cuda.get_device_name(0) if torch.device(args.device).type == "cuda" else "cpu"
    fig = {
        "benchmark": "capture.py statistics + sensitivities",
        "model": args.model or f"{args.shape}, {args.layers} layers, random weights",
        "tokens_source": args.tokens_source, "device": gpu,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "model_bytes": model_bytes, "model_made_s": round(made_s, 1),
        "n_sequences": args.n_sequences, "seq_len": args.seq_len,
        "sensitivity_sequences": args.sensitivity_sequences,
        "modules": int(ms.group(1)) if ms else None, "tokens": int(ms.group(3)) if ms else None,
        "output_bytes": out_bytes,
        "sums_bytes": int(sums.group(1)) if sums else None, "sums_on": sums.group(2) if sums else None,
        "sensitivity_weights": int(sens.group(1)) if sens else None,
        "sensitivity_detail": sens.group(4).strip(" ()") if sens else None,
        "wall_s": round(wall, 1), "split_s": times, "target_s": args.target_s,
        "within_target": wall <= args.target_s,
    }
    print(f"\n{'what':<34} {'value':>14}")
    rows = [("model on disk", f"{model_bytes / 1e9:.2f} GB"),
            ("calibration tokens", f"{fig['tokens']}"),
            ("modules with statistics", f"{fig['modules']}"),
            ("weights with a sensitivity", f"{fig['sensitivity_weights']}"),
            ("statistics file", f"{out_bytes / 1e9:.2f} GB"),
            ("float64 sums", f"{(fig['sums_bytes'] or 0) / 1e9:.2f} GB, {fig['sums_on']}")]
    rows += [(f"  {k}", f"{v:.1f} s") for k, v in times.items()]
    rows += [("capture.py wall time", f"{wall:.1f} s"),
             (f"target {args.target_s:.0f} s", "met" if fig["within_target"] else "NOT met")]
    for k, v in rows:
        print(f"{k:<34} {v:>14}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
