#!/usr/bin/env python3
"""callgrind-diff.py A B [N] [--inclusive]: functions whose instructions per statement differ
between two callgrind outputs (scripts/trino-callgrind.sh's cg.TAG), N statements each
(default 3020), largest changes first. Exclusive (self) counts unless --inclusive; inclusive
counts of functions that park (a read that waits) are not usable (callgrind charges them what
other goroutines ran meanwhile)."""
import re, subprocess, sys

def counts(path, inclusive):
    args = ["callgrind_annotate", "--threshold=100", "--auto=no"] + (["--inclusive=yes"] if inclusive else []) + [path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*?)(\s+\[.*\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = m.group(2).split(":", 1)[-1]
            got[name] = got.get(name, 0) + int(m.group(1).replace(",", ""))
    return got

argv = [a for a in sys.argv[1:] if not a.startswith("--")]
inc = "--inclusive" in sys.argv
n = int(argv[2]) if len(argv) > 2 else 3020
a, b = counts(argv[0], inc), counts(argv[1], inc)
rows = [(b.get(k, 0) / n - a.get(k, 0) / n, a.get(k, 0) / n, b.get(k, 0) / n, k) for k in set(a) | set(b)]
rows.sort()
for d, x, y, k in rows:
    if abs(d) >= 20:
        print(f"{x:8.0f} {y:8.0f} {d:+8.0f}  {k[:150]}")
print(f"total {sum(a.values()) / n:.0f} -> {sum(b.values()) / n:.0f}")
