#!/usr/bin/env python3
"""The commands on a checkpoint released quantized (docs/quantized-sources.md).

The fixture is made by frontier itself: data/stories260K.gguf (F16
matrices) written by `frontier quantize --recipe` in every ggml type of 32
(Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4, IQ4_NL; ffn_down, 172 columns, stays
F16), as a release would ship it. On it:

- inspect: no tensor listed but not quantizable; each row's dtype and
  stored bits per weight; --json's stored_bits equal the tensor's bytes x 8;
- sweep: /tensors source_format and stored_bits; one `keep` row per block
  tensor (its stored bits, rel_err 0) and none for the F16 ones; sq_norm is
  that of the dequantized values (gguf-py's, when installed); the row of
  each tensor's own type (ggml-q4_1 on a Q4_1 tensor) has rel_err 0;
  --resume adds nothing;
- allocate: a recipe that keeps some tensors and re-quantizes others, the
  kept ones with their own llama.cpp type in the recipe and the tensor-type
  file;
- quantize --recipe: kept tensors (and those the recipe leaves out) keep
  their type and bytes; the others are written in their configuration's
  type with the rel_err the sweep measured; kept ones are in the report;
- quantize with each tensor's own type gives back the released bytes;
  --config leaves the embedding (not selected) as released;
- refusals: `keep` for a tensor the model lacks (2);
- expert stacks: data/tiny-moe.gguf released in Q8_0 and swept with
  --split-experts has a keep row per expert in /expert_results (its share
  of the stack's stored bits, rel_err 0) besides the stack's own;
  mpirun -n 2 (when installed) writes the same keep rows as one process.

GGUF files are read with the standard library (struct), so only h5py and
numpy are needed; exits 77 without them.

usage: quantized_source.py FRONTIER DATA_DIR WORK_DIR
"""
import hashlib
import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cli_check  # noqa: E402
from cli_check import fail, ok, run  # noqa: E402

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"SKIP: numpy and h5py are needed ({e})", flush=True)
    sys.exit(77)

TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
              20: "IQ4_NL", 39: "MXFP4"}
BLOCK = {"Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
         "Q8_0": (32, 34), "IQ4_NL": (32, 18), "MXFP4": (32, 17), "F16": (1, 2), "F32": (1, 4)}
# the release: per tensor kind, the configuration it was written with
RELEASE = {"attn_q": "ggml-q8_0", "attn_k": "ggml-q4_0", "attn_v": "ggml-q4_1",
           "attn_output": "ggml-q5_0", "ffn_gate": "ggml-q5_1", "ffn_up": "ggml-mxfp4"}

# the types whose encoders give back the blocks they decode to
IDEMPOTENT = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4")


