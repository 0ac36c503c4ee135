#!/usr/bin/env bash
# bench-query.sh: pgbench -S through the query path, direct vs standalone vs worker, and the
# single-client SELECT 1 latency of each. Needs PostgreSQL on $PGHOST:$PGPORT (user postgres,
# trust), pgbench and psql. Builds bin/queryflux. Prints one table; logs go to $WORK.
#
#   scripts/bench-query.sh            # 8 clients, 10 s per run
#   CLIENTS=4 SECS=5 scripts/bench-query.sh
set -euo pipefail

CLIENTS=${CLIENTS:-8}
SECS=${SECS:-10}
LAT_SECS=${LAT_SECS:-5}
CAP=${CAP:-16}                 # maxRunningQueries of the benchmarked cluster
PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
BASE=${BASE:-27400}            # the proxies listen on BASE..BASE+4
cd "$(dirname "$0")/.."

WORK=$(mktemp -d /tmp/bench-query.XXXXXX)
DB=qf_bench_$$
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -X -q -h "$PGHOST" -p "$PGPORT" -U postgres -c "DROP DATABASE IF EXISTS $DB" postgres >/dev/null 2>&1 || true
}
trap cleanup EXIT

go build -o bin/queryflux ./cmd/queryflux
psql -X -q -h "$PGHOST" -p "$PGPORT" -U postgres -c "CREATE DATABASE $DB" postgres
pgbench -i -q -s 1 -h "$PGHOST" -p "$PGPORT" -U postgres "$DB" >"$WORK/init.log" 2>&1
echo 'SELECT 1;' >"$WORK/select1.sql"

SA_PG=$((BASE)); CP_ADMIN=$((BASE+1)); CP_PG=$((BASE+2)); W_PG=$((BASE+3)); W_OPS=$((BASE+4))
CLUSTER="clusters:
  - {name: pg, engine: postgres, endpoint: \"$PGHOST:$PGPORT\", database: $DB, credentials: {user: postgres}, maxRunningQueries: $CAP}
clusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 60}
routingFallback: main"

cat >"$WORK/standalone.yaml" <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$((BASE+10))"}
  frontends: {postgres: {enabled: true, listen: "127.0.0.1:$SA_PG"}}
$CLUSTER
YAML
cat >"$WORK/cp.yaml" <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$CP_ADMIN"}
  workerApi: {enabled: true, secret: bench-secret}
  coordination: {mode: controlPlane}
  frontends: {postgres: {enabled: true, listen: "127.0.0.1:$CP_PG"}}
$CLUSTER
YAML
cat >"$WORK/worker.yaml" <<YAML
queryflux:
  role: worker
  controlPlane: {url: "http://127.0.0.1:$CP_ADMIN", secret: bench-secret}
  historyUplink: {enabled: true}
  frontends: {postgres: {enabled: true, listen: "127.0.0.1:$W_PG"}}
YAML

wait_sql() { # port: until SELECT 1 answers through it
  for _ in $(seq 1 150); do
    psql -X -q -At -h 127.0.0.1 -p "$1" -U queryflux -c 'select 1' "$DB" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "nothing answers on port $1" >&2; exit 1
}

bin/queryflux serve --config "$WORK/standalone.yaml" >"$WORK/standalone.log" 2>&1 & PIDS+=($!)
bin/queryflux serve --config "$WORK/cp.yaml" >"$WORK/cp.log" 2>&1 & PIDS+=($!)
sleep 0.5
bin/queryflux serve --config "$WORK/worker.yaml" --name bench-worker --ops-listen "127.0.0.1:$W_OPS" >"$WORK/worker.log" 2>&1 & PIDS+=($!)
wait_sql "$SA_PG"; wait_sql "$W_PG"

# target name, host, port, user
run_target() {
  local name=$1 host=$2 port=$3 user=$4 out
  out=$(pgbench -n -S -M simple -c "$CLIENTS" -j 2 -T "$SECS" -h "$host" -p "$port" -U "$user" "$DB" 2>&1)
  local tps fail lat
  tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
  fail=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
  lat=$(pgbench -n -M simple -c 1 -T "$LAT_SECS" -f "$WORK/select1.sql" -h "$host" -p "$port" -U "$user" "$DB" 2>&1 |
        sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
  printf "%-12s %12s %8s %22s\n" "$name" "${tps:-?}" "${fail:-?}" "${lat:-?}"
}

echo "pgbench -S -M simple -c $CLIENTS -j 2 -T $SECS (scale 1, cluster cap $CAP); SELECT 1 latency: 1 client, $LAT_SECS s"
echo "host: $(nproc) cores; $(pgbench --version)"
printf "%-12s %12s %8s %22s\n" target tps failed "select1 latency (ms)"
run_target direct "$PGHOST" "$PGPORT" postgres
run_target standalone 127.0.0.1 "$SA_PG" queryflux
run_target worker 127.0.0.1 "$W_PG" queryflux
