#!/usr/bin/env python3
"""The stories260K study (docs/study-stories260K.md): predicted against
measured model quality, and allocation by weight error, output error and
sensitivity-weighted output error.

    python3 scripts/study_stories260K.py [--frontier build-eval/frontier] [--out out/study]

Needs torch and transformers (CPU); about 20 minutes on one core. Writes, beside
the table on stdout:
  data/eval/stories260K/*.json         one kld.py result per evaluated checkpoint
                                        (every uniform configuration, data-free and
                                        calibrated, and every allocated recipe)
  data/eval/stories260K/recipes/       the allocated recipes
  docs/figures/study-stories260K-kl.svg measured KL against bits
  out/study/run.h5                      the sweep, annotated with all of the above
Everything is over the 35 linear layers (--include 'layers\\.'): the tied
embedding stays in float, as `frontier quantize --config` leaves it. Recipes
with calibrated configurations (GPTQ, AWQ, imatrix) are written with
`frontier quantize --calib data/stories260K/calib.safetensors`, the
statistics the sweep measured them with.
"""
import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "examples", "eval"))
sys.path.insert(0, os.path.join(ROOT, "examples", "calibration"))

import torch  # noqa: E402
import transformers  # noqa: E402

import capture  # noqa: E402
import kld  # noqa: E402

