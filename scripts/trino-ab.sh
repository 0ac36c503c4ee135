#!/usr/bin/env bash
# trino-ab.sh BASE NEW [ROUNDS] [SECS]: Trino HTTP SELECT 1 latency of two queryflux builds
# side by side (#22): each a standalone daemon with only its Trino port (postAnswerClients:
# benchtrino/, as scripts/bench-proxy.sh's trino row) in front of the local PostgreSQL's
# database "postgres", and trino-pg, the same client program's SELECT 1 straight to PostgreSQL
# over pgx. ROUNDS (default 3) interleaved rounds of `benchtrino -d SECS` (default 2) per target;
# prints each round's p50 / p99 (us) and the median p50s with the added p50 (target minus
# trino-pg), and the load average before and after. Timed: run it under flock /work/bench.lock.
# Ports from PORT0 (default 20810; add your port offset).
set -euo pipefail
BASE=$(readlink -f "$1") NEW=$(readlink -f "$2") ROUNDS=${3:-3} SECS=${4:-2}
PORT0=${PORT0:-20810}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/probelib.sh"
TMP=$(mktemp -d)
(cd "$ROOT" && go build -o "$TMP/benchtrino" ./scripts/benchtrino)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
start() { # name bin port admin
	qf_trino_start "$TMP" "$1" "$3" "$4" ', postAnswerClients: ["benchtrino/"]' "$2"
	PIDS+=("$QF_PID")
}
start base "$BASE" "$PORT0" $((PORT0 + 1))
start new "$NEW" $((PORT0 + 2)) $((PORT0 + 3))
declare -A ARGS=([trino-pg]="-pg postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	[base]="-trino http://127.0.0.1:$PORT0" [new]="-trino http://127.0.0.1:$((PORT0 + 2))")
declare -A P50S
echo "before: $(uptime | sed 's/.*load/load/')"
for r in $(seq 1 "$ROUNDS"); do
	for t in trino-pg base new; do
		# shellcheck disable=SC2086
		read -r p50 p99 _ < <("$TMP/benchtrino" ${ARGS[$t]} -user postgres -d "${SECS}s")
		echo "round $r $t p50 $p50 p99 $p99"
		P50S[$t]="${P50S[$t]:-} $p50"
	done
done
median() { tr ' ' '\n' <<<"$*" | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
pg=$(median ${P50S[trino-pg]})
for t in trino-pg base new; do
	m=$(median ${P50S[$t]})
	echo "median p50 $t $m added $(awk -v a="$m" -v b="$pg" 'BEGIN {print a - b}')"
done
echo "after: $(uptime | sed 's/.*load/load/')"
