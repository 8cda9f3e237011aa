#!/usr/bin/env python3
"""Reads frontier datasets with h5py alone (as a user would), for the tests.

  h5tool.py rows FILE              number of /results rows (fails if unreadable)
  h5tool.py same A B               tables equal, timing columns aside
  h5tool.py same-by-name A B       same rows keyed by names, whatever the ids
  h5tool.py set-attr FILE NAME INT rewrite an integer root attribute
  h5tool.py bump FILE COLUMN ROW FACTOR   multiply one /results value (and drop
                                          the checksum it invalidates)
"""
import sys

import h5py
import numpy as np

IGNORED = {"seconds", "device"}  # timing columns: differ between runs by nature
TABLES = ["sources", "tensors", "configs", "results", "skipped"]


def table(f, name):
    return f[name][...]


def same(a_path, b_path):
    ok = True
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        # /expert_results (sweep --split-experts) when either file has it
        extra = ["expert_results"] if "expert_results" in a or "expert_results" in b else []
        for name in TABLES + extra:
            if name not in a or name not in b:
                print(f"/{name}: in only one of the files")
                ok = False
                continue
            ta, tb = table(a, name), table(b, name)
            if ta.shape != tb.shape:
                print(f"/{name}: {ta.shape[0]} rows vs {tb.shape[0]}")
                ok = False
                continue
            for col in ta.dtype.names:
                if col in IGNORED:
                    continue
                ca, cb = ta[col], tb[col]
                if ca.dtype.kind == "f":
                    eq = (ca == cb) | (np.isnan(ca) & np.isnan(cb))
                else:
                    eq = ca == cb
                if not np.all(eq):
                    i = int(np.argmin(eq))
                    print(f"/{name}.{col} differs first at row {i}: {ca[i]!r} vs {cb[i]!r}")
                    ok = False
    return ok


def keyed(path):
    """Every table keyed by names instead of ids."""
    with h5py.File(path, "r") as f:
        def dec(v):
            # NaN != NaN would make equal rows differ: compare it as a marker
            if isinstance(v, bytes):
                return v.decode()
            if isinstance(v, (float, np.floating)) and np.isnan(v):
                return "nan"
            return v.item() if isinstance(v, np.generic) else v
        src = {r["source_id"]: (dec(r["kind"]), dec(r["sha256"]), dec(r["path"])) for r in f["sources"][...]}
        ten = {r["tensor_id"]: (src[r["source_id"]], dec(r["name"])) for r in f["tensors"][...]}
        cfg = {r["config_id"]: dec(r["name"]) for r in f["configs"][...]}
        out = {"sources": set(src.values())}
        out["tensors"] = {(src[r["source_id"]], dec(r["name"])): tuple(
            (dec(r[c]) if c not in ("tensor_id", "source_id") else None) for c in r.dtype.names)
            for r in f["tensors"][...]}
        out["configs"] = {dec(r["name"]): tuple(dec(r[c]) for c in r.dtype.names if c != "config_id")
                          for r in f["configs"][...]}
        out["results"] = {(ten[r["tensor_id"]], cfg[r["config_id"]]): tuple(
            dec(r[c]) for c in r.dtype.names if c not in IGNORED | {"tensor_id", "config_id"})
            for r in f["results"][...]}
        out["skipped"] = {(src[r["source_id"]], dec(r["name"]), dec(r["config"]), dec(r["reason"]))
                          for r in f["skipped"][...]}
        return out


def same_by_name(a_path, b_path):
    a, b = keyed(a_path), keyed(b_path)
    ok = True
    for name in TABLES:
        if a[name] != b[name]:
            ka, kb = set(a[name]) if not isinstance(a[name], set) else a[name], \
                set(b[name]) if not isinstance(b[name], set) else b[name]
            print(f"/{name} differs: {len(ka - kb)} only in A, {len(kb - ka)} only in B; "
                  f"examples {sorted(map(str, ka ^ kb))[:3]}")
            if ka == kb:
                diff = [k for k in ka if a[name][k] != b[name][k]][:3]
                print(f"  values differ for {diff}")
            ok = False
    return ok


def main():
    cmd = sys.argv[1]
    if cmd == "rows":
        with h5py.File(sys.argv[2], "r") as f:
            assert f.attrs["format"] == "frontier"
            for name in TABLES:
                f[name][...]
            print(f["results"].shape[0])
        return 0
    if cmd == "same":
        return 0 if same(sys.argv[2], sys.argv[3]) else 1
    if cmd == "same-by-name":
        return 0 if same_by_name(sys.argv[2], sys.argv[3]) else 1
    if cmd == "set-attr":
        with h5py.File(sys.argv[2], "r+", libver=("v108", "v108")) as f:
            f.attrs[sys.argv[3]] = np.int64(int(sys.argv[4]))
        return 0
    if cmd == "bump":
        col, row, factor = sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
        with h5py.File(sys.argv[2], "r+", libver=("v108", "v108")) as f:
            r = f["results"][...]
            r[col][row] *= factor
            f["results"][...] = r
            # an edit by another program drops the table's content
            # checksum, or frontier refuses the file (docs/security.md)
            if "checksum" in f["results"].attrs:
                del f["results"].attrs["checksum"]
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
