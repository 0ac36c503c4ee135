#!/usr/bin/env bash
# bench-proxy.sh: QueryFlux's proxy overhead next to PgBouncer, on the local PostgreSQL
# (127.0.0.1:5432, user postgres, trust) and MariaDB (127.0.0.1:3306, root).
#
# Starts (all on free loopback ports, all stopped on exit): PgBouncer (transaction pooling),
# a Go byte relay (scripts/benchrelay: the floor of a Go proxy hop),
# a standalone queryflux (passthrough), a standalone queryflux with settings.passthrough: false
# (Arrow path), and a control plane + worker (capacity leases from the control plane). Then
# prints one table: single-client SELECT 1 latency (pgbench -c1 -M extended, per-transaction
# --log) and pgbench -S -c 8 TPS; and the same for the MySQL wire against MariaDB when the
# daemon serves it. Bounded: about 5-6 minutes.
#
# The machine is shared and its timings drift, so the targets are measured in ROUNDS interleaved
# rounds (every target once per round) and each figure is the median over the rounds.
#
# Environment: ROUNDS (3), LAT_SECS (3), TPS_SECS (6), CLIENTS (8), KEEP_TMP=1 keeps the temp dir,
# PROFILE=1 builds the daemon with -tags benchpprof and writes a 5 s CPU profile of the
# passthrough daemon under the pgbench -S load to $PROFILE_OUT (default /tmp/bench-proxy-cpu.prof)
# (go tool pprof -top bin/queryflux /tmp/bench-proxy-cpu.prof).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
LAT_SECS=${LAT_SECS:-3}
TPS_SECS=${TPS_SECS:-6}
CLIENTS=${CLIENTS:-8}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/bench-proxy.XXXXXX)
chmod 755 "$TMP"
PIDS=()
DB=qf_bench

cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ "${KEEP_TMP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

log() { echo "bench-proxy: $*" >&2; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { # port, name
	for _ in $(seq 1 100); do
		if (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "$2 did not listen on $1; its log:"; cat "$TMP/$2.log" >&2 || true; exit 1
}

# --- tools -------------------------------------------------------------------------------
if ! command -v pgbouncer >/dev/null; then
	log "pgbouncer missing: apt-get install -y pgbouncer"
	apt-get install -y pgbouncer >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y pgbouncer >/dev/null; }
fi
log "building bin/queryflux and the MySQL client"
TAGS=(); [ "${PROFILE:-0}" = 1 ] && TAGS=(-tags benchpprof)
(cd "$ROOT" && go build "${TAGS[@]}" -o bin/queryflux ./cmd/queryflux && go build -o "$TMP/benchclient" ./scripts/benchclient && go build -o "$TMP/benchrelay" ./scripts/benchrelay)
QF="$ROOT/bin/queryflux"

# --- data --------------------------------------------------------------------------------
psql -q -h 127.0.0.1 -U postgres -d postgres -c "drop database if exists $DB with (force)" -c "create database $DB" >/dev/null
pgbench -i -q -s 1 -h 127.0.0.1 -p 5432 -U postgres "$DB" >/dev/null 2>&1
MYSQL_OK=0
if mariadb -h 127.0.0.1 -P 3306 -u root -e "select 1" >/dev/null 2>&1; then MYSQL_OK=1; fi

# --- PgBouncer ---------------------------------------------------------------------------
BOUNCER=$(freeport)
cat >"$TMP/pgbouncer.ini" <<INI
[databases]
$DB = host=127.0.0.1 port=5432 dbname=$DB user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER
unix_socket_dir =
auth_type = trust
auth_file = $TMP/userlist.txt
pool_mode = transaction
max_client_conn = 200
default_pool_size = 16
logfile = $TMP/pgbouncer.log
INI
echo '"postgres" ""' >"$TMP/userlist.txt"
chmod 644 "$TMP"/pgbouncer.ini "$TMP"/userlist.txt
touch "$TMP/pgbouncer.log" && chmod 666 "$TMP/pgbouncer.log"
USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u postgres)
pgbouncer "${USER_FLAG[@]}" "$TMP/pgbouncer.ini" >"$TMP/pgbouncer.out" 2>&1 &
PIDS+=($!)
waitport "$BOUNCER" pgbouncer

# --- the floor: a Go byte relay (scripts/benchrelay) ----------------------------------------
RELAY=$(freeport)
"$TMP/benchrelay" -listen "127.0.0.1:$RELAY" -upstream 127.0.0.1:5432 >"$TMP/relay.log" 2>&1 &
PIDS+=($!)
waitport "$RELAY" relay

# --- queryflux daemons -------------------------------------------------------------------
clusters() {
	cat <<YAML
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
}

PPROF=$(freeport)
start_qf() { # name, args...
	local name=$1; shift
	local pprof=""; [ "$name" = passthrough ] && pprof=127.0.0.1:$PPROF
	QUERYFLUX_PPROF=$pprof "$QF" serve "$@" >"$TMP/$name.log" 2>&1 &
	PIDS+=($!)
}

