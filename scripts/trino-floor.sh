#!/usr/bin/env bash
# trino-floor.sh [N]: what one loopback HTTP exchange with no proxy behind it costs (#22's
# floor-lite1 row: benchtrino -floor-lite -floor-one, a SELECT 1 answered whole in its POST by
# internal/httplite), taken apart:
#   counts   per exchange, for each client (below) and for the server: system calls by name
#            (strace -f -c), context switches and CPU migrations (perf stat's software events),
#            CPU us (perf's task-clock; at load it is inflated by cache misses, not work); from
#            an execution trace of the client (benchtrino -trace): its goroutines' parks, the
#            wakes of one goroutine by another (hand-offs), and the Ps started (thread wake-ups)
#   times    p50/p90/p99 us of the same exchanges, and of a C ping-pong (scripts/pingpong: the
#            kernel's loopback TCP round trip with no Go and no HTTP), each again with a
#            SCHED_IDLE spinner on every CPU (chrt -i 0: no CPU halts between messages). Only a
#            run at load < 3 gives times: uptime is printed beside each.
# The clients: http (benchtrino's default, net/http's client as trino-go-client uses it),
# http-1p (the same with GOMAXPROCS=1), raw (benchtrino -client raw: no net/http). N exchanges
# each (default 5000). Port: P (default 20751; add your port offset). COUNTS=0 or TIMES=0 skips a part.
#
#	flock /work/bench.lock scripts/trino-floor.sh 5000
set -euo pipefail
N=${1:-5000} P=${P:-20751} OUT=${OUT:-/tmp/trino-floor} COUNTS=${COUNTS:-1} TIMES=${TIMES:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
[ -x "$OUT/benchtrino" ] && [ "$OUT/benchtrino" -nt "$ROOT/scripts/benchtrino/main.go" ] ||
	(cd "$ROOT" && go build -o "$OUT/benchtrino" ./scripts/benchtrino)
[ -x "$OUT/pingpong" ] && [ "$OUT/pingpong" -nt "$ROOT/scripts/pingpong/pingpong.c" ] ||
	cc -O2 -Wall -o "$OUT/pingpong" "$ROOT/scripts/pingpong/pingpong.c"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
"$OUT/benchtrino" -floor-lite "127.0.0.1:$P" -floor-one >"$OUT/server.log" 2>&1 &
SV=$!
PIDS+=($SV)
sleep 0.5
URL=http://127.0.0.1:$P
load() { uptime | sed 's/.*load average: //'; }
client() { # client NAME: the command line of benchtrino as client NAME
	case $1 in
	http) echo "$OUT/benchtrino -trino $URL" ;;
	http-1p) echo "env GOMAXPROCS=1 $OUT/benchtrino -trino $URL" ;;
	raw) echo "$OUT/benchtrino -trino $URL -client raw" ;;
	esac
}
per() { awk -v n=$((N + 20)) -v v="$1" 'BEGIN {printf "%.2f", v / n}'; }
perfvals() { # perfvals FILE: context switches, migrations, task-clock ms of perf stat -x, FILE
	awk -F, '$3 == "context-switches" {c = $1} $3 == "cpu-migrations" {m = $1} $3 == "task-clock" {t = $1} END {print c + 0, m + 0, t + 0}' "$1"
}
syscalls() { # syscalls FILE: strace -c's calls per exchange, the largest first
	awk -v n=$((N + 20)) '$1 ~ /^[0-9.]+$/ && NF >= 5 && $4 / n >= 0.05 {printf " %s %.2f", $NF, $4 / n}' "$1"
}
EV=context-switches,cpu-migrations,task-clock
[ "$COUNTS" = 1 ] && echo "counts per exchange ($N exchanges; load $(load)):"
for c in http http-1p raw; do
	[ "$COUNTS" = 1 ] || break
	# shellcheck disable=SC2046 # the command line
	perf stat -x, -e $EV -o "$OUT/$c.client.perf" -- $(client "$c") -n "$N" >"$OUT/$c.out" &
	CL=$!
	perf stat -x, -e $EV -p "$SV" -o "$OUT/$c.server.perf" &
	PS=$!
	wait "$CL"
	kill -INT "$PS"
	wait "$PS" || true
	read -r cs mig ms < <(perfvals "$OUT/$c.client.perf")
	read -r scs smig sms < <(perfvals "$OUT/$c.server.perf")
	# shellcheck disable=SC2046
	strace -f -c -o "$OUT/$c.client.strace" $(client "$c") -n "$N" >/dev/null
	strace -f -c -o "$OUT/$c.server.strace" -p "$SV" 2>/dev/null &
	ST=$!
	sleep 0.5
	# shellcheck disable=SC2046
	$(client "$c") -n "$N" >/dev/null
	kill -INT "$ST"
	wait "$ST" || true
	# shellcheck disable=SC2046
	$(client "$c") -n "$N" -trace "$OUT/$c.trace" >/dev/null
	go tool trace -d=parsed "$OUT/$c.trace" 2>/dev/null | awk -v n=$((N + 20)) -v c="$c" '
		/StateTransition/ && /GoID=/ && /Running->Waiting/ {park++}
		/StateTransition/ && /GoID=/ && /Waiting->Runnable/ && $3 != "G=-1" {handoff++}
		/StateTransition/ && /ProcID=/ && /Idle->Running/ {procs++}
		END {printf "  %s client trace: parks %.2f, hand-offs %.2f, Ps started %.2f\n", c, park / n, handoff / n, procs / n}'
	echo "  $c client: switches $(per "$cs"), migrations $(per "$mig"), cpu $(per $((${ms%.*} * 1000))) us; calls$(syscalls "$OUT/$c.client.strace")"
	echo "  $c server: switches $(per "$scs"), migrations $(per "$smig"), cpu $(per $((${sms%.*} * 1000))) us; calls$(syscalls "$OUT/$c.server.strace")"
done
[ "$TIMES" = 1 ] || exit 0
BUSY=()
busy_start() { for _ in $(seq "$(nproc)"); do chrt -i 0 sh -c 'while :; do :; done' & BUSY+=($!) PIDS+=($!); done; }
busy_stop() { for p in "${BUSY[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; BUSY=(); }
echo "times, p50 p90 p99 us (client p50 p99 n requests/query post_p50 client_cpu_us for benchtrino):"
for busy in idle busy; do
	[ "$busy" = busy ] && busy_start
	echo "  C ping-pong, $busy, unpinned:  $("$OUT/pingpong" "$N" -1 -1 64) (load $(load))"
	echo "  C ping-pong, $busy, one CPU:   $("$OUT/pingpong" "$N" 0 0 64)"
	echo "  C ping-pong, $busy, two CPUs:  $("$OUT/pingpong" "$N" 0 1 64)"
	for c in http http-1p raw; do
		# shellcheck disable=SC2046
		echo "  $c, $busy: $($(client "$c") -n "$N") (load $(load))"
	done
	busy_stop
done
