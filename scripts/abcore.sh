#!/usr/bin/env bash
# abcore.sh: A/B of queryflux binaries on the core query path (the Arrow path: settings.passthrough
# false; PASSTHROUGH=true: the passthrough, the pg group in transaction pool mode), interleaved.
# Each binary runs as a standalone daemon with a Trino, a PostgreSQL and a
# MySQL port (the clusters of scripts/bench-proxy.sh); every round runs each client against each
# daemon in turn, and prints per run: p50 (pg1: mean latency in ms; pg8: tps), queries, the
# daemon's CPU per query (utime + stime from /proc/PID/stat) and its allocations per query (Go's
# go_memstats_mallocs_total and alloc_bytes_total from the admin API's /metrics, which do not
# depend on the machine's load).
#
#	scripts/abcore.sh ROUNDS SECONDS name=binary...   # e.g. base=/tmp/qf-main new=bin/queryflux
#
# The binary "pgbouncer" (e.g. bouncer=pgbouncer) is PgBouncer in transaction pool mode instead, as in
# scripts/bench-proxy.sh, and "loop-relay" is scripts/benchrelay -loop (bench-proxy's loop-relay row):
# rows for the pg clients only, CPU per query from /proc stat (no allocation counts).
#
# PostgreSQL clients connect with PGSSLMODE=disable (the relay relays no TLS).
# Clients (CLIENTS, default "trino pg1 pg8 my1"): trino is scripts/benchtrino (SELECT 1, one
# kept-alive HTTP connection); pg1 pgbench -c 1 -M extended SELECT 1; pg8 pgbench -S -c 8; my1
# and my8 scripts/benchclient -c 1 and -c 8 (MariaDB on 127.0.0.1:3306; p50 is its p50 in us). Database: $DB (default qf_abcore),
# created with pgbench -i when missing. Daemons and clients run at nice 10.
set -euo pipefail
ROUNDS=$1 SECS=$2
shift 2
DB=${DB:-qf_abcore}
export PGSSLMODE=disable
TMP=$(mktemp -d /tmp/abcore.XXXX)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HZ=$(getconf CLK_TCK)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
mem() { [ -n "$1" ] || { echo "0 0"; return; }; curl -s "http://127.0.0.1:$1/metrics" | awk '/^go_memstats_mallocs_total /{m=$2} /^go_memstats_alloc_bytes_total /{b=$2} END{printf "%.0f %.0f\n", m, b}'; }
per() { awk -v a="$1" -v b="$2" -v n="$3" -v s="$4" 'BEGIN{if (n > 0) printf "%.1f", (b - a) * s / n; else print "-"}'; }

(cd "$ROOT" && go build -o "$TMP/benchtrino" ./scripts/benchtrino && go build -o "$TMP/benchclient" ./scripts/benchclient && go build -o "$TMP/benchrelay" ./scripts/benchrelay)
if ! psql -qAt -h 127.0.0.1 -U postgres -d "$DB" -c "select 1 from pgbench_accounts limit 1" >/dev/null 2>&1; then
	psql -q -h 127.0.0.1 -U postgres -d postgres -c "drop database if exists $DB" -c "create database $DB" >/dev/null
	pgbench -i -q -s 1 -h 127.0.0.1 -U postgres "$DB" >/dev/null 2>&1
fi
echo "SELECT 1;" >"$TMP/select1.sql"