standalone() { # name, passthrough(true|false) -> sets PG_<name>, MY_<name>
	local name=$1 pt=$2 pg my admin
	pg=$(freeport); my=$(freeport); admin=$(freeport)
	{
		cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$admin"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$pg"}
    mysql: {enabled: true, listen: "127.0.0.1:$my"}
settings: {passthrough: $pt}
YAML
		clusters
	} >"$TMP/$name.yaml"
	start_qf "$name" --config "$TMP/$name.yaml"
	waitport "$pg" "$name"
	printf -v "PG_$name" %s "$pg"; printf -v "MY_$name" %s "$my"
}

standalone passthrough true
standalone arrow false

SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
CPADMIN=$(freeport); CPPG=$(freeport)
{
	cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$CPADMIN"}
  workerApi: {enabled: true, secret: "$SECRET"}
  coordination: {mode: controlPlane}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$CPPG"}
YAML
	clusters
} >"$TMP/cp.yaml"
start_qf cp --config "$TMP/cp.yaml"
waitport "$CPADMIN" cp
PG_worker=$(freeport); MY_worker=$(freeport); OPS=$(freeport)
cat >"$TMP/worker.yaml" <<YAML
queryflux:
  role: worker
  controlPlane: {url: "http://127.0.0.1:$CPADMIN", secret: "$SECRET"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$PG_worker"}
    mysql: {enabled: true, listen: "127.0.0.1:$MY_worker"}
YAML
start_qf worker --config "$TMP/worker.yaml" --name bench-worker --ops-listen "127.0.0.1:$OPS"
waitport "$PG_worker" worker
# The worker answers "not configured" until its first config arrives from the control plane.
for _ in $(seq 1 100); do
	if psql -qAt -h 127.0.0.1 -p "$PG_worker" -U postgres -d "$DB" -c "select 1" >/dev/null 2>&1; then break; fi
	sleep 0.1
done

# --- measurements ------------------------------------------------------------------------
latency() { # port -> "p50 p99" in microseconds of SELECT 1, one client, extended protocol
	local dir; dir=$(mktemp -d "$TMP/lat.XXXX")
	echo "SELECT 1;" >"$dir/select1.sql"
	(cd "$dir" && pgbench -n -c 1 -M extended -T "$LAT_SECS" -f select1.sql --log --log-prefix=lat \
		-h 127.0.0.1 -p "$1" -U postgres "$DB" >"$dir/out" 2>&1) || { cat "$dir/out" >&2; echo "- -"; return; }
	cat "$dir"/lat* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {printf "%d %d\n", a[int(NR*0.5)+1], a[int(NR*0.99)+1]}'
}
tps() { # port -> pgbench -S -c N TPS
	local out
	out=$(pgbench -n -S -c "$CLIENTS" -j 2 -T "$TPS_SECS" -h 127.0.0.1 -p "$1" -U postgres "$DB" 2>&1) || { echo "$out" >&2; echo -; return; }
	echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1 | awk '{printf "%d\n", $1}'
}

# median of numbers (or "-" when none is a number)
median() { printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }

declare -A LAT TPS P50S P99S TPSS
TARGETS=(direct pgbouncer go-relay passthrough arrow worker)
declare -A PORT=([direct]=5432 [pgbouncer]=$BOUNCER [go-relay]=$RELAY [passthrough]=$PG_passthrough [arrow]=$PG_arrow [worker]=$PG_worker)
for round in $(seq 1 "$ROUNDS"); do
	for t in "${TARGETS[@]}"; do
		log "postgres round $round/$ROUNDS: $t (port ${PORT[$t]})"
		read -r p50 p99 <<<"$(latency "${PORT[$t]}")"
		P50S[$t]+="$p50 "; P99S[$t]+="$p99 "
		if [ "${PROFILE:-0}" = 1 ] && [ "$t" = passthrough ] && [ "$round" = 1 ]; then
			(sleep 1; curl -s -o "${PROFILE_OUT:-/tmp/bench-proxy-cpu.prof}" "http://127.0.0.1:$PPROF/debug/pprof/profile?seconds=4") &
		fi
		TPSS[$t]+="$(tps "${PORT[$t]}") "
	done
done
for t in "${TARGETS[@]}"; do
	# shellcheck disable=SC2086 # word splitting of the per-round lists is wanted
	LAT[$t]="$(median ${P50S[$t]}) $(median ${P99S[$t]})"; TPS[$t]=$(median ${TPSS[$t]})
done

declare -A MLAT MTPS MP50S MP99S MQPSS
MY_TARGETS=()
if [ "$MYSQL_OK" = 1 ]; then
	MY_TARGETS=(direct passthrough arrow worker)
	declare -A MYDSN=(
		[direct]="root@tcp(127.0.0.1:3306)/mysql"
		[passthrough]="queryflux@tcp(127.0.0.1:$MY_passthrough)/mysql"
		[arrow]="queryflux@tcp(127.0.0.1:$MY_arrow)/mysql"
		[worker]="queryflux@tcp(127.0.0.1:$MY_worker)/mysql"
	)
	for round in $(seq 1 "$ROUNDS"); do
		for t in "${MY_TARGETS[@]}"; do
			log "mysql round $round/$ROUNDS: $t"
			read -r p50 p99 _ < <("$TMP/benchclient" -dsn "${MYDSN[$t]}" -c 1 -d "${LAT_SECS}s" || echo "- - -")
			read -r _ _ q < <("$TMP/benchclient" -dsn "${MYDSN[$t]}" -c "$CLIENTS" -d "${TPS_SECS}s" || echo "- - -")
			MP50S[$t]+="$p50 "; MP99S[$t]+="$p99 "; MQPSS[$t]+="$q "
		done
	done
	for t in "${MY_TARGETS[@]}"; do
		# shellcheck disable=SC2086
		MLAT[$t]="$(median ${MP50S[$t]}) $(median ${MP99S[$t]})"; MTPS[$t]=$(median ${MQPSS[$t]})
	done
else
	log "MariaDB not reachable on 127.0.0.1:3306: MySQL rows skipped"
fi

# --- table -------------------------------------------------------------------------------
added() { # p50 of target minus direct's
	local d=${1%% *} x=${2%% *}
	if [[ $d =~ ^[0-9]+$ && $x =~ ^[0-9]+$ ]]; then echo $((x - d)); else echo -; fi
}
ratio() { if [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $1 -gt 0 ]]; then awk -v a="$2" -v b="$1" 'BEGIN{printf "%.2f", a/b}'; else echo -; fi; }

