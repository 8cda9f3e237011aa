#!/usr/bin/env python3
"""The sensitivity fit of examples/calibration/capture.py without torch:
fit_slope_through_origin is taken out of the script's source (ast) and run
on synthetic responses. A quadratic response KL = alpha r^2 gives back alpha
with residual 0; noise gives a residual of its size; a saturating response
is flagged by a large residual."""
import ast
import os
import sys

import numpy as np

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "calibration", "capture.py")
tree = ast.parse(open(SRC, encoding="utf-8").read())
fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "fit_slope_through_origin")
ns = {"np": np}
exec(compile(ast.Module(body=[fn], type_ignores=[]), SRC, "exec"), ns)
fit = ns["fit_slope_through_origin"]

fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL:", what)
        fails += 1


levels = np.array([0.025, 0.05, 0.1])
r2 = levels ** 2
for alpha in (0.0, 0.7, 3.25, 195.0):
    a, res = fit(r2, alpha * r2)
    check(abs(a - alpha) <= 1e-12 * max(1, alpha), f"slope {a} != {alpha}")
    check(res < 1e-12, f"residual {res} of an exact quadratic")
rng = np.random.default_rng(1)
y = 5.0 * r2 * (1 + 0.01 * rng.standard_normal(3))
a, res = fit(r2, y)
check(abs(a - 5.0) < 0.1 and 1e-4 < res < 0.03, f"1% noise: slope {a}, residual {res}")
y = 1 - np.exp(-200 * r2)         # saturates well before the largest level
a, res = fit(r2, y)
check(res > 0.05, f"saturating response: residual {res} should be large")
check(fit([0.0, 0.0], [0.0, 0.0]) == (0.0, 0.0), "all zero")
print("test_sensitivity_fit:", "all checks passed" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
