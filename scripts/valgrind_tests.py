#!/usr/bin/env python3
"""valgrind_tests.py BUILD REGEX [JOBS]: runs the CTest tests of BUILD whose
names match REGEX under valgrind memcheck, each with the command, working
folder and environment CTest gives it (ctest --show-only=json-v1). Only tests
whose command is a program built in BUILD are run (a script would make
valgrind trace bash or python). Fixtures must exist already (run ctest
first). Exit 1 when a test fails or valgrind reports any error; prints each
test's time and the total."""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

build, pattern = os.path.abspath(sys.argv[1]), re.compile(sys.argv[2])
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
info = json.loads(subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                                 check=True, capture_output=True, text=True).stdout)
VALGRIND = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
            "--track-origins=yes", "--quiet",
            "--suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "tests", "fuzz", "valgrind.supp")]
selected = []
for t in info["tests"]:
    cmd = t.get("command")
    if not pattern.search(t["name"]):
        continue
    if not cmd:
        print("valgrind: %s left out (not built)" % t["name"])
        continue
    if not os.path.realpath(cmd[0]).startswith(build + os.sep):
        print("valgrind: %s left out (its command %s is not a program built here)" % (t["name"], cmd[0]))
        continue
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    env = dict(os.environ)
    for kv in props.get("ENVIRONMENT", []):
        k, _, v = kv.partition("=")
        if not k.endswith("SAN_OPTIONS"):
            env[k] = v
    selected.append((t["name"], cmd, props.get("WORKING_DIRECTORY", build), env))
if not selected:
    sys.exit("valgrind: no test matches '%s' in %s" % (sys.argv[2], build))


def run(test):
    name, cmd, cwd, env = test
    t0 = time.time()
    p = subprocess.run(VALGRIND + cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return name, p.returncode, time.time() - t0, p.stdout + p.stderr


t_all, failed = time.time(), []
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    for name, rc, secs, out in pool.map(run, selected):
        state = "ok" if rc == 0 else ("memcheck errors" if rc == 99 else "failed (exit %d)" % rc)
        print("valgrind: %-28s %-16s %6.1f s" % (name, state, secs))
        if rc != 0:
            failed.append(name)
            print(out[-6000:])
print("valgrind: %d tests, %d failed, %.0f s" % (len(selected), len(failed), time.time() - t_all))
sys.exit(1 if failed else 0)
