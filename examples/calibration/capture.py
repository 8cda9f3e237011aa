#!/usr/bin/env python3
"""capture.py: calibration statistics of a local Hugging Face causal LM.

Writes the calibration statistics file that frontier reads (core/calib.h;
the layout of docs/calibration.md): for every nn.Linear module of the
model, with x the module's input over all calibration tokens,

    <module>.hessian       [in, in]  H = mean x x^T
    <module>.act_abs_mean  [in]      mean |x_j|
    <module>.act_sq_mean   [in]      mean x_j^2   (exactly diag(H))

    <module>.sensitivity   [2]       alpha, the fit's relative residual

accumulated in float64 by forward pre-hooks and stored as float32, with
__metadata__ token_count, model, n_sequences, seq_len, sampling, forward
and tool. <module> is the name of model.named_modules(), which is the
checkpoint's weight name without ".weight" for Hugging Face checkpoints
(model.layers.0.self_attn.q_proj).

The calibration tokens come from one of:

    --text FILE     a text file, tokenized by the tokenizer in the model
                    folder (one token stream, cut into --seq-len chunks);
    --tokens FILE   token ids: .npy (1-D: one stream cut into chunks;
                    2-D: one sequence per row, rows longer than --seq-len
                    cut) or .txt (one sequence per non-empty line, ids
                    separated by spaces or commas, long lines cut);
    neither         (the default) --n-sequences sequences of --seq-len
                    tokens sampled from the model itself: each starts with
                    the BOS id of config.json (1 if it has none) and goes on
                    by plain multinomial sampling at --temperature (no top-k,
                    no top-p) from a torch.Generator seeded with --seed.
                    On the CPU the draws are float64 on the CPU, --batch-size
                    sequences at a time; on a GPU the softmax and the draws
                    stay on the device (its generator, seeded with --seed),
                    and --sample-batch sequences (default: all of them, up
                    to 256, as memory allows) are generated together, since
                    a generation step costs about the same for one sequence
                    or hundreds there. The two give different sequences.

Why self-sampling is the default: it needs nothing but the model folder
(no data set to download, no tokenizer: stories260K ships none), and the
statistics describe the inputs the model produces on its own distribution,
which is what its layers see when it generates. The caveat: they are only
as representative as the model's samples. A small or undertrained model's
samples are narrower and more repetitive than real text, a temperature
other than 1 shifts them further, and the statistics then weight the
inputs the model favours over those real text would bring. For a model
that will be used on a known kind of text, calibrate with --text on that
text. Sequences are fixed length: sampling goes on through EOS/BOS ids as
in packed training data.

Sensitivity (skip with --no-sensitivity): for each nn.Linear weight W
alone, seeded Gaussian noise dW is added at --sensitivity-levels relative
errors r = ||dW||_F / ||W||_F (default 0.025, 0.05, 0.1), the first
--sensitivity-sequences calibration sequences (default 8) go through the
model again, and the mean over all their positions of
the next-token KL divergence KL(p_ref || p_noisy) is measured. alpha is the
least-squares slope through the origin of KL against r^2 (KL ~ alpha r^2,
the "linearity theorem" of HIGGS, arXiv 2411.17525), and the residual is
||KL - alpha r^2|| / ||KL|| over the levels: near 0 when the response is
quadratic, larger when the levels already leave that regime. A tied
lm_head's noise moves the embedding too (one matrix), so its alpha is that
matrix's. The noise of module k (in named_modules order) comes from a
torch.Generator seeded with --sensitivity-seed + k: one float64 direction
Z, dW = c Z with c = r ||W|| / ||Z|| at each level.

Two ways to run it (--sensitivity-mode), the same measurement:

    batched (default)  the weight is not touched: a forward hook on each
                    nn.Linear that uses W adds c_l (x Z^T) to its output
                    (bias untouched; Z and the product in float32, float64
                    for a float64 model, then cast to the output's dtype),
                    and for a tied lm_head a hook on the embedding adds
                    c_l Z[ids] to its output, so both uses of the one
                    matrix move together. The L levels run in one forward pass of the
                    sequences repeated L times along the batch (level-major;
                    at most --sensitivity-batch sequences a pass, default:
                    as many as keep a pass's logits within 2^30 values,
                    4 GiB in float32). r is exactly c_l ||Z|| / ||W||, not a
                    realised r of a rounded weight. The reference
                    log-probabilities stay on the device in float32; each
                    pass's KL is taken there in float64 (the noisy
                    log-softmax, the reference renormalized) and summed to
                    one number per level; no [tokens, vocab] array of a
                    noisy pass leaves the device. Weights that are not a plain
                    nn.Linear's (fused expert stacks, an expert's rows of a
                    stack, routers, a subclass with its own forward, an
                    embedding with max_norm) and any use whose input is not
                    batch-first take the per-level path below with the same
                    float32 reference and float64 sums.
    perturb         the original way: W is overwritten with W + dW rounded
                    to its dtype, one forward pass of the sequences per level
                    (--batch-size sequences a pass), r is the realised
                    ||W' - W|| / ||W||, and the KL is taken from float64
                    log-softmax of reference and noisy logits (kept on the
                    device). On the CPU it writes the bytes the script wrote
                    before the batched mode existed (data/stories260K's and
                    data/tiny-moe's shipped files are written this way).

Both give the same alphas to float32 rounding in a float32 forward
(largest relative difference 5.5e-7 on data/stories260K, 2.5e-5 on
SmolLM2-135M; docs/calibration.md, "Speed"); with --dtype bfloat16 they
differ by a few percent (the perturb mode rounds W + dW to bfloat16, the
batched one adds the noise in float32 to each use's output). The metadata
says which ran: __metadata__.sensitivity is, in perturb mode, "mean
next-token KL(ref || noisy) over the first S calibration sequences per unit
squared relative error; Gaussian noise at relative errors LEVELS, seed SEED
+ module index; slope through the origin, relative residual"; in batched
mode the same followed by "; batched: the levels of a module in one
forward pass, ...". In batched mode, if any weight took the per-level path
(weight overwritten, realised r), __metadata__.sensitivity_per_level lists
their names, separated by ", ".

The statistics are gathered in a second pass: sampling runs with the hooks
off, then the sampled sequences (BOS included) go through one plain
forward pass each batch with the hooks on, exactly as a text file's chunks
would. Every position of every sequence is a token of token_count. A
tied lm_head (its weight is the embedding's) is an nn.Linear too and gets
statistics under the name lm_head.

Deterministic: the same command, on the same machine with the same
software, writes the same bytes (CPU, float32, --threads torch threads,
default 1, eager attention, seeded sampling; the safetensors header is
written with its keys in a fixed order; in both sensitivity modes, with the
same --batch-size and --sensitivity-batch). Another CPU or another torch
version may change float32 rounding and with it the last bits. On a GPU
the same holds for the same card and software (cuBLAS with a fixed
workspace), and the sampling sentence of the metadata says that the draws
were made there and how many sequences a batch held.

Mixture-of-experts models (Mixtral, Qwen2-MoE, Qwen3-MoE and the other
transformers-5 families whose experts are one module with 3-D parameters
gate_up_proj [E, 2*intermediate, hidden] and down_proj [E, hidden,
intermediate]): a forward pre-hook on the experts module reads the hidden
states and the router's top-k choice, and every expert e accumulates only
the tokens routed to it: gate_up_proj's input is those tokens' hidden
states, down_proj's is act(gate) * up of that expert on them (recomputed
with the module's own weights and _apply_gate, the eager formula). Each
expert has its own token count n_e (summed over experts they are top_k x
token_count). The names follow the checkpoint's own layout (read from the
safetensors headers of the model folder):

    fused 3-D stacks (transformers 5: .../experts.gate_up_proj):
        <stack>.hessian [E, in, in], .act_abs_mean / .act_sq_mean [E, in],
        __metadata__["<stack>.expert_token_counts"] = "[n_0, ..., n_E-1]"
    per-expert 2-D (.../experts.N.gate_proj.weight, Qwen; Mixtral's
    .../block_sparse_moe.experts.N.w1 / w3 / w2):
        experts.N.gate_proj and .up_proj (the same input), .down_proj as
        ordinary modules, means over that expert's tokens only, with
        __metadata__["<module>.token_count"] (informative)

An expert that received no token is reported on stderr: in the fused layout
its slices are zeros with n_e = 0 (frontier then gives it the token-weighted
mean of the other experts, docs/calibration.md); in the per-expert layout
its modules are left out (frontier skips those weights: no statistics). The
router (mlp.gate, a TopKRouter with a 2-D weight, not an nn.Linear in
transformers 5) sees every token and gets ordinary statistics. Sensitivity
of the experts: one alpha per stored tensor, so per stack in the fused
layout (the noise spread over the whole [E, out, in] stack, what allocate
chooses one configuration for) and per expert matrix in the per-expert
layout (noise on that expert's rows of the stack only).

Memory: float64 accumulators of in*in per module input. Modules handed the
very same input tensor (q_proj, k_proj and v_proj of a block; gate_proj
and up_proj of an MLP: found by one probing forward pass, checked on every
batch; --no-shared-sums turns it off) share one accumulator, and the
file still holds each module's tensors (equal bytes). Llama-3-8B's sums
then take 66 GB; --stats-device auto keeps them on the GPU when they fit
beside a batch, on the host otherwise (the GPU still forms each batch's
x^T x in float64). To make the
file smaller use --share-qkv (k_proj and v_proj are not stored; frontier's
lookup finds q_proj's tensors for all three) and, if needed, --diag-only
(no hessian; act_abs_mean and act_sq_mean only).

Example (the shipped data/stories260K/calib.safetensors):

    python3 examples/calibration/capture.py data/stories260K \\
        -o data/stories260K/calib.safetensors --sensitivity-mode perturb

Needs torch, transformers, safetensors and numpy.
"""
import argparse
import functools
import hashlib
import inspect
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

