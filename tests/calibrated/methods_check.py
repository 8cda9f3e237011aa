#!/usr/bin/env python3
"""The calibrated and optimised variants on data/stories260K with its shipped
statistics (docs/calibration.md), checked against plain round-to-nearest of
the same format in the same sweep:

  methods_check.py RUN.h5

- every linear layer with a Hessian: gptq-int3 and gptq-int2 (g32 and gC,
  sym and asym) have lower out_rel_err than the int configuration they wrap;
- every such layer: awq-int3 (g32, g128, gC; sym, asym) lower out_rel_err
  than int3;
- the model as a whole (sum of squared errors over sum of squared norms):
  rht+int2 and hqq-int2 (asym, every group size) lower rel_err than int2;
- every tensor and configuration: mse-<config> never a higher rel_err than
  <config>;
- the model as a whole: imat-int2/int3 a lower out_rel_err than RTN (the
  weighted error it minimises is not stored in the rows).
Exits 1 with the first violations listed.
"""
import sys

import h5py
import numpy as np


def load(path):
    with h5py.File(path, "r") as f:
        dec = lambda v: v.decode() if isinstance(v, bytes) else v
        cfg = {int(c["config_id"]): dec(c["name"]) for c in f["configs"][()]}
        ten = {int(t["tensor_id"]): (dec(t["name"]), float(t["sq_norm"])) for t in f["tensors"][()]}
        rows = {}
        for r in f["results"][()]:
            name, sq = ten[int(r["tensor_id"])]
            rows[(name, cfg[int(r["config_id"])])] = (float(r["rel_err"]), float(r["out_rel_err"]),
                                                     float(r["sq_err"]), sq)
    return rows


def main(path):
    rows = load(path)
    tensors = sorted({t for t, _ in rows})
    bad = []
    checked = 0

    def per_layer(method, base):
        nonlocal checked
        n = 0
        for t in tensors:
            a, b = rows.get((t, method + base)), rows.get((t, base))
            if a is None or b is None or np.isnan(a[1]):
                continue
            n += 1
            checked += 1
            if not a[1] < b[1]:
                bad.append(f"{t}: {method}{base} out_rel_err {a[1]:.6g} not below {base} {b[1]:.6g}")
        if n == 0:
            bad.append(f"no layer has both {method}{base} and {base} with statistics")

    for b in (3, 2):
        for g in ("g32", "gC"):
            for sym in ("sym", "asym"):
                per_layer("gptq-", f"int{b}-{g}-{sym}")
    for g in ("g32", "g128", "gC"):
        for sym in ("sym", "asym"):
            per_layer("awq-", f"int3-{g}-{sym}")

    def model_rel(config, metric=0):
        err = ref = 0.0
        for t in tensors:
            r = rows.get((t, config))
            if r is None:
                return None
            rel = r[metric]
            if np.isnan(rel):
                continue
            err += rel * rel * r[3]
            ref += r[3]
        return np.sqrt(err / ref)

    for base in ("int2-g32-asym", "int2-g64-asym", "int2-g128-asym", "int2-gC-asym"):
        for method in ("rht+", "hqq-"):
            a, b = model_rel(method + base), model_rel(base)
            checked += 1
            if a is None or b is None or not a < b:
                bad.append(f"model rel_err: {method}{base} {a} not below {base} {b}")
    # measured, not required: with the three levels of int2 sym the
    # rotation's near-Gaussian rows lose to the raw weights (docs/calibration.md)
    for base in ("int2-g32-sym", "int2-gC-sym", "int3-g32-sym", "int4-g32-sym"):
        a, b = model_rel("rht+" + base), model_rel(base)
        if a is not None and b is not None:
            print(f"info: model rel_err rht+{base} {a:.6f}, {base} {b:.6f}")
    for (t, c), r in rows.items():
        if c.startswith("mse-"):
            base = rows.get((t, c[4:]))
            checked += 1
            if base is None or r[0] > base[0]:
                bad.append(f"{t}: {c} rel_err {r[0]:.6g} above {c[4:]} {base and base[0]}")
    for base in ("int2-g32-sym", "int3-g32-sym", "int2-gC-asym", "int3-gC-asym"):
        a, b = model_rel("imat-" + base, 1), model_rel(base, 1)
        checked += 1
        if a is None or b is None or not a < b:
            bad.append(f"model out_rel_err: imat-{base} {a} not below {base} {b}")
    for line in bad[:30]:
        print("FAIL:", line)
    print(f"{checked} comparisons, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
