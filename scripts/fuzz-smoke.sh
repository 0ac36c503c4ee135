#!/bin/sh
# fuzz-smoke.sh FUZZTIME PKG:TARGET...: runs each fuzz target for FUZZTIME and fails only for a
# real crasher, an input that fails again when run on its own.
#
# The fuzzing engine fails without being handed a real crasher in two ways: it stops its workers
# with "context deadline exceeded" and writes nothing, or, on a loaded machine, an input runs
# past the worker's 10 s limit (or a target's own hang check) and is written as a crasher though
# it passes when run again. Both are run again, up to three attempts in all; the second kind's
# input is printed and removed, not kept as a seed. An input that failed some other way (a panic,
# a wrong answer) fails the run even if it passes alone: a target whose inputs depend on each
# other hides crashers. A failing seed corpus entry fails every time.
#
# Each package's instrumented test binary is built once (`go test -c -fuzz`) and every target of
# that package runs from it: `go test -fuzz` links a binary per target, and the instrumented
# binaries of the big frontend packages take longer to link than their targets fuzz. The binary
# runs in the package's directory, as go test runs it, with go test's fuzz cache, so the seed
# corpus (testdata/fuzz) and the inputs kept from earlier runs are the same.
set -u
fuzztime=$1
shift
log=$(mktemp)
bins=$(mktemp -d)
trap 'rm -rf "$log" "$log.first" "$bins"' EXIT
gocache=$("${GO:-go}" env GOCACHE)
# fuzzonly PKG OVERLAY: writes to OVERLAY a go build overlay leaving out the test files of PKG
# that its fuzz targets do not need (scripts/fuzzharness.py).
fuzzonly() {
	# shellcheck disable=SC2046 # one word a file
	python3 "$(dirname "$0")/fuzzharness.py" $("${GO:-go}" list \
		-f '{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$d}}/{{.}} {{end}}' "$1") >"$2"
}
# fuzzbin PKG: the path of PKG's instrumented test binary, built on first use: from the fuzz
# harness alone, or, where the harness needs another test file, from the whole package.
fuzzbin() {
	b="$bins/$(printf '%s' "$1" | tr -c 'A-Za-z0-9\n' _).test"
	if [ ! -x "$b" ]; then
		echo "fuzz: building $1's instrumented test binary" >&2
		if ! { fuzzonly "$1" "$b.overlay" &&
			"${GO:-go}" test -c -fuzz=. -overlay="$b.overlay" -o "$b" "$1" >"$b.log" 2>&1; }; then
			echo "fuzz: $1's fuzz harness does not build alone; building its whole test binary:" >&2
			cat "$b.log" >&2
			"${GO:-go}" test -c -fuzz=. -o "$b" "$1" >&2 || return 1
		fi
	fi
	printf '%s\n' "$b"
}
# What a hang looks like: the engine's worker limit, or a target's own hang guard.
hang='hung or terminated unexpectedly|deadline exceeded|still holds the connection|still running after|timed out'
for t in "$@"; do
	pkg=${t%%:*}
	name=${t##*:}
	attempt=1
	while :; do
		bin=$(fuzzbin "$pkg") || { echo "fuzz $name: $pkg does not build"; exit 1; }
		importpath=$("${GO:-go}" list "$pkg") || exit 1
		echo "fuzz $name ($pkg, $fuzztime)"
		if (cd "$pkg" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run='^$' -test.fuzz="^$name\$" \
			-test.fuzztime="$fuzztime" -test.fuzzminimizetime=10x \
			-test.fuzzcachedir="$gocache/fuzz/$importpath") >"$log" 2>&1; then
			tail -n 2 "$log"
			break
		fi
		cat "$log"
		if grep -q '^failure while testing seed corpus entry' "$log"; then
			echo "fuzz $name: a seed corpus entry fails"
			exit 1
		fi
		input=$(sed -n 's/^[[:space:]]*Failing input written to //p' "$log" | tail -n 1)
		cp "$log" "$log.first"
		if [ -n "$input" ]; then
			if ! "${GO:-go}" test -count=1 -run="^$name\$/^$(basename "$input")\$" "$pkg" >"$log" 2>&1; then
				cat "$log"
				echo "fuzz $name: $pkg/$input fails when run again: a crasher (kept as a seed)"
				exit 1
			fi
			if ! grep -Eq "$hang" "$log.first"; then
				echo "fuzz $name: $pkg/$input failed, not by a hang, yet passes when run again:" \
					"the target's inputs are not independent (kept as a seed)"
				exit 1
			fi
			echo "fuzz $name: $pkg/$input hung on a loaded machine and passes when run again, so it is not kept:"
			cat "$pkg/$input"
			rm -f "$pkg/$input"
		fi
		if [ "$attempt" -ge 3 ]; then
			echo "fuzz $name: failed $attempt times without a crasher that fails again"
			exit 1
		fi
		attempt=$((attempt + 1))
		echo "fuzz $name: no crasher that fails again; running it once more"
	done
done
