#!/usr/bin/env python3
"""Checks of tests/moe (sweep_moe.sh). usage:
  check_moe.py split FUSED.h5 SPLIT.h5   per-expert scopes: each stack's row is
      the sum of the rows of its experts swept as separate 2-D tensors, and
      every other tensor's rows are the same; /expert_results rows are those
      separate rows bit for bit
  check_moe.py same A.h5 B.h5 [REL]     the same rows in /results and
      /expert_results (seconds and device aside): sizes and max_abs_err
      exact, the error sums and metrics within REL relative (0: exact)
  check_moe.py nosplit FUSED.h5         no /expert_results table
  check_moe.py splitcalib FUSED.h5 SPLIT.h5   split, with --calib on both (the
      split run's statistics are the stack's per-expert ones split the same
      way, tests/moe/split_calib.py): out_sq_err, out_sq_ref and out_rel_err
      compared too, a stack's out sums the sums over its experts in expert
      order, and no stack row without out_rel_err
  check_moe.py samecalib A.h5 B.h5 [REL]   same, out_sq_err, out_sq_ref and
      out_rel_err compared too
"""
import math
import sys

try:
    import h5py
except ImportError:
    print("SKIP: python3 has no h5py")
    sys.exit(77)

FIELDS = ("bits_per_weight", "total_bits", "rel_err", "sqnr_db", "max_abs_err", "cosine",
          "sq_err", "flags")
# the numeric flags (docs/dataset.md): a stack's are its experts' facts, with
# "checked" and "all zero" only where every expert has them
ROW_CHECKED, ROW_ALL_ZERO = 0x1, 0x2
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path):
    with h5py.File(path, "r") as f:
        tensors = {int(t["tensor_id"]): (text(t["name"]), float(t["sq_norm"]), int(t["numel"]))
                   for t in f["tensors"][...]}
        configs = {int(c["config_id"]): text(c["name"]) for c in f["configs"][...]}
        rows = {}
        for r in f["results"][...]:
            key = (tensors[int(r["tensor_id"])][0], configs[int(r["config_id"])])
            rows[key] = {k: r[k].item() for k in FIELDS}
        experts = {}
        if "expert_results" in f:
            for r in f["expert_results"][...]:
                key = (tensors[int(r["tensor_id"])][0], configs[int(r["config_id"])],
                       int(r["expert"]))
                experts[key] = {k: r[k].item() for k in FIELDS}
        norms = {v[0]: v[1] for v in tensors.values()}
        skipped = [(text(s["name"]), text(s["config"]), text(s["reason"])) for s in f["skipped"][...]]
    return rows, experts, norms, skipped


def same(a, b):
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def rows_same(a, b):
    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


