#!/usr/bin/env bash
# myab.sh ROUNDS TARGET...: the MySQL rows of scripts/bench-proxy.sh, alone and interleaved, for
# A/Bs of the MySQL passthrough: per round and target, scripts/benchclient -c 1 for LAT_SECS
# (default 2) seconds (p50, p99), then -c $CLIENTS (default 8) for TPS_SECS (default 4) seconds
# (qps, and the target process's CPU per statement from /proc/PID/stat), then the medians over
# the rounds. A TARGET is "direct" (MariaDB on 127.0.0.1:3306, root), "loop-relay"
# (scripts/benchrelay -loop -raw on epoll; RELAY=PATH runs one built elsewhere), "loop-ring" (the
# same on io_uring, as bench-proxy's loop-ring row), "ring-spin" (loop-ring whose waits spin for up to
# 200 us where the machine has idle CPU, as the daemon's loop does: the bare relay with the daemon's
# spinner), "sockmap" / "sockmap-verdict" (benchrelay
# -sockmap, with and without the stream parser), "sockmap-results" (benchrelay -sockmap-results:
# each request read by a goroutine, the answers spliced), "results-ring" (the same with the
# requests read by the event loop on io_uring: -loop -sockmap-results), "haproxy" (mode tcp, one
# thread, as bench-proxy runs it) or NAME=BIN: a standalone queryflux daemon of binary BIN in
# bench-proxy's passthrough configuration (with its PostgreSQL frontend and cluster too, as there,
# when PG=1: PostgreSQL on 127.0.0.1:5432, database qf_bench made by bench-proxy.sh; each such
# daemon first serves pgbench -S -c 8 for 3 s, so that its PostgreSQL loop runs too, as in
# bench-proxy, where the PostgreSQL rows come first). Run it under flock /work/bench.lock: it is a
# timing run. Beside the target's CPU per statement each throughput run prints every party's:
# the client (benchclient's own user+system time), MariaDB (its server process, which other
# users of the server also charge) and the whole machine's busy CPU (/proc/stat, other
# processes included): on a quiet 2-core machine a saturated row's qps is about 2 s of CPU a
# second over the sum of the parties' CPU per statement, so the split says which party a
# target's gap to direct is spent in.
set -euo pipefail
ROUNDS=$1
shift
LAT_SECS=${LAT_SECS:-2} TPS_SECS=${TPS_SECS:-4} CLIENTS=${CLIENTS:-8}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/myab.XXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "myab: nothing listens on $1" >&2; exit 1; }
(cd "$ROOT" && go build -o "$TMP/benchclient" ./scripts/benchclient)
declare -A DSN PID
NAMES=()
for t in "$@"; do
	case $t in
	direct)
		DSN[$t]="root@tcp(127.0.0.1:3306)/mysql" PID[$t]=
		;;
	loop-relay | loop-ring | ring-spin)
		if [ ! -x "$TMP/benchrelay" ]; then
			if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
		fi
		p=$(freeport) be=uring spin=0
		[ "$t" = loop-relay ] && be=epoll
		[ "$t" = ring-spin ] && spin=200us
		QUERYFLUX_RELAY_BACKEND=$be "$TMP/benchrelay" -loop -raw -spin $spin -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/$t.log" 2>&1 &
		PIDS+=($!) PID[$t]=$!
		DSN[$t]="root@tcp(127.0.0.1:$p)/mysql"
		waitport $p
		;;
	sockmap | sockmap-verdict | sockmap-results | results-ring)
		if [ ! -x "$TMP/benchrelay" ]; then
			if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
		fi
		p=$(freeport) flags=-sockmap
		[ "$t" = sockmap-verdict ] && flags="-sockmap -sockmap-verdict-only"
		[ "$t" = sockmap-results ] && flags=-sockmap-results
		[ "$t" = results-ring ] && flags="-loop -sockmap-results"
		QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" $flags -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 >"$TMP/$t.log" 2>&1 &
		PIDS+=($!) PID[$t]=$!
		DSN[$t]="root@tcp(127.0.0.1:$p)/mysql"
		waitport $p
		;;
	haproxy)
		p=$(freeport)
		printf 'global\n  nbthread 1\n  maxconn 1000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten my\n  bind 127.0.0.1:%s\n  server my 127.0.0.1:3306\n' $p >"$TMP/haproxy.cfg"
		haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
		PIDS+=($!) PID[$t]=$!
		DSN[$t]="root@tcp(127.0.0.1:$p)/mysql"
		waitport $p
		;;
	*=*)
		name=${t%%=*} bin=${t#*=} t=$name
		my=$(freeport) pg=$(freeport) ad=$(freeport)
		{
			printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  frontends:\n' $ad
			[ "${PG:-0}" = 1 ] && printf '    postgres: {enabled: true, listen: "127.0.0.1:%s"}\n' $pg
			printf '    mysql: {enabled: true, listen: "127.0.0.1:%s"}\n' $my
			printf 'settings: {passthrough: true, security: {trustLoopback: true}}\nclusters:\n'
			[ "${PG:-0}" = 1 ] && printf '  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: qf_bench, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}\n'
			printf '  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}\nclusterGroups:\n'
			[ "${PG:-0}" = 1 ] && printf '  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: transaction}\n'
			printf '  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}\nrouters:\n'
			if [ "${PG:-0}" = 1 ]; then printf '  - {type: protocolBased, postgres: pg, mysql: maria}\nroutingFallback: pg\n'; else printf '  - {type: protocolBased, mysql: maria}\nroutingFallback: maria\n'; fi
		} >"$TMP/$name.yaml"
		"$bin" serve --config "$TMP/$name.yaml" >"$TMP/$name.log" 2>&1 &
		PIDS+=($!) PID[$name]=$!
		DSN[$name]="queryflux@tcp(127.0.0.1:$my)/mysql"
		waitport $my
		if [ "${PG:-0}" = 1 ]; then PGSSLMODE=disable pgbench -n -S -c 8 -j 2 -T 3 -h 127.0.0.1 -p $pg -U postgres qf_bench >/dev/null 2>&1; fi
		;;
	esac
	NAMES+=("$t")
done
ticks() { if [ -n "$1" ]; then awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; else echo 0; fi; }
MARIADB=$(pidof mariadbd || pidof mysqld || true)
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; } # user nice system irq softirq
perq() { awk -v a="$1" -v b="$2" -v n="$3" -v hz=$(getconf CLK_TCK) 'BEGIN{if (a == "" || n == 0) print "-"; else printf "%.1f", (b-a)*1e6/hz/n}'; }
declare -A P50 P99 QPS CPU CCPU MCPU BUSY
for r in $(seq "$ROUNDS"); do
	for t in "${NAMES[@]}"; do
		read -r p50 p99 _ < <("$TMP/benchclient" -dsn "${DSN[$t]}" -c 1 -d "${LAT_SECS}s")
		t0=$(ticks "${PID[$t]}") m0=$(ticks "$MARIADB") b0=$(busy)
		read -r _ _ q < <(/usr/bin/time -f '%U %S' -o "$TMP/client.time" "$TMP/benchclient" -dsn "${DSN[$t]}" -c "$CLIENTS" -d "${TPS_SECS}s")
		t1=$(ticks "${PID[$t]}") m1=$(ticks "$MARIADB") b1=$(busy)
		n=$((q * TPS_SECS))
		cpu=$(perq "$t0" "$t1" "$n")
		[ -n "${PID[$t]}" ] || cpu=-
		ccpu=$(awk -v n=$n '{if (n == 0) print "-"; else printf "%.1f", ($1+$2)*1e6/n}' "$TMP/client.time")
		mcpu=$(perq "$m0" "$m1" "$n") bcpu=$(perq "$b0" "$b1" "$n")
		printf 'round %d %-12s p50_us %5s p99_us %5s qps_c%s %6s cpu_us/q %5s client %5s mariadb %5s machine %5s load %s\n' "$r" "$t" "$p50" "$p99" "$CLIENTS" "$q" "$cpu" "$ccpu" "$mcpu" "$bcpu" "$(cut -d' ' -f1 /proc/loadavg)"
		P50[$t]+="$p50 " P99[$t]+="$p99 " QPS[$t]+="$q " CPU[$t]+="$cpu " CCPU[$t]+="$ccpu " MCPU[$t]+="$mcpu " BUSY[$t]+="$bcpu "
	done
