#!/usr/bin/env python3
"""--calib on data/stories260K: writes calibration statistics with a known
Hessian per module, then checks the rows of a sweep against out_rel_err
computed here in float64 from numpy's own Q(W) (golden_stories.py).

  calib_check.py write MODEL.safetensors OUT.safetensors [bad-nan|diag-only]
  calib_check.py check MODEL.safetensors CALIB.safetensors RUN.h5
  calib_check.py check-diag MODEL.safetensors CALIB.safetensors RUN.h5

diag-only writes act_sq_mean alone (what an importance matrix holds);
check-diag checks a --diagonal-output-error sweep against
sum_ij act_sq_mean_j dW_ij^2 in float64 and the /tensors out_error field.
"""
import json
import struct
import sys

import h5py
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from golden_stories import int_sym_groups, int_sym_tensor, read_safetensors  # noqa: E402

# one module left out (its rows keep NaN), one that matches nothing (a warning)
MISSING = "model.layers.1.mlp.down_proj"
EXTRA = "model.layers.9.mlp.up_proj"


def modules(model):
    """The linear layers' modules with the statistics the file holds: for
    attention only q_proj (k_proj and v_proj share its input)."""
    out = {}
    for name, w in model.items():
        if not name.endswith("_proj.weight") or w.ndim != 2:
            continue
        mod = name[: -len(".weight")]
        if mod.endswith(("k_proj", "v_proj")) or mod == MISSING:
            continue
        out[mod] = w.shape[1]
    return out


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write(model_path, out, bad=None):
    model = read_safetensors(model_path)
    rng = np.random.default_rng(20261201)
    tensors, n_tok = {}, 512
    mods = modules(model)
    mods[EXTRA] = 64
    for mod, cols in sorted(mods.items()):
        # correlated inputs, as real activations are: x = z A
        z = rng.standard_normal((n_tok, cols))
        x = z @ (np.eye(cols) + 0.3 * rng.standard_normal((cols, cols)))
        h = x.T @ x / n_tok
        h = (h + h.T) / 2
        tensors[mod + ".hessian"] = h.astype(np.float32)
        tensors[mod + ".act_abs_mean"] = np.abs(x).mean(axis=0).astype(np.float32)
        tensors[mod + ".act_sq_mean"] = np.diag(h).astype(np.float32)
    if bad == "bad-nan":
        tensors["model.layers.0.mlp.up_proj.hessian"][3, 3] = np.nan
    if bad == "diag-only":
        tensors = {k: v for k, v in tensors.items() if k.endswith(".act_sq_mean")}
    write_safetensors(out, tensors, {"token_count": str(n_tok), "tool": "tests/sweep/calib_check.py"})


def stats_module(name, calib, what=".hessian"):
    mod = name[: -len(".weight")]
    if mod + what in calib:
        return mod
    for p in ("k_proj", "v_proj"):
        if mod.endswith(p):
            q = mod[: -len(p)] + "q_proj"
            if q + what in calib:
                return q
    return None


def run_rows(run, field="name"):
    """(the tensor's `field`s, configuration name, /results row) of every row
    of RUN.h5; field is a /tensors column or a tuple of them."""
    fields = (field,) if isinstance(field, str) else field
    with h5py.File(run, "r") as f:
        dec = lambda v: v.decode() if isinstance(v, bytes) else v
        cfg = {int(c["config_id"]): dec(c["name"]) for c in f["configs"][()]}
        ten = {int(t["tensor_id"]): tuple(dec(t[k]) for k in fields) for t in f["tensors"][()]}
        return [(ten[int(r["tensor_id"])] if len(fields) > 1 else ten[int(r["tensor_id"])][0],
                 cfg[int(r["config_id"])], r) for r in f["results"][()]]


def reconstruct(model, name, config):
    """W in float32 and numpy's own Q(W) of the two configurations swept."""
    w = model[name].astype(np.float32)
    if config == "int4-g32-sym":
        return w, int_sym_groups(w, 4, 32)[0]
    return w, int_sym_tensor(w, 8)[0]


def check(model_path, calib_path, run):
    model = read_safetensors(model_path)
    calib = read_safetensors(calib_path)
    rows = run_rows(run)
    worst, n_with, n_nan = 0.0, 0, 0
    for name, config, r in rows:
        mod = stats_module(name, calib)
        if mod is None:
            assert np.isnan(r["out_rel_err"]), (name, config, r["out_rel_err"])
            n_nan += 1
            continue
        w, w_hat = reconstruct(model, name, config)
        h = calib[mod + ".hessian"].astype(np.float64)
        d = w.astype(np.float64) - w_hat.astype(np.float64)
        w64 = w.astype(np.float64)
        want = np.sqrt(np.trace(d @ h @ d.T) / np.trace(w64 @ h @ w64.T))
        rel = abs(r["out_rel_err"] - want) / want
        worst = max(worst, rel)
        assert rel < 1e-5, (name, config, r["out_rel_err"], want)
        n_with += 1
    assert n_with > 0 and n_nan > 0, (n_with, n_nan)
    print(f"out_rel_err of {n_with} rows within {worst:.1e} of a float64 trace; "
          f"{n_nan} rows without statistics are NaN")


def check_diag(model_path, calib_path, run):
    model = read_safetensors(model_path)
    calib = read_safetensors(calib_path)
    rows = run_rows(run, ("name", "out_error"))
    worst, n_with, n_nan = 0.0, 0, 0
    for (name, basis), config, r in rows:
        mod = stats_module(name, calib, ".act_sq_mean")
        if mod is None:
            assert basis == "" and np.isnan(r["out_sq_err"]) and np.isnan(r["out_rel_err"]), (name, basis)
            n_nan += 1
            continue
        assert basis == "diagonal", (name, basis)
        w, w_hat = reconstruct(model, name, config)
        diag = calib[mod + ".act_sq_mean"].astype(np.float64)
        d = (w - w_hat.astype(np.float32)).astype(np.float64)  # rounded once in float32, as frontier
        for field, want in (("out_sq_err", (d * d * diag).sum()),
                            ("out_sq_ref", (w.astype(np.float64) ** 2 * diag).sum())):
            rel = abs(r[field] - want) / want
            worst = max(worst, rel)
            assert rel < 1e-12, (name, config, field, r[field], want)
        assert r["out_rel_err"] == np.sqrt(r["out_sq_err"] / r["out_sq_ref"]), (name, config)
        n_with += 1
    assert n_with > 0 and n_nan > 0, (n_with, n_nan)
    print(f"diagonal output error of {n_with} rows within {worst:.1e} of float64 sums; "
          f"{n_nan} rows without statistics are NaN")


if __name__ == "__main__":
    if sys.argv[1] == "check-diag":
        check_diag(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
