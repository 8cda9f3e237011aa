#!/usr/bin/env python3
"""check_families.py [ROOT] [--plant]: frontier/ decides nothing per family.

A built-in family is known in its line of the family table
(quantizers/families.h) and its own files; everything the engine decides per
configuration it reads from the configuration's traits
(frontier_config_traits, include/frontier/plugin.h), which plugins declare the
same way. So no source under frontier/ may

  - name a built-in family (FR_FAMILY_<ID>, the table's enum),
  - read the table itself (fr_builtin_families),
  - read a registry entry's family index (entries[...].family),
  - read a configuration's impl (the quantizer's own parameters, opaque to
    the host: casting it to a family's struct is a per-family branch).

Comments are not code: /* ... */ and // comments are blanked first. Prints
one line per finding, `file:line: <what>`, and exits 1 when there is any, 0
when there is none, 2 when ROOT (default: the repository holding this script)
has no frontier/.

--plant copies frontier/ to a temporary folder, plants one line of each kind
into a copy of a source, and requires every plant to be named (and the
unplanted copy to be clean): the check can fail.
"""
import os
import re
import shutil
import sys
import tempfile

SUFFIXES = (".c", ".h", ".cu", ".cuh")
RULES = (
    (re.compile(r"\bFR_FAMILY_\w*"), "names a built-in family (FR_FAMILY_*): use the traits"),
    (re.compile(r"\bfr_builtin_families\b"), "reads the family table: use the traits"),
    (re.compile(r"\bentries\s*\[[^\]]*\]\s*\.\s*family\b"),
     "reads a registry entry's family index: use the traits"),
    (re.compile(r"(->|\.)\s*impl\b"), "reads a configuration's impl (opaque to the host)"),
)
PLANTS = (
    "static int planted_a(int f) { return f == FR_FAMILY_NVFP4; }",
    "static const void *planted_b(void) { return fr_builtin_families; }",
    "static int planted_c(const fr_registry *reg, const fr_config_ref *ref) "
    "{ return reg->entries[ref->quantizer].family; }",
    "static const void *planted_d(const fr_config_ref *ref) { return ref->cfg->impl; }",
)


def strip_comments(text):
    """The text with comments replaced by spaces (newlines kept); strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(root):
    top = os.path.join(root, "frontier")
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(SUFFIXES):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                code = strip_comments(f.read())
            for number, line in enumerate(code.split("\n"), 1):
                for pattern, what in RULES:
                    for _ in pattern.finditer(line):
                        yield "%s:%d: %s" % (rel, number, what)


def plant_check():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    with tempfile.TemporaryDirectory(prefix="frontier-families-") as work:
        shutil.copytree(os.path.join(root, "frontier"), os.path.join(work, "frontier"))
        clean = list(findings(work))
        if clean:
            print("FAIL: the unplanted copy already has findings:\n" + "\n".join(clean))
            return 1
        target = None
        for folder, dirs, files in sorted(os.walk(os.path.join(work, "frontier"))):
            dirs.sort()
            c_files = sorted(n for n in files if n.endswith(".c"))
            if c_files:
                target = os.path.join(folder, c_files[0])
                break
        rel = os.path.relpath(target, work).replace(os.sep, "/")
        with open(target, encoding="utf-8") as f:
            text = f.read()
        first = text.count("\n") + 1
        with open(target, "w", encoding="utf-8") as f:
            f.write(text + "\n".join(PLANTS) + "\n")
        found = list(findings(work))
        ok = True
        for k, line in enumerate(PLANTS):
            where = "%s:%d:" % (rel, first + k)
            named = [x for x in found if x.startswith(where)]
            print("%s: planted %s -> %s" % ("ok" if named else "FAIL", line,
                                            named[0] if named else "not named"))
            ok &= bool(named)
        if len(found) != len(PLANTS):
            print("FAIL: %d findings for %d plants:\n%s" % (len(found), len(PLANTS),
                                                            "\n".join(found)))
            ok = False
        return 0 if ok else 1


def main(argv):
    args = argv[1:]
    if args == ["--plant"]:
        return plant_check()
    if len(args) > 1:
        print("usage: check_families.py [ROOT] | --plant", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(args[0] if args else os.path.join(here, "..", ".."))
    if not os.path.isdir(os.path.join(root, "frontier")):
        print("check_families: '%s' has no frontier/" % root, file=sys.stderr)
        return 2
    found = list(findings(root))
    for x in found:
        print(x)
    if found:
        print("check_families: %d per-family decision(s) in frontier/" % len(found),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
