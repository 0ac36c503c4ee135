#!/bin/bash
# pgbench's TPC-B against the embedded DuckDB default of a queryflux binary: -i, then
# CLIENTS clients for SECS seconds without retries; prints the load, tps and failures.
# usage: scripts/duckdb-pgbench.sh BINARY [PORT_OFFSET] (run it under flock /work/bench.lock)
set -eu
bin=$1 off=${2:-600} clients=${CLIENTS:-4} secs=${SECS:-10}
port=$((15432 + off))
QUERYFLUX_PORT_OFFSET=$off "$bin" serve > /tmp/duckdb-pgbench-$off.log 2>&1 &
pid=$!
trap 'kill $pid' EXIT
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $port && break; sleep 0.2; done
pgbench -q -h 127.0.0.1 -p $port -U queryflux -i demo > /dev/null 2>&1
echo "$(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/') $bin -c $clients -T $secs"
pgbench -h 127.0.0.1 -p $port -U queryflux -c $clients -T $secs demo 2>&1 | grep -E "processed|failed|tps|latency average"