def read_gguf(path):
    """{name: (type name, ne list, data bytes)} in file order (GGUF v3 by hand)."""
    raw = Path(path).read_bytes()
    pos = 4 + 4
    n_t, n_kv = struct.unpack_from("<QQ", raw, pos)
    pos += 16
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    alignment = 32

    def string(p):
        (n,) = struct.unpack_from("<Q", raw, p)
        return raw[p + 8:p + 8 + n].decode(), p + 8 + n

    def skip(p, vt):
        if vt == 8:
            return string(p)[1]
        if vt == 9:
            et, n = struct.unpack_from("<IQ", raw, p)
            p += 12
            for _ in range(n):
                p = skip(p, et)
            return p
        return p + sizes[vt]

    for _ in range(n_kv):
        key, pos = string(pos)
        (vt,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", raw, pos)
        pos = skip(pos, vt)
    infos = []
    for _ in range(n_t):
        name, pos = string(pos)
        (nd,) = struct.unpack_from("<I", raw, pos)
        ne = list(struct.unpack_from(f"<{nd}Q", raw, pos + 4))
        ty, off = struct.unpack_from("<IQ", raw, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append((name, TYPE_NAMES.get(ty, f"GGML_TYPE_{ty}"), ne, off))
    data = pos + (alignment - pos % alignment) % alignment
    out = {}
    for name, ty, ne, off in infos:
        numel = int(np.prod(ne))
        be, bb = BLOCK[ty]
        out[name] = (ty, ne, raw[data + off:data + off + numel // be * bb])
    return out


def kind(name):
    m = re.match(r"blk\.\d+\.(\w+)\.weight$", name)
    return m.group(1) if m else None


def make_release(frontier, data, work):
    recipe = {name: RELEASE[kind(name)] for name in read_gguf(data / "stories260K.gguf")
              if kind(name) in RELEASE}
    recipe["token_embd.weight"] = "ggml-q8_0"
    recipe["blk.4.ffn_up.weight"] = "ggml-iq4_nl"
    (work / "release.json").write_text(json.dumps({"format": "frontier-recipe",
                                                    "recipe": recipe}))
    out = work / "released.gguf"
    run(frontier, "quantize", data / "stories260K.gguf", "--recipe", work / "release.json",
        "-o", out, "--force")
    return out


def check_inspect(frontier, released, files):
    r = run(frontier, "inspect", released)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if last != "47 tensors, 260,032 parameters":
        fail(f"inspect's last line: {last!r}")
    row = re.compile(r"^blk\.0\.attn_v\.weight +attn_v +Q4_1 +5 +\[32, 64\] +2,048$", re.M)
    if not row.search(r.stdout):
        fail("inspect: no row 'blk.0.attn_v.weight attn_v Q4_1 5 [32, 64] 2,048'")
    if not re.search(r"^token_embd\.weight +embed +Q8_0 +8\.5 ", r.stdout, re.M):
        fail("inspect: token_embd is not Q8_0 at 8.5 bits")
    doc = json.loads(run(frontier, "inspect", "--json", released).stdout or "{}")
    bad = [t["name"] for t in doc.get("tensors", [])
           if t.get("skip_reason") or t.get("stored_bits") != 8 * len(files[t["name"]][2])]
    if bad or doc.get("n_skipped") != 0:
        fail(f"inspect --json: stored_bits or skip_reason wrong for {bad[:5]}")
    else:
        ok("inspect: 47 tensors, none skipped, stored bits of every tensor as its bytes")


def dequantized_sq_norm(path, name):
    try:
        import gguf
    except ImportError:
        return None
    for t in gguf.GGUFReader(str(path)).tensors:
        if t.name == name:
            v = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
            return float(np.sum(v * v))
    return None


def table(f, name):
    rows = f[name][...]
    return [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in zip(rows.dtype.names, r)}
            for r in rows]


def check_sweep(frontier, released, files, work):
    out = work / "run.h5"
    out.unlink(missing_ok=True)
    run(frontier, "sweep", released, "--quantizers",
        "ggml-q8_0,ggml-q4_0,ggml-q4_1,ggml-q5_0,ggml-q5_1,ggml-mxfp4,ggml-iq4_nl,int4-g32-asym",
        "--exclude", "ffn_down", "--device", "cpu", "--quiet", "-o", out)
    with h5py.File(out, "r") as f:
        tensors, configs, results = table(f, "tensors"), table(f, "configs"), table(f, "results")
    cfg = {c["config_id"]: c for c in configs}
    keep = [c for c in configs if c["name"] == "keep"]
    if len(keep) != 1 or keep[0]["family"] != "keep" or keep[0]["nominal_bits"] != 0:
        fail(f"/configs keep: {keep}")
        return out
    keep_id = keep[0]["config_id"]
    n_blocks, n_own = 0, 0
    for t in tensors:
        ty, _, data = files[t["name"]]
        block = ty not in ("F16", "F32")
        n_blocks += block
        want_fmt = ty if block else ""
        if t["source_format"] != want_fmt or t["stored_bits"] != 8 * len(data) or t["dtype"] != ty:
            fail(f"/tensors {t['name']}: source_format {t['source_format']!r}, stored_bits "
                 f"{t['stored_bits']}, dtype {t['dtype']} (stored {ty}, {8 * len(data)} bits)")
        rows = [r for r in results if r["tensor_id"] == t["tensor_id"]]
        kept = [r for r in rows if r["config_id"] == keep_id]
        if block != (len(kept) == 1) or len(kept) > 1:
            fail(f"{t['name']} ({ty}): {len(kept)} keep rows")
        for r in kept:
            if (r["total_bits"] != t["stored_bits"] or r["rel_err"] != 0 or r["sq_err"] != 0
                    or r["sqnr_db"] != np.inf or r["cosine"] != 1):
                fail(f"{t['name']}: keep row {r}")
        own = [r for r in rows if cfg[r["config_id"]]["name"] == "ggml-" + ty.lower()]
        # the types whose scale is a closed form of the block's extremes come
        # back exactly; IQ4_NL's scale search need not (docs/quantized-sources.md)
        if block and ty in IDEMPOTENT and (len(own) != 1 or own[0]["rel_err"] != 0):
            fail(f"{t['name']} ({ty}): its own type's row has rel_err "
                 f"{[r['rel_err'] for r in own]}, not 0")
        n_own += block and len(own) == 1 and own[0]["rel_err"] == 0
    ok(f"sweep: {n_blocks} block tensors, each with one keep row at its stored bits; "
       f"{n_own} of them re-quantized in their own type with rel_err 0")
    name = "blk.2.attn_v.weight"
    want = dequantized_sq_norm(released, name)
    got = next(t["sq_norm"] for t in tensors if t["name"] == name)
    if want is not None and abs(got - want) > 1e-12 * want:
        fail(f"{name}: sq_norm {got!r}, the dequantized values' {want!r}")
    elif want is not None:
        ok(f"{name}: sq_norm is that of gguf-py's dequantized values ({got:.6g})")
    n = len(results)
    run(frontier, "sweep", released, "--quantizers",
        "ggml-q8_0,ggml-q4_0,ggml-q4_1,ggml-q5_0,ggml-q5_1,ggml-mxfp4,ggml-iq4_nl,int4-g32-asym",
        "--exclude", "ffn_down", "--device", "cpu", "--quiet", "-o", out, "--resume")
    with h5py.File(out, "r") as f:
        if len(f["results"]) != n:
            fail(f"--resume changed the rows: {n} -> {len(f['results'])}")
    return out


def check_allocate_quantize(frontier, released, files, run_h5, work):
    recipe = work / "recipe.json"
    # only what GGUF stores: the ggml types and keep
    run(frontier, "allocate", run_h5, "--budget", "5", "-o", recipe, "--no-store",
        "--configs", "^(ggml-.*|keep)$")
    doc = json.loads(recipe.read_text())
    by_name = {t["name"]: t for t in doc["tensors"]}
    kept = [n for n, c in doc["recipe"].items() if c == "keep"]
    changed = [n for n, c in doc["recipe"].items() if c != "keep"]
    if not kept or not changed:
        fail(f"allocate --budget 5: {len(kept)} kept, {len(changed)} re-quantized")
    for n in kept:
        if by_name[n]["llama_cpp_type"] != files[n][0].lower():
            fail(f"recipe: kept {n} has llama_cpp_type {by_name[n]['llama_cpp_type']}")
    types_txt = recipe.with_name("recipe.tensor-types.txt").read_text()
    for n in kept[:3]:
        if f"^{re.escape(n)}$={files[n][0].lower()}" not in types_txt:
            fail(f"tensor-type file: no line keeping {n} as {files[n][0].lower()}")
    out = work / "mixed.gguf"
    run(frontier, "quantize", released, "--recipe", recipe, "-o", out, "--force")
    written = read_gguf(out)
    report = json.loads(Path(str(out) + ".report.json").read_text())
    rep = {t["name"]: t for t in report["tensors"]}
    for name, (ty, ne, data) in files.items():
        cfg = doc["recipe"].get(name)
        wty, wne, wdata = written[name]
        if cfg is None or cfg == "keep":
            if (wty, wne, wdata) != (ty, ne, data):
                fail(f"{name} ({cfg or 'not in the recipe'}): not copied as released")
            if cfg == "keep" and rep.get(name, {}).get("config") != "keep":
                fail(f"report: kept {name} missing")
        else:
            want = by_name[name]["llama_cpp_type"]
            if want and wty.lower() != want:
                fail(f"{name}: written as {wty}, the recipe says {cfg} ({want})")
            if rep[name]["rel_err"] != by_name[name]["rel_err"]:
                fail(f"{name}: report rel_err {rep[name]['rel_err']} != the sweep's "
                     f"{by_name[name]['rel_err']}")
    ok(f"allocate + quantize: {len(kept)} tensors kept byte for byte, {len(changed)} written "
       f"with the rel_err the sweep measured")


def check_own_type(frontier, released, files, work):
    own = {n: "ggml-" + ty.lower() for n, (ty, _, _) in files.items() if ty in IDEMPOTENT}
    (work / "own.json").write_text(json.dumps({"format": "frontier-recipe", "recipe": own}))
    out = work / "own.gguf"
    run(frontier, "quantize", released, "--recipe", work / "own.json", "-o", out, "--force")
    again = read_gguf(out)
    same = [n for n in own if again[n] == files[n]]
    if len(same) != len(own):
        fail(f"own type: {len(own) - len(same)} of {len(own)} tensors differ, e.g. "
             f"{[n for n in own if n not in same][:3]}")
    else:
        ok(f"every one of the {len(own)} block tensors re-quantized in its own type gives "
           f"back its released bytes")
    out = work / "q8.gguf"
    run(frontier, "quantize", released, "--config", "ggml-q8_0", "--exclude", "ffn_down", "-o", out,
        "--force")
    q8 = read_gguf(out)
    if q8["token_embd.weight"] != files["token_embd.weight"]:
        fail("--config ggml-q8_0: token_embd (not selected) changed")
    if q8["blk.0.attn_k.weight"][0] != "Q8_0":
        fail("--config ggml-q8_0: blk.0.attn_k.weight is not Q8_0")
    (work / "bad.json").write_text(json.dumps({"format": "frontier-recipe",
                                               "recipe": {"nope.weight": "keep"}}))
    r = run(frontier, "quantize", released, "--recipe", work / "bad.json", "-o",
            work / "bad.gguf", expect=2)
    if "nope.weight" not in r.stderr or (work / "bad.gguf").exists():
        fail(f"keep for a missing tensor: {r.stderr.strip()}")


def check_experts(frontier, data, work):
    moe = work / "moe-q8_0.gguf"
    run(frontier, "-q", "quantize", data / "tiny-moe.gguf", "--config", "ggml-q8_0",
        "--format", "gguf", "-o", moe)
    out = work / "moe.h5"
    run(frontier, "-q", "sweep", moe, "--quantizers", "ggml-q4_0", "--split-experts", "-o", out)
    with h5py.File(out, "r") as f:
        names = [c.decode() if isinstance(c, bytes) else c for c in f["configs"]["name"]]
        keep_id = int(f["configs"]["config_id"][names.index("keep")])
        tensors = {int(t["tensor_id"]): t for t in f["tensors"][:]}
        res = f["results"][:]
        ex = f["expert_results"][:]
    stacks = {int(r["tensor_id"]) for r in ex}
    if not stacks:
        fail("--split-experts: no /expert_results rows")
    for tid in sorted(stacks):
        t = tensors[tid]
        kept = ex[(ex["tensor_id"] == tid) & (ex["config_id"] == keep_id)]
        measured = {int(e) for e in ex[ex["tensor_id"] == tid]["expert"]}
        whole = res[(res["tensor_id"] == tid) & (res["config_id"] == keep_id)]
        if len(whole) != 1:
            fail(f"{t['name']}: {len(whole)} keep rows in /results")
            continue
        if sorted(int(e) for e in kept["expert"]) != sorted(measured):
            fail(f"{t['name']}: keep rows for experts {sorted(kept['expert'])}, "
                 f"measured {sorted(measured)}")
            continue
        if (kept["rel_err"] != 0).any() or \
                int(kept["total_bits"].sum()) != int(whole[0]["total_bits"]):
            fail(f"{t['name']}: expert keep rows {kept[['total_bits', 'rel_err']]}")
    ok(f"--split-experts: keep rows for every expert of {len(stacks)} stacks")
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("SKIP (part): no mpirun, the MPI sweep's keep rows are not checked")
        return
    out2 = work / "moe-mpi.h5"
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2", str(frontier),
                        "-q", "sweep", str(moe), "--quantizers", "ggml-q4_0", "-o", str(out2)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIP (part): mpirun -n 2 could not run here ({r.returncode}): "
              f"{r.stderr.strip()[-200:]}")
        return
    with h5py.File(out2, "r") as f:
        names = [c.decode() if isinstance(c, bytes) else c for c in f["configs"]["name"]]
        kid = int(f["configs"]["config_id"][names.index("keep")]) if "keep" in names else -1
        n_keep = int((f["results"][:]["config_id"] == kid).sum())
    n_want = int((res["config_id"] == keep_id).sum())
    if n_keep != n_want:
        fail(f"mpirun -n 2: {n_keep} keep rows, one process {n_want}")
    else:
        ok(f"mpirun -n 2: the same {n_keep} keep rows")


def main():
    frontier, data, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    released = make_release(frontier, data, work)
    if not released.exists():
        return 1
    files = read_gguf(released)
    check_inspect(frontier, released, files)
    run_h5 = check_sweep(frontier, released, files, work)
    check_allocate_quantize(frontier, released, files, run_h5, work)
    check_own_type(frontier, released, files, work)
    check_experts(frontier, data, work)
    if cli_check.failures:
        print(f"quantized_source: {cli_check.failures} failure(s)")
        return 1
    print("quantized_source: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
