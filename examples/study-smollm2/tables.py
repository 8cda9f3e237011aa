#!/usr/bin/env python3
"""The SmolLM2 study's markdown tables (run.sh), one per engine and format.

usage: tables.py gguf RESULTS.tsv INFEASIBLE.tsv      -> results.md
       tables.py hf RESULTS.tsv MEASURED-HF.tsv       -> results-hf.md
       tables.py hf-formats HF-RESULTS.tsv MEASURED.tsv -> results-hf-formats.md

RESULTS.tsv: budget, candidate, recipe, bits_per_weight (and llama.cpp's
measurement for gguf and hf); a MEASURED file: hf_kld.py's lines (name,
mean_kld, kld_stderr, ppl, ppl_reference, same_top_pct, positions). In each
budget the lowest KLD among the rows within the budget is in bold.
"""
import csv
import sys


def measured(path):
    return {l.split("\t")[0]: l.rstrip("\n").split("\t")[1:] for l in open(path) if l.strip()}


def budgets(rows, extra=()):
    return sorted(set(extra) | {r["budget"] for r in rows}, key=float)


def within(group, budget):
    return [r for r in group if float(r["bits_per_weight"]) <= float(budget) + 1e-9]


def bold_if(text, value, best, fits):
    return f"**{text}**" if value == best and fits else text


def gguf(rows, infeasible):
    none = dict(line.rstrip("\n").split("\t") for line in open(infeasible) if line.strip())
    print("| budget | candidate | recipe | bits/w | mean KLD (nats) | PPL | same top |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for budget in budgets(rows, none):
        if budget in none:
            print(f"| {budget} | (none) | {none[budget]} | | | | |")
            continue
        group = [r for r in rows if r["budget"] == budget]
        fits = within(group, budget)
        best = min(abs(float(r["mean_kld"])) for r in fits)
        for r in group:
            k = abs(float(r["mean_kld"]))  # llama-perplexity prints -0 for identical files
            kld = bold_if(f"{k:.4f} ± {float(r['kld_stderr']):.2g}", k, best, r in fits)
            print(f"| {budget} | {r['candidate']} | {r['recipe']} | {float(r['bits_per_weight']):.4f} | {kld} "
                  f"| {float(r['ppl']):.3f} | {float(r['same_top_pct']):.2f}% |")
    print()
    print(f"release PPL on the evaluation text: {rows[0]['ppl_release']}; {rows[0]['positions']} scored positions")


def measured_groups(rows, m, all_fit):
    """(budget, row, its measured fields, its KLD cell) for every measured row,
    budget by budget; the lowest KLD among the rows within the budget in bold
    (all_fit: every row counts as within it)."""
    def kld(r):  # the GGUF table compares signed values (as it always has), the formats' |KLD|
        v = float(m[r["recipe"]][0])
        return abs(v) if all_fit else v
    for budget in budgets(rows):
        group = [r for r in rows if r["budget"] == budget and r["recipe"] in m]
        fits = group if all_fit else within(group, budget)
        best = min(kld(r) for r in fits)
        for r in group:
            k, e = m[r["recipe"]][:2]
            yield budget, r, m[r["recipe"]], bold_if(f"{abs(float(k)):.4f} ± {float(e):.2g}", kld(r), best,
                                                     r in fits)


def hf(rows, hf_path):
    m = measured(hf_path)
    print("| budget | candidate | recipe | bits/w | KLD llama.cpp | KLD transformers | same top llama.cpp | same top transformers |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for budget, r, (k, e, ppl, ppl0, same, n), kt in measured_groups(rows, m, False):
        print(f"| {budget} | {r['candidate']} | {r['recipe']} | {float(r['bits_per_weight']):.4f} "
              f"| {abs(float(r['mean_kld'])):.4f} | {kt} | {float(r['same_top_pct']):.2f}% | {float(same):.2f}% |")
    first = next(iter(m.values()))
    print()
    print(f"transformers: reference PPL {first[3]}, {first[5]} scored positions")


def hf_formats(rows, hf_path):
    m = measured(hf_path)
    print("| budget | candidate | recipe | bits/w | mean KLD (nats) | PPL | same top |")
    print("|---:|---|---|---:|---:|---:|---:|")
    # every row is within its budget (the candidates are chosen so)
    for budget, r, (k, e, ppl, ppl0, same, n), kt in measured_groups(rows, m, True):
        print(f"| {budget} | {r['candidate']} | {r['recipe']} | {float(r['bits_per_weight']):.4f} | {kt} "
              f"| {float(ppl):.3f} | {float(same):.2f}% |")
    first = next(iter(m.values()))
    print()
    print(f"transformers: reference (the release in float32) PPL {first[3]}, {first[5]} scored positions")


def main():
    modes = {"gguf": gguf, "hf": hf, "hf-formats": hf_formats}
    if len(sys.argv) != 4 or sys.argv[1] not in modes:
        sys.exit(__doc__.split("\n\n")[1])
    rows = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
    modes[sys.argv[1]](rows, sys.argv[3])


if __name__ == "__main__":
    main()
