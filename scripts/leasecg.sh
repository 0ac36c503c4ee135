#!/usr/bin/env bash
# leasecg.sh REV...: a worker's lease work for one statement (internal/capacity's
# BenchmarkIdleLeaseTakeAndRelease: an idle lease taken, under the event loop's NoWait, and
# released into idle again) counted in user instructions under valgrind's callgrind, for each
# git revision REV (WORK for the work tree as it is): the package's test binary built from that
# revision's tree (git archive into a copy of this one), run for N (default 20000) and 2N
# iterations: the difference of the two runs' totals over N is a take and release, whatever the
# test binary's start and the simulation around the loop cost (callgrind's --toggle-collect
# loses count across the simulation's coroutine switches). The machine's load does not change
# the count. OUT=DIR keeps each 2N profile as DIR/leasecg.REV.cg (callgrind_annotate reads it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-20000}
TMP=$(mktemp -d /tmp/leasecg.XXXX)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=scripts/probelib.sh
. "$ROOT/scripts/probelib.sh" # cg_bench_count
for rev in "$@"; do
	per=$(cg_bench_count "$TMP" "$rev" internal/capacity 'BenchmarkIdleLeaseTakeAndRelease$' "$N" internal/capacity)
	echo "$rev: $per user instructions a take and release"
	if [ -n "${OUT:-}" ]; then cp "$TMP/cg.$((2 * N))" "$OUT/leasecg.$rev.cg"; fi
done
