#!/usr/bin/env python3
"""check_frontier.py [ROOT]: frontier/'s subfolders ("rooms", docs/architecture.md
"frontier/") and their headers. Three rules:

1. Every source of frontier/ (.c .h .cu .cuh) lies in one of the rooms
   below, none directly in frontier/ or in a folder the rules do not know.

2. A room includes headers of itself and of the rooms below it, never of
   one above or beside it. The rooms and what each may use directly (the
   rest follows: what a room below may use, the room above may use too):

     cli         every room
     export      analysis, dataset
     sweep       exec, model, dataset
     checkpoint  recipe, exec, model, dataset
     analysis    recipe, dataset
     recipe      dataset
     exec        dataset
     engine      (core/ and below only)
     model       (core/ and below only)
     dataset     (core/ and below only)

   Includes are resolved as check_layers.py resolves them (the including
   file's folder, then the repository root, include/, core/).

3. One header per unit: a function a header of frontier/ declares is
   defined in the .c or .cu of the same name beside it (a header without
   such a file declares no function: it is an interface of types), and a
   function a .c file defines without `static` is declared in its own
   header. cli/cli.h is the one exception: it is the command table, the
   entry point of every cmd_*.c for main.c.

4. No cycle among the units (a .c or .cu and its header): a unit uses
   another when its code names a function the other defines, and no unit
   uses, through others, one that uses it back. Rule 2 orders the rooms;
   this one orders the units inside a room too.

The C is read with a small scanner (comments, strings and preprocessor
lines removed, then statements at file scope), enough for this code base.

Prints one line per violation (`file:line: ...`) and exits 1 when there is
any, 0 when there is none, 2 when ROOT has no frontier/.
"""
import os
import re
import sys

# room -> the rooms it may include directly
BELOW = {
    "cli": ("sweep", "checkpoint", "analysis", "export", "engine", "exec", "model", "dataset",
            "recipe"),
    "export": ("analysis", "dataset"),
    "sweep": ("exec", "model", "dataset"),
    "checkpoint": ("recipe", "exec", "model", "dataset"),
    "analysis": ("recipe", "dataset"),
    "recipe": ("dataset",),
    "exec": ("dataset",),
    "engine": (),
    "model": (),
    "dataset": (),
}
# headers that may declare the functions of several files, and why
SEVERAL_FILES = {
    "frontier/cli/cli.h": "the command table: one entry point per cmd_*.c for main.c",
}
# .c files whose functions need no header of their own
NO_HEADER = {"frontier/cli"}  # the commands: their entry points are in cli/cli.h

SEARCH_PATH = ("", "include", "core")
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "void", "int", "char",
             "unsigned", "long", "short", "float", "double", "const", "struct", "union",
             "enum", "static", "inline", "extern", "typedef"}


def reachable():
    """room -> every room below it (the closure of BELOW); fails on a cycle."""
    out = {}

    def walk(room, trail):
        if room in trail:
            raise SystemExit("check_frontier: the rooms form a cycle: %s" %
                             " -> ".join(trail + (room,)))
        if room not in out:
            seen = set()
            for below in BELOW[room]:
                seen.add(below)
                seen |= walk(below, trail + (room,))
            out[room] = seen
        return out[room]

    for room in BELOW:
        walk(room, ())
    return out


def rel(root, path):
    return os.path.relpath(path, root).replace(os.sep, "/")


def resolve(root, including_dir, target):
    for base in (including_dir,) + tuple(os.path.join(root, d) for d in SEARCH_PATH):
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(candidate):
            r = os.path.relpath(candidate, root)
            return None if r.startswith("..") else r.replace(os.sep, "/")
    return None


def room_of(relpath):
    """The room of a path under frontier/, '' for frontier/ itself, None outside."""
    parts = relpath.split("/")
    if parts[0] != "frontier":
        return None
    return parts[1] if len(parts) > 2 else ""