TOOL = "frontier examples/calibration/capture.py"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_weight_files(model_dir):
    """The checkpoint's weight files (those of its index, if sharded), whose
    hashes go into __metadata__.model; never other files of the folder (the
    output may be written there)."""
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        p = os.path.join(model_dir, index)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return sorted(set(json.load(f)["weight_map"].values()))
    for single in ("model.safetensors", "pytorch_model.bin"):
        if os.path.exists(os.path.join(model_dir, single)):
            return [single]
    return []


def chunk(ids, seq_len):
    """Cuts one list of ids into pieces of at most seq_len (none empty)."""
    return [ids[i:i + seq_len] for i in range(0, len(ids), seq_len)]


def read_token_file(path, seq_len):
    if path.endswith(".npy"):
        a = np.load(path, allow_pickle=False)
        if not np.issubdtype(a.dtype, np.integer):
            sys.exit(f"capture.py: {path}: token ids must be integers, not {a.dtype}")
        if a.ndim == 1:
            rows = [a.tolist()]
        elif a.ndim == 2:
            rows = [r.tolist() for r in a]
        else:
            sys.exit(f"capture.py: {path}: token ids must be 1-D or 2-D, not {a.ndim}-D")
    else:
        rows = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                fields = line.replace(",", " ").split()
                if not fields:
                    continue
                try:
                    rows.append([int(v) for v in fields])
                except ValueError:
                    sys.exit(f"capture.py: {path}:{lineno}: not a list of integer token ids")
    seqs = []
    for r in rows:
        seqs.extend(chunk(r, seq_len))
    return seqs


def read_text_file(path, model_dir, seq_len):
    try:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(model_dir)
    except Exception as e:  # no tokenizer files in the folder, typically
        sys.exit(f"capture.py: --text needs a tokenizer in {model_dir}: {e}\n"
                 "  (give token ids with --tokens, or sample from the model: neither option)")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ids = tok(text)["input_ids"]
    return chunk(ids, seq_len)


@torch.no_grad()
def sample_sequences(model, n, seq_len, temperature, seed, bos, batch, log=None):
    """n sequences of seq_len ids: bos, then multinomial samples at temperature.

    On the CPU the probabilities are float64 and the draws come from one CPU
    torch.Generator seeded with seed, batch sequences at a time (the bytes of
    the shipped files depend on it). On a GPU the softmax and the draws stay
    on the device (a generator of that device seeded with seed): nothing but
    the chosen ids crosses to the host, once a batch, and a batch may hold
    every sequence, since one generation step costs about the same for 1 or
    256 sequences there. log(step, steps, batch_index, n_batches) is called
    after every step."""
    device = next(model.parameters()).device
    on_cpu = device.type == "cpu"
    gen = torch.Generator(device="cpu" if on_cpu else device).manual_seed(seed)
    # transformers 5 renamed past_key_values to cache; older versions know only the former.
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out = []
    n_batches = (n + batch - 1) // batch
    for bi, start in enumerate(range(0, n, batch)):
        b = min(batch, n - start)
        ids = torch.full((b, seq_len), bos, dtype=torch.long, device=device)
        past = None
        step_in = ids[:, :1]
        for t in range(1, seq_len):
            r = model(input_ids=step_in, use_cache=True, **{cache_kw: past})
            past = r["cache"] if "cache" in r.keys() else r["past_key_values"]
            logits = r.logits[:, -1, :].double()
            if on_cpu:
                logits = logits.cpu()
            if temperature == 0:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)
            step_in = nxt.to(device)
            ids[:, t:t + 1] = step_in
            if log:
                log(t, seq_len - 1, bi, n_batches)
        out.extend(ids.cpu().tolist())
    return out


_STAGE = [None]


def staged(t):
    """t, a GPU tensor, copied into one reused page-locked host buffer (the
    products of x^T x reach host-side sums at the full copy rate, with no
    new host allocation per batch); valid until the next call."""
    n = t.numel()
    if _STAGE[0] is None or _STAGE[0].numel() < n or _STAGE[0].dtype != t.dtype:
        _STAGE[0] = None
        _STAGE[0] = torch.empty(n, dtype=t.dtype, pin_memory=True)
    s = _STAGE[0][:n].view(t.shape)
    s.copy_(t)
    return s


