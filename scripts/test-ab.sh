#!/usr/bin/env bash
# Side by side: one package's tests built from two revisions, run at the same time on the same
# machine, each with its CPU seconds (user, sys: the test process and its children, such as the
# client libraries' interpreters) and its wall seconds. On a shared machine the wall times of
# two runs minutes apart are not comparable; two runs at once share the load, and CPU seconds
# hardly depend on it.
#
# usage: scripts/test-ab.sh BASE_REV PKG_DIR TEST_REGEX [OUT_DIR]
#   e.g. scripts/test-ab.sh e25be2b2 internal/frontend/pgwire '^TestDjangoMigrateOnDuckDB$'
# BASE_REV is checked out in a worktree of its own (kept in OUT_DIR for the next call); the
# other side is the working tree. Each side's `go test -v` output is kept in OUT_DIR.
set -euo pipefail
base=$1 dir=$2 re=$3 out=${4:-${TMPDIR:-/tmp}/queryflux-test-ab}
root=$(git rev-parse --show-toplevel)
mkdir -p "$out"
rev=$(git rev-parse --short "$base")
wt="$out/base-$rev"
[ -d "$wt" ] || git worktree add --detach "$wt" "$rev" >/dev/null
# The client libraries npm installed are the working tree's (make test-deps).
for nm in internal/frontend/frontendtest/nodeclients/node_modules internal/frontend/pgwire/testdata/clients/node_modules; do
	[ -e "$root/$nm" ] && [ -d "$(dirname "$wt/$nm")" ] && ln -sfn "$(readlink -f "$root/$nm")" "$wt/$nm"
done
pkg=$(basename "$dir")
(cd "$root" && go test -c -o "$out/$pkg.head.test" "./$dir/")
(cd "$wt" && go test -c -o "$out/$pkg.base.test" "./$dir/")
tag=$(printf '%s' "$re" | tr -dc 'A-Za-z0-9' | cut -c1-40)
for side in base head; do
	tree=$root
	[ $side = base ] && tree=$wt
	(cd "$tree/$dir" && QUERYFLUX_TEST_RUN=ab$side$(date +%s) /usr/bin/time -f "$side user %U sys %S wall %e" \
		-o "$out/$tag.$side.time" "$out/$pkg.$side.test" -test.run "$re" -test.count=1 -test.v -test.timeout=60m \
		>"$out/$tag.$side.log" 2>&1 || true) &
done
wait
echo "$re ($dir), base $rev against the working tree, ended $(date -u +%T) UTC, load: $(uptime | sed 's/.*average: //')"
for side in base head; do
	echo "$(cat "$out/$tag.$side.time" | tail -1)  $(grep -c -- '^--- PASS' "$out/$tag.$side.log") passed, $(grep -c -- '^--- FAIL' "$out/$tag.$side.log") failed"
done