def sources(root):
    for folder, dirs, files in os.walk(os.path.join(root, "frontier")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


# ---- a small C scanner ----

def blank(match):
    """The match with everything but its newlines removed (lines keep their numbers)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def clean(text):
    """Comments, string and character literals and preprocessor lines blanked."""
    text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  lambda m: blank(m) if not m.group(0).startswith('"') else
                  '""' + blank(m)[2:], text, flags=re.S)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)
    # C++ linkage blocks of the .cu files: `extern "C" {` opens no scope of its own here
    text = re.sub(r'extern\s*""\s*\{', lambda m: blank(m), text)
    text = re.sub(r'extern\s*""', lambda m: blank(m), text)
    return text


def statements(text):
    """(kind, head, offset) of each file-scope statement: kind 'decl' for one
    ending in ';', 'def' for a function body; head is the statement's text
    before its body (or the whole statement), offset where it starts."""
    depth = 0
    start = 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                head = text[start:i + 1].split("{", 1)[0]
                if "(" in head and head.rstrip().endswith(")") and \
                        not re.match(r"\s*(typedef|struct|union|enum)\b", head):
                    yield "def", head, start
                    start = i + 1
        elif c == ";" and depth == 0:
            yield "decl", text[start:i + 1], start
            start = i + 1


def function_name(head):
    """(name, offset in head) of the function a declaration or definition
    head names, or None (a function pointer variable, no call syntax)."""
    if re.match(r"[^(]*\(\s*\*", head):
        return None
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", head):
        name = m.group(1)
        if name.startswith("__") or name in NOT_NAMES:
            continue
        return name, m.start(1)
    return None


def declared(text):
    """[(name, line)] of the functions a header declares (prototypes only)."""
    text = clean(text)
    out = []
    for kind, stmt, at in statements(text):
        if kind != "decl" or "(" not in stmt or "{" in stmt:
            continue
        if re.match(r"\s*(typedef|static)\b", stmt):
            continue
        found = function_name(stmt)
        if found:
            out.append((found[0], text.count("\n", 0, at + found[1]) + 1))
    return out


def defined(text):
    """{name: (line, is_static)} of the functions a source file defines."""
    text = clean(text)
    out = {}
    for kind, head, at in statements(text):
        if kind != "def":
            continue
        found = function_name(head)
        if found:
            out[found[0]] = (text.count("\n", 0, at + found[1]) + 1,
                             bool(re.search(r"\bstatic\b", head)))
    return out


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


# ---- the rules ----

def room_violations(root, below):
    for path in sources(root):
        r = rel(root, path)
        room = room_of(r)
        if room == "" or room not in BELOW:
            yield "%s:1: not in a room of frontier/ (%s)" % (r, ", ".join(sorted(BELOW)))
            continue
        for number, line in enumerate(read(path).splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, os.path.dirname(path), m.group(1))
            target_room = room_of(target) if target else None
            if target_room is None or target_room == room:
                continue
            if target_room not in below[room]:
                yield "%s:%d: %s includes %s (%s, not below %s)" % (
                    r, number, room, m.group(1), target_room or "frontier/", room)


def header_violations(root):
    files = [rel(root, p) for p in sources(root)]
    present = set(files)
    definitions = {}
    for f in files:
        if f.endswith((".c", ".cu")):
            definitions[f] = defined(read(os.path.join(root, f)))
    defined_in = {}
    for f, names in sorted(definitions.items()):
        for name, (_, is_static) in names.items():
            if not is_static:
                defined_in.setdefault(name, f)
    declared_by = {}
    for h in files:
        if not h.endswith(".h"):
            continue
        stem = h[:-2]
        own = [stem + ".c", stem + ".cu"]
        for name, line in declared(read(os.path.join(root, h))):
            declared_by.setdefault(name, set()).add(h)
            if h in SEVERAL_FILES:
                continue
            if any(name in definitions.get(o, {}) for o in own if o in present):
                continue
            where = defined_in.get(name)
            yield "%s:%d: declares %s, %s" % (
                h, line, name,
                "defined in %s (one header per unit: declare it in %s.h)" % (where, where.rsplit(".", 1)[0])
                if where else "defined in no file of frontier/ beside it")
    for f, names in sorted(definitions.items()):
        if not f.endswith(".c") or os.path.dirname(f) in NO_HEADER:
            continue
        header = f[:-2] + ".h"
        for name, (line, is_static) in sorted(names.items(), key=lambda kv: kv[1][0]):
            if is_static or name == "main" or header in declared_by.get(name, ()):
                continue
            yield "%s:%d: defines %s without declaring it in %s" % (
                f, line, name, header if header in present else "its own header (%s)" % header)


def unit_uses(root):
    """unit -> {used unit: (file, line, function)}, the first use of each."""
    files = [rel(root, p) for p in sources(root)]
    code = {f: clean(read(os.path.join(root, f))) for f in files if f.endswith((".c", ".cu"))}
    owner = {}
    for f, text in sorted(code.items()):
        for name, (_, is_static) in defined(text).items():
            if not is_static:
                owner.setdefault(name, f.rsplit(".", 1)[0])
    uses = {}
    for f, text in sorted(code.items()):
        unit = f.rsplit(".", 1)[0]
        for m in re.finditer(r"\b[A-Za-z_]\w*\b", text):
            other = owner.get(m.group(0))
            if other and other != unit and other not in uses.setdefault(unit, {}):
                uses[unit][other] = (f, text.count("\n", 0, m.start()) + 1, m.group(0))
    return uses


def cycle_violations(root):
    uses = unit_uses(root)
    state, trail, seen = {}, [], set()

    def walk(unit):
        state[unit] = 1
        trail.append(unit)
        for other in sorted(uses.get(unit, {})):
            if state.get(other) == 1:
                cycle = trail[trail.index(other):] + [other]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    for a, b in zip(cycle, cycle[1:]):
                        f, line, name = uses[a][b]
                        yield "%s:%d: %s uses %s of %s, in a cycle of units: %s" % (
                            f, line, a, name, b, " -> ".join(cycle))
            elif other not in state:
                yield from walk(other)
        trail.pop()
        state[unit] = 2

    for unit in sorted(uses):
        if unit not in state:
            yield from walk(unit)


def violations(root):
    below = reachable()
    yield from room_violations(root, below)
    yield from header_violations(root)
    yield from cycle_violations(root)


def main(argv):
    if len(argv) > 2:
        print("usage: check_frontier.py [ROOT]", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(here, "..", ".."))
    if not os.path.isdir(os.path.join(root, "frontier")):
        print("check_frontier: '%s' has no frontier/" % root, file=sys.stderr)
        return 2
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print("check_frontier: %d violation(s) of frontier/'s rooms" % len(found), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
