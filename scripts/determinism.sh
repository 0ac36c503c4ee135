#!/bin/sh
# determinism.sh QFSIM SEED JOBS SCENARIO...: every scenario, at seeds SEED and SEED+1, must give
# the same trace hashes under GOMAXPROCS=1 (one seed at a time) and GOMAXPROCS=2 (both seeds at
# once, with the scheduler yielded at random at every task switch). JOBS scenarios are checked at
# a time: a GOMAXPROCS=1 run keeps one core busy, so on two cores two scenarios at once take
# about half the stage's wall time. The lines are printed in the scenarios' order, and the stage
# fails if any scenario failed.
set -u
if [ "$1" = --one ]; then
	qfsim=$2 seed=$3 f=$4
	run() { GOMAXPROCS=$1 "$qfsim" run "$f" --seed "$seed" --seeds 2 --parallel "$1" --no-shrink --json ${2:-} \
		| grep -o '"seed":[0-9]*,"trace_hash":"[^"]*"' || true; }
	b=$(run 1)
	c=$(run 2 --noise)
	[ "$(printf '%s\n' "$b" | grep -c trace_hash)" -eq 2 ] || { echo "determinism: $f printed no hashes"; exit 1; }
	[ "$b" = "$c" ] || { echo "determinism: $f: GOMAXPROCS=1 $b vs GOMAXPROCS=2 with scheduler noise $c"; exit 1; }
	echo "determinism: $f seeds $seed,$((seed+1)) $(echo $b | grep -o '"trace_hash":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' ')under GOMAXPROCS=1, and 2 with scheduler noise"
	exit 0
fi
qfsim=$1 seed=$2 jobs=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=0
for f in "$@"; do
	i=$((i+1))
	printf '%04d %s\n' "$i" "$f"
done | xargs -P "$jobs" -n 2 sh -c '"$0" --one "$1" "$2" "$5" >"$3/$4.out" 2>&1; echo $? >"$3/$4.rc"' \
	"$0" "$qfsim" "$seed" "$out"
rc=0
n=0
for f in "$@"; do
	n=$((n+1))
	k=$(printf '%04d' "$n")
	cat "$out/$k.out" 2>/dev/null
	[ "$(cat "$out/$k.rc" 2>/dev/null)" = 0 ] || { echo "determinism: $f failed"; rc=1; }
done
exit $rc
