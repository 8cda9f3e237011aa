#!/usr/bin/env python3
"""The peer of the GPTQ benchmark (docs/gpu.md, "GPTQ"): a
straightforward eager PyTorch GPTQ, the classic per-column loop with lazy
block updates of the reference implementation (Frantar et al. 2022,
gptq.py fasterquant), with frontier's int4-g128-sym rule (fp16 scale
amax / 7, codes clamp(rint(x / s), -7, 7), a zero scale reconstructs to 0),
dead columns, 1% dampening, block 128, scales at group start. float32 as
the reference, TF32 off. Same data as bench_gptq (its --dir files), same
GPU.

usage: torch_gptq.py --dir DIR [--shapes 4096x4096,14336x4096] [--passes 2]
                     [--gpu-json GPU.json] [--json OUT.json]

Per shape: the time of one layer (fastest of --passes, after a small
warm-up), out_rel_err = sqrt(tr(dW H dW^T) / tr(W H W^T)) (float64) and
rel_err; with --gpu-json (bench_gptq --json) the table adds the GPU time,
the speedup (target >= 50x) and the relative difference of the output
errors (target <= 1%).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    print("SKIP: python3 has no torch")
    sys.exit(77)


def quant_sym(x, s, qmax):
    q = torch.clamp(torch.round(x / s), -qmax, qmax) * s
    return torch.where(s > 0, q, torch.zeros_like(q))


def gptq(W, H, bits=4, group=128, blocksize=128, percdamp=0.01):
    W = W.clone()
    H = H.clone()
    n = W.shape[1]
    qmax = float(2 ** (bits - 1) - 1)
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    damp = percdamp * torch.mean(torch.diag(H))
    idx = torch.arange(n, device=W.device)
    H[idx, idx] += damp
    H = torch.linalg.cholesky(H)
    H = torch.cholesky_inverse(H)
    Hinv = torch.linalg.cholesky(H, upper=True)
    Q = torch.zeros_like(W)
    s = None
    for i1 in range(0, n, blocksize):
        i2 = min(i1 + blocksize, n)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        for i in range(count):
            w = W1[:, i]
            d = Hinv1[i, i]
            if (i1 + i) % group == 0:
                amax = W1[:, i:i + group].abs().amax(dim=1, keepdim=False)
                s = (amax / qmax).half().float()
            q = quant_sym(w, s, qmax)
            Q1[:, i] = q
            err1 = (w - q) / d
            W1[:, i:] -= err1.unsqueeze(1).matmul(Hinv1[i, i:].unsqueeze(0))
            Err1[:, i] = err1
        Q[:, i1:i2] = Q1
        W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:])
    return Q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--shapes", default="4096x4096,14336x4096")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--gpu-json")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gpu = {}
    if a.gpu_json and os.path.exists(a.gpu_json):
        with open(a.gpu_json) as f:
            for layer in json.load(f)["layers"]:
                # bench_gptq --loops: the first entry of a shape is the default kernel
                gpu.setdefault(layer["shape"], dict(layer, loops={}))
                gpu[layer["shape"]]["loops"][layer.get("loop", "warp8")] = layer["gpu_seconds"]
    # warm-up: cuSOLVER / cuBLAS initialisation outside the timings
    g = torch.randn(256, 512, device=dev)
    x = torch.randn(1024, 512, device=dev)
    gptq(g, x.T @ x / 1024)
    torch.cuda.synchronize()
    rows_out = []
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; GPTQ int4-g128-sym, "
          f"fastest of {a.passes}")
    hdr = (f"{'shape':<12} {'torch s':>9} {'gpu ms':>9} {'speedup':>8} "
           f"{'torch out_rel':>13} {'gpu out_rel':>12} {'diff':>7} {'torch rel':>10} {'gpu rel':>10}")
    print(hdr)
    for shape in a.shapes.split(","):
        r, c = (int(v) for v in shape.split("x"))
        w = np.fromfile(os.path.join(a.dir, f"w_{r}x{c}.f32"), dtype="<f4").reshape(r, c)
        h = np.fromfile(os.path.join(a.dir, f"h_{c}.f32"), dtype="<f4").reshape(c, c)
        W = torch.from_numpy(w).to(dev)
        H = torch.from_numpy(h).to(dev)
        best = None
        Q = None
        times = []
        for _ in range(max(1, a.passes)):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            Q = gptq(W, H)
            torch.cuda.synchronize()
            t = time.perf_counter() - t0
            times.append(t)
            best = t if best is None or t < best else best
        print(f"  {shape}: torch passes (s): " + ", ".join(f"{t:.3f}" for t in times))
        D = (W - Q).double()
        Hd = H.double()
        Wd = W.double()
        out = float(((D @ Hd) * D).sum())
        ref = float(((Wd @ Hd) * Wd).sum())
        out_rel = (out / ref) ** 0.5
        rel = float((D * D).sum() / (Wd * Wd).sum()) ** 0.5
        row = {"shape": shape, "rows": r, "cols": c, "torch_seconds": best, "torch_pass_seconds": times,
               "torch_out_rel_err": out_rel, "torch_rel_err": rel}
        gl = gpu.get(shape)
        if gl:
            row.update({"gpu_seconds": gl["gpu_seconds"], "gpu_out_rel_err": gl["out_rel_err"],
                        "gpu_rel_err": gl["rel_err"], "gpu_loop": gl.get("loop"),
                        "gpu_seconds_by_loop": gl["loops"], "gpu_phases_ms": gl.get("phases_ms"),
                        "speedup": best / gl["gpu_seconds"] if gl["gpu_seconds"] > 0 else float("inf"),
                        "out_rel_err_diff": abs(gl["out_rel_err"] - out_rel) / out_rel})
            print(f"{shape:<12} {best:9.3f} {1e3 * gl['gpu_seconds']:9.2f} {row['speedup']:7.0f}x "
                  f"{out_rel:13.6g} {gl['out_rel_err']:12.6g} {100 * row['out_rel_err_diff']:6.2f}% "
                  f"{rel:10.5g} {gl['rel_err']:10.5g}")
        else:
            print(f"{shape:<12} {best:9.3f} {'-':>9} {'-':>8} {out_rel:13.6g} {'-':>12} {'-':>7} "
                  f"{rel:10.5g} {'-':>10}")
        rows_out.append(row)
        del W, H, Q, D, Hd, Wd
        torch.cuda.empty_cache()
    ok = all(r.get("speedup", 0) >= 50 and r.get("out_rel_err_diff", 1) <= 0.01 for r in rows_out)
    print(f"targets (>= 50x, output error within 1%): {'met' if ok and gpu else 'NOT met' if gpu else 'no gpu figures'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                       "config": "gptq-int4-g128-sym", "targets_met": bool(ok and gpu),
                       "layers": rows_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
