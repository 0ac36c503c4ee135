#!/usr/bin/env python3
"""perffold.py PERF_DATA TRANSACTIONS FUNCTION [DEPTH]: from a perf record -g at perf's default
4 kHz (scripts/passprobe.sh perf), the CPU microseconds per transaction spent in FUNCTION (any
frame whose name contains it) and, DEPTH levels down, in what it calls; "-" as FUNCTION lists
the heaviest functions by their own time. A sample stands for 250 us of CPU."""
import collections
import subprocess
import sys


def samples(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "tid,ip,sym"], capture_output=True, text=True).stdout
    st = []
    for line in out.splitlines():
        if not line.strip():
            if st:
                yield st
            st = []
        elif line[0] in " \t":
            parts = line.split(None, 1)
            st.append((parts[1] if len(parts) > 1 else "?").split("+")[0])
        else:
            st = []
    if st:
        yield st


def main():
    path, n, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    us = 250.0 / n
    if root == "-":
        own = collections.Counter(st[0] for st in samples(path))
        for name, k in own.most_common(40):
            print(f"{k * us:6.3f}  {name[:110]}")
        return
    tot, sub = 0, collections.Counter()
    for st in samples(path):
        st = st[::-1]  # the root first
        at = next((i for i, f in enumerate(st) if root in f), None)
        if at is None:
            continue
        tot += 1
        below = tuple(st[at + 1:at + 1 + depth])
        for k in range(1, len(below) + 1):
            sub[below[:k]] += 1
    print(f"{root}: {tot * us:.2f} us per transaction")
    for k, v in sorted(sub.items()):
        if v * us >= 0.05:
            print(f"{'  ' * len(k)}{v * us:6.2f}  {k[-1][:110]}")


main()
