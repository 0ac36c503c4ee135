#!/usr/bin/env python3
"""perfcmp.py COMM A.perf TX_A B.perf TX_B: one process name's samples in two `perf record -a`
files (passprobe.sh's perfall mode, cpu-clock at 2999 Hz), per function and per transaction:
which of COMM's functions cost more in B than in A, in microseconds per transaction."""
import collections
import subprocess
import sys

HZ = 2999


def samples(path, comm):
    """Samples of comm per leaf function (the first frame under each sample's header line)."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym"],
                         capture_output=True, text=True, check=True).stdout
    count, current, leaf = collections.Counter(), None, False
    for line in out.split("\n"):
        if not line.strip():
            current = None
            continue
        if not line.startswith((" ", "\t")):
            current, leaf = line.split()[0], True
            continue
        if leaf and current == comm:
            parts = line.split(None, 1)
            count[parts[1] if len(parts) > 1 else "?"] += 1
        leaf = False
    return count


def main():
    comm, path_a, tx_a, path_b, tx_b = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    a, b = samples(path_a, comm), samples(path_b, comm)
    us = lambda n, tx: n / HZ * 1e6 / tx
    print("%s us per transaction: A %.2f, B %.2f" % (comm, us(sum(a.values()), tx_a), us(sum(b.values()), tx_b)))
    rows = sorted(((us(b[f], tx_b) - us(a[f], tx_a), us(a[f], tx_a), us(b[f], tx_b), f) for f in set(a) | set(b)), reverse=True)
    print("B-A      A      B      function")
    for row in rows[:20] + rows[-8:]:
        print("%+.3f  %.3f  %.3f  %s" % row)


if __name__ == "__main__":
    main()
