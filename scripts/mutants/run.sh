#!/bin/bash
# Mutation testing by mutant schemata: every mutant of the named files is compiled into one test
# binary and switched on alone by QFMUT=<id>, so a package costs one build, not one per mutant.
#
#   scripts/mutants/run.sh NAME PKG RUNREGEX FILE[:from-to[,from-to...]]...
#
# runs PKG's tests (-run RUNREGEX) once per mutant of FILE (lines from-to); PKG may be another
# package than the files' (its tests then judge them). Writes OUT/NAME/results.tsv (OUT: $MUTANTS_OUT,
# default /tmp/mutants): id, file:line, operator, what changed, KILLED / KILLED(timeout) / SURVIVED.
# With IN=results.tsv it runs only the mutants that file lists as SURVIVED (after new tests),
# writing recheck.tsv. Operators: < <= > >= == != && || flipped, if conditions negated, if
# bodies, calls, defers, assignments and ++/-- dropped, error results replaced by nil, bool
# results negated. The timeout is 8x the unmutated run (at least 30 s, or $T). SKIP=<regex> leaves
# those tests out (-test.skip: a slow test that the fast ones cover, rechecked with IN= after).
# ARGS=<flags> are added to every test run (ARGS=-rapid.checks=20: a property test's cases cut,
# so that a package whose tests need a database is judged in seconds, not minutes).
# A run writes results.tsv.src beside results.tsv: the files' sha256 and ranges. IN= refuses a
# results.tsv whose .src is missing or names other contents (a mutant id means the same mutant
# only in the file it was listed from), or whose survivors are not in today's listing.
set -u
name=$1; pkg=$2; re=$3; shift 3
root=$(git rev-parse --show-toplevel)
[ -n "${IN:-}" ] && IN=$(realpath -m "$IN")
out=${MUTANTS_OUT:-/tmp/mutants}/$name; mkdir -p $out/logs
cd $root
fp=$(for a in "$@"; do f=${a%%:*}; [ -f "$f" ] || { echo "run.sh: no file $f" >&2; exit 2; }; printf '%s %s\n' "$(sha256sum < "$f" | cut -c1-64)" "$a"; done) || exit 2
if [ -n "${IN:-}" ]; then
  [ -f "$IN" ] || { echo "run.sh: IN=$IN: no such results file" >&2; exit 2; }
  [ -f "$IN.src" ] || { echo "run.sh: IN=$IN has no $IN.src (the listing's file hashes): list again without IN=" >&2; exit 2; }
  if [ "$(cat "$IN.src")" != "$fp" ]; then
    echo "run.sh: IN=$IN is stale: its mutants were listed from other contents (or ranges) than these; list again without IN=" >&2
    diff <(cat "$IN.src") <(printf '%s\n' "$fp") >&2
    exit 2
  fi
fi
go build -o $out/schema scripts/mutants/schema.go || exit 1
pkgdir=$(go list -f '{{.Dir}}' $pkg)
skip=$(cat $out/skip 2>/dev/null)
for try in 1 2 3 4 5 6 7 8; do
  $out/schema -out $out/s -skip "$skip" "$@" > $out/list.tsv
  if nice go test -c -o $out/pkg.test -overlay $out/s/overlay.json $pkg > $out/build.log 2>&1; then break; fi
  # leave out the mutants on the lines the compiler refused (a mismatched named type, say)
  bad=$(grep -oE '^[^ ]*/s/[a-z_0-9]+\.go:[0-9]+' $out/build.log | while IFS=: read f l; do sed -n "$((l-2)),$((l+1))p" $f | grep -oE 'qfMut__\([0-9]+\)' | grep -oE '[0-9]+'; done | sort -u | paste -sd, -)
  [ -z "$bad" ] && { head -20 $out/build.log; exit 1; }
  skip="$skip,$bad"
done
echo "$skip" > $out/skip
if [ -n "${IN:-}" ]; then
  gone=$(grep -P '\tSURVIVED$' $IN | cut -f1-4 | grep -vxFf $out/list.tsv)
  [ -n "$gone" ] && { echo "run.sh: IN=$IN is stale: these survivors are not in today's listing:" >&2; printf '%s\n' "$gone" | head -5 >&2; exit 2; }
fi
cd $pkgdir
start=$(date +%s)
skipargs=(); [ -n "${SKIP:-}" ] && skipargs=(-test.skip "$SKIP")
read -r -a extra <<< "${ARGS:-}"; skipargs+=("${extra[@]}")
QFMUT=0 nice $out/pkg.test -test.run "$re" "${skipargs[@]}" -test.count=1 > $out/base.log 2>&1 || { echo "the unmutated tests fail"; tail -20 $out/base.log; exit 1; }
b=$(( $(date +%s) - start )); T=${T:-$(( b*8 > 30 ? b*8 : 30 ))}
if [ -n "${IN:-}" ]; then
  list=$(grep -P '\tSURVIVED$' $IN | cut -f1-4); res=$out/recheck.tsv
else list=$(cat $out/list.tsv); res=$out/results.tsv; printf '%s\n' "$fp" > $res.src; fi
echo "unmutated: ${b}s, timeout ${T}s, $(printf '%s\n' "$list" | grep -c .) mutants"
: > $res
printf '%s\n' "$list" | while IFS=$'\t' read -r id loc op what; do
  [ -z "$id" ] && continue
  ( exec env QFMUT=$id timeout $T nice $out/pkg.test -test.run "$re" "${skipargs[@]}" -test.failfast -test.count=1 ) > $out/logs/$id 2>&1
  rc=$?
  if [ $rc = 124 ]; then v='KILLED(timeout)'; elif [ $rc = 0 ]; then v=SURVIVED; else v=KILLED; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$loc" "$op" "$what" "$v" >> $res
done
awk -F'\t' '{print $5}' $res | sort | uniq -c
