#!/usr/bin/env bash
# wirecg.sh REV...: the core's work for one wire transaction, standalone and worker
# (node/proxy's BenchmarkWireTransaction/local and /leased: a transaction-pool transaction as the
# PostgreSQL wire's event loop runs it, its slot a local count or a capacity lease kept idle),
# counted in user instructions under valgrind's callgrind for each git revision REV (WORK: the
# work tree as it is): the test binary built from that revision's node/proxy, internal/capacity
# and internal/query (git archive into a copy of this tree), run for N (default 20000) and 2N
# iterations; the difference of the two totals over N is one transaction, whatever the binary's
# start costs. But the guard's goroutines, the collector and the scheduler's spinning work by the
# wall time, and on a loaded machine they moved that difference by about a thousand between two
# runs of one binary: read the profiles' call counts (callgrind_annotate --tree=caller, such as
# the Duty.Wake calls a transaction), which are exact, more than the totals. BENCH (default local
# and leased) picks the sub-benchmarks; OUT=DIR keeps each 2N profile as DIR/wirecg.REV.SUB.cg.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-20000}
TMP=$(mktemp -d /tmp/wirecg.XXXX)
trap 'rm -rf "$TMP"' EXIT
for rev in "$@"; do
	tree=$TMP/tree
	rm -rf "$tree"; mkdir -p "$tree"
	(cd "$ROOT" && git ls-files -z | tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$tree"
	if [ "$rev" != WORK ]; then
		(cd "$ROOT" && git archive "$rev" node/proxy internal/capacity internal/query) | tar -xf - -C "$tree"
	fi
	(cd "$tree" && go test -c -o "$TMP/proxy.test" ./node/proxy/ >/dev/null)
	for sub in ${BENCH:-local leased}; do
		for n in $N $((2 * N)); do
			GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind \
				--callgrind-out-file="$TMP/cg.$n" --log-file="$TMP/vg.log" \
				"$TMP/proxy.test" -test.run '^$' -test.bench "BenchmarkWireTransaction/$sub\$" -test.benchtime ${n}x >/dev/null 2>&1
		done
		a=$(awk '/^totals:/{print $2}' "$TMP/cg.$N") b=$(awk '/^totals:/{print $2}' "$TMP/cg.$((2 * N))")
		awk -v a=$a -v b=$b -v n=$N -v r="$rev" -v s="$sub" 'BEGIN{printf "%s %s: %.0f user instructions a transaction\n", r, s, (b-a)/n}'
		if [ -n "${OUT:-}" ]; then cp "$TMP/cg.$((2 * N))" "$OUT/wirecg.$rev.$sub.cg"; fi
	done
done
