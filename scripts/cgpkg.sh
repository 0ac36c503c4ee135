#!/usr/bin/env bash
# cgpkg.sh CGFILE N [ROWS]: a callgrind profile's self instructions per transaction (N of them in
# the counted window: passprobe.sh's n=) summed by package (queryflux's packages by their path, the
# Go runtime as "runtime", the rest by their first path element), largest first; the last line is
# the total and the total without the Go runtime. Compare two builds by these sums, not by a
# function's inclusive count: callgrind charges calls across goroutine switches to whatever parked.
set -euo pipefail
F=$1 N=$2 ROWS=${3:-25}
callgrind_annotate --inclusive=no --auto=no --threshold=100 "$F" 2>/dev/null | awk -v n="$N" -v rows="$ROWS" '
	/^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ {
		gsub(",", "", $1); v = $1; f = $0; sub(/^[^:]*:/, "", f); sub(/ \[.*/, "", f); p = f
		if (p ~ /^github.com\/queryflux\/queryflux\//) { sub(/^github.com\/queryflux\/queryflux\//, "", p); sub(/\.[^\/]*$/, "", p) }
		else if (p ~ /^(runtime|internal\/runtime|aeshash|gcWriteBarrier)/ || $0 ~ /\/runtime\//) p = "runtime"
		else sub(/\..*/, "", p)
		s[p] += v; t += v; if (p != "runtime") u += v
	}
	END {
		for (k in s) printf "%8.0f %s\n", s[k] / n, k | "sort -rn | head -" rows
		close("sort -rn | head -" rows)
		printf "total %.0f without the runtime %.0f\n", t / n, u / n
	}'
