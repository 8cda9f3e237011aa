#!/usr/bin/env python3
"""Optional (needs torch and transformers): examples/calibration/capture.py
on data/tiny-moe, checked against an independent computation.

usage: check_capture_moe.py REPO WORKDIR [FRONTIER_BINARY]

1. capture.py with token ids from a file (--tokens, 6 sequences of 48 ids,
   --no-sensitivity);
2. the same tokens through the model once more with a hook on each MoE
   block's input only; the router's own top-k choice (block.gate) gives
   each expert's tokens, and numpy, in float64, from the checkpoint's BF16
   weights read by hand (not through the transformers experts module),
   computes each expert's gate_up input statistics (the routed hidden
   states) and down_proj input statistics (silu(x Wg^T) * (x Wu^T));
3. the file must hold them: layer 0 (fused stacks in the checkpoint) as
   <stack>.hessian [E, in, in] ... with expert_token_counts, layer 1
   (per-expert 2-D tensors) as experts.N.gate_proj / up_proj / down_proj;
   counts exact (summing to top_k x tokens), values within 2e-5 relative to
   the largest entry (the forward runs in float32);
4. the shipped data/tiny-moe/calib.safetensors is what the documented
   command (with --sensitivity-mode perturb) writes (bytes identical on this machine; else within 1e-5);
5. with FRONTIER_BINARY: tiny random Mixtral, Qwen2-MoE (with its shared
   expert) and Qwen3-MoE models made by transformers (from_config,
   save_pretrained: per-expert 2-D checkpoints, Mixtral's as
   block_sparse_moe.experts.N.w1/w2/w3) captured and swept with --calib:
   every tensor but the embedding finds statistics with a Hessian and no
   module of the file is left unmatched.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

try:
    import torch
    from transformers import AutoModelForCausalLM
except ImportError:
    print("SKIP: needs torch and transformers")
    sys.exit(77)

repo, work = sys.argv[1], sys.argv[2]
model_dir = os.path.join(repo, "data", "tiny-moe")
capture = os.path.join(repo, "examples", "calibration", "capture.py")
os.makedirs(work, exist_ok=True)
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        raw = data[b:e]
        if h["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            a = np.frombuffer(raw, dtype="<f4")
        out[name] = a.reshape(h["shape"]).astype(np.float64)
    return out, meta


rng = np.random.default_rng(7)
tokens = rng.integers(0, 128, size=(6, 48))
np.save(os.path.join(work, "tokens.npy"), tokens)
out = os.path.join(work, "calib.safetensors")
r = subprocess.run([sys.executable, capture, model_dir, "-o", out, "--tokens",
                    os.path.join(work, "tokens.npy"), "--seq-len", "48", "--no-sensitivity"],
                   capture_output=True, text=True)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    sys.exit(1)
stats, meta = read_st(out)
weights, _ = read_st(os.path.join(model_dir, "model.safetensors"))

# the MoE blocks' inputs and the router's choice, from the model itself
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                             attn_implementation="eager").eval()
seen = {}
for name, m in model.named_modules():
    if name.endswith(".mlp") and hasattr(m, "gate") and hasattr(m, "experts"):
        def hook(module, a, _name=name):
            x = a[0].reshape(-1, a[0].shape[-1])
            _, _, idx = module.gate(x)
            seen.setdefault(_name, []).append((x.double().numpy(), idx.numpy()))
        m.register_forward_pre_hook(hook)
with torch.no_grad():
    model(input_ids=torch.tensor(tokens), use_cache=False)
top_k, n_exp, inter = model.config.num_experts_per_tok, model.config.num_experts, \
    model.config.moe_intermediate_size
n_tokens = tokens.size


def silu(v):
    return v / (1 + np.exp(-v))


def expect(name, want, got, what):
    if got is None:
        fail(f"{name}: no {what}")
        return
    if got.shape != want.shape:
        fail(f"{name}: {what} shape {got.shape} != {want.shape}")
        return
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    if err > 2e-5:
        fail(f"{name}: {what} differs by {err:.3g} (relative to its largest entry)")


n_checked = 0
for layer in (0, 1):
    block = f"model.layers.{layer}.mlp"
    x = np.concatenate([s[0] for s in seen[block]])
    idx = np.concatenate([s[1] for s in seen[block]])
    counts = []
    ref = {"gu": [], "dn": []}
    for e in range(n_exp):
        xe = x[(idx == e).any(axis=1)]
        counts.append(len(xe))
        if layer == 0:
            w = weights[f"{block}.experts.gate_up_proj"][e]
            wg, wu = w[:inter], w[inter:]
        else:
            wg = weights[f"{block}.experts.{e}.gate_proj.weight"]
            wu = weights[f"{block}.experts.{e}.up_proj.weight"]
        h = silu(xe @ wg.T) * (xe @ wu.T)
        for key, v in (("gu", xe), ("dn", h)):
            n = max(len(v), 1)
            ref[key].append({"hessian": v.T @ v / n, "act_abs_mean": np.abs(v).mean(axis=0),
                             "act_sq_mean": (v * v).mean(axis=0)})
    if sum(counts) != top_k * n_tokens:
        fail(f"{block}: routed tokens {sum(counts)} != top_k x tokens {top_k * n_tokens}")
    for part in ("hessian", "act_abs_mean", "act_sq_mean"):
        if layer == 0:
            for key, stack in (("gu", "gate_up_proj"), ("dn", "down_proj")):
                m = f"{block}.experts.{stack}"
                expect(m, np.stack([r[part] for r in ref[key]]), stats.get(f"{m}.{part}"), part)
                got = json.loads(meta.get(m + ".expert_token_counts", "null") or "null")
                if got != counts:
                    fail(f"{m}: expert_token_counts {got} != routed {counts}")
                n_checked += 1
        else:
            for e in range(n_exp):
                for key, leaf in (("gu", "gate_proj"), ("gu", "up_proj"), ("dn", "down_proj")):
                    m = f"{block}.experts.{e}.{leaf}"
                    expect(m, ref[key][e][part], stats.get(f"{m}.{part}"), part)
                    if meta.get(m + ".token_count") != str(counts[e]):
                        fail(f"{m}: token_count {meta.get(m + '.token_count')} != {counts[e]}")
                    n_checked += 1
    print(f"ok: {block}: tokens per expert {counts}")
print(f"ok: {n_checked} (module, part) statistics against the independent computation")

# the shipped file is what the documented command writes
shipped = os.path.join(model_dir, "calib.safetensors")
again = os.path.join(work, "again.safetensors")
# (--sensitivity-mode perturb: the file was written before the batched
# sensitivities, the default now, which give the same alphas to float32
# rounding but not the same bytes, and say "batched" in their metadata)
r = subprocess.run([sys.executable, capture, model_dir, "-o", again, "--sensitivity-mode", "perturb"],
                   capture_output=True, text=True)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    fail("capture.py with the documented command")
else:
    a, b = open(shipped, "rb").read(), open(again, "rb").read()
    if a == b:
        print("ok: data/tiny-moe/calib.safetensors is what the documented command writes, byte for byte")
    else:
        sa, ma = read_st(shipped)
        sb, mb = read_st(again)
        if set(sa) != set(sb) or {k: v for k, v in ma.items() if k != "forward"} != \
                {k: v for k, v in mb.items() if k != "forward"}:
            fail("the shipped file has other tensors or metadata than a new capture")
        else:
            worst = max(float(np.abs(sa[k] - sb[k]).max() / max(np.abs(sa[k]).max(), 1e-30))
                        for k in sa)
            # another PyTorch / transformers (the "forward" metadata) samples
            # and sums in its own way: only the same versions must agree
            same_stack = ma.get("forward") == mb.get("forward")
            (print if worst <= 1e-5 or not same_stack else fail)(
                f"shipped file vs a new capture: not byte-identical, largest relative difference "
                f"{worst:.3g}" + ("" if same_stack else
                                  f" (shipped with {ma.get('forward')}, here {mb.get('forward')}:"
                                  " not required to agree)"))

# the default batched sensitivities: the same alphas; the expert stacks, the
# per-expert views and the routers (no plain nn.Linear) measured per level
# and named in sensitivity_per_level, the attention and lm_head batched
if r.returncode == 0:
    batched = os.path.join(work, "batched.safetensors")
    rb = subprocess.run([sys.executable, capture, model_dir, "-o", batched], capture_output=True, text=True)
    if rb.returncode != 0:
        fail(f"capture.py (batched sensitivities): {rb.stderr[-2000:]}")
    else:
        sp, mp = read_st(again)
        sb, mb = read_st(batched)
        keys = sorted(k for k in sp if k.endswith(".sensitivity"))
        worst = max(abs(sb[k][0] - sp[k][0]) / abs(sp[k][0]) for k in keys) if keys else 1.0
        per_level = mb.get("sensitivity_per_level", "")
        if set(sb) != set(sp) or worst > 1e-4:
            fail(f"batched vs perturb sensitivities: largest relative alpha difference {worst:.3g}")
        elif "experts.gate_up_proj" not in per_level or ".gate," not in per_level + "," \
                or "self_attn" in per_level or "lm_head" in per_level:
            fail(f"sensitivity_per_level: {per_level[:300]}")
        else:
            print(f"ok: batched sensitivities = perturb's within {worst:.2g} relative "
                  f"({per_level.count(', ') + 1} tensors per level)")

if len(sys.argv) > 3:
    from transformers import MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig
    frontier = sys.argv[3]
    common = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    families = {
        "mixtral": MixtralConfig(num_local_experts=4, num_experts_per_tok=2, **common),
        "qwen2_moe": Qwen2MoeConfig(moe_intermediate_size=24, shared_expert_intermediate_size=40,
                                    num_experts=4, num_experts_per_tok=2, **common),
        "qwen3_moe": Qwen3MoeConfig(moe_intermediate_size=24, head_dim=8, num_experts=4,
                                    num_experts_per_tok=2, **common),
    }
    for fam, cfg in families.items():
        torch.manual_seed(0)
        folder = os.path.join(work, fam)
        AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
        cal = folder + ".calib.safetensors"
        r = subprocess.run([sys.executable, capture, folder, "-o", cal, "--n-sequences", "4",
                            "--seq-len", "32", "--no-sensitivity"], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{fam}: capture.py: {r.stderr[-2000:]}")
            continue
        if os.path.exists(folder + ".h5"):
            os.remove(folder + ".h5")  # a previous run's
        r = subprocess.run([frontier, "sweep", folder, "--calib", cal, "--quantizers",
                            "gptq-int4-g32-sym", "--exclude", "embed_tokens", "--device", "cpu",
                            "-o", folder + ".h5"], capture_output=True, text=True)
        line = [x for x in r.stderr.splitlines() if "calibration statistics" in x]
        import re
        m = re.search(r"(\d+) of (\d+) tensors, (\d+) with a Hessian", line[0] if line else "")
        if r.returncode != 0 or not m or not (m.group(1) == m.group(2) == m.group(3)) \
                or "match no tensor" in r.stderr:
            fail(f"{fam}: sweep --calib: rc {r.returncode}: {r.stderr[-2000:]}")
        else:
            print(f"ok: {fam}: capture.py's statistics match all {m.group(2)} swept tensors")
sys.exit(1 if failures else 0)
