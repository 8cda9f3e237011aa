#!/usr/bin/env python3
"""Reads back what test_export wrote: CSV and JSON parsed and compared with
each other, SVG parsed as XML, PDF and PNG checked for magic bytes, size and
(PNG) the 3.4 in x 2.55 in at 300 dpi geometry, gnuplot files present."""
import csv
import json
import math
import os
import struct
import sys
import xml.etree.ElementTree as ET

d = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


expected = dict(line.split() for line in open(os.path.join(d, "expected.txt")))
n_results, n_mixed, n_configs = (int(expected[k]) for k in ("results", "mixed", "configs"))
cairo = expected["cairo"] == "1"

# CSV: tidy, one observation per row
with open(os.path.join(d, "out.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
cols = ["kind", "group", "tensor", "class", "config", "family", "nominal_bits", "numel",
        "total_bits", "bits_per_weight", "rel_err", "sqnr_db", "out_rel_err", "max_abs_err",
        "cosine", "n_tensors", "on_frontier", "budget", "lower_bound"]
check(list(rows[0].keys()) == cols, "csv header")
kinds = [r["kind"] for r in rows]
check(kinds.count("result") == n_results, "csv result rows %d != %d" % (kinds.count("result"), n_results))
check(kinds.count("point") == n_configs, "csv point rows")
check(kinds.count("mixed") == n_mixed, "csv mixed rows")
for r in rows:
    if r["kind"] == "result":
        bpw = float(r["bits_per_weight"])
        check(abs(bpw - float(r["total_bits"]) / float(r["numel"])) < 1e-12 * bpw, "csv bpw")
        check(r["out_rel_err"] == "", "csv NaN as empty field")
front = [r for r in rows if r["kind"] == "point" and r["on_frontier"] == "1"]
check(len(front) >= 2, "csv frontier points")
# frontier points: error strictly falls as bits rise
front.sort(key=lambda r: float(r["bits_per_weight"]))
check(all(float(a["rel_err"]) > float(b["rel_err"]) for a, b in zip(front, front[1:])),
      "frontier monotone")
mixed = [r for r in rows if r["kind"] == "mixed"]
check(all(float(m["bits_per_weight"]) <= float(m["budget"]) for m in mixed), "mixed within budget")
check(all(float(m["lower_bound"]) <= float(m["rel_err"]) * (1 + 1e-9) for m in mixed),
      "mixed lower bound")

# JSON: the same observations
with open(os.path.join(d, "out.json")) as f:
    doc = json.load(f)
check(doc["format"] == "frontier-export" and doc["metric"] == "rel_err", "json header")
check(len(doc["results"]) == n_results, "json results")
check(len(doc["points"]) == n_configs, "json points")
check(len(doc["mixed"]) == n_mixed, "json mixed")
by_key = {(r["tensor"], r["config"]): r for r in rows if r["kind"] == "result"}
for r in doc["results"]:
    c = by_key[(r["tensor"], r["config"])]
    check(math.isclose(r["rel_err"], float(c["rel_err"]), rel_tol=1e-15), "json/csv rel_err")
    check(r["total_bits"] == int(c["total_bits"]), "json/csv total_bits")
    check("out_rel_err" not in r, "json NaN omitted")
check(sum(1 for p in doc["points"] if p["on_frontier"]) == len(front), "json frontier")

# SVG: well-formed XML with an svg root and drawn content
if cairo:
    for name in ("out.svg", "sqnr.svg"):
        root = ET.parse(os.path.join(d, name)).getroot()
        check(root.tag.endswith("svg"), name + " root")
        check(len(list(root.iter())) > 50, name + " content")
    pdf = open(os.path.join(d, "out.pdf"), "rb").read()
    check(pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-1024:], "pdf magic")
    check(len(pdf) > 5000, "pdf size")
    for name in ("out.png", "class.png"):
        png = open(os.path.join(d, name), "rb").read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n", name + " magic")
        w, h = struct.unpack(">II", png[16:24])
        check((w, h) == (1020, 765), "%s is %dx%d, want 3.4 x 2.55 in at 300 dpi" % (name, w, h))
        check(len(png) > 20000, name + " size")
else:
    print("check_export: built without cairo, svg/pdf/png not checked")

# gnuplot: script and data side by side
gp = open(os.path.join(d, "out.gp")).read()
check("out.dat" in gp and "plot" in gp and "set logscale y" in gp, "gnuplot script")
dat = open(os.path.join(d, "out.dat")).read()
check(dat.count("\n\n\n") >= 2, "gnuplot data blocks")

if failures:
    print("check_export: FAILED:", *failures, sep="\n  ")
    sys.exit(1)
print("check_export: csv, json, svg, pdf, png and gnuplot outputs read back")
