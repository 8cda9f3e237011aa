#!/usr/bin/env python3
"""Rows of a frontier dataset as a stable text table (one line per
(tensor, config), sorted, floats as exact hex), for comparing a sweep with
one stored before a change.

  reference_rows.py dump run.h5 > rows.tsv
  reference_rows.py compare run.h5 rows.tsv     exit 1 on the first difference
"""
import sys

import h5py

FIELDS = ("bits_per_weight", "total_bits", "rel_err", "sqnr_db", "max_abs_err", "cosine", "sq_err")


def rows(path):
    with h5py.File(path, "r") as f:
        tensors = {int(t["tensor_id"]): t["name"].decode() if isinstance(t["name"], bytes) else t["name"]
                   for t in f["tensors"][()]}
        configs = {int(c["config_id"]): c["name"].decode() if isinstance(c["name"], bytes) else c["name"]
                   for c in f["configs"][()]}
        out = []
        for r in f["results"][()]:
            vals = []
            for k in FIELDS:
                v = r[k]
                vals.append(str(int(v)) if k == "total_bits" else float(v).hex())
            out.append("\t".join([tensors[int(r["tensor_id"])], configs[int(r["config_id"])]] + vals))
    return sorted(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        print("\t".join(("tensor", "config") + FIELDS))
        for line in rows(sys.argv[2]):
            print(line)
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        got = rows(sys.argv[2])
        with open(sys.argv[3]) as fh:
            want = [l.rstrip("\n") for l in fh][1:]
        if len(got) != len(want):
            print(f"row count differs: {len(got)} here, {len(want)} in {sys.argv[3]}")
            return 1
        for g, w in zip(got, want):
            if g != w:
                print(f"first difference:\n  got  {g}\n  want {w}")
                return 1
        print(f"{len(got)} rows equal the reference bit for bit")
        return 0
    print(__doc__)
    return 2


sys.exit(main())
