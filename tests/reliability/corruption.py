#!/usr/bin/env python3
"""Flips one byte at many offsets of a real dataset and runs every command
that reads datasets on the damaged copy: each must give exactly the output
of the intact file, or refuse with a frontier error (exit 3, 4, 5 or 9); a
crash, a hang or different numbers fail the test (docs/security.md).

  corruption.py FRONTIER MODEL WORKDIR [N_OFFSETS]
"""
import os
import random
import shutil
import subprocess
import sys

FRONTIER, MODEL, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 48
Q = ["--quantizers", "int4-g32-sym,int4-g128-asym,nvfp4,fp8-e4m3-tensor", "--quiet"]
REFUSALS = {3, 4, 5, 9}
os.chdir(WORK)


def run(args, timeout=60):
    p = subprocess.run([FRONTIER] + args, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def outputs(path):
    """What each reading command makes of the dataset at path: (rc, bytes)."""
    out = {}
    rc, so, se = run(["pareto", path, "--no-store"])
    out["pareto"] = (rc, so)
    for f in ("recipe.json", "recipe.tensor-types.txt"):
        if os.path.exists(f):
            os.remove(f)
    rc, so, se = run(["allocate", path, "--budget", "4.4", "--no-store", "-o", "recipe.json"])
    out["allocate"] = (rc, so + (file_bytes("recipe.json") if rc == 0 else b""))
    if os.path.exists("x.csv"):
        os.remove("x.csv")
    rc, so, se = run(["export", path, "--format", "csv", "-o", "x.csv"])
    out["export"] = (rc, file_bytes("x.csv") if rc == 0 else b"")
    # merge with an intact copy: the damaged rows are duplicates that must agree
    if os.path.exists("m.h5"):
        os.remove("m.h5")
    rc, so, se = run(["merge", "good.h5", path, "-o", "m.h5"])
    if rc == 0:
        rc2, csv, _ = run(["export", "m.h5", "--format", "csv", "-o", "m.csv"])
        out["merge"] = (rc, file_bytes("m.csv") if rc2 == 0 else b"export of the merge failed")
    else:
        out["merge"] = (rc, b"")
    # --resume: nothing is left to measure; the file must come out intact
    shutil.copy(path, "r.h5")
    rc, so, se = run(["sweep", MODEL, "-o", "r.h5", "--resume"] + Q)
    if rc == 0:
        rc2, _, _ = run(["export", "r.h5", "--format", "csv", "-o", "r.csv"])
        out["resume"] = (rc, file_bytes("r.csv") if rc2 == 0 else b"export of the resumed run failed")
    else:
        out["resume"] = (rc, b"")
    return out


def main():
    rc, _, se = run(["sweep", MODEL, "-o", "good.h5"] + Q)
    assert rc == 0, se
    shutil.copy("good.h5", "c.h5")
    base = outputs("c.h5")
    for cmd, (rc, _) in base.items():
        assert rc == 0, f"{cmd} fails on the intact file"
    # resume leaves the file's rows as they were: its export equals export's
    assert base["resume"][1] == base["export"][1]
    data = file_bytes("good.h5")
    rng = random.Random(15)
    # the first 4 kB (superblock, root object header, its attributes) densely,
    # the rest of the file at random
    offsets = sorted(set(rng.sample(range(0, min(4096, len(data))), N // 3) +
                         rng.sample(range(0, len(data)), N - N // 3)))
    failures = 0
    refused = {c: 0 for c in base}
    same = {c: 0 for c in base}
    for off in offsets:
        damaged = bytearray(data)
        damaged[off] ^= 0xFF
        with open("c.h5", "wb") as f:
            f.write(damaged)
        try:
            got = outputs("c.h5")
        except subprocess.TimeoutExpired as e:
            print(f"FAIL: offset {off}: {e.cmd[1]} hangs")
            failures += 1
            continue
        for cmd, (rc, out) in got.items():
            if rc == 0 and out == base[cmd][1]:
                same[cmd] += 1
            elif rc in REFUSALS:
                refused[cmd] += 1
            else:
                failures += 1
                what = "different output" if rc == 0 else f"exit {rc}"
                print(f"FAIL: byte {off} flipped: {cmd}: {what}")
    for cmd in base:
        print(f"ok: {cmd}: {same[cmd]} identical, {refused[cmd]} refused, of {len(offsets)} damaged copies")
    if failures:
        print(f"{failures} failure(s)")
        return 1
    print("every command gave the intact result or refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
