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
for rev in "$@"; do
	tree=$TMP/tree
	rm -rf "$tree"; mkdir -p "$tree"
	(cd "$ROOT" && git ls-files -z | tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$tree"
	if [ "$rev" != WORK ]; then
		(cd "$ROOT" && git archive "$rev" internal/capacity) | tar -xf - -C "$tree"
	fi
	(cd "$tree" && go test -c -o "$TMP/cap.test" ./internal/capacity/ >/dev/null)
	for n in $N $((2 * N)); do
		GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind \
			--callgrind-out-file="$TMP/cg.$n" --log-file="$TMP/vg.log" \
			"$TMP/cap.test" -test.run '^$' -test.bench 'BenchmarkIdleLeaseTakeAndRelease$' -test.benchtime ${n}x >/dev/null 2>&1
	done
	a=$(awk '/^totals:/{print $2}' "$TMP/cg.$N") b=$(awk '/^totals:/{print $2}' "$TMP/cg.$((2 * N))")
	awk -v a=$a -v b=$b -v n=$N -v r="$rev" 'BEGIN{printf "%s: %.0f user instructions a take and release\n", r, (b-a)/n}'
	if [ -n "${OUT:-}" ]; then cp "$TMP/cg.$((2 * N))" "$OUT/leasecg.$rev.cg"; fi
done
