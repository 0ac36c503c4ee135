#!/usr/bin/env python3
"""Prints a `go build -overlay` file that leaves out the test files a package's fuzz targets do not need.

usage: scripts/fuzzharness.py TESTFILE... > overlay.json   (every _test.go file of one package, absolute paths)

Kept: each file declaring a Fuzz function, then, until nothing changes, each file declaring a name a kept file
mentions (a method counts as declaring its receiver's type). Names are matched as words, so a file may be kept that
is not needed, never the other way round but for names built by reflection; scripts/fuzz-smoke.sh builds the whole
package when the kept files do not build. The frontends' other tests link DuckDB and every engine: instrumented and
linked whole, pgwire's fuzz binary took minutes for targets that drive only the wire codec."""
import json
import re
import sys

DECL = re.compile(r"^(?:func\s+(?:\(\s*(?:\w+\s+)?\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)|type\s+(\w+)|var\s+(\w+)|const\s+(\w+))", re.M)
BLOCK = re.compile(r"^(?:var|const|type)\s*\(\n(.*?)^\)", re.M | re.S)
ENTRY = re.compile(r"^\t(\w+)\b")
KEYWORDS = {"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for", "func", "go",
            "goto", "if", "import", "interface", "map", "package", "range", "return", "select", "struct", "switch", "type",
            "var"}
WORD = re.compile(r"[A-Za-z_]\w*")
STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|`[^`]*`|"(?:\\.|[^"\\\n])*"', re.S)


def declared(src):
    names = set()
    for m in DECL.finditer(src):
        recv, fn, rest = m.group(1), m.group(2), m.groups()[2:]
        # A method is needed with its type, whatever its name: a name like Ready or Close is mentioned everywhere.
        names.update([recv] if recv else [fn] if fn else [n for n in rest if n])
    for m in BLOCK.finditer(src):
        for line in m.group(1).splitlines():
            w = ENTRY.match(line)  # a block's own entries, not the lines of a function literal in it
            if w and w.group(1) not in KEYWORDS:
                names.add(w.group(1))
    names.discard("_")
    return names


def main(paths):
    srcs = {p: open(p).read() for p in paths}
    decls = {p: declared(s) for p, s in srcs.items()}
    words = {p: set(WORD.findall(STRIP.sub(" ", s))) for p, s in srcs.items()}
    kept = {p for p, s in srcs.items() if re.search(r"^func Fuzz\w*\(", s, re.M)}
    changed = True
    while changed:
        changed = False
        used = set().union(*(words[p] for p in kept)) if kept else set()
        for p in srcs:
            if p not in kept and decls[p] & used:
                kept.add(p)
                changed = True
    json.dump({"Replace": {p: "" for p in sorted(srcs) if p not in kept}}, sys.stdout)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
