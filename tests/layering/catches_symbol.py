#!/usr/bin/env python3
"""catches_symbol.py --nm NM --ar AR --planted OBJECT LAYER=ARCHIVE...:
check_layers.py --symbols catches a call up the layers and only that.

First the layers' archives as built must pass. Then, for each case below,
OBJECT (planted_call.c: calls fr_registry_init of frontier/, fr_fail of
core/ and, in a CUDA build, the table fr_kernel_gpu_entries of kernels/) is
added to a copy of one layer's archive, and check_layers.py --symbols, run
on the copy in place of the archive, must exit 1 naming exactly the
planted member's calls into higher layers, or exit 0 when the layer may
call them all.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_layers.py")
LAYERS = ("core", "quantizers", "kernels", "frontier")
# what the planted object calls, and the layer that defines each
CALLS = {"fr_registry_init": "frontier", "fr_fail": "core", "fr_kernel_gpu_entries": "kernels"}


def checker(nm, archives):
    args = [sys.executable, CHECKER, "--symbols", "--nm", nm]
    args += ["%s=%s" % (layer, path) for layer, path in archives]
    return subprocess.run(args, capture_output=True, text=True)


def run_case(nm, ar, planted, archives, layer, work):
    """Plants the object into a copy of `layer`'s archive."""
    path = dict(archives)[layer]
    copy = os.path.join(work, layer, os.path.basename(path))
    os.makedirs(os.path.dirname(copy))
    shutil.copyfile(path, copy)
    subprocess.run([ar, "q", copy, planted], check=True)
    run = checker(nm, [(l, copy if l == layer else p) for l, p in archives])
    member = os.path.basename(planted)
    prefix = "%s(%s): " % (os.path.basename(path), member)
    named = sorted(v for v in run.stdout.splitlines() if v.startswith(prefix))
    # the planted calls of a layer that does not lie below `layer`
    present = {l for l, _ in archives}
    below = set(LAYERS[:LAYERS.index(layer) + 1])
    expected = sorted("%s%s uses %s (%s)" % (prefix, layer, symbol, owner)
                      for symbol, owner in CALLS.items()
                      if owner in present and owner not in below)
    want_rc = 1 if expected else 0
    ok = run.returncode == want_rc and named == expected
    what = "; ".join(expected) if expected else "nothing (%s may call them all)" % layer
    print("%s: planted into %s: expected %s; check_layers exits %d%s" %
          ("ok" if ok else "FAIL", layer, what, run.returncode,
           "" if ok else ", naming " + repr(named)))
    if not ok and run.stderr:
        print(run.stderr, end="")
    return ok, bool(expected)


def main(argv):
    nm = ar = planted = None
    archives = []
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a in ("--nm", "--ar", "--planted") and args:
            value = args.pop(0)
            if a == "--nm":
                nm = value
            elif a == "--ar":
                ar = value
            else:
                planted = value
        elif "=" in a and a.split("=", 1)[0] in LAYERS:
            archives.append(tuple(a.split("=", 1)))
        else:
            archives = []
            break
    if not (nm and ar and planted and archives):
        print("usage: catches_symbol.py --nm NM --ar AR --planted OBJECT LAYER=ARCHIVE...",
              file=sys.stderr)
        return 2
    archives.sort(key=lambda a: LAYERS.index(a[0]))

    base = checker(nm, archives)
    ok = base.returncode == 0
    print("%s: the archives as built: check_layers exits %d" % ("ok" if ok else "FAIL",
                                                                 base.returncode))
    if not ok:
        print(base.stdout + base.stderr, end="")
        return 1
    with tempfile.TemporaryDirectory(prefix="frontier-symbols-") as work:
        results = [run_case(nm, ar, planted, archives, layer, work) for layer, _ in archives]
    failed = sum(1 for ok, _ in results if not ok)
    if failed:
        print("catches_symbol: %d of %d cases failed" % (failed, len(results)))
        return 1
    print("catches_symbol: all %d cases behave (%d caught)" %
          (len(results), sum(1 for _, caught in results if caught)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
