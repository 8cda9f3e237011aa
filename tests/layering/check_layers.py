#!/usr/bin/env python3
"""check_layers.py [ROOT]
   check_layers.py --symbols [--nm NM] LAYER=ARCHIVE...

The layers of docs/architecture.md, each using only those below it:

  include/frontier  the plugin ABI: nothing of the repository
  core/             core/ and include/
  quantizers/       quantizers/, core/ and include/
  kernels/          kernels/, quantizers/ (the FR_HD rounding headers shared
                    with the CPU), core/ and include/
  frontier/         anything

Includes (the first form): the #include "..." lines of the repository's own
sources (.c .h .cu .cuh under include/ core/ quantizers/ kernels/
frontier/). An include is resolved as the compiler finds it: relative to
the including file's folder, then on the build's include path (the
repository root, include/, core/). One that resolves nowhere in the tree (a
generated or a system header) is not checked. Prints one line per
violation, `file:line: <layer> includes <path> (<target layer>)`.

Symbols (--symbols): the static library of each layer (LAYER is core,
quantizers, kernels or frontier; the build passes its archives) read with
nm. Every undefined symbol of a layer's archive must be defined in the same
archive or a lower layer's, or come from outside the project (the system
and third-party libraries): one defined in a higher layer's archive is a
call up the layers, and an fr_ symbol that no archive defines is the
project's code outside the layers. Weak definitions (inline functions and
template instances that every C++ object may carry) do not place a symbol
in a layer. Prints one line per violation, `archive(member): <layer> uses
<symbol> (<where it is defined>)`.

Exits 1 when there is any violation, 0 when there is none, 2 on a usage
error (for includes: ROOT, default the repository holding this script, has
none of the layers).
"""
import os
import re
import subprocess
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


# nm -P types that define a symbol in a layer: text, data, read-only data,
# bss, common, absolute (not U, and not the weak w W v V)
STRONG_TYPES = set("TDRBCAGS")
PROJECT_PREFIX = "fr_"


def archive_symbols(nm, archive):
    """(defined, weak, undefined) of an archive: {symbol: member} for its
    strong global definitions, the set of its weak ones, and [(member,
    symbol)] for its undefined references."""
    run = subprocess.run([nm, "-P", "-A", "-g", archive], capture_output=True, text=True)
    if run.returncode != 0:
        raise OSError("%s %s: %s" % (nm, archive, run.stderr.strip()))
    defined, weak, undefined = {}, set(), []
    for line in run.stdout.splitlines():
        # "lib.a[member.o]: symbol TYPE [value size]"
        head, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) < 2:
            continue
        member = head[head.find("[") + 1:-1] if head.endswith("]") else head
        symbol, kind = fields[0], fields[1]
        if kind == "U":
            undefined.append((member, symbol))
        elif kind in STRONG_TYPES:
            defined.setdefault(symbol, member)
        else:
            weak.add(symbol)
    return defined, weak, undefined


def symbol_violations(nm, archives):
    """archives: [(layer, path)], lowest layer first."""
    tables = [(layer, path) + archive_symbols(nm, path) for layer, path in archives]
    for layer, path, defined, _, undefined in tables:
        name = os.path.basename(path)
        for member, symbol in undefined:
            owners = [other for other, _, odefined, _, _ in tables if symbol in odefined]
            if symbol in defined or any(o in ALLOWED[layer] for o in owners):
                continue
            if owners:
                yield "%s(%s): %s uses %s (%s)" % (name, member, layer, symbol, ", ".join(owners))
            elif symbol.startswith(PROJECT_PREFIX) and not any(symbol in oweak
                                                               for _, _, _, oweak, _ in tables):
                yield "%s(%s): %s uses %s (defined in no layer's archive)" % (name, member,
                                                                              layer, symbol)


def main_symbols(argv):
    nm, archives = "nm", []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--nm" and args:
            nm = args.pop(0)
        elif "=" in a and a.split("=", 1)[0] in LAYERS[1:]:
            layer, path = a.split("=", 1)
            archives.append((layer, path))
        else:
            print("check_layers: unexpected argument '%s'" % a, file=sys.stderr)
            return 2
    if not archives or len({l for l, _ in archives}) != len(archives):
        print("usage: check_layers.py --symbols [--nm NM] LAYER=ARCHIVE... (each layer once)",
              file=sys.stderr)
        return 2
    archives.sort(key=lambda a: LAYERS.index(a[0]))
    try:
        found = list(symbol_violations(nm, archives))
    except OSError as e:
        print("check_layers: %s" % e, file=sys.stderr)
        return 2
    for v in found:
        print(v)
    if found:
        print("check_layers: %d reference(s) against the layers" % len(found), file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--symbols":
        return main_symbols(argv[2:])
    if len(argv) > 2:
        print("usage: check_layers.py [ROOT] | --symbols [--nm NM] LAYER=ARCHIVE...",
              file=sys.stderr)
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
