#!/bin/bash
# History under load: a standalone node on a fresh PostgreSQL database takes pgbench -S -c 8 for
# 20 s; prints the transactions, then the node's history counters (sent, dropped) and how many
# drop warnings it logged. Usage: scripts/history-load.sh bin/queryflux
set -u
BIN=$1
psql -h 127.0.0.1 -U postgres -qc 'drop database if exists hist_probe' -qc 'create database hist_probe'
pgbench -i -q -s 1 -h 127.0.0.1 -U postgres hist_probe >/dev/null 2>&1
cat > /tmp/histprobe.yaml <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:24101", token: "tok"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:24102"}
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: hist_probe, credentials: {user: postgres}, maxRunningQueries: 16}
clusterGroups:
  - {name: g, members: [pg]}
routingFallback: g
YAML
$BIN serve --config /tmp/histprobe.yaml > /tmp/histprobe.log 2>&1 &
PID=$!
sleep 3
pgbench -S -n -c 8 -j 2 -T 20 -h 127.0.0.1 -p 24102 -U queryflux hist_probe 2>&1 | grep -E 'tps|processed'
sleep 7
curl -s http://127.0.0.1:24101/metrics | grep -E '^queryflux_history_(sent|dropped)_total'
grep -c 'dropped query records' /tmp/histprobe.log
kill $PID; wait $PID 2>/dev/null
psql -h 127.0.0.1 -U postgres -qc 'drop database if exists hist_probe'
