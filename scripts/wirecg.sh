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
# shellcheck source=scripts/probelib.sh
. "$ROOT/scripts/probelib.sh" # cg_bench_count
for rev in "$@"; do
	for sub in ${BENCH:-local leased}; do
		per=$(cg_bench_count "$TMP" "$rev" node/proxy "BenchmarkWireTransaction/$sub\$" "$N" node/proxy internal/capacity internal/query)
		echo "$rev $sub: $per user instructions a transaction"
		if [ -n "${OUT:-}" ]; then cp "$TMP/cg.$((2 * N))" "$OUT/wirecg.$rev.$sub.cg"; fi
	done
done
