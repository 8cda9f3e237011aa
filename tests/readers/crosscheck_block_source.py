#!/usr/bin/env python3
"""frontier's reading of GGUF tensors released in a ggml block type
(docs/quantized-sources.md) against gguf-py (PyPI `gguf`, numpy only):

- test_block_source writes its fixture (one tensor of every type frontier
  decodes: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, Q2_K..Q6_K, IQ4_NL,
  IQ4_XS, and a Q4_1 expert stack) and dumps what fr_block_source_open and
  fr_tensor_load_f32 read for each block tensor;
- gguf-py's GGUFReader opens the fixture, and its quants.dequantize of each
  tensor equals frontier's values bit for bit (NaN never arises: the
  fixture's scales are finite);
- every type frontier decodes is covered (a type missing from the fixture
  fails).

Exits 77 (skipped) without gguf-py or numpy.

usage: crosscheck_block_source.py TEST_BLOCK_SOURCE WORK_DIR
"""
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as T
except ImportError as e:
    print(f"SKIP: gguf-py is not installed ({e}); pip install gguf", flush=True)
    sys.exit(77)

DECODED = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K,
           T.Q5_K, T.Q6_K, T.IQ4_NL, T.IQ4_XS}


def main():
    test, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    # the fixture (the C test's own checks run too; their verdict is theirs)
    subprocess.run([test, str(work)], check=False, stdout=subprocess.DEVNULL)
    fixture = work / "blocks.gguf"
    dump = work / "dump"
    subprocess.run([test, "--dump", str(fixture), str(dump)], check=True)
    reader = gguf.GGUFReader(str(fixture))
    failures, seen = 0, set()
    for t in reader.tensors:
        if t.tensor_type not in DECODED:
            continue
        ours = np.fromfile(dump / f"{t.name}.f32", dtype=np.float32)
        theirs = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
        theirs = np.asarray(theirs, dtype=np.float32).reshape(-1)
        if ours.shape != theirs.shape or not np.array_equal(ours.view(np.uint32),
                                                            theirs.view(np.uint32)):
            diff = np.nonzero(ours.view(np.uint32) != theirs.view(np.uint32))[0] \
                if ours.shape == theirs.shape else []
            at = int(diff[0]) if len(diff) else -1
            print(f"FAIL: {t.name} ({t.tensor_type.name}): frontier's values differ from "
                  f"gguf-py's dequantize ({len(diff)} elements; first at {at}: "
                  f"{ours[at] if at >= 0 else '-'} vs {theirs[at] if at >= 0 else '-'})")
            failures += 1
        else:
            print(f"ok: {t.name} ({t.tensor_type.name}, {ours.size} values) bit for bit")
        seen.add(t.tensor_type)
    for missing in sorted(DECODED - seen, key=lambda x: x.value):
        print(f"FAIL: the fixture has no {missing.name} tensor")
        failures += 1
    if failures:
        print(f"crosscheck_block_source: {failures} failure(s)")
        return 1
    print(f"crosscheck_block_source: all {len(seen)} types equal gguf-py's dequantize "
          f"(gguf {getattr(gguf, '__version__', '?')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
