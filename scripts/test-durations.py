#!/usr/bin/env python3
"""Rank tests by duration from `go test -json` output (make test's time budget, RESULTS.md).

usage: go test -json -count=1 ./pkg/... > run.json; scripts/test-durations.py run.json [--top N] [--all]
       scripts/test-durations.py --compare before.json after.json [TestName ...]

Per package: its own elapsed seconds, then its slowest top-level tests (subtests with --all), each with
seconds and share of the package's elapsed time (parallel tests overlap, so shares may add up past 100%).
Packages are listed slowest first; a package or test that failed is marked FAIL.

--compare: per package in both runs, its elapsed seconds before and after, and the load factor of the
tests not named (their summed seconds after over before: the machine's load moved between the runs)
with the package's after as a share of its before times that factor (100%: no change). Name the
tests the change touched; the other tests of every package are the yardstick."""
import json
import sys
from collections import defaultdict


def load(path, subtests=False):
    pkg_elapsed, pkg_status, tests = {}, {}, defaultdict(dict)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            act, pkg, test = ev.get("Action"), ev.get("Package", ""), ev.get("Test")
            if act not in ("pass", "fail", "skip"):
                continue
            short = pkg.split("/queryflux/queryflux/")[-1]
            if test is None:
                pkg_elapsed[short] = ev.get("Elapsed", 0.0)
                pkg_status[short] = act
            elif subtests or "/" not in test:
                tests[short][test] = (ev.get("Elapsed", 0.0), act)
    return pkg_elapsed, pkg_status, tests


def compare(before_path, after_path, touched):
    b_el, _, b_tests = load(before_path)
    a_el, _, a_tests = load(after_path)
    print(f"{'package':32} {'before':>8} {'after':>8} {'factor':>7} {'after/(before x factor)':>24}")
    for pkg in sorted(set(b_el) & set(a_el), key=lambda p: -b_el[p]):
        common = [t for t in b_tests[pkg] if t in a_tests[pkg] and t not in touched]
        sb = sum(b_tests[pkg][t][0] for t in common)
        sa = sum(a_tests[pkg][t][0] for t in common)
        factor = sa / sb if sb > 1 else float("nan")
        share = 100 * a_el[pkg] / (b_el[pkg] * factor) if sb > 1 else float("nan")
        print(f"{pkg:32} {b_el[pkg]:8.1f} {a_el[pkg]:8.1f} {factor:7.2f} {share:23.0f}%")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--compare":
        compare(args[1], args[2], set(args[3:]))
        return
    top, subtests, files = 10, False, []
    while args:
        a = args.pop(0)
        if a == "--top":
            top = int(args.pop(0))
        elif a == "--all":
            subtests = True
        else:
            files.append(a)
    pkg_elapsed, pkg_status, tests = {}, {}, defaultdict(dict)
    for path in files or ["/dev/stdin"]:
        el, status, ts = load(path, subtests)
        pkg_elapsed.update(el)
        pkg_status.update(status)
        for pkg, t in ts.items():
            tests[pkg].update(t)
    total = sum(pkg_elapsed.values())
    print(f"{len(pkg_elapsed)} packages, {total:.0f} s of package time")
    for pkg in sorted(pkg_elapsed, key=lambda p: -pkg_elapsed[p]):
        el = pkg_elapsed[pkg]
        mark = " FAIL" if pkg_status[pkg] == "fail" else ""
        print(f"\n{pkg}: {el:.1f} s{mark}")
        ranked = sorted(tests[pkg].items(), key=lambda kv: -kv[1][0])
        for name, (secs, act) in ranked[:top]:
            share = 100 * secs / el if el else 0
            flag = {"fail": " FAIL", "skip": " skip"}.get(act, "")
            print(f"  {secs:8.1f} s {share:5.1f}%  {name}{flag}")


if __name__ == "__main__":
    main()