echo
printf "%-8s %-12s %10s %10s %12s %10s %9s\n" proto target "p50_us" "p99_us" "added_p50" "tps_c$CLIENTS" "vs_direct"
for t in "${TARGETS[@]}"; do
	read -r p50 p99 <<<"${LAT[$t]}"
	printf "%-8s %-12s %10s %10s %12s %10s %9s\n" postgres "$t" "$p50" "$p99" "$(added "${LAT[direct]}" "${LAT[$t]}")" "${TPS[$t]}" "$(ratio "${TPS[direct]}" "${TPS[$t]}")"
done
for t in "${MY_TARGETS[@]}"; do
	read -r p50 p99 <<<"${MLAT[$t]}"
	printf "%-8s %-12s %10s %10s %12s %10s %9s\n" mysql "$t" "$p50" "$p99" "$(added "${MLAT[direct]}" "${MLAT[$t]}")" "${MTPS[$t]}" "$(ratio "${MTPS[direct]}" "${MTPS[$t]}")"
done
echo
echo "medians of $ROUNDS interleaved rounds; latency: pgbench -n -c 1 -M extended -T $LAT_SECS (SELECT 1, per-transaction --log); tps: pgbench -n -S -c $CLIENTS -j 2 -T $TPS_SECS (simple protocol)"
echo "mysql: scripts/benchclient (SELECT 1, text protocol; latency 1 client ${LAT_SECS}s, qps $CLIENTS clients ${TPS_SECS}s); passthrough relays MariaDB's packets, arrow is settings.passthrough: false"
RTT=$("$TMP/benchrelay" -rtt 3s)
verdict() { if awk "BEGIN{exit !($1)}"; then echo met; else echo "not met"; fi; }
pt=$(added "${LAT[direct]}" "${LAT[passthrough]}"); pb=$(added "${LAT[direct]}" "${LAT[pgbouncer]}"); wk=$(added "${LAT[direct]}" "${LAT[worker]}")
echo "goal checks (this run): loopback round trip p50 (scripts/benchrelay -rtt) ${RTT} us"
num() { [[ $1 =~ ^-?[0-9]+$ ]]; }
if num "$pt" && num "$pb"; then echo "  passthrough added p50 ${pt} us <= 2 x pgbouncer's ${pb} us: $(verdict "$pt <= 2 * $pb")"; fi
if num "${TPS[passthrough]}" && num "${TPS[direct]}"; then
	echo "  passthrough tps ${TPS[passthrough]} >= 0.85 x direct ${TPS[direct]}: $(verdict "${TPS[passthrough]} >= 0.85 * ${TPS[direct]}")"
fi
if num "$wk" && num "$pt" && num "$RTT"; then echo "  worker added p50 ${wk} us - passthrough's ${pt} us <= ${RTT} us: $(verdict "$wk - $pt <= $RTT")"; fi
echo "go-relay: scripts/benchrelay, a Go byte relay with no protocol work (the floor of any Go proxy hop on this machine)"
echo "goals: passthrough added_p50 <= 2x pgbouncer's; passthrough tps >= 0.85 of direct; worker added_p50 - passthrough's <= one loopback round trip"
