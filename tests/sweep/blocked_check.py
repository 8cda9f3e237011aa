#!/usr/bin/env python3
"""Checks a --max-memory sweep (B) against the default sweep (A) of the same
sources (docs/sweep.md, "Bounded memory"):

  blocked_check.py A.h5 B.h5 BLOCKED_REGEX [MIN_ROWS]

- every /results row of B has its row in A (same tensor and configuration
  names) with every column bit for bit equal (float columns compared as
  their 64-bit patterns), timing columns aside, `flags` (the numeric edge
  cases, gathered block by block) included;
- every row of A missing from B is a (tensor, configuration) pair listed in
  B's /skipped with a reason ending in "raise --max-memory", on a tensor
  whose name matches BLOCKED_REGEX (those blocked); nothing else is missing;
- B has at least MIN_ROWS rows (the blocked path measured something).
"""
import re
import sys

import h5py
import numpy as np

IGNORED = {"seconds", "device", "tensor_id", "config_id", "flags"}


def rows(path):
    with h5py.File(path, "r") as f:
        ten = {int(r["tensor_id"]): r["name"].decode() for r in f["tensors"][...]}
        cfg = {int(r["config_id"]): r["name"].decode() for r in f["configs"][...]}
        res = f["results"][...]
        skipped = {(r["name"].decode(), r["config"].decode()): r["reason"].decode()
                   for r in f["skipped"][...]}
    out = {}
    for r in res:
        key = (ten[int(r["tensor_id"])], cfg[int(r["config_id"])])
        vals = {}
        for c in res.dtype.names:
            if c in IGNORED:
                continue
            v = r[c]
            vals[c] = np.float64(v).view(np.uint64).item() if res.dtype[c].kind == "f" else v.item()
        out[key] = (vals, int(r["flags"]))
    return out, skipped


def main():
    a, _ = rows(sys.argv[1])
    b, skipped_b = rows(sys.argv[2])
    blocked = re.compile(sys.argv[3])
    min_rows = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    bad = 0
    for key, (vals, flags) in b.items():
        if key not in a:
            print(f"row {key} of B is not in A")
            bad += 1
            continue
        va, fa = a[key]
        for c, v in vals.items():
            if va[c] != v:
                print(f"{key}.{c}: A {va[c]!r} != B {v!r}")
                bad += 1
        if flags != fa:
            print(f"{key}.flags: {flags:#x}, expected {fa:#x}")
            bad += 1
    for key in a:
        if key in b:
            continue
        why = skipped_b.get(key)
        if not why or not why.endswith("raise --max-memory") or not blocked.search(key[0]):
            print(f"row {key} of A is missing from B (skipped: {why!r})")
            bad += 1
    if len(b) < min_rows:
        print(f"B has {len(b)} rows, expected at least {min_rows}")
        bad += 1
    n_skip = sum(1 for k in a if k not in b)
    print(f"{len(b)} rows of B compared, {n_skip} pairs skipped with a reason, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
