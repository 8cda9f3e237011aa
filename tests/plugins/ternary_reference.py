"""The ternary example plugin against a reference written from its README.

For every configuration (ternary-tensor, ternary-row, ternary-g64) and a set
of shapes (short last groups, partial packed bytes, several thread chunks,
all-zero rows) the plugin, called through the host's checked calls by
plugin_driver, must give exactly the reference reconstruction and size.
A tensor of constant groups drives ternary-g64's fp16 alpha through ties,
subnormals and saturation, checked against numpy's float16 rounding.

    python3 ternary_reference.py PLUGIN_DRIVER LIBTERNARY.so
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

THRESHOLD_RATIO = 0.7  # TWN, Li et al. 2016, eq. 6
FP16_MAX = 65504.0


def alpha_of(above, n_above, alpha_bits):
    """Mean |w| above the threshold, rounded to fp32, then to fp16 (saturating)."""
    if n_above == 0:
        return 0.0
    alpha = float(np.float32(above / n_above))
    if alpha_bits == 16:
        alpha = FP16_MAX if alpha >= FP16_MAX else float(np.float16(alpha))
    return alpha


def sums(values, delta):
    """Sequential double sums, in element order, as the definition says."""
    above, n_above = 0.0, 0
    for v in values:
        if abs(v) > delta:
            above += abs(v)
            n_above += 1
    return above, n_above


def reconstruct(values, delta, alpha):
    return [(-alpha if v < 0 else alpha) if abs(v) > delta else 0.0 for v in values]


def quantize_group(values, alpha_bits):
    s = 0.0
    for v in values:
        s += abs(v)
    delta = THRESHOLD_RATIO * (s / len(values))
    above, n_above = sums(values, delta)
    return reconstruct(values, delta, alpha_of(above, n_above, alpha_bits))


def reference(w, config):
    rows, cols = w.shape
    lists = [[float(x) for x in row] for row in w]
    out = []
    if config == "ternary-tensor":
        # per-row partial sums, added in row order
        total = 0.0
        for row in lists:
            s = 0.0
            for v in row:
                s += abs(v)
            total += s
        delta = THRESHOLD_RATIO * (total / float(rows * cols))
        above, n_above = 0.0, 0
        for row in lists:
            a, n = sums(row, delta)
            above += a
            n_above += n
        alpha = alpha_of(above, n_above, 32)
        out = [reconstruct(row, delta, alpha) for row in lists]
        bits = rows * 8 * math.ceil(cols / 5) + 32
    elif config == "ternary-row":
        out = [quantize_group(row, 32) for row in lists]
        bits = rows * (8 * math.ceil(cols / 5) + 32)
    else:
        for row in lists:
            q = []
            for c in range(0, cols, 64):
                q += quantize_group(row[c:c + 64], 16)
            out.append(q)
        bits = rows * (8 * math.ceil(cols / 5) + 16 * math.ceil(cols / 64))
    return np.array(out, dtype=np.float32), bits


def run_plugin(driver, plugin, config, w, tmp):
    rows, cols = w.shape
    src, dst = os.path.join(tmp, "w.f32"), os.path.join(tmp, "w_hat.f32")
    w.astype("<f4").tofile(src)
    res = subprocess.run([driver, "--no-builtins", "--plugin", plugin, "run", config,
                          str(rows), str(cols), src, dst],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit("%s on %dx%d: driver exited %d: %s" % (config, rows, cols, res.returncode,
                                                        res.stderr.strip()))
    bits = int(res.stdout.split()[1])
    return np.fromfile(dst, dtype="<f4").reshape(rows, cols), bits


def fp16_edge_tensor():
    """One row of constant 64-element groups whose alpha is the group's value."""
    one = 1.0
    values = [
        one + 2.0**-11,                  # tie between 1 and 1+2^-10: to even (1)
        one + 3 * 2.0**-11,              # tie: to even (1+2^-9)
        one + 2.0**-11 + 2.0**-23,       # just above a tie: up
        2.0**-25,                        # half the smallest subnormal: tie to 0
        3 * 2.0**-25,                    # tie between 2^-24 and 2^-23: to even (2^-23)
        2.0**-25 + 2.0**-40,             # just above: 2^-24
        2.0**-26,                        # to 0
        2.0**-14 - 2.0**-26,             # just below the smallest normal
        5 * 2.0**-26,                    # subnormal, not a tie
        65504.0, 65519.0, 65520.0, 1.0e6,  # largest fp16, round down, saturate
        -0.7, -3.0e-5, 0.1, 1.0 / 3.0,
    ]
    w = np.concatenate([np.full(64, v, dtype=np.float32) for v in values])
    return w.reshape(1, -1), values


def main():
    driver, plugin = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(20240611)
    cases = []
    for rows, cols in [(5, 200), (1, 7), (3, 64), (6, 1), (40, 4100)]:
        w = rng.standard_normal((rows, cols)).astype(np.float32)
        w *= np.float32(0.02)
        cases.append(w)
    w = rng.standard_normal((4, 130)).astype(np.float32)
    w[1, :] = 0.0                      # an all-zero row: its group(s) reconstruct to 0
    w[2, :] = 0.0
    w[2, 77] = -3.5                    # one weight alone above the threshold
    w[3, 64:128] = 0.0                 # an all-zero 64-group
    cases.append(w)
    edge, edge_values = fp16_edge_tensor()
    cases.append(edge)

    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for w in cases:
            for config in ("ternary-tensor", "ternary-row", "ternary-g64"):
                got, bits = run_plugin(driver, plugin, config, w, tmp)
                want, want_bits = reference(w, config)
                if bits != want_bits:
                    sys.exit("%s on %s: size %d bits, reference %d" % (config, w.shape, bits,
                                                                       want_bits))
                if not np.array_equal(got, want):
                    bad = np.argwhere(got != want)[0]
                    sys.exit("%s on %s: element %s is %r, reference %r" % (
                        config, w.shape, tuple(int(i) for i in bad), float(got[tuple(bad)]),
                        float(want[tuple(bad)])))
                checked += 1
        # the fp16 alphas themselves, independently of the reference above
        got, _ = run_plugin(driver, plugin, "ternary-g64", edge, tmp)
        for k, v in enumerate(edge_values):
            f32 = float(np.float32(v))
            want = math.copysign(min(FP16_MAX, float(np.float16(abs(f32)))) if abs(f32) < 65520
                                 else FP16_MAX, f32)
            if float(got[0, 64 * k]) != want:
                sys.exit("ternary-g64: alpha of a constant group %r is %r, fp16 says %r" % (
                    v, float(got[0, 64 * k]), want))
    print("ternary plugin: %d (shape, configuration) cases match the reference" % checked)


if __name__ == "__main__":
    main()
