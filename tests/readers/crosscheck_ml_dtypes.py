#!/usr/bin/env python3
"""Cross-checks frontier's F8/BF16/F16 decoding against ml_dtypes (an
independent implementation) on every bit pattern. Skips (77) without it."""
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

test_readers, inputs = sys.argv[1], sys.argv[2]
cases = [("e4m3_all", ml_dtypes.float8_e4m3fn, np.arange(256, dtype=np.uint8)),
         ("e5m2_all", ml_dtypes.float8_e5m2, np.arange(256, dtype=np.uint8)),
         ("bf16_all", ml_dtypes.bfloat16, np.arange(65536, dtype=np.uint32).astype(np.uint16)),
         ("f16_all", np.float16, np.arange(65536, dtype=np.uint32).astype(np.uint16))]
failures = 0
for name, dtype, patterns in cases:
    out = subprocess.run([test_readers, "--dump", inputs + "/dtypes.safetensors", name],
                         check=True, capture_output=True, text=True).stdout.split()
    got = np.array([int(w, 16) for w in out], dtype=np.uint32).view(np.float32)
    want = patterns.view(dtype).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    if not same.all():
        i = int(np.argmin(same))
        print("FAIL %s: pattern %#x -> %r, ml_dtypes says %r" % (name, int(patterns[i]), got[i], want[i]))
        failures += 1
    else:
        print("%s: %d patterns agree with ml_dtypes" % (name, len(patterns)))
sys.exit(1 if failures else 0)
