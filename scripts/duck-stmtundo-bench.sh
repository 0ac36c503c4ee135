#!/bin/sh
# What a MySQL client's refused statement in a transaction costs on the embedded DuckDB
# (internal/engine/duckengine/mysqlstmtundo.go): BenchmarkMySQLRefusedWriteUndo (a duplicate key
# refused after kept=0, 10, 100, 1000 writes: DuckDB's ROLLBACK, BEGIN and the writes run again)
# and BenchmarkMySQLInsertInTransaction (an INSERT kept, its id reserved, against autocommit),
# under the shared bench lock, with the load and perf's task-clock beside the figures.
# Usage: scripts/duck-stmtundo-bench.sh [benchtime, default 20x]
set -e
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/duck.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
nice -n 10 go test -c -o "$bin" ./internal/engine/duckengine/
cd internal/engine/duckengine
date -u
flock /work/bench.lock sh -c "uptime; perf stat -e task-clock,context-switches '$bin' -test.run XXX \
	-test.bench 'BenchmarkMySQLRefusedWriteUndo|BenchmarkMySQLInsertInTransaction' -test.benchtime ${1:-20x}; uptime"
date -u
