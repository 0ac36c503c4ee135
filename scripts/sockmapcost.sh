#!/usr/bin/env bash
# sockmapcost.sh SECS [ROUNDS]: what one relay hop costs the machine per MySQL statement, for the
# event-loop relay on io_uring (benchrelay -loop -raw) and the kernel splice (benchrelay -sockmap),
# read from a machine-wide CPU profile (perf record -a -g, F=${F:-999} Hz) under benchclient -c ${C:-8}
# SELECT 1, so that other processes' load does not enter the figure: the ring relay's cost is its
# own thread's samples (its system calls carry the peers' loopback receives in softirq); the
# splice's is the samples of the kworkers that run sk_psock_backlog (the redirected send, the
# peer's receive in its softirq) plus the samples under strp_data_ready / sk_psock_verdict
# (the parser and the verdict program, run in the softirq of whoever sent). TARGETS (default
# "loop-ring sockmap") may name sockmap-results (benchrelay -sockmap-results: requests read by a
# goroutine a client, answers spliced) and results-ring (the requests on the event loop on
# io_uring, -loop -sockmap-results): their cost is the relay's own samples (the request direction) plus
# the kworkers' and the verdict's as for sockmap. Prints per round and
# target: qps, us of CPU per statement, and the split. RELAY/BENCHCLIENT=PATH use binaries built
# elsewhere. Root (perf -a).
set -euo pipefail
SECS=$1 ROUNDS=${2:-1} C=${C:-8} F=${F:-999}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/sockmapcost.XXXX)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
if [ -n "${BENCHCLIENT:-}" ]; then cp "$BENCHCLIENT" "$TMP/benchclient"; else (cd "$ROOT" && go build -o "$TMP/benchclient" ./scripts/benchclient); fi
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for r in $(seq "$ROUNDS"); do
	for t in ${TARGETS:-loop-ring sockmap}; do
		p=$(freeport)
		if [ $t = results-ring ]; then
			QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -sockmap-results -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/log" 2>&1 &
		elif [ $t = sockmap-results ]; then
			"$TMP/benchrelay" -sockmap-results -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/log" 2>&1 &
		elif [ $t = sockmap ]; then
			"$TMP/benchrelay" -sockmap -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/log" 2>&1 &
		else
			QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -raw -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/log" 2>&1 &
		fi
		PID=$!
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
		if ! kill -0 $PID 2>/dev/null; then echo "$t: the relay did not start: $(cat "$TMP/log")"; PID=; continue; fi
		"$TMP/benchclient" -dsn "root@tcp(127.0.0.1:$p)/mysql" -c "$C" -d 2s >/dev/null
		perf record -a -g -F "$F" -o "$TMP/perf.data" -- "$TMP/benchclient" -dsn "root@tcp(127.0.0.1:$p)/mysql" -c "$C" -d "${SECS}s" >"$TMP/bc" 2>/dev/null
		kill $PID 2>/dev/null || true
		wait $PID 2>/dev/null || true
		PID=
		read -r _ _ qps <"$TMP/bc"
		perf script -i "$TMP/perf.data" -F comm,pid,ip,sym 2>/dev/null | awk -v t=$t -v n=$((qps * SECS)) -v f=$F -v qps=$qps -v ld="$(cut -d' ' -f1 /proc/loadavg)" '
			function flush() {
				if (!have) return
				if (t == "loop-ring" && comm ~ /^benchrelay/) { own++ }
				if (t ~ /results/ && comm ~ /^benchrelay/) { mine++ }
				else if (t ~ /sockmap|results/) {
					if (comm ~ /^kworker/ && backlog) own++
					else if (comm ~ /^kworker/) kw++
					else if (verdict) soft++
				}
				all++
				have = 0; backlog = 0; verdict = 0
			}
			/^[^ \t]/ { flush(); comm = $1; have = 1; next }
			/sk_psock_backlog/ { backlog = 1 }
			/strp_data_ready|sk_psock_verdict_data_ready|sk_psock_strp_data_ready/ { verdict = 1 }
			END {
				flush()
				us = 1e6 / f / n
				printf "%-15s qps %6d  hop_us/stmt %.2f", t, qps, (own + soft + mine) * us
				if (t ~ /results/) printf " [the relay'"'"'s request path %.2f]", mine * us
				if (t ~ /sockmap|results/) printf " (kworker backlog %.2f, parser+verdict in the sender'"'"'s softirq %.2f; other kworker %.2f)", own * us, soft * us, kw * us
				printf "  load %s\n", ld
			}'
	done
done
