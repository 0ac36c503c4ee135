#!/usr/bin/env bash
# leasecg.sh REV...: a worker's lease work for one statement (internal/capacity's
# BenchmarkIdleLeaseTakeAndRelease: an idle lease taken, under the event loop's NoWait, and
# released into idle again) counted in user instructions under valgrind's callgrind, for each
# git revision REV (WORK for the work tree as it is): the package's test binary built from that
# revision's tree (git archive into a copy of this one), run for N (default 20000) iterations
# with only takeAndRelease's loop collected. The machine's load does not change the count.
# OUT=DIR keeps each profile as DIR/leasecg.REV.cg (callgrind_annotate reads it).
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
	GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --toggle-collect='*takeAndRelease*' \
		--callgrind-out-file="$TMP/cg.out" --log-file="$TMP/vg.log" \
		"$TMP/cap.test" -test.run '^$' -test.bench 'BenchmarkIdleLeaseTakeAndRelease$' -test.benchtime ${N}x >/dev/null
	awk -v n=$N -v r="$rev" '/^totals:/{printf "%s: %.0f user instructions a take and release\n", r, $2/n; exit}' "$TMP/cg.out"
	if [ -n "${OUT:-}" ]; then cp "$TMP/cg.out" "$OUT/leasecg.$rev.cg"; fi
done
