#!/usr/bin/env python3
"""catches_violation.py ROOT: check_layers.py catches what it must and only
that. Copies the sources of ROOT's layers to a temporary folder and, on a
fresh copy for each case below, appends one #include of a header of one
layer to a source of another; check_layers.py must then exit 1 naming
exactly that line, or, for an include the layers allow, not name it.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_layers.py")
LAYERS = ("include", "core", "quantizers", "kernels", "frontier")
SUFFIXES = (".c", ".h", ".cu", ".cuh")

# (layer of the including source, layer of the included header, caught?)
CASES = (
    ("kernels", "frontier", True),
    ("quantizers", "frontier", True),
    ("quantizers", "kernels", True),
    ("core", "quantizers", True),
    ("core", "frontier", True),
    ("include", "core", True),
    ("kernels", "quantizers", False),
    ("frontier", "kernels", False),
    ("core", "include", False),
)
# The header to include from each layer: the example where it exists.
PREFERRED = {"frontier": "frontier/exec/executor.h", "include": "include/frontier/plugin.h"}


def copy_sources(root, dest):
    for layer in LAYERS:
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in files:
                if name.endswith(SUFFIXES):
                    src = os.path.join(folder, name)
                    out = os.path.join(dest, os.path.relpath(src, root))
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    shutil.copyfile(src, out)


def first_file(tree, layer, suffixes):
    for folder, dirs, files in sorted(os.walk(os.path.join(tree, layer))):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(suffixes):
                return os.path.relpath(os.path.join(folder, name), tree).replace(os.sep, "/")
    return None


def header_of(tree, layer):
    """A header of `layer` and the spelling that includes it from anywhere."""
    rel = PREFERRED.get(layer)
    if not rel or not os.path.isfile(os.path.join(tree, rel)):
        rel = first_file(tree, layer, (".h", ".cuh"))
    if rel is None:
        return None, None
    # include/ is on the include path: its headers are spelled without it
    return rel, rel[len("include/"):] if rel.startswith("include/") else rel


def plant(path, line):
    """Appends `line` to the file at path; returns its line number."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text += "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + line + "\n")
    return text.count("\n") + 1


def run_case(base, work, source_layer, header_layer, caught):
    tree = os.path.join(work, "%s-%s" % (source_layer, header_layer))
    shutil.copytree(base, tree)
    source = (first_file(tree, source_layer, (".c", ".cu")) if source_layer != "include"
              else first_file(tree, source_layer, (".h",)))
    _, spelled = header_of(tree, header_layer)
    if source is None or spelled is None:
        print("FAIL: no %s source or %s header in the copy" % (source_layer, header_layer))
        return False
    line = plant(os.path.join(tree, source), '#include "%s"' % spelled)
    expected = "%s:%d: %s includes %s (%s)" % (source, line, source_layer, spelled, header_layer)
    run = subprocess.run([sys.executable, CHECKER, tree], capture_output=True, text=True)
    named = [v for v in run.stdout.splitlines() if v.startswith("%s:%d:" % (source, line))]
    if caught:
        ok = run.returncode == 1 and named == [expected]
        print("%s: planted %s; check_layers exits %d%s" %
              ("ok" if ok else "FAIL", expected, run.returncode,
               ", naming it" if named == [expected] else ", not naming it: " + repr(named)))
    else:
        ok = not named and run.returncode in (0, 1)
        print("%s: planted %s:%d: %s (allowed)%s" %
              ("ok" if ok else "FAIL", source, line, spelled, "" if ok else ": " + repr(named)))
    if not ok and run.stderr:
        print(run.stderr, end="")
    return ok


def main(argv):
    if len(argv) != 2:
        print("usage: catches_violation.py ROOT", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="frontier-layers-") as work:
        base = os.path.join(work, "base")
        copy_sources(os.path.abspath(argv[1]), base)
        results = [run_case(base, work, *case) for case in CASES]
    if not all(results):
        print("catches_violation: %d of %d cases failed" % (results.count(False), len(results)))
        return 1
    print("catches_violation: all %d cases behave" % len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
