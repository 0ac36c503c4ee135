#!/usr/bin/env python3
"""Rank tests by duration from `go test -json` output (make test's time budget, RESULTS.md).

usage: go test -json -count=1 ./pkg/... > run.json; scripts/test-durations.py run.json [--top N] [--all]

Per package: its own elapsed seconds, then its slowest top-level tests (subtests with --all), each with
seconds and share of the package's elapsed time (parallel tests overlap, so shares may add up past 100%).
Packages are listed slowest first; a package or test that failed is marked FAIL."""
import json
import sys
from collections import defaultdict


def main():
    args = sys.argv[1:]
    top, subtests, files = 10, False, []
    while args:
        a = args.pop(0)
        if a == "--top":
            top = int(args.pop(0))
        elif a == "--all":
            subtests = True
        else:
            files.append(a)
    pkg_elapsed, pkg_status = {}, {}
    tests = defaultdict(dict)
    for path in files or ["/dev/stdin"]:
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
