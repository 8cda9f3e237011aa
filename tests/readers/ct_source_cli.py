#!/usr/bin/env python3
"""The commands on a compressed-tensors release (docs/quantized-sources.md,
"compressed-tensors").

The releases are made by frontier itself (`frontier quantize --format
compressed-tensors`): data/tiny-moe in nvfp4 with the attention left bf16
(3-D expert stacks, per-expert 2-D tensors, the router), and
data/stories260K with only the attention in int4-g32-asym. On each:

- inspect: one row per logical weight, no member (`*_packed`, `*_scale`,
  ...) listed; --json's source_format and stored_bits (all members' bytes
  x 8, read here from the safetensors header);
- sweep: /tensors source_format and stored_bits as inspect says, no member
  measured; one `keep` row per quantized tensor (its stored bits, rel_err 0)
  and none for the float ones; nvfp4 on the nvfp4 release gives back the
  release (rel_err 0); --resume adds nothing;
- a compressed-tensors release that lies (a member missing) is exit 4
  naming the file and the tensor;
- with the emulated-device CLI (FRONTIER_EMU, optional 4th argument): a
  --device cuda sweep runs the folded tensors on the device (decoded to
  float32 on the host) with the CPU's rows (rel_err within 1e-7).

Only numpy and h5py are needed; exits 77 without them.

usage: ct_source_cli.py FRONTIER DATA_DIR WORK_DIR [FRONTIER_EMU]
"""
import json
import shutil
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cli_check  # noqa: E402
from cli_check import fail, ok, run  # noqa: E402

try:
    import h5py
    import numpy as np  # noqa: F401  (h5py needs it)
except ImportError as e:
    print(f"SKIP: numpy and h5py are needed ({e})", flush=True)
    sys.exit(77)

MEMBERS = ("_packed", "_scale", "_global_scale", "_zero_point", "_g_idx", "_shape")