def close(a, b, rel):
    if same(a, b):
        return True
    if rel == 0 or isinstance(a, int):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def check_split(fused_path, split_path):
    rows, experts, norms, skipped = load(fused_path)
    srows, _, snorms, sskipped = load(split_path)
    failed = [s for s in skipped + sskipped if s[1] or "1-D" not in s[2]]
    if failed:
        fail(f"skipped rows: {failed}")
    stacks = sorted({k[0] for k in experts})
    if not stacks:
        fail("no /expert_results rows")
    n_checked = 0
    for (name, cfg), row in sorted(rows.items()):
        parts = sorted((int(k[0][len(name) + 1:]), v) for k, v in srows.items()
                       if k[1] == cfg and k[0].startswith(name + ".") and
                       k[0][len(name) + 1:].isdigit())
        if name not in stacks:
            if (name, cfg) not in srows:
                fail(f"{name} {cfg}: no row in the split run")
            elif not rows_same(srows[(name, cfg)], row):
                fail(f"{name} {cfg}: {row} != split run's {srows[(name, cfg)]}")
            continue
        if not parts:
            fail(f"{name} {cfg}: no expert rows in the split run")
            continue
        n_checked += 1
        # the stack's row: sums in expert order, bits added, max of max
        sq_err = 0.0
        bits = 0
        mx = 0.0
        all_of = ROW_CHECKED | ROW_ALL_ZERO
        flags = all_of
        for e, p in parts:
            flags = (flags & (p["flags"] | ~all_of)) | (p["flags"] & ~all_of)
            sq_err += p["sq_err"]
            bits += p["total_bits"]
            mx = max(mx, p["max_abs_err"])
            x = experts.get((name, cfg, e))
            if x is None:
                fail(f"{name} {cfg}: no /expert_results row for expert {e}")
            elif not rows_same(x, p):
                fail(f"{name} {cfg} expert {e}: /expert_results {x} != separate tensor {p}")
        sq_ref = 0.0
        for e, _ in parts:
            sq_ref += snorms[f"{name}.{e}"]
        if CALIB:
            out_err = out_ref = 0.0
            for e, p in parts:
                out_err += p["out_sq_err"]
                out_ref += p["out_sq_ref"]
            if math.isnan(row["out_rel_err"]):
                fail(f"{name} {cfg}: out_rel_err is NaN with per-expert statistics")
            if row["out_sq_err"] != out_err or row["out_sq_ref"] != out_ref:
                fail(f"{name} {cfg}: out_sq_err/out_sq_ref {row['out_sq_err']!r}/"
                     f"{row['out_sq_ref']!r} != sums over experts {out_err!r}/{out_ref!r}")
            elif not close(row["out_rel_err"], math.sqrt(out_err / out_ref), 1e-12):
                fail(f"{name} {cfg}: out_rel_err {row['out_rel_err']!r} != "
                     f"{math.sqrt(out_err / out_ref)!r}")
        if row["sq_err"] != sq_err:
            fail(f"{name} {cfg}: sq_err {row['sq_err']!r} != sum over experts {sq_err!r}")
        if row["total_bits"] != bits:
            fail(f"{name} {cfg}: total_bits {row['total_bits']} != sum over experts {bits}")
        if row["flags"] != flags or not flags & ROW_CHECKED:
            fail(f"{name} {cfg}: flags {row['flags']:#x}, its experts' give {flags:#x} "
                 "(and every tensor is examined)")
        if row["max_abs_err"] != mx:
            fail(f"{name} {cfg}: max_abs_err {row['max_abs_err']!r} != max over experts {mx!r}")
        if norms[name] != sq_ref:
            fail(f"{name}: sq_norm {norms[name]!r} != sum over experts {sq_ref!r}")
        want = math.sqrt(sq_err / sq_ref)
        if not close(row["rel_err"], want, 1e-12):
            fail(f"{name} {cfg}: rel_err {row['rel_err']!r} != {want!r}")
        # and the split rows sum to the tensor's row (--split-experts)
        xs = sorted((k[2], v) for k, v in experts.items() if k[0] == name and k[1] == cfg)
        s = 0.0
        for _, v in xs:
            s += v["sq_err"]
        if s != row["sq_err"] or sum(v["total_bits"] for _, v in xs) != row["total_bits"]:
            fail(f"{name} {cfg}: /expert_results rows do not sum to the /results row")
    print(f"ok: {n_checked} (stack, configuration) rows against their experts, "
          f"{len(rows) - n_checked} other rows unchanged")


def check_same(a_path, b_path, rel):
    a, ax, an, _ = load(a_path)
    b, bx, bn, _ = load(b_path)
    for label, x, y in (("/results", a, b), ("/expert_results", ax, bx)):
        if set(x) != set(y):
            fail(f"{label}: different rows: {sorted(set(x) ^ set(y))[:5]}")
        bad = 0
        for k in sorted(set(x) & set(y)):
            for f in FIELDS:
                # sizes and the order-free max are exact whatever the device;
                # sums within rel (the GPU reduces in another order)
                exact = f in ("bits_per_weight", "total_bits", "max_abs_err", "flags")
                if not close(x[k][f], y[k][f], 0.0 if exact else rel):
                    bad += 1
                    if bad <= 5:
                        fail(f"{label} {k} {f}: {x[k][f]!r} != {y[k][f]!r}")
        print(f"ok: {label}: {len(x)} rows compared (rel {rel})")


mode = sys.argv[1]
CALIB = mode in ("splitcalib", "samecalib")
if CALIB:
    FIELDS += ("out_sq_err", "out_sq_ref", "out_rel_err")
    mode = mode[:-len("calib")]
if mode == "split":
    check_split(sys.argv[2], sys.argv[3])
elif mode == "same":
    check_same(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
elif mode == "nosplit":
    with h5py.File(sys.argv[2], "r") as f:
        if "expert_results" in f:
            fail("/expert_results written without --split-experts")
sys.exit(1 if failures else 0)