done
med() { tr ' ' '\n' | { grep -v '^$' || true; } | sort -g | awk '{v[NR]=$1} END{if (NR == 0) print "-"; else if (v[1] == "-") print "-"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
echo "medians over $ROUNDS rounds (latency -c 1 ${LAT_SECS}s, qps -c $CLIENTS ${TPS_SECS}s):"
printf '%-12s %7s %7s %9s %10s %9s\n' target p50_us p99_us added_p50 qps vs_direct
d50=$(echo "${P50[direct]:-}" | med) dq=$(echo "${QPS[direct]:-}" | med)
for t in "${NAMES[@]}"; do
	p50=$(echo "${P50[$t]}" | med) q=$(echo "${QPS[$t]}" | med)
	printf '%-12s %7s %7s %9s %10s %9s   cpu_us/q %s client %s mariadb %s machine %s\n' "$t" "$p50" "$(echo "${P99[$t]}" | med)" \
		"$(awk -v a="$d50" -v b="$p50" 'BEGIN{if (a == "-") print "-"; else print b-a}')" "$q" \
		"$(awk -v a="$dq" -v b="$q" 'BEGIN{if (a == "-" || a == 0) print "-"; else printf "%.2f", b/a}')" "$(echo "${CPU[$t]}" | med)" \
		"$(echo "${CCPU[$t]}" | med)" "$(echo "${MCPU[$t]}" | med)" "$(echo "${BUSY[$t]}" | med)"
done
