#!/usr/bin/env python3
"""frontier_catches.py ROOT: check_frontier.py catches what it must and only
that. Copies ROOT's frontier/ to a temporary folder and, on a fresh copy
for each case below, plants one violation of its rules (or one thing they
allow); check_frontier.py must then exit 1 naming exactly the planted line,
or, for what the rules allow, not name it.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_frontier.py")
SUFFIXES = (".c", ".h", ".cu", ".cuh")


def copy_sources(root, dest):
    for folder, _, files in os.walk(os.path.join(root, "frontier")):
        for name in files:
            if name.endswith(SUFFIXES):
                src = os.path.join(folder, name)
                out = os.path.join(dest, os.path.relpath(src, root))
                os.makedirs(os.path.dirname(out), exist_ok=True)
                shutil.copyfile(src, out)


def first(tree, room, suffix):
    folder = os.path.join(tree, "frontier", room)
    names = sorted(n for n in os.listdir(folder) if n.endswith(suffix)) if os.path.isdir(folder) else []
    return "frontier/%s/%s" % (room, names[0]) if names else None


def header_of(tree, room):
    """A header of room with a .c beside it (a unit), else any header."""
    folder = os.path.join(tree, "frontier", room)
    if not os.path.isdir(folder):
        return None
    names = sorted(os.listdir(folder))
    units = [n for n in names if n.endswith(".h") and n[:-2] + ".c" in names]
    headers = units or [n for n in names if n.endswith(".h")]
    return "frontier/%s/%s" % (room, headers[0]) if headers else None


def plant(path, line):
    """Appends line to the file at path (created when absent); returns its number."""
    text = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    if text and not text.endswith("\n"):
        text += "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + line + "\n")
    return text.count("\n") + 1


def include_case(source_room, header_room, caught):
    """An #include of a header of header_room in the first .c of source_room."""
    def run(tree):
        source = first(tree, source_room, ".c")
        header = header_of(tree, header_room)
        if not source or not header:
            return None, "no %s source or %s header" % (source_room, header_room)
        line = plant(os.path.join(tree, source), '#include "%s"' % header)
        return "%s:%d:" % (source, line), "%s includes %s" % (source_room, header)
    return ("%s includes %s" % (source_room, header_room), run, caught)


def misplaced_declaration(tree):
    """A header declaring a function that another file of its room defines."""
    a, b = "frontier/exec/metrics", "frontier/exec/blocked"
    plant(os.path.join(tree, b + ".c"), "int fr_planted_elsewhere(void) { return 0; }")
    line = plant(os.path.join(tree, a + ".h"), "int fr_planted_elsewhere(void);")
    return "%s.h:%d: declares fr_planted_elsewhere" % (a, line), "a header of another unit"


def undeclared_definition(tree):
    """A .c defining a non-static function that its own header lacks."""
    c = "frontier/dataset/output_file.c"
    line = plant(os.path.join(tree, c), "int fr_planted_undeclared(void)\n{\n    return 0;\n}")
    return "%s:%d: defines fr_planted_undeclared" % (c, line), "a function without a header"


def static_definition(tree):
    """A static function needs no header (allowed)."""
    c = "frontier/dataset/output_file.c"
    line = plant(os.path.join(tree, c), "static int fr_planted_static(void) { return 0; }")
    return "%s:%d:" % (c, line), "a static function"


def unit_cycle(tree):
    """A unit calling back into one that uses it: the checksums into the reader."""
    c = "frontier/dataset/dataset_checksum.c"
    line = plant(os.path.join(tree, c), "static void fr_planted_cycle(fr_dataset *ds)\n{\n"
                 "    fr_dataset_free(ds);\n}")
    return "%s:%d: frontier/dataset/dataset_checksum uses fr_dataset_free" % (c, line + 2), \
        "a cycle of units"


def stray_file(tree):
    """A source directly in frontier/, outside every room."""
    plant(os.path.join(tree, "frontier", "stray.c"), "/* planted */")
    return "frontier/stray.c:1: not in a room", "a file outside the rooms"


CASES = (
    # a room includes one above it: the cycles this layout removed
    include_case("dataset", "sweep", True),
    include_case("model", "checkpoint", True),
    include_case("exec", "sweep", True),
    include_case("recipe", "analysis", True),
    include_case("analysis", "export", True),
    include_case("sweep", "checkpoint", True),
    # ... and what the rooms allow
    include_case("sweep", "exec", False),
    include_case("checkpoint", "recipe", False),
    include_case("cli", "sweep", False),
    ("a header declares another unit's function", misplaced_declaration, True),
    ("a function without a declaration in its own header", undeclared_definition, True),
    ("a static function without a header", static_definition, False),
    ("a cycle of units inside a room", unit_cycle, True),
    ("a source outside the rooms", stray_file, True),
)


def run_case(base, work, number, case):
    what, planter, caught = case
    tree = os.path.join(work, "case%d" % number)
    shutil.copytree(base, tree)
    prefix, about = planter(tree)
    if prefix is None:
        print("FAIL: %s: %s in the copy" % (what, about))
        return False
    run = subprocess.run([sys.executable, CHECKER, tree], capture_output=True, text=True)
    named = [v for v in run.stdout.splitlines() if v.startswith(prefix)]
    if caught:
        ok = run.returncode == 1 and len(named) == 1
        print("%s: planted %s (%s); check_frontier exits %d%s" %
              ("ok" if ok else "FAIL", what, prefix, run.returncode,
               ", naming it: " + named[0] if len(named) == 1 else ", not naming it"))
    else:
        ok = not named and run.returncode == 0
        print("%s: planted %s (allowed); check_frontier exits %d%s" %
              ("ok" if ok else "FAIL", what, run.returncode, "" if ok else ": " + repr(named)))
    if not ok:
        print(run.stdout + run.stderr, end="")
    return ok


def main(argv):
    if len(argv) != 2:
        print("usage: frontier_catches.py ROOT", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="frontier-rooms-") as work:
        base = os.path.join(work, "base")
        copy_sources(os.path.abspath(argv[1]), base)
        clean = subprocess.run([sys.executable, CHECKER, base], capture_output=True, text=True)
        if clean.returncode != 0:
            print("FAIL: the unplanted copy does not pass check_frontier:\n" + clean.stdout +
                  clean.stderr, end="")
            return 1
        results = [run_case(base, work, i, case) for i, case in enumerate(CASES)]
    if not all(results):
        print("frontier_catches: %d of %d cases failed" % (results.count(False), len(results)))
        return 1
    print("frontier_catches: all %d cases behave" % len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
