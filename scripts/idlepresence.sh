#!/usr/bin/env bash
# idlepresence.sh ROUNDS: the passthrough (BIN) under passprobe alone, and with bench-proxy's other targets idle beside it (idleothers.sh OBIN).
BIN=${BIN:?BIN is the passthrough daemon} OBIN=${OBIN:-$BIN}
cd "$(dirname "$0")/.."
for r in $(seq ${1:-3}); do
  echo "== round $r absent $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) backends $(psql -qAt -h 127.0.0.1 -U postgres -d postgres -c 'select count(*) from pg_stat_activity where backend_type=$$client backend$$')"
  nice -n 10 scripts/passprobe.sh $BIN 5 2>&1 | head -3
  P=$(nice -n 10 scripts/idleothers.sh $OBIN 2>/dev/null | tail -1); sleep 3
  echo "== round $r present ($(echo $P | wc -w) pids) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) backends $(psql -qAt -h 127.0.0.1 -U postgres -d postgres -c 'select count(*) from pg_stat_activity where backend_type=$$client backend$$')"
  nice -n 10 scripts/passprobe.sh $BIN 5 2>&1 | head -3
  kill $P; sleep 2
done
