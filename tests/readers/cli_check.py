"""What the command-line tests of this folder share: a failure counter,
`ok` lines, and running the frontier binary with an expected exit code."""
import subprocess

failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL: {msg}", flush=True)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def run(*args, expect=0):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != expect:
        fail(f"{' '.join(map(str, args[1:]))}: exit {r.returncode}, expected {expect}\n"
             f"{r.stderr}")
    return r