def header(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", raw, 0)
    h = json.loads(raw[8:8 + n])
    h.pop("__metadata__", None)
    return h


def logical(name):
    for s in MEMBERS:
        if name.endswith(s) and name[:-len(s)].endswith(("weight", "_proj")):
            return name[:-len(s)]
    return None


def expected_bits(release):
    """{logical weight: all its members' bytes x 8} from the header."""
    h = header(release / "model.safetensors")
    bits = {}
    for name, e in h.items():
        lg = logical(name)
        if lg is None and e["dtype"].startswith("F8") and name + "_scale" in h:
            lg = name
        if lg is not None:
            bits[lg] = bits.get(lg, 0) + 8 * (e["data_offsets"][1] - e["data_offsets"][0])
    return bits


def check_release(frontier, release, label, quantizers, own):
    bits = expected_bits(release)
    r = run(frontier, "inspect", release)
    for line in r.stdout.splitlines():
        name = line.split(" ")[0]
        if logical(name) and name not in bits:
            fail(f"{label}: inspect lists member '{name}'")
    js = json.loads(run(frontier, "inspect", release, "--json").stdout)
    listed = {t["name"]: t for t in js["tensors"]}
    for lg, b in bits.items():
        t = listed.get(lg)
        if t is None:
            fail(f"{label}: '{lg}' not listed")
        elif t["stored_bits"] != b or not t["source_format"]:
            fail(f"{label}: '{lg}' stored_bits {t['stored_bits']} (want {b}), "
                 f"format '{t['source_format']}'")
    for name, t in listed.items():
        if name not in bits and t["source_format"]:
            fail(f"{label}: float tensor '{name}' has format '{t['source_format']}'")
    out = release.parent / f"{label}.h5"
    run(frontier, "sweep", release, "--quantizers", quantizers, "-o", out, "--device", "cpu",
        "--quiet")
    with h5py.File(out) as f:
        tensors = f["tensors"][:]
        configs = [c["name"].decode() for c in f["configs"][:]]
        results = f["results"][:]
    keep = configs.index("keep") if "keep" in configs else -1
    if keep < 0:
        fail(f"{label}: no keep configuration")
    by_id = {int(t["tensor_id"]): t for t in tensors}
    keeps = [x for x in results if x["config_id"] == keep]
    for t in tensors:
        name = t["name"].decode()
        fmt = t["source_format"].decode()
        if logical(name) and name not in bits:
            fail(f"{label}: member '{name}' measured")
        want = listed[name]["source_format"]
        if fmt != want or (fmt and int(t["stored_bits"]) != bits[name]):
            fail(f"{label}: /tensors '{name}' format '{fmt}' bits {t['stored_bits']}, "
                 f"inspect '{want}' {bits.get(name)}")
    keep_names = sorted(by_id[int(x["tensor_id"])]["name"].decode() for x in keeps)
    if keep_names != sorted(bits):
        fail(f"{label}: keep rows on {keep_names}, expected {sorted(bits)}")
    for x in keeps:
        t = by_id[int(x["tensor_id"])]
        if x["rel_err"] != 0 or int(x["total_bits"]) != int(t["stored_bits"]):
            fail(f"{label}: keep row of '{t['name'].decode()}': rel_err {x['rel_err']}, "
                 f"bits {x['total_bits']}")
    if own:
        oid = configs.index(own)
        for x in results:
            t = by_id[int(x["tensor_id"])]
            if x["config_id"] == oid and t["name"].decode() in bits and x["rel_err"] != 0:
                fail(f"{label}: {own} on '{t['name'].decode()}' rel_err {x['rel_err']}, not 0")
    run(frontier, "sweep", release, "--quantizers", quantizers, "-o", out, "--device", "cpu",
        "--resume", "--quiet")
    with h5py.File(out) as f:
        again = [x for x in f["results"][:] if x["config_id"] == keep]
    if len(again) != len(keeps):
        fail(f"{label}: --resume: {len(again)} keep rows, was {len(keeps)}")
    print(f"ok: {label}: {len(bits)} folded tensors, {len(keeps)} keep rows", flush=True)


def check_device(emu, release, work):
    """--device cuda on the emulated device: folded tensors on cuda:0, rows as the CPU's."""
    rows = {}
    for dev in ("cpu", "cuda"):
        out = work / f"device-{dev}.h5"
        run(emu, "sweep", release, "--quantizers", "nvfp4,int4-g32-sym", "-o", out,
            "--device", dev, "--quiet")
        with h5py.File(out) as f:
            fmt = {int(t["tensor_id"]): t["source_format"].decode() for t in f["tensors"][:]}
            rows[dev] = {(int(x["tensor_id"]), int(x["config_id"])):
                         (float(x["rel_err"]), x["device"].decode(), fmt[int(x["tensor_id"])])
                         for x in f["results"][:]}
    on_device = 0
    for k, (err, device, fmt) in rows["cuda"].items():
        ref = rows["cpu"][k][0]
        if abs(err - ref) > 1e-7 * max(abs(ref), 1e-30):
            fail(f"--device cuda: row {k} rel_err {err}, cpu {ref}")
        if fmt and device:
            on_device += device == "cuda:0"
            if device != "cuda:0":
                fail(f"--device cuda: folded tensor row {k} ran on '{device}'")
    ok(f"--device cuda (emulated): {on_device} rows of folded tensors on the device, "
       f"rows as the CPU's")


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    frontier, data, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    moe = work / "moe-nvfp4"
    run(frontier, "quantize", data / "tiny-moe", "--config", "nvfp4", "--format",
        "compressed-tensors", "--exclude", "self_attn", "--no-fused-global-scale", "-o", moe)
    check_release(frontier, moe, "moe-nvfp4", "nvfp4,int4-g32-sym", "nvfp4")
    # quantize --recipe on the release: kept weights are their members byte for byte
    recipe = {"model.layers.0.mlp.experts.gate_up_proj": "keep",
              "model.layers.1.mlp.experts.0.up_proj.weight": "keep",
              "model.layers.0.self_attn.q_proj.weight": "int4-g32-sym",
              "model.layers.1.mlp.gate.weight": "nvfp4"}
    (work / "recipe.json").write_text(json.dumps({"format": "frontier-recipe", "recipe": recipe}))
    out = work / "moe-requantized"
    run(frontier, "quantize", moe, "--recipe", work / "recipe.json", "-o", out)
    rel_raw, out_raw = (moe / "model.safetensors").read_bytes(), (out / "model.safetensors").read_bytes()
    rel_h, out_h = header(moe / "model.safetensors"), header(out / "model.safetensors")

    def member_bytes(raw, h, name):
        (n,) = struct.unpack_from("<Q", raw, 0)
        b, e = h[name]["data_offsets"]
        return raw[8 + n + b:8 + n + e]

    for name in rel_h:
        lg = logical(name) or name
        if lg == "model.layers.0.self_attn.q_proj.weight":
            continue
        if name not in out_h or member_bytes(rel_raw, rel_h, name) != member_bytes(out_raw, out_h, name):
            fail(f"quantize --recipe: '{name}' not copied byte for byte")
    report = json.loads((out / "quantize_report.json").read_text())
    kept = sorted(t["name"] for t in report["tensors"] if t["config"] == "keep")
    if kept != sorted(k for k, v in recipe.items() if v == "keep"):
        fail(f"quantize --recipe: report keeps {kept}")
    groups = json.loads((out / "config.json").read_text())["quantization_config"]["config_groups"]
    fmts = sorted(g["format"] for g in groups.values())
    if fmts != ["nvfp4-pack-quantized", "nvfp4-pack-quantized", "pack-quantized"]:
        fail(f"quantize --recipe: config groups {fmts}")
    ok(f"quantize --recipe: {len(kept)} kept weights copied member by member, groups {fmts}")
    attn = work / "stories-attn-int4"
    run(frontier, "quantize", data / "stories260K", "--config", "int4-g32-asym", "--format",
        "compressed-tensors", "--include", "self_attn", "-o", attn)
    check_release(frontier, attn, "stories-attn-int4", "int4-g32-asym,fp8-e4m3-channel", None)
    if len(sys.argv) == 5:
        check_device(sys.argv[4], moe, work)
    # a member missing: exit 4 naming the file and the tensor
    bad = work / "bad"
    shutil.copytree(moe, bad)
    st = bad / "model.safetensors"
    raw = st.read_bytes()
    name = b"model.layers.1.mlp.experts.2.up_proj.weight_global_scale"
    st.write_bytes(raw.replace(name, name[:-1] + b"X"))
    r = run(frontier, "inspect", bad, expect=4)
    if "model.layers.1.mlp.experts.2.up_proj.weight" not in r.stderr or str(st) not in r.stderr:
        fail(f"bad release: '{r.stderr.strip()}' names neither the tensor nor the file")
    print(f"failures: {cli_check.failures}", flush=True)
    return 1 if cli_check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
