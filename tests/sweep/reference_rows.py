#!/usr/bin/env python3
"""Rows of a frontier dataset as a stable text table (one line per
(tensor, config), sorted, floats as exact hex), for comparing a sweep with
one stored before a change.

  reference_rows.py dump run.h5 > rows.tsv
  reference_rows.py compare run.h5 rows.tsv     exit 1 on the first difference
  reference_rows.py digest run.h5 > digests.tsv one line per configuration: its row
                                                count and the sha256 of its rows
                                                (out_rel_err included), in tensor order
  reference_rows.py compare-digest run.h5 digests.tsv
                                                exit 1 naming every configuration
                                                whose rows differ

A digest per configuration keeps a whole calibrated sweep (24,732 rows) in a
small file and still names the configuration a change altered.
"""
import hashlib
import sys

import h5py

FIELDS = ("bits_per_weight", "total_bits", "rel_err", "sqnr_db", "max_abs_err", "cosine", "sq_err")
DIGEST_FIELDS = FIELDS + ("out_rel_err",)


def rows(path, fields=FIELDS):
    with h5py.File(path, "r") as f:
        tensors = {int(t["tensor_id"]): t["name"].decode() if isinstance(t["name"], bytes) else t["name"]
                   for t in f["tensors"][()]}
        configs = {int(c["config_id"]): c["name"].decode() if isinstance(c["name"], bytes) else c["name"]
                   for c in f["configs"][()]}
        out = []
        for r in f["results"][()]:
            vals = []
            for k in fields:
                v = r[k]
                vals.append(str(int(v)) if k == "total_bits" else float(v).hex())
            out.append("\t".join([tensors[int(r["tensor_id"])], configs[int(r["config_id"])]] + vals))
    return sorted(out)


def digests(path):
    by_config = {}
    for line in rows(path, DIGEST_FIELDS):
        tensor, config, rest = line.split("\t", 2)
        by_config.setdefault(config, []).append(tensor + "\t" + rest)
    out = {}
    for config, lines in by_config.items():
        h = hashlib.sha256("\n".join(lines).encode()).hexdigest()
        out[config] = f"{len(lines)}\t{h}"
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "digest":
        print("config\trows\tsha256")
        for config, d in sorted(digests(sys.argv[2]).items()):
            print(f"{config}\t{d}")
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare-digest":
        got = digests(sys.argv[2])
        with open(sys.argv[3]) as fh:
            want = dict(l.rstrip("\n").split("\t", 1) for l in list(fh)[1:])
        bad = sorted(c for c in set(got) | set(want) if got.get(c) != want.get(c))
        for c in bad:
            print(f"{c}: {got.get(c, 'absent')} here, {want.get(c, 'absent')} in {sys.argv[3]}")
        if bad:
            print(f"{len(bad)} of {len(want)} configurations differ from the reference")
            return 1
        print(f"{len(got)} configurations ({sum(int(v.split()[0]) for v in got.values())} rows) "
              "equal the reference bit for bit")
        return 0
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
