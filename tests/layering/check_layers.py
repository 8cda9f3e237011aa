#!/usr/bin/env python3
"""check_layers.py [ROOT]: the #include "..." lines of the repository's own
sources (.c .h .cu .cuh under include/ core/ quantizers/ kernels/ frontier/)
against the layers of the design (DESIGN.md, "Layers"), each using only
those below it:

  include/frontier  the plugin ABI: nothing of the repository
  core/             core/ and include/
  quantizers/       quantizers/, core/ and include/
  kernels/          kernels/, quantizers/ (the FR_HD rounding headers shared
                    with the CPU), core/ and include/
  frontier/         anything

An include is resolved as the compiler finds it: relative to the including
file's folder, then on the build's include path (the repository root,
include/, core/). One that resolves nowhere in the tree (a generated or a
system header) is not checked.

Prints one line per violation, `file:line: <layer> includes <path> (<target
layer>)`, and exits 1 when there is any, 0 when there is none, 2 when ROOT
(default: the repository holding this script) has none of the layers.
"""
import os
import re
import sys

LAYERS = ("include", "core", "quantizers", "kernels", "frontier")
ALLOWED = {
    "include": {"include"},
    "core": {"core", "include"},
    "quantizers": {"quantizers", "core", "include"},
    "kernels": {"kernels", "quantizers", "core", "include"},
    "frontier": set(LAYERS),
}
SEARCH_PATH = ("", "include", "core")  # after the including file's folder
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(relpath):
    """The layer a path relative to the root lies in, or its top folder."""
    top = relpath.split("/", 1)[0]
    return top if "/" in relpath else "(root)"


def resolve(root, including_dir, target):
    """The path, relative to root, that `#include "target"` names, or None."""
    for base in (including_dir,) + tuple(os.path.join(root, d) for d in SEARCH_PATH):
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(candidate):
            rel = os.path.relpath(candidate, root)
            return None if rel.startswith("..") else rel.replace(os.sep, "/")
    return None


def sources(root):
    for layer in LAYERS:
        top = os.path.join(root, layer)
        for folder, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield layer, os.path.join(folder, name)


def violations(root):
    for layer, path in sources(root):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, os.path.dirname(path), m.group(1))
                if target is None:
                    continue
                target_layer = layer_of(target)
                if target_layer not in ALLOWED[layer]:
                    yield "%s:%d: %s includes %s (%s)" % (rel, number, layer, m.group(1),
                                                          target_layer)


def main(argv):
    if len(argv) > 2:
        print("usage: check_layers.py [ROOT]", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(here, "..", ".."))
    if not any(os.path.isdir(os.path.join(root, layer)) for layer in LAYERS):
        print("check_layers: '%s' holds none of %s" % (root, ", ".join(LAYERS)), file=sys.stderr)
        return 2
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print("check_layers: %d include(s) against the layers" % len(found), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