class Accumulator:
    """float64 sums of x x^T, |x| and x^2 of one module's input, kept on
    --stats-device. The products are formed in float64 where the
    activations are (a GPU forms x^T x even when the sums live on the
    host); with the sums on the model's device nothing but the final
    float32 tensors crosses to the host."""

    def __init__(self, n_in, diag_only, device="cpu"):
        self.n, self.n_in = 0, n_in
        self.abs_sum = torch.zeros(n_in, dtype=torch.float64, device=device)
        self.sq_sum = torch.zeros(n_in, dtype=torch.float64, device=device)
        self.h_sum = None if diag_only else torch.zeros(n_in, n_in, dtype=torch.float64, device=device)

    def add(self, x):
        dev = self.abs_sum.device
        x = x.detach().reshape(-1, x.shape[-1]).to(torch.float64)
        self.n += x.shape[0]
        self.abs_sum += x.abs().sum(dim=0).to(dev)
        if self.h_sum is not None:
            xtx = x.T @ x
            if xtx.device != dev:
                xtx = staged(xtx) if xtx.is_cuda and dev.type == "cpu" else xtx.to(dev)
            self.h_sum += xtx
        else:
            self.sq_sum += (x * x).sum(dim=0).to(dev)

    def tensors(self, name):
        h = None
        if self.h_sum is not None:
            h = self.h_sum / self.n
            h = (h + h.T) / 2          # exactly symmetric before the cast
            sq = torch.diagonal(h).clone()  # act_sq_mean is diag(H), bit for bit
        else:
            sq = self.sq_sum / self.n
        out = {}
        if h is not None:
            out[name + ".hessian"] = h.to(torch.float32).cpu().contiguous()
        out[name + ".act_abs_mean"] = (self.abs_sum / self.n).to(torch.float32).cpu().contiguous()
        out[name + ".act_sq_mean"] = sq.to(torch.float32).cpu().contiguous()
        return out

    def free(self):
        self.abs_sum = self.sq_sum = self.h_sum = None


class ExpertAccumulator:
    """Per-expert float64 sums of one fused stack's input: [E, in, in], [E, in]."""

    def __init__(self, n_experts, n_in, diag_only, device="cpu"):
        self.acc = [Accumulator(n_in, diag_only, device) for _ in range(n_experts)]

    def tensors(self, name):
        """Fused layout: <name>.hessian [E, in, in] etc.; an expert without
        tokens is zeros (its count 0 says so)."""
        parts = {}
        for a in self.acc:
            if a.n == 0:
                n_in = a.n_in
                t = {name + ".act_abs_mean": torch.zeros(n_in), name + ".act_sq_mean": torch.zeros(n_in)}
                if a.h_sum is not None:
                    t[name + ".hessian"] = torch.zeros(n_in, n_in)
            else:
                t = a.tensors(name)
            for k, v in t.items():
                parts.setdefault(k, []).append(v.to(torch.float32))
            a.free()
        return {k: torch.stack(v).contiguous() for k, v in parts.items()}

    def counts(self):
        return [a.n for a in self.acc]


def checkpoint_names(model_dir):
    """Every tensor name of the folder's safetensors weight files (headers only)."""
    names = set()
    for f in model_weight_files(model_dir):
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(model_dir, f), "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            names.update(k for k in json.loads(fh.read(n)) if k != "__metadata__")
    return names


def checkpoint_module(name, ckpt, leaf):
    """The checkpoint's name of module name + leaf (Mixtral checkpoints store
    the MoE block as block_sparse_moe, transformers 5 calls it mlp); name
    itself when the checkpoint has neither (or is not safetensors)."""
    for cand in (name, name.replace(".mlp.", ".block_sparse_moe.")):
        if cand + leaf in ckpt:
            return cand
    return name


def fused_experts(model):
    """(name, module) of every transformers-5 experts module: 3-D parameters
    gate_up_proj [E, 2I, H] and down_proj [E, H, I] in the default layout
    (concatenated gate/up halves, not transposed, no bias)."""
    out = []
    for name, m in model.named_modules():
        gu, dn = getattr(m, "gate_up_proj", None), getattr(m, "down_proj", None)
        if not (isinstance(gu, torch.nn.Parameter) and isinstance(dn, torch.nn.Parameter)
                and gu.dim() == 3 and dn.dim() == 3):
            continue
        if getattr(m, "is_transposed", False) or not getattr(m, "is_concatenated", True) \
                or getattr(m, "has_bias", False) or not getattr(m, "has_gate", True):
            sys.exit(f"capture.py: {name}: an experts module with a layout this script does not "
                     "read (transposed, interleaved gate/up, biases or no gate)")
        out.append((name, m))
    return out


def routers(model):
    """(name, module) of MoE routers that are not nn.Linear (transformers 5
    TopKRouter: a 2-D weight [E, hidden] applied to every token)."""
    return [(name, m) for name, m in model.named_modules()
            if not isinstance(m, torch.nn.Linear) and name.endswith(".gate")
            and isinstance(getattr(m, "weight", None), torch.nn.Parameter) and m.weight.dim() == 2
            and hasattr(m, "top_k")]


def shared_inputs(model, linears, seq, device):
    """owner[name]: the module whose accumulator holds name's input. One
    forward pass of a calibration sequence with a probe on every nn.Linear:
    a module handed the very tensor object the previous probe was handed
    (q, k and v of a block; gate and up of an MLP) shares that module's
    owner. A module called more than once a pass owns its sums and is no
    other module's owner."""
    owner, calls, prev = {}, {}, [None, None]

    def probe(module, a, kw, _name):
        x = a[0] if a else kw["input"]
        calls[_name] = calls.get(_name, 0) + 1
        if _name not in owner:
            owner[_name] = owner[prev[0]] if prev[0] is not None and prev[1] is x else _name
        prev[0], prev[1] = _name, x
    hooks = [m.register_forward_pre_hook(functools.partial(probe, _name=name), with_kwargs=True)
             for name, m in linears]
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([seq], dtype=torch.long, device=device), use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    multi = {n for n, c in calls.items() if c != 1}
    out = {}
    for name, _ in linears:
        o = owner.get(name, name)
        out[name] = name if name in multi or o in multi else o
    return out


def choose_stats_device(requested, device, n_ins, diag_only, batch_tokens, vocab):
    """Where the float64 sums of inputs n_ins live, and their bytes.
    --stats-device: as asked; 'auto' (the default) is the model's device
    when the sums fit in its free memory beside one batch's working set
    (its logits twice in float32, the widest input in float64 and its
    product, 2 GiB), the host otherwise."""
    need = sum(8 * (2 * n + (0 if diag_only else n * n)) for n in n_ins)
    if requested != "auto":
        return torch.device(requested), need
    if device.type != "cuda":
        return device, need
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info(device)
    wide = max(n_ins)
    reserve = 2 * batch_tokens * vocab * 4 + batch_tokens * wide * 8 + 8 * wide * wide + (2 << 30)
    where = device if need + reserve <= free else torch.device("cpu")
    print(f"capture.py: {need / 1e9:.1f} GB of float64 sums on {where} ({device}: {free / 1e9:.1f} GB free, "
          f"{reserve / 1e9:.1f} GB kept for a batch)", file=sys.stderr, flush=True)
    return where, need