declare -A PID TR PG MY AD
NAMES=()
for arg in "$@"; do
	name=${arg%%=*} bin=${arg#*=}
	NAMES+=("$name")
	if [ "$bin" = pgbouncer ]; then
		PG[$name]=$(freeport) AD[$name]=
		printf '[databases]\n%s = host=127.0.0.1 port=5432 dbname=%s user=postgres\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %s\nunix_socket_dir =\nauth_type = trust\nauth_file = %s\npool_mode = transaction\nmax_client_conn = 200\ndefault_pool_size = 16\nlogfile = %s\n' \
			"$DB" "$DB" "${PG[$name]}" "$TMP/userlist.txt" "$TMP/$name.log" >"$TMP/$name.ini"
		echo '"postgres" ""' >"$TMP/userlist.txt"
		chmod 755 "$TMP" && chmod 644 "$TMP/$name.ini" "$TMP/userlist.txt" && touch "$TMP/$name.log" && chmod 666 "$TMP/$name.log"
		USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u postgres)
		nice -n 10 pgbouncer "${USER_FLAG[@]}" "$TMP/$name.ini" >"$TMP/$name.out" 2>&1 &
		PID[$name]=$! PIDS+=($!)
		continue
	fi
	if [ "$bin" = loop-relay ]; then
		PG[$name]=$(freeport) AD[$name]=
		nice -n 10 "$TMP/benchrelay" -loop -listen "127.0.0.1:${PG[$name]}" -upstream 127.0.0.1:5432 >"$TMP/$name.log" 2>&1 &
		PID[$name]=$! PIDS+=($!)
		continue
	fi
	TR[$name]=$(freeport) PG[$name]=$(freeport) MY[$name]=$(freeport) AD[$name]=$(freeport)
	cat >"$TMP/$name.yaml" <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:${AD[$name]}"}
  frontends:
    trino: {enabled: true, listen: "127.0.0.1:${TR[$name]}"}
    postgres: {enabled: true, listen: "127.0.0.1:${PG[$name]}"}
    mysql: {enabled: true, listen: "127.0.0.1:${MY[$name]}"}
settings: {passthrough: ${PASSTHROUGH:-false}, security: {trustLoopback: true}}
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: $DB, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}
  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}
clusterGroups:
  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}
  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}
routers:
  - {type: protocolBased, postgres: pg, mysql: maria}
routingFallback: pg
YAML
	nice -n 10 "$bin" serve --config "$TMP/$name.yaml" >"$TMP/$name.log" 2>&1 &
	PID[$name]=$! PIDS+=($!)
done
sleep 2

for r in $(seq 1 "$ROUNDS"); do
	for name in "${NAMES[@]}"; do
		for client in ${CLIENTS:-trino pg1 pg8 my1}; do
			if [ -z "${AD[$name]}" ] && [ "${client#pg}" = "$client" ]; then continue; fi # PgBouncer, the relay: pg clients only
			t0=$(ticks "${PID[$name]}")
			read -r m0 b0 < <(mem "${AD[$name]}")
			case $client in
			trino) read -r p50 _ n _ < <(nice -n 10 "$TMP/benchtrino" -trino "http://127.0.0.1:${TR[$name]}" -user postgres -d "${SECS}s") ;;
			pg1 | pg8)
				if [ "$client" = pg1 ]; then
					out=$(cd "$TMP" && nice -n 10 pgbench -n -c 1 -M extended -T "$SECS" -f select1.sql -h 127.0.0.1 -p "${PG[$name]}" -U postgres "$DB" 2>&1)
					p50=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1ms/p')
				else
					out=$(nice -n 10 pgbench -n -S -c 8 -j 2 -T "$SECS" -h 127.0.0.1 -p "${PG[$name]}" -U postgres "$DB" 2>&1)
					p50=$(echo "$out" | sed -n 's/^tps = \([0-9]*\).*/\1tps/p')
				fi
				n=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p') ;;
			my1 | my8)
				read -r p50 _ qps < <(nice -n 10 "$TMP/benchclient" -dsn "queryflux@tcp(127.0.0.1:${MY[$name]})/mysql" -c "${client#my}" -d "${SECS}s")
				n=$((qps * SECS)) ;;
			esac
			t1=$(ticks "${PID[$name]}")
			read -r m1 b1 < <(mem "${AD[$name]}")
			echo "$(date -u +%H:%M:%S) r$r $name $client p50=$p50 n=$n cpu_us/q=$(per "$t0" "$t1" "$n" $((1000000 / HZ))) allocs/q=$(per "$m0" "$m1" "$n" 1) B/q=$(per "$b0" "$b1" "$n" 1) load=$(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
