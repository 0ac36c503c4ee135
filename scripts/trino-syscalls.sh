#!/usr/bin/env bash
# trino-syscalls.sh BIN [N]: what a Trino HTTP SELECT 1 costs a standalone daemon BIN (#22) in
# system calls and thread switches, counted: the daemon
# (qf_trino_start: only its Trino port, postAnswerClients: benchtrino/, so one exchange a
# statement) in front of the local PostgreSQL's database "postgres", run with
# QUERYFLUX_SPIN_MICROS=${SPIN:-0} (0: its reads never spin, each wait is one poller sleep, so the
# reads and writes are the same whatever the load; a spinning read is a read call a turn). The
# runtime's own calls (futex, epoll_pwait, nanosleep) and the switches depend on what its idle
# threads find, which load changes: compare builds in one sitting, with uptime's load. After a warm-up
# of 300 statements it counts over `benchtrino -n N` (default 5000):
#   switches  the voluntary and involuntary context switches of all its threads (/proc/PID/task/*/status)
#   syscalls  every system call of all its threads, by name (strace -f -c, a second run of N;
#             ptrace slows each call, so this run's timing is not the daemon's)
# per statement. Ports: P (Trino) and A (admin), default 20712 and 20713 (add your port offset).
#
#	go build -o /tmp/qf ./cmd/queryflux && P=21012 A=21013 scripts/trino-syscalls.sh /tmp/qf 5000
set -euo pipefail
BIN=$(readlink -f "$1") N=${2:-5000}
P=${P:-20712} A=${A:-20713} OUT=${OUT:-/tmp/trino-syscalls}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/probelib.sh"
mkdir -p "$OUT"
[ -x "$OUT/benchtrino" ] && [ "$OUT/benchtrino" -nt "$ROOT/scripts/benchtrino/main.go" ] ||
	(cd "$ROOT" && go build -o "$OUT/benchtrino" ./scripts/benchtrino)
QF_PID=
trap '[ -n "$QF_PID" ] && kill "$QF_PID" 2>/dev/null || true' EXIT
qf_trino_start "$OUT" daemon "$P" "$A" ', postAnswerClients: ["benchtrino/"]' "$BIN" env QUERYFLUX_SPIN_MICROS="${SPIN:-0}"
URL=http://127.0.0.1:$P
switches() { # the voluntary and involuntary switches of every thread of QF_PID
	cat /proc/"$QF_PID"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v + 0, n + 0}'
}
"$OUT/benchtrino" -trino "$URL" -user postgres -n 300 >/dev/null
read -r v0 n0 < <(switches)
read -r p50 _ < <("$OUT/benchtrino" -trino "$URL" -user postgres -n "$N")
read -r v1 n1 < <(switches)
stmts=$((N + 20))
echo "switches a statement: voluntary $(awk -v d=$((v1 - v0)) -v n=$stmts 'BEGIN {printf "%.2f", d / n}'), involuntary $(awk -v d=$((n1 - n0)) -v n=$stmts 'BEGIN {printf "%.2f", d / n}') (p50 $p50 us); $(uptime | sed 's/.*load/load/')"
strace -f -c -o "$OUT/strace.txt" -p "$QF_PID" 2>"$OUT/strace.log" &
ST=$!
sleep 1
"$OUT/benchtrino" -trino "$URL" -user postgres -n "$N" >/dev/null
kill -INT "$ST"
wait "$ST" 2>/dev/null || true
echo "system calls a statement (strace -f -c; $(uptime | sed 's/.*load/load/')):"
awk -v n=$stmts '$1 ~ /^[0-9.]+$/ && NF >= 5 && $4 / n >= 0.005 {printf "  %-16s %8.3f\n", $NF, $4 / n}' "$OUT/strace.txt"
