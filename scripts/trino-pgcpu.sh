#!/usr/bin/env bash
# trino-pgcpu.sh BIN N [ROUNDS]: the CPU a Trino HTTP SELECT 1 costs the daemon BIN and the
# PostgreSQL backend that runs it (#22), from /proc/PID/stat around `benchtrino -n N` (after a
# warm-up of 500): a standalone daemon with only its Trino port (postAnswerClients: benchtrino/,
# one exchange a statement) in front of the local PostgreSQL's database DB (default
# qf_trino_pgcpu, made if missing), whose backends are found in pg_stat_activity. CPU times
# are not wall times, but a loaded machine inflates them too (caches, frequency): compare
# builds side by side (give several BINs in BIN, space-separated: they alternate, ROUNDS
# times). OPTIONS adds to the cluster's options (", exec_mode: cache_statement"). Ports from
# PORT0 (default 20720; add your port offset).
#
#	scripts/trino-pgcpu.sh "/tmp/qf-base /tmp/qf-new" 10000 3
set -euo pipefail
BINS=$1 N=$2 ROUNDS=${3:-1}
PORT0=${PORT0:-20720} DB=${DB:-qf_trino_pgcpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
(cd "$ROOT" && go build -o "$TMP/benchtrino" ./scripts/benchtrino)
psql -qAt -h 127.0.0.1 -U postgres -d postgres -c "select 1 from pg_database where datname = '$DB'" | grep -q 1 ||
	psql -q -h 127.0.0.1 -U postgres -d postgres -c "create database $DB"
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
cpu() { # utime + stime of the PIDs, in clock ticks
	local t=0 p s
	for p in "$@"; do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		s=${s##*) }
		# shellcheck disable=SC2086
		set -- $s
		t=$((t + ${12} + ${13}))
	done
	echo $t
}
for r in $(seq 1 "$ROUNDS"); do
	for bin in $BINS; do
		cat >"$TMP/d.yaml" <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$((PORT0 + 1))"}
  frontends:
    trino: {enabled: true, listen: "127.0.0.1:$PORT0", postAnswerClients: ["benchtrino/"]}
settings: {security: {trustLoopback: true}}
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: $DB, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable${OPTIONS:-}}}
clusterGroups:
  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: transaction}
routers:
  - {type: protocolBased, postgres: pg}
routingFallback: pg
YAML
		"$bin" serve --config "$TMP/d.yaml" >"$TMP/d.log" 2>&1 &
		PID=$!
		for _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$PORT0/v1/info" && break; sleep 0.1; done
		"$TMP/benchtrino" -trino "http://127.0.0.1:$PORT0" -user postgres -n 500 >/dev/null
		backends=$(psql -qAt -h 127.0.0.1 -U postgres -d postgres -c "select pid from pg_stat_activity where datname = '$DB' and pid <> pg_backend_pid()")
		# shellcheck disable=SC2086
		d0=$(cpu $PID) b0=$(cpu $backends)
		read -r p50 _ < <("$TMP/benchtrino" -trino "http://127.0.0.1:$PORT0" -user postgres -n "$N")
		# shellcheck disable=SC2086
		d1=$(cpu $PID) b1=$(cpu $backends)
		# shellcheck disable=SC2086
		echo "round $r $(basename "$bin"): p50 $p50 us, daemon CPU $(((d1 - d0) * 10000 / N)) us/statement, PostgreSQL backend CPU $(((b1 - b0) * 10000 / N)) us/statement ($(echo $backends | wc -w) backends); $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
		kill "$PID"
		wait "$PID" 2>/dev/null || true
		PID=
	done
done