def gpu_sample_batch(cfg, n, seq_len, dtype, device):
    """Sequences to sample together on a GPU: all n when their key-value cache
    and float64 logits take at most a quarter of the free memory, never more
    than 256; fewer otherwise (at least 1)."""
    layers = getattr(cfg, "num_hidden_layers", None)
    heads = getattr(cfg, "num_attention_heads", None)
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or (cfg.hidden_size // heads if heads else None)
    if device.type != "cuda" or not (layers and kv and head_dim):
        return min(n, 16)   # no free-memory figure, or no cache shape to size
    elem = torch.finfo(dtype).bits // 8
    per_seq = seq_len * layers * 2 * kv * head_dim * elem + 3 * cfg.vocab_size * 8
    free, _ = torch.cuda.mem_get_info(device)
    return max(1, min(n, 256, free // 4 // per_seq))


def fit_slope_through_origin(x, y):
    """Least-squares slope a of y = a x (no intercept) and the relative
    residual ||y - a x|| / ||y|| (0 when y is 0). Pure numpy: the unit test
    (tests/eval/test_sensitivity_fit.py) runs it without torch."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    den = float(np.dot(x, x))
    a = float(np.dot(x, y)) / den if den > 0 else 0.0
    ny = float(np.linalg.norm(y))
    res = float(np.linalg.norm(y - a * x)) / ny if ny > 0 else 0.0
    return a, res


@torch.no_grad()
def batches(seqs, batch_size):
    """Runs of equal-length sequences, at most batch_size each."""
    i = 0
    while i < len(seqs):
        j = i
        while j < len(seqs) and j - i < batch_size and len(seqs[j]) == len(seqs[i]):
            j += 1
        yield seqs[i:j]
        i = j


@torch.no_grad()
def log_probs(model, seqs, batch_size, device):
    """float64 next-token log-probabilities of every position, [tokens, vocab],
    left on the model's device (the perturb mode's reference and noisy passes)."""
    out = []
    for b in batches(seqs, batch_size):
        ids = torch.tensor(b, dtype=torch.long, device=device)
        logits = model(input_ids=ids, use_cache=False).logits
        out.append(torch.log_softmax(logits.double(), dim=-1).reshape(-1, logits.shape[-1]))
    return torch.cat(out)


def mean_kl(ref_lp, lp):
    """Mean over positions of KL(p_ref || p) from log-probabilities (on their device)."""
    return float((ref_lp.exp() * (ref_lp - lp)).sum(dim=-1).mean())


def hook_users(model, w):
    """The modules that use parameter w, when the batched mode can perturb
    every use of it by a forward hook: ([nn.Linear], [nn.Embedding]) with w
    as their weight, at least one nn.Linear, all of them the plain torch
    classes (their own forward) and no embedding with max_norm (which would
    rewrite the weight). None otherwise: a view of a parameter (an expert of
    a stack), a 3-D stack, a router, a subclass, a weight used under another
    name."""
    if not isinstance(w, torch.nn.Parameter):
        return None
    users = {}
    for _, m in model.named_modules(remove_duplicate=False):
        for pname, p in m._parameters.items():
            if p is not w:
                continue
            if pname != "weight":
                return None
            if isinstance(m, torch.nn.Linear) and type(m).forward is torch.nn.Linear.forward:
                users[id(m)] = ("linear", m)
            elif isinstance(m, torch.nn.Embedding) and type(m).forward is torch.nn.Embedding.forward \
                    and m.max_norm is None:
                users[id(m)] = ("embedding", m)
            else:
                return None
    linears = [m for kind, m in users.values() if kind == "linear"]
    embeds = [m for kind, m in users.values() if kind == "embedding"]
    return (linears, embeds) if linears else None


class LevelNoise:
    """Forward hooks that add c_l * (x Z^T) to a Linear's output (c_l * Z[ids]
    to an embedding's) for the rows of the batch that run level l: the
    batched mode's perturbation, the weight itself untouched. rows: the
    level index of each sequence of the batch (set before each pass), T its
    length. A use whose input is neither batch-first ([N, ...]) nor the
    batch's positions flattened ([N*T, in]) sets bad: that tensor is then
    measured by the per-level path."""

    def __init__(self, z, coefs):
        self.z, self.coefs = z, coefs   # z [out, in] (compute dtype, device), coefs [L]
        self.rows, self.T, self.bad = None, None, False

    def _scale(self, x):
        c = self.coefs[self.rows]           # [N]
        n = c.shape[0]
        if x.dim() >= 3 and x.shape[0] == n:
            return c.view(n, *([1] * (x.dim() - 1)))
        if x.dim() == 2 and x.shape[0] == n * self.T:
            return c.repeat_interleave(self.T).view(-1, 1)
        if x.dim() == 2 and x.shape[0] == n:
            return c.view(n, 1)
        self.bad = True
        return None

    def linear(self, module, args, kwargs, out):
        x = args[0] if args else kwargs["input"]
        s = self._scale(x)
        if s is None:
            return out
        d = torch.nn.functional.linear(x.to(self.z.dtype), self.z) * s
        return (out.to(d.dtype) + d).to(out.dtype)

    def embedding(self, module, args, kwargs, out):
        ids = args[0] if args else kwargs["input"]
        if ids.dim() < 1 or ids.shape[0] != self.rows.shape[0]:
            self.bad = True
            return out
        d = torch.nn.functional.embedding(ids, self.z)
        d = d * self.coefs[self.rows].view(-1, *([1] * (d.dim() - 1)))
        return (out.to(d.dtype) + d).to(out.dtype)


@torch.no_grad()
def ref_log_probs32(model, groups, seq_batch, device):
    """The batched mode's reference: float32 next-token log-probabilities
    [S_g, T, vocab] of each group of equal-length sequences, on the device."""
    refs = []
    for g in groups:
        parts = []
        for b in batches(g, seq_batch):
            ids = torch.tensor(b, dtype=torch.long, device=device)
            logits = model(input_ids=ids, use_cache=False).logits
            parts.append(torch.log_softmax(logits.float(), dim=-1))
            del logits
        refs.append(torch.cat(parts))
    return refs


@torch.no_grad()
def kl_per_level(model, groups, refs, n_levels, seq_batch, device, noise=None):
    """Mean over all positions of KL(p_ref || p) for each of n_levels, the
    sequences of groups repeated n_levels times along the batch (level-major)
    and cut into passes of at most seq_batch sequences; noise (a LevelNoise)
    is told which level each row runs. On the device, in float64, one level's
    rows of a pass at a time: the noisy logits' log-softmax, the float32
    reference renormalized (log-softmax again: the float32 reference's own
    normalization error would otherwise enter each position's KL whole), the
    terms exp(ref) (ref - lp) summed to one scalar per level. All in float32
    instead moved alpha by up to 8.5e-4 relative on SmolLM2-135M's least
    sensitive modules (KL ~ 3e-6), this by 2e-5 (docs/calibration.md, "Speed")."""
    sums = torch.zeros(n_levels, dtype=torch.float64, device=device)
    n_pos = 0
    for g, ref in zip(groups, refs):
        n_pos += len(g) * len(g[0])
        pairs = [(lv, s) for lv in range(n_levels) for s in range(len(g))]
        for p0 in range(0, len(pairs), seq_batch):
            chunk = pairs[p0:p0 + seq_batch]
            ids = torch.tensor([g[s] for _, s in chunk], dtype=torch.long, device=device)
            if noise is not None:
                noise.rows = torch.tensor([lv for lv, _ in chunk], dtype=torch.long, device=device)
                noise.T = ids.shape[1]
            logits = model(input_ids=ids, use_cache=False).logits
            i = 0
            while i < len(chunk):      # runs of one level: consecutive sequences of ref
                lv, s0 = chunk[i]
                j = i
                while j < len(chunk) and chunk[j][0] == lv:
                    j += 1
                lp = torch.log_softmax(logits[i:j].double(), dim=-1)
                ref_lp = torch.log_softmax(ref[s0:s0 + j - i].double(), dim=-1)
                sums[lv] += torch.nn.functional.kl_div(lp, ref_lp, reduction="none",
                                                       log_target=True).sum()
                del lp, ref_lp
                i = j
            del logits
    return (sums / n_pos).tolist()


@torch.no_grad()
def sensitivities(model, weights, seqs, levels, seed, batch_size, device, mode="batched",
                  seq_batch=0, log=None):
    """({module: (alpha, residual, [(r^2, KL)...])}, [modules measured per
    level]) for every (module, weight) of weights (a parameter, or a view of
    one: an expert's rows of a stack; fit_slope_through_origin of KL against
    r^2 over the levels).

    mode "perturb": the weight is overwritten with W + dW_l rounded to its
    dtype, one forward pass of seqs (batches of batch_size) per level, r the
    realised ||W' - W|| / ||W||, KL in float64 against a float64 reference
    (both on the device).

    mode "batched": for a weight whose every use is a plain nn.Linear (and a
    tied nn.Embedding), all levels in one forward pass of seqs repeated per
    level (passes of at most seq_batch sequences), LevelNoise adding
    c_l (x Z^T) to each use's output; r is c_l ||Z|| / ||W|| exactly. Other
    weights (stacks, expert views, routers, ...) and any use LevelNoise
    cannot place take the per-level in-place perturbation, with the same
    float32 reference and float64 KL sums. The noise direction Z of module k
    is the same in both modes (float64 randn, generator seed + k)."""
    out, per_level = {}, []
    if mode == "perturb":
        ref = log_probs(model, seqs, batch_size, device)
    else:
        groups = list(batches(seqs, len(seqs)))
        refs = ref_log_probs32(model, groups, seq_batch, device)
    def direction(k):
        gen = torch.Generator(device="cpu").manual_seed(seed + k)
        return torch.randn(weights[k][1].shape, generator=gen, dtype=torch.float64)

    # The next module's direction is drawn on a second host thread while the
    # device runs this one's passes (the draw is serial per generator: 0.6-2 s
    # for a 14336 x 4096 matrix); the values do not depend on the thread.
    pool = ThreadPoolExecutor(max_workers=1)
    nxt = pool.submit(direction, 0) if weights else None
    for k, (name, w) in enumerate(weights):
        z = nxt.result()
        if k + 1 < len(weights):
            nxt = pool.submit(direction, k + 1)
        w_norm = float(w.detach().double().norm())
        users = hook_users(model, w) if mode == "batched" else None
        pts = None
        if users is not None:
            cdt = torch.float64 if w.dtype == torch.float64 else torch.float32
            zc = z.to(device).to(cdt)      # the norm and the hooks' products on the device
            z_norm = float(zc.double().norm())
            coefs = torch.tensor([r * w_norm / z_norm for r in levels], dtype=cdt, device=device)
            noise = LevelNoise(zc, coefs)
            hs = [m.register_forward_hook(noise.linear, with_kwargs=True) for m in users[0]]
            hs += [m.register_forward_hook(noise.embedding, with_kwargs=True) for m in users[1]]
            try:
                kls = kl_per_level(model, groups, refs, len(levels), seq_batch, device, noise)
            finally:
                for h in hs:
                    h.remove()
            if not noise.bad:
                pts = [((float(c) * z_norm / w_norm) ** 2, kl) for c, kl in zip(coefs.double(), kls)]
        if pts is None:
            if mode == "batched":
                per_level.append(name)
            saved = w.detach().clone()
            pts = []
            for r in levels:
                dw = z * (r * w_norm / float(z.norm()))
                w.copy_((saved.double().cpu() + dw).to(w.dtype).to(w.device))
                actual = float((w.detach().double().cpu() - saved.double().cpu()).norm()) / w_norm
                if mode == "perturb":
                    kl = mean_kl(ref, log_probs(model, seqs, batch_size, device))
                else:
                    kl = kl_per_level(model, groups, refs, 1, seq_batch, device)[0]
                pts.append((actual * actual, kl))
            w.copy_(saved)
        a, res = fit_slope_through_origin([p[0] for p in pts], [p[1] for p in pts])
        out[name] = (a, res, pts)
        if log:
            log(k + 1, len(weights), name)
    pool.shutdown()
    return out, per_level


def canonical_header(header, meta):
    """The header with __metadata__ first, its keys sorted, then the tensors
    by data offset (safetensors' Rust writer emits __metadata__ in hash-map
    order, which changes from run to run), padded to 8 bytes."""
    ordered = {"__metadata__": {k: meta[k] for k in sorted(meta)}}
    for k in sorted(header, key=lambda k: (header[k]["data_offsets"][0], k)):
        ordered[k] = header[k]
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((-(8 + len(text))) % 8)
    return len(text).to_bytes(8, "little") + text


def write_safetensors(f, tensors, metadata):
    """Writes float32 tensors (all this script stores) to the open file f in
    safetensors' layout with the canonical header; returns the bytes written.
    They are streamed one at a time in the order safetensors' own writer
    uses (dtype, then name; no padding between tensors), so the bytes are
    what safetensors.torch.save makes, without a second copy of the whole
    file in memory (an 8B model's statistics are tens of GB)."""
    other = sorted(k for k, t in tensors.items() if t.dtype != torch.float32)
    assert not other, f"not float32: {other[:3]}"
    names = sorted(tensors)
    header, off = {}, 0
    for k in names:
        t = tensors[k]
        header[k] = {"dtype": "F32", "shape": list(t.shape),
                     "data_offsets": [off, off + 4 * t.numel()]}
        off += 4 * t.numel()
    head = canonical_header(header, metadata)
    f.write(head)
    assert sys.byteorder == "little"
    for k in names:
        f.write(memoryview(tensors[k].contiguous().numpy()).cast("B"))
    return len(head) + off


def keep_freed_memory():
    """glibc malloc maps each large allocation anew and unmaps it on free, so
    every forward pass on the CPU page-faults its activations in again (most
    of the system time of a capture, more than half its wall time on a small
    model). Serve them from the heap and keep freed memory instead: the
    resident size stays at its peak, the values are unchanged (torch aligns
    its CPU buffers to 64 bytes either way). A no-op where mallopt is not
    glibc's."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_max = -1, -4
        if libc.mallopt(m_mmap_max, 0):
            libc.mallopt(m_trim_threshold, 2**31 - 1)
    except (OSError, AttributeError):
        pass


def main():
    ap = argparse.ArgumentParser(
        description="Calibration statistics (H = mean x x^T, mean |x|, mean x^2) of every "
                    "nn.Linear input of a local Hugging Face causal LM, for frontier.")
    ap.add_argument("model", help="local model folder (config.json and weights)")
    ap.add_argument("-o", "--output", required=True, help="output .safetensors file")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--text", help="calibration text file (needs a tokenizer in the model folder)")
    src.add_argument("--tokens", help="calibration token ids: .npy or .txt")
    ap.add_argument("--n-sequences", type=int, default=None,
                    help="sequences to sample (default 64), or the most to use of --text/--tokens (default all)")
    ap.add_argument("--seq-len", type=int, default=256,
                    help="tokens per sequence, BOS included (default 256); --text/--tokens are cut to it")
    ap.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1.0; 0 = greedy)")
    ap.add_argument("--seed", type=int, default=1234, help="sampling seed (default 1234)")
    ap.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass (default 16)")
    ap.add_argument("--sample-batch", type=int, default=0,
                    help="self-sampling: sequences generated together (default 0: --batch-size on "
                         "the CPU; on a GPU as many as fit a quarter of its free memory, at most "
                         "256, the draws made there)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, for identical bytes)")
    ap.add_argument("--device", default="cpu", help="torch device (default cpu)")
    ap.add_argument("--stats-device", default="auto",
                    help="where the float64 sums live: auto (default) = --device when they fit in "
                         "its free memory beside a batch, else cpu (66 GB for Llama-3-8B: the host "
                         "on an 80 GB GPU, the GPU on a 141 GB one); or a torch device")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="model dtype for the forward pass (default float32)")
    ap.add_argument("--attn-implementation", default="eager",
                    help="transformers attention implementation (default eager)")
    ap.add_argument("--share-qkv", action="store_true",
                    help="store the q/k/v input of a block once, under q_proj")
    ap.add_argument("--no-shared-sums", action="store_true",
                    help="one float64 accumulator per module, even where modules are handed the same "
                         "input tensor (q/k/v, gate/up share one by default: the same bytes, less memory)")
    ap.add_argument("--diag-only", action="store_true", help="no hessian: act_abs_mean and act_sq_mean only")
    ap.add_argument("--no-sensitivity", action="store_true",
                    help="do not estimate <module>.sensitivity (noise injection: the first "
                         "--sensitivity-sequences sequences run once more per module and level)")
    ap.add_argument("--sensitivity-levels", default="0.025,0.05,0.1",
                    help="relative errors ||dW||/||W|| of the injected noise (default 0.025,0.05,0.1)")
    ap.add_argument("--sensitivity-sequences", type=int, default=8,
                    help="calibration sequences the KL divergence is measured on (default 8; "
                         "0 = all); they run once more per module and level")
    ap.add_argument("--sensitivity-seed", type=int, default=4321,
                    help="noise seed; module k uses seed + k (default 4321)")
    ap.add_argument("--sensitivity-mode", default="batched", choices=["batched", "perturb"],
                    help="batched (default): all levels of a module in one forward pass, the noise "
                         "added by hooks; perturb: the weight overwritten, one pass per level "
                         "(the original way, kept for comparison and for the shipped files)")
    ap.add_argument("--sensitivity-batch", type=int, default=0,
                    help="batched mode: the most sequences (levels x sequences) per forward pass "
                         "(default 0: as many as keep one pass's logits within 2^30 values)")
    args = ap.parse_args()

    try:
        levels = [float(v) for v in args.sensitivity_levels.split(",")]
    except ValueError:
        levels = []
    if len(levels) < 1 or any(not v > 0 for v in levels):
        sys.exit(f"capture.py: --sensitivity-levels '{args.sensitivity_levels}' must be "
                 "positive numbers separated by commas")
    if args.sensitivity_batch < 0:
        sys.exit("capture.py: --sensitivity-batch must be >= 0 (0: automatic)")
    for opt, value in (("--device", args.device), ("--stats-device", args.stats_device)):
        if opt == "--stats-device" and value == "auto":
            continue
        try:
            dev = torch.device(value)
        except RuntimeError:
            sys.exit(f"capture.py: {opt} '{value}' is not a torch device (cpu, cuda, cuda:1, ...)")
        if dev.type == "cuda" and not torch.cuda.is_available():
            sys.exit(f"capture.py: {opt} {value}: this torch sees no CUDA device")

    t0 = time.time()
    times = {}
    on_cpu = torch.device(args.device).type == "cpu"
    if on_cpu:
        keep_freed_memory()
    else:
        # cuBLAS is deterministic only with a fixed workspace (set before CUDA starts)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    dtype = getattr(torch, args.dtype)

    model = AutoModelForCausalLM.from_pretrained(
        args.model, dtype=dtype, attn_implementation=args.attn_implementation,
        **({} if on_cpu else {"device_map": args.device}))
    model.to(args.device).eval()
    times["load"] = time.time() - t0
    cfg = model.config
    max_pos = getattr(cfg, "max_position_embeddings", None)
    if args.seq_len < 1 or (max_pos and args.seq_len > max_pos):
        sys.exit(f"capture.py: --seq-len {args.seq_len} must be 1..{max_pos}")
    if args.temperature < 0 or (args.n_sequences is not None and args.n_sequences < 1) \
            or args.batch_size < 1 or args.threads < 1 or args.sample_batch < 0:
        sys.exit("capture.py: --temperature must be >= 0, --n-sequences, --batch-size and --threads >= 1, "
                 "--sample-batch >= 0 (0: automatic)")

    # The calibration sequences.
    if args.text:
        seqs = read_text_file(args.text, args.model, args.seq_len)
        sampling = f"text {os.path.basename(args.text)}, sha256 {sha256_file(args.text)}"
    elif args.tokens:
        seqs = read_token_file(args.tokens, args.seq_len)
        sampling = f"token ids {os.path.basename(args.tokens)}, sha256 {sha256_file(args.tokens)}"
    else:
        bos = cfg.bos_token_id if isinstance(getattr(cfg, "bos_token_id", None), int) else 1
        n = 64 if args.n_sequences is None else args.n_sequences
        sample_batch = args.sample_batch or (args.batch_size if on_cpu else
                                             gpu_sample_batch(cfg, n, args.seq_len, dtype,
                                                              next(model.parameters()).device))
        t_samp, last = time.time(), [time.time()]

        def sampled(t, steps, bi, nb):   # a line at most every 30 s, and the rate
            now = time.time()
            if now - last[0] >= 30 or (t == steps and bi == nb - 1 and now - t_samp >= 30):
                last[0] = now
                done = bi * steps + t
                print(f"capture.py: sampling {n} x {args.seq_len} tokens ({sample_batch} a batch): "
                      f"batch {bi + 1}/{nb}, step {t}/{steps}, {(now - t_samp) / done * 1e3:.1f} ms a step, "
                      f"{now - t_samp:.0f} s", file=sys.stderr, flush=True)
        seqs = sample_sequences(model, n, args.seq_len, args.temperature, args.seed, bos,
                                sample_batch, log=sampled)
        times["sampling"] = time.time() - t_samp
        sampling = f"self-sampled, temperature {args.temperature}, seed {args.seed}"
        if not on_cpu:   # the CPU's sentence is unchanged: the shipped files' bytes
            sampling += f", drawn on {args.device} ({sample_batch} sequences a batch)"
    if args.n_sequences is not None and (args.text or args.tokens):
        seqs = seqs[:args.n_sequences]
    vocab = cfg.vocab_size
    for s in seqs:
        bad = [v for v in s if not 0 <= v < vocab]
        if bad:
            sys.exit(f"capture.py: token id {bad[0]} is outside the vocabulary (0..{vocab - 1})")
    if not seqs:
        sys.exit("capture.py: no calibration tokens")
    times["tokens"] = time.time() - t0 - times["load"] - times.get("sampling", 0.0)
    t_stats = time.time()

    # Hooks on every nn.Linear (lm_head included, tied or not). Modules fed
    # the very same input tensor (q/k/v of a block, gate/up of an MLP) share
    # one accumulator: the same sums, formed once.
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    device = next(model.parameters()).device
    owner = {name: name for name, _ in linears} if args.no_shared_sums else \
        shared_inputs(model, linears, seqs[0], device)
    ckpt = checkpoint_names(args.model)

    def skipped(name):   # --share-qkv: k_proj and v_proj beside a q_proj are not stored
        leaf = name.rsplit(".", 1)[-1]
        return args.share_qkv and leaf in ("k_proj", "v_proj") and \
            any(n == name[:-len(leaf)] + "q_proj" for n, _ in linears)
    # a module whose owner is not stored (a model that calls k_proj first)
    # keeps its own sums
    owner = {name: name if skipped(o) else o for name, o in owner.items()}
    n_ins = [m.in_features for name, m in linears if not skipped(name) and owner[name] == name]
    n_ins += [m.weight.shape[1] for _, m in routers(model)]
    for _, m in fused_experts(model):
        n_ins += [m.gate_up_proj.shape[2], m.down_proj.shape[2]] * m.gate_up_proj.shape[0]
    stats_device, sums_bytes = choose_stats_device(args.stats_device, device, n_ins, args.diag_only,
                                                   args.batch_size * max(len(s) for s in seqs), vocab)
    acc, sharers, hooks = {}, {}, []   # sharers[owner]: the modules whose input is owner's
    # the last owner hook's module name and input: an alias checks that it
    # is handed that very tensor
    prev = [None, None]
    for name, m in linears:
        if skipped(name):
            continue
        if owner[name] != name:
            sharers.setdefault(owner[name], []).append(name)

            def check(module, a, kw, _name=name, _owner=owner[name]):
                if prev[0] != _owner or prev[1] is not (a[0] if a else kw["input"]):
                    sys.exit(f"capture.py: {_name} was handed {_owner}'s input tensor in the probing "
                             "forward pass but not in a calibration batch: run with --no-shared-sums")
            hooks.append(m.register_forward_pre_hook(check, with_kwargs=True))
            continue
        acc[name] = Accumulator(m.in_features, args.diag_only, stats_device)

        def hook(module, a, kw, _acc=acc[name], _name=name):
            x = a[0] if a else kw["input"]
            prev[0], prev[1] = _name, x
            _acc.add(x)
        hooks.append(m.register_forward_pre_hook(hook, with_kwargs=True))

    # Mixture-of-experts: routers (every token) and fused experts modules
    # (each expert only the tokens routed to it), named as the checkpoint
    # stores them.
    sens_weights = [(name, m.weight) for name, m in linears]
    for name, m in routers(model):
        out_name = checkpoint_module(name, ckpt, ".weight")
        acc[out_name] = Accumulator(m.weight.shape[1], args.diag_only, stats_device)

        def rhook(module, a, kw, _acc=acc[out_name]):
            _acc.add(a[0] if a else kw["hidden_states"])
        hooks.append(m.register_forward_pre_hook(rhook, with_kwargs=True))
        sens_weights.append((out_name, m.weight))
    experts = []  # (layout, names, gate_up accumulator, down accumulator)
    for name, m in fused_experts(model):
        n_exp, two_inter, hidden = m.gate_up_proj.shape
        inter = m.down_proj.shape[2]
        gu_acc = ExpertAccumulator(n_exp, hidden, args.diag_only, stats_device)
        dn_acc = ExpertAccumulator(n_exp, inter, args.diag_only, stats_device)
        fused = checkpoint_module(name, ckpt, ".gate_up_proj")
        qwen = checkpoint_module(name, ckpt, ".0.gate_proj.weight")
        mixtral = checkpoint_module(name, ckpt, ".0.w1.weight")
        gu_w, dn_w = m.gate_up_proj.data, m.down_proj.data
        if fused + ".gate_up_proj" in ckpt or not (qwen + ".0.gate_proj.weight" in ckpt
                                                   or mixtral + ".0.w1.weight" in ckpt):
            names = (fused + ".gate_up_proj", fused + ".down_proj")
            experts.append(("fused", names, gu_acc, dn_acc))
            sens_weights += [(names[0], gu_w), (names[1], dn_w)]
        else:
            prefix, leaves = (qwen, ("gate_proj", "up_proj", "down_proj")) \
                if qwen + ".0.gate_proj.weight" in ckpt else (mixtral, ("w1", "w3", "w2"))
            names = [tuple(f"{prefix}.{e}.{leaf}" for leaf in leaves) for e in range(n_exp)]
            experts.append(("per-expert", names, gu_acc, dn_acc))
            for e, (g, u, d) in enumerate(names):
                sens_weights += [(g, gu_w[e, :inter]), (u, gu_w[e, inter:]), (d, dn_w[e])]

        def ehook(module, a, kw, _gu=gu_acc, _dn=dn_acc, _n=n_exp, _inter=inter):
            hs = a[0] if len(a) > 0 else kw["hidden_states"]
            idx = a[1] if len(a) > 1 else kw["top_k_index"]
            hs = hs.reshape(-1, hs.shape[-1])
            idx = idx.reshape(hs.shape[0], -1)
            for e in range(_n):
                tok = (idx == e).any(dim=-1).nonzero().squeeze(-1)
                if tok.numel() == 0:
                    continue
                x = hs[tok]
                _gu.acc[e].add(x)
                gu_out = torch.nn.functional.linear(x, module.gate_up_proj[e])
                if hasattr(module, "_apply_gate"):
                    h = module._apply_gate(gu_out)
                else:
                    h = module.act_fn(gu_out[..., :_inter]) * gu_out[..., _inter:]
                _dn.acc[e].add(h)
        hooks.append(m.register_forward_pre_hook(ehook, with_kwargs=True))

    # One forward pass per batch of equal-length sequences.
    with torch.no_grad():
        for b in batches(seqs, args.batch_size):
            ids = torch.tensor(b, dtype=torch.long, device=device)
            model(input_ids=ids, use_cache=False)
            prev[0] = prev[1] = None
    for h in hooks:
        h.remove()

    # The statistics, final: float32 on the host, the device's sums freed
    # before the sensitivity passes need the memory.
    token_count = sum(len(s) for s in seqs)
    tensors = {}
    for name, a in acc.items():
        assert a.n == token_count, (name, a.n, token_count)
        t = a.tensors(name)
        tensors.update(t)
        for other in sharers.get(name, ()):
            tensors.update({other + k[len(name):]: v for k, v in t.items()})
        a.free()
    expert_meta = {}
    for layout, names, gu_acc, dn_acc in experts:
        if layout == "fused":
            for name, ea in zip(names, (gu_acc, dn_acc)):
                tensors.update(ea.tensors(name))
                expert_meta[name + ".expert_token_counts"] = json.dumps(ea.counts())
                for e, n in enumerate(ea.counts()):
                    if n == 0:
                        print(f"capture.py: warning: {name}: expert {e} received no tokens "
                              "(stored as zeros with count 0)", file=sys.stderr)
            continue
        for e, (g, u, d) in enumerate(names):
            a_in, a_mid = gu_acc.acc[e], dn_acc.acc[e]
            if a_in.n == 0:
                print(f"capture.py: warning: {g.rsplit('.', 1)[0]}: expert {e} received no tokens "
                      "(its modules are left out)", file=sys.stderr)
                continue
            for module, a in ((g, a_in), (u, a_in), (d, a_mid)):
                tensors.update(a.tensors(module))
                expert_meta[module + ".token_count"] = str(a.n)
            a_in.free()
            a_mid.free()
    times["statistics"] = time.time() - t_stats

    sens = {}
    if not args.no_sensitivity:
        ts = time.time()
        n_s = len(seqs) if args.sensitivity_sequences <= 0 else args.sensitivity_sequences
        seq_batch = args.sensitivity_batch or max(
            1, min(len(levels) * min(n_s, len(seqs)),
                   (1 << 30) // (max(len(s) for s in seqs[:n_s]) * vocab)))
        last = [ts]

        def progress(done, total, name):   # a line at most every 30 s on long runs
            now = time.time()
            if now - last[0] >= 30 or done == total and now - ts >= 30:
                last[0] = now
                print(f"capture.py: sensitivity {done}/{total} weights ({name}), {now - ts:.0f} s",
                      file=sys.stderr, flush=True)
        sens, per_level = sensitivities(model, sens_weights, seqs[:n_s], levels, args.sensitivity_seed,
                                        args.batch_size, device, args.sensitivity_mode, seq_batch,
                                        log=progress)
        times["sensitivity"] = time.time() - ts

    for name, (alpha, res, _) in sens.items():
        tensors[name + ".sensitivity"] = torch.tensor([alpha, res], dtype=torch.float32)

    weight_files = model_weight_files(args.model)
    model_desc = os.path.basename(os.path.normpath(args.model))
    if weight_files:
        model_desc += " (" + ", ".join(f"{f} sha256 {sha256_file(os.path.join(args.model, f))}"
                                       for f in weight_files) + ")"
    lens = sorted({len(s) for s in seqs})
    metadata = {
        "token_count": str(token_count),
        "model": model_desc,
        "n_sequences": str(len(seqs)),
        "seq_len": str(lens[0]) if len(lens) == 1 else f"{lens[0]}..{lens[-1]}",
        "sampling": sampling,
        "forward": (f"PyTorch {torch.__version__}, transformers {transformers.__version__}, "
                    f"{args.dtype}, {args.device}, attn_implementation {model.config._attn_implementation}"),
        "tool": TOOL,
    }
    if sens:
        metadata["sensitivity"] = (
            f"mean next-token KL(ref || noisy) over the first {n_s} calibration sequences per unit squared relative "
            f"error; Gaussian noise at relative errors {args.sensitivity_levels}, seed "
            f"{args.sensitivity_seed} + module index; slope through the origin, relative residual")
        if args.sensitivity_mode == "batched":
            metadata["sensitivity"] += (
                "; batched: the levels of a module in one forward pass, the noise c x Z^T added to "
                "each nn.Linear use's output (and c Z[ids] to a tied embedding's) by hooks, r exact, "
                "float32 reference log-probabilities, KL in float64")
            if per_level:
                metadata["sensitivity_per_level"] = ", ".join(per_level)
    metadata.update(expert_meta)
    if args.share_qkv:
        metadata["shared"] = "q_proj holds the input of its block's k_proj and v_proj"
    t_write = time.time()
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    tmp = args.output + ".tmp"
    try:
        with open(tmp, "wb") as f:
            n_bytes = write_safetensors(f, tensors, metadata)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        sys.exit(f"capture.py: cannot write {tmp}: {e}")
    os.replace(tmp, args.output)
    times["write"] = time.time() - t_write

    secs = time.time() - t0
    n_exp_modules = sum(2 if layout == "fused" else 3 * len(names) for layout, names, _, _ in experts)
    n_modules = len(acc) + sum(map(len, sharers.values())) + n_exp_modules
    print(f"{args.output}: {n_modules} modules, {len(seqs)} sequences, "
          f"{token_count} tokens, {len(tensors)} tensors, {n_bytes} bytes, {secs:.1f} s")
    print("times: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
    print(f"sums: {sums_bytes} bytes of float64 on {stats_device}")
    for name, a in acc.items():
        print(f"  {name}  in {a.n_in}")
        for other in sharers.get(name, ()):
            print(f"  {other}  in {a.n_in} (the input of {name}, one sum)")
    for layout, names, gu_acc, dn_acc in experts:
        label = names[0] if layout == "fused" else names[0][0].rsplit(".", 2)[0]
        print(f"  {label}  {layout} experts, tokens per expert {gu_acc.counts()} "
              f"(top-k sum {sum(gu_acc.counts())} of {token_count} tokens)")
    if sens:
        print(f"sensitivity: {len(sens)} modules, {len(levels)} levels, {args.sensitivity_mode}"
              + (f" ({seq_batch} sequences per pass, {len(per_level)} modules per level)"
                 if args.sensitivity_mode == "batched" else "") + f", {times['sensitivity']:.1f} s")
        for name, (alpha, res, pts) in sens.items():
            print(f"  {name}  alpha {alpha:.6g}  residual {res:.3g}  "
                  + " ".join(f"(r2 {x:.4g}, kl {y:.4g})" for x, y in pts))


if __name__ == "__main__":
    main()
