#!/usr/bin/env bash
# workeridlecpu.sh BIN [SECS]: a control plane and a worker of its leases from the queryflux
# binary BIN (scripts/workerprobe.sh's configuration), each one's CPU ticks (/proc/PID/stat)
# over SECS (default 10) seconds idle after a 3-second warm-up, then over SECS seconds of
# pgbench -S -c 8 -j 2, and the worker's capacity metrics: whether the control plane's CPU
# goes with the statements (acquires when the idle hold lapses) or with the clock.
set -euo pipefail
BIN=$1 SECS=${2:-10}
. "$(dirname "$0")/probelib.sh"
DB=$PROBE_DB
probe_db
TMP=$(mktemp -d /tmp/workeridlecpu.XXXX)
PG=$(freeport)
probe_control_plane "$BIN" "$TMP" "$PG"
"$BIN" serve --config "$TMP/w.yaml" --name probe-w --ops-listen 127.0.0.1:$OPS >"$TMP/w.log" 2>&1 &
W=$!
trap 'kill $W $CP 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1200); do psql -qAt -h 127.0.0.1 -p $PG -U postgres -d $DB -c "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
pgbench -n -S -c 8 -j 2 -T 3 -h 127.0.0.1 -p $PG -U postgres $DB >/dev/null 2>&1
sleep 1
w0=$(ticks $W) c0=$(ticks $CP); sleep "$SECS"; w1=$(ticks $W) c1=$(ticks $CP)
echo "idle ${SECS}s: worker $((w1 - w0)) ticks, control plane $((c1 - c0)) ticks (load $(cut -d' ' -f1 /proc/loadavg))"
w0=$(ticks $W) c0=$(ticks $CP)
res=$(pgbench -n -S -c 8 -j 2 -T "$SECS" -h 127.0.0.1 -p $PG -U postgres $DB 2>&1)
w1=$(ticks $W) c1=$(ticks $CP)
echo "pgbench ${SECS}s: worker $((w1 - w0)) ticks, control plane $((c1 - c0)) ticks, $(echo "$res" | awk -F': ' '/actually processed/{print $2}') transactions (load $(cut -d' ' -f1 /proc/loadavg))"
curl -s http://127.0.0.1:$OPS/metrics | grep -E '^queryflux_(capacity|query_path)' || true