MODEL = os.path.join(ROOT, "data", "stories260K")
CALIB = os.path.join(MODEL, "calib.safetensors")
EVAL_DIR = os.path.join(ROOT, "data", "eval", "stories260K")
FIG = os.path.join(ROOT, "docs", "figures", "study-stories260K-kl.svg")
BUDGETS = [2.5, 3.0, 3.5, 4.0, 4.5]
INCLUDE = r"layers\."
CALIBRATED = r"^(gptq|awq|imat|rht\+gptq|rht\+awq|rht\+imat)"   # need statistics to be written
N_SEQ, SEQ_LEN, SEED = 8, 256, 5678


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"study: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def spearman(x, y):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frontier", default=os.path.join(ROOT, "build-eval", "frontier"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "study"))
    args = ap.parse_args()
    F = args.frontier
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(os.path.join(EVAL_DIR, "recipes"), exist_ok=True)
    t0 = time.time()
    torch.set_num_threads(1)
    h5 = os.path.join(args.out, "run.h5")
    for p in (h5, h5 + ".tmp"):
        if os.path.exists(p):
            os.remove(p)
    run([F, "sweep", MODEL, "--bits", "2..8", "--calib", CALIB, "-o", h5, "--quiet"])

    # predicted KL (sum alpha_t err_t^2) and bits of every uniform configuration
    pred = {}
    for metric in ("rel_err", "out_rel_err"):
        js = json.loads(run([F, "pareto", h5, "--include", INCLUDE, "--metric", metric,
                             "--calib", CALIB, "--json", "--no-store"]))
        for pt in js["groups"][0]["points"]:
            pred.setdefault(pt["config"], {})["bits"] = pt["bits_per_weight"]
            pred[pt["config"]]["rel_err"] = pt["rel_err"]
            pred[pt["config"]]["out_rel_err"] = pt["out_rel_err"]
            pred[pt["config"]]["pred_" + metric] = pt.get("predicted_kl")

    orig = transformers.AutoModelForCausalLM.from_pretrained(
        MODEL, dtype=torch.float32, attn_implementation="eager").eval()
    seqs = capture.sample_sequences(orig, N_SEQ, SEQ_LEN, 1.0, SEED, 1, 16)
    ids_hash = hashlib.sha256(json.dumps(seqs).encode()).hexdigest()
    ref = kld.log_probs(orig, seqs, 16)
    tgt = kld.targets(seqs)
    nll_o = float(-ref.gather(1, tgt[:, None]).mean())

    def evaluate(name, qargs, source):
        ck = os.path.join(args.out, "q")
        run([F, "quantize", MODEL, "-o", ck, "--format", "dequantized", "--force", "--summary"] + qargs)
        q = kld.load_quantized(MODEL, ck, torch.float32, "eager")
        lq = kld.log_probs(q, seqs, 16)
        kl = (ref.exp() * (ref - lq)).sum(-1)
        res = {"format": "frontier-eval", "version": 1, "name": name, **source,
               "model": "stories260K",
               "tokens": {"kind": "self-sampled", "seed": SEED, "temperature": 1.0,
                          "n_sequences": N_SEQ, "seq_len": SEQ_LEN,
                          "predicted_positions": kl.numel(), "ids_sha256": ids_hash},
               "kl_mean": float(kl.mean()), "kl_stderr": float(kl.std() / math.sqrt(kl.numel())),
               "ppl_quant": math.exp(float(-lq.gather(1, tgt[:, None]).mean())),
               "ppl_orig": math.exp(nll_o),
               "top1_agreement": float((ref.argmax(-1) == lq.argmax(-1)).double().mean()),
               "quantize_command": "frontier quantize data/stories260K --format dequantized " + " ".join(
                   a.replace(ROOT + "/", "") for a in qargs),
               "forward": f"PyTorch {torch.__version__}, transformers {transformers.__version__}, "
                          "float32, cpu, eager, 1 thread",
               "tool": "frontier scripts/study_stories260K.py (examples/eval/kld.py functions)"}
        with open(os.path.join(EVAL_DIR, name.replace("+", "_") + ".json"), "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
        return res

    # (a) every uniform configuration, on the linear layers: the data-free
    # ones, and the calibrated ones (GPTQ, AWQ, imatrix) written with the
    # statistics the sweep measured them with
    uniform = {}
    for c in sorted(pred):
        qargs = ["--config", c, "--include", INCLUDE]
        if re.match(CALIBRATED, c):
            qargs += ["--calib", CALIB]
        r = subprocess.run([F, "quantize", MODEL, "-o", os.path.join(args.out, "probe"),
                            "--format", "dequantized", "--force", "--summary"] + qargs,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            continue  # no dequantized writer
        uniform[c] = evaluate(c, qargs, {"config": c})
        print(f"  {c:34s} {pred[c]['bits']:.3f} bpw  KL {uniform[c]['kl_mean']:.4f}", flush=True)
    datafree = [c for c in uniform if not re.match(CALIBRATED, c)]

    rows = []
    for B in BUDGETS:
        row = {"budget": B}
        for suffix, pool in (("", datafree), ("_all", list(uniform))):
            fits = [c for c in pool if pred[c]["bits"] <= B + 1e-9]
            best = min(fits, key=lambda c: pred[c]["rel_err"]) if fits else None
            row["uniform_rel" + suffix] = (best, uniform[best]["kl_mean"] if best else None)
            besto = min(fits, key=lambda c: pred[c]["out_rel_err"]) if fits else None
            row["uniform_out" + suffix] = (besto, uniform[besto]["kl_mean"] if besto else None)
            bestm = min(fits, key=lambda c: uniform[c]["kl_mean"]) if fits else None
            row["uniform_oracle" + suffix] = (bestm, uniform[bestm]["kl_mean"] if bestm else None)
        for label, extra in (("rel_err", ["--metric", "rel_err"]),
                             ("out_rel_err", ["--metric", "out_rel_err"]),
                             ("sens_out", ["--metric", "out_rel_err", "--objective", "sensitivity",
                                           "--calib", CALIB])):
            for calibrated in (False, True):
                name = f"alloc-{label}-{B:g}" + ("-calib" if calibrated else "")
                recipe = os.path.join(EVAL_DIR, "recipes", name + ".json")
                cmd = [F, "allocate", h5, "--budget", str(B), "--include", INCLUDE, "-o", recipe,
                       "--tensor-types", os.path.join(args.out, "tt.txt"), "--no-store"] + extra
                if not calibrated:
                    cmd += ["--configs", "^(int|nf|fp|mx|nvfp|rht\\+int|hqq|mse)"]
                outp = run(cmd)
                rec = json.load(open(recipe))
                rec["dataset"] = "out/study/run.h5"
                json.dump(rec, open(recipe, "w"), indent=1)
                pk = None
                for line in outp.splitlines():
                    if line.startswith("predicted KL"):
                        pk = float(line.rsplit(":", 1)[1])
                cfgs = set(rec["recipe"].values())
                entry = {"bits": rec["bits_per_weight"], "configs": len(cfgs), "predicted": pk}
                qargs = ["--recipe", recipe]
                if any(re.match(CALIBRATED, c) for c in cfgs):
                    qargs += ["--calib", CALIB]  # the statistics the sweep measured them with
                entry["calibrated_tensors"] = sum(bool(re.match(CALIBRATED, c))
                                                  for c in rec["recipe"].values())
                try:
                    res = evaluate(name, qargs, {"recipe": os.path.join("recipes", name + ".json")})
                    entry["kl"] = res["kl_mean"]
                except SystemExit as e:
                    entry["kl"] = None
                    entry["why"] = str(e).splitlines()[1][:200] if "\n" in str(e) else str(e)[:200]
                row[name.rsplit(f"-{B:g}", 1)[0] + ("-calib" if calibrated else "")] = entry
        rows.append(row)

    # rank correlation, predicted vs measured, over the uniform configurations
    # over the data-free ones (as before) and over all, calibrated included
    summary = {}
    for suffix, pool in (("", datafree), ("_all", list(uniform))):
        cs = [c for c in pool if pred[c].get("pred_out_rel_err") is not None]
        meas = [uniform[c]["kl_mean"] for c in cs]
        summary["n_uniform" + suffix] = len(cs)
        summary["spearman" + suffix] = {
            m: spearman([pred[c][m] for c in cs], meas)
            for m in ("pred_rel_err", "pred_out_rel_err", "rel_err", "out_rel_err")}
    summary["calibrated_uniform"] = sorted(set(uniform) - set(datafree))
    summary.update({"rows": rows, "seconds": round(time.time() - t0, 1)})
    with open(os.path.join(EVAL_DIR, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    run([F, "annotate", h5] + sorted(os.path.join(EVAL_DIR, f) for f in os.listdir(EVAL_DIR)
                                     if f.endswith(".json") and f != "summary.json"))
    write_svg(uniform, pred, rows)
    print(json.dumps(summary, indent=1))


def write_svg(uniform, pred, rows):
    W, H, L, B_, T, R = 640, 420, 60, 50, 20, 20
    pts = [(pred[c]["bits"], uniform[c]["kl_mean"],
            "u-calib" if re.match(CALIBRATED, c) else "u") for c in uniform]
    for r in rows:
        for k, v in r.items():
            if isinstance(v, dict) and v.get("kl") is not None:
                pts.append((v["bits"], v["kl"], k))
    xs = [p[0] for p in pts]
    ys = [math.log10(max(p[1], 1e-4)) for p in pts]
    x0, x1 = 2, max(8.6, max(xs))
    y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
    sx = lambda x: L + (x - x0) / (x1 - x0) * (W - L - R)
    sy = lambda y: T + (y1 - y) / (y1 - y0) * (H - T - B_)
    colors = {"u": "#999999", "alloc-rel_err": "#1f77b4", "alloc-out_rel_err": "#2ca02c",
              "alloc-sens_out": "#d62728"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{L}" y1="{H-B_}" x2="{W-R}" y2="{H-B_}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H-B_}" stroke="black"/>']
    for b in range(2, int(x1) + 1):
        out.append(f'<text x="{sx(b):.1f}" y="{H-B_+15}" text-anchor="middle">{b}</text>')
    for e in range(y0, y1 + 1):
        out.append(f'<text x="{L-5}" y="{sy(e)+4:.1f}" text-anchor="end">1e{e}</text>')
        out.append(f'<line x1="{L}" y1="{sy(e):.1f}" x2="{W-R}" y2="{sy(e):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{(W+L)/2}" y="{H-10}" text-anchor="middle">bits per weight (35 linear layers)</text>')
    out.append(f'<text x="15" y="{(H)/2}" transform="rotate(-90 15 {H/2})" text-anchor="middle">measured mean next-token KL (nats)</text>')
    for x, y, k in pts:
        calibrated = k.endswith("-calib")
        col = colors.get(k[:-len("-calib")] if calibrated else k, "#9467bd")
        r = 2.5 if k.startswith("u") else 4
        paint = (f'fill="none" stroke="{col}" stroke-width="1.5"' if calibrated
                 else f'fill="{col}" fill-opacity="0.8"')
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(math.log10(max(y,1e-4))):.1f}" r="{r}" {paint}/>')
    ly = T + 10
    for k, lab in (("u", "uniform configurations (open: calibrated)"), ("alloc-rel_err", "allocation: rel_err"),
                   ("alloc-out_rel_err", "allocation: out_rel_err"),
                   ("alloc-sens_out", "allocation: sensitivity x out_rel_err^2")):
        out.append(f'<circle cx="{W-210}" cy="{ly}" r="4" fill="{colors[k]}"/><text x="{W-200}" y="{ly+4}">{lab}</text>')
        ly += 16
    out.append(f'<circle cx="{W-210}" cy="{ly}" r="4" fill="none" stroke="black" stroke-width="1.5"/>'
               f'<text x="{W-200}" y="{ly+4}">open: calibrated methods allowed</text>')
    out.append("</svg>")
    with open(FIG, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
