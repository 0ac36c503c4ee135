#!/usr/bin/env bash
# relaypair.sh SECS ROUNDS A B: two scripts/benchrelay relays side by side (A and B are benchrelay
# flags, e.g. -loop and -uring), each under its own pgbench -S -c 8 -j 2 at the same time, for
# SECS seconds, ROUNDS times: a paired A/B whose two sides share the machine's load of the moment
# (on a machine shared with other work, sequential rounds see different loads). Prints per round
# each relay's tps and CPU us per transaction (/proc/PID/stat, user+system and user). RELAY=PATH
# runs a benchrelay binary built elsewhere. Database qf_passprobe (scripts/passprobe.sh makes it).
# MYSQL=1: to MariaDB on 3306 instead, each relay under scripts/benchclient -c 8 (SELECT 1); add
# -raw to the flags there. The flags come after -listen and -upstream, so "-upstream
# unix:/run/mysqld/mysqld.sock" in one of them relays to MariaDB's Unix socket instead.
set -euo pipefail
SECS=$1 ROUNDS=$2 A=$3 B=$4
DB=qf_passprobe
export PGSSLMODE=disable
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/relaypair.XXXX)
if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
UP=5432
if [ "${MYSQL:-0}" = 1 ]; then UP=3306; (cd "$ROOT" && go build -o "$TMP/benchclient" ./scripts/benchclient); fi
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(freeport) PB=$(freeport)
"$TMP/benchrelay" -listen 127.0.0.1:$PA -upstream 127.0.0.1:$UP $A >"$TMP/a.log" 2>&1 &
IA=$!
"$TMP/benchrelay" -listen 127.0.0.1:$PB -upstream 127.0.0.1:$UP $B >"$TMP/b.log" 2>&1 &
IB=$!
trap 'kill $IA $IB 2>/dev/null; rm -rf "$TMP"' EXIT
for p in $PA $PB; do for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done; done
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13, $12}' /proc/$1/stat; }
bench() {
	if [ "$UP" = 3306 ]; then "$TMP/benchclient" -dsn "root@tcp(127.0.0.1:$2)/mysql" -c 8 -d "${1}s" | awk -v s="$1" '{printf "%d %d\n", $3 * s, $3}'; return; fi
	pgbench -n -S -c 8 -j 2 -T "$1" -h 127.0.0.1 -p "$2" -U postgres $DB 2>&1 | awk '/actually processed/{n=$NF} /^tps/{t=int($3)} END{print n, t}'
}
bench 2 $PA >/dev/null & W=$!; bench 2 $PB >/dev/null; wait $W
for r in $(seq "$ROUNDS"); do
	read -r ta ua < <(ticks $IA); read -r tb ub < <(ticks $IB)
	bench "$SECS" $PA >"$TMP/ra" & W=$!; bench "$SECS" $PB >"$TMP/rb"; wait $W
	read -r ta1 ua1 < <(ticks $IA); read -r tb1 ub1 < <(ticks $IB)
	read -r na tpa <"$TMP/ra"; read -r nb tpb <"$TMP/rb"
	hz=$(getconf CLK_TCK)
	awk -v r=$r -v A="$A" -v B="$B" -v na=$na -v nb=$nb -v tpa=$tpa -v tpb=$tpb -v ta=$((ta1-ta)) -v tb=$((tb1-tb)) -v ua=$((ua1-ua)) -v ub=$((ub1-ub)) -v hz=$hz -v ld="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN{printf "round %d %s tps=%d cpu_us_per_tx=%.1f usr=%.1f | %s tps=%d cpu_us_per_tx=%.1f usr=%.1f | diff=%.1f load=%s\n", r, A, tpa, ta*1e6/hz/na, ua*1e6/hz/na, B, tpb, tb*1e6/hz/nb, ub*1e6/hz/nb, ta*1e6/hz/na-tb*1e6/hz/nb, ld}'
done
