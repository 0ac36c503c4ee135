#!/usr/bin/env bash
# duckcat-migrate.sh BINARY [OFFSET]: Django's migrate of its contrib apps
# (internal/frontend/pgwire/testdata/clients/django_migrate.py) through a fresh QueryFlux daemon
# (BINARY serve, the embedded default: DuckDB, ports moved by OFFSET, default 1100), then the
# same script on PostgreSQL at 127.0.0.1:5432 (a fresh database). Prints each one's wall time,
# the daemon's CPU (utime+stime of /proc/PID/stat) and its statements ranked by exec time
# (/admin/queries): which of them a change should cut. Wall time depends on the load (printed
# beside it); the daemon's CPU much less.
set -euo pipefail
bin=$1 off=${2:-1100}
here=$(cd "$(dirname "$0")/.." && pwd)
script=$here/internal/frontend/pgwire/testdata/clients/django_migrate.py
work=$(mktemp -d)
QUERYFLUX_PORT_OFFSET=$off "$bin" serve >"$work/daemon.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
pgport=$((15432 + off)) api=$((19000 + off))
for _ in $(seq 100); do
	pg_isready -q -h 127.0.0.1 -p "$pgport" && break
	sleep 0.2
done
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
tick=$(getconf CLK_TCK)
uptime
t0=$(cpu) s0=$(date +%s%N)
/usr/bin/python3 "$script" "postgres://queryflux@127.0.0.1:$pgport/demo" | cut -c1-100
t1=$(cpu) s1=$(date +%s%N)
echo "DuckDB through the proxy: wall $(((s1 - s0) / 1000000)) ms, daemon CPU $(((t1 - t0) * 1000 / tick)) ms (load $(cut -d' ' -f1 /proc/loadavg))"
token=$(sed -n 's/.*admin API token written to a file.* file=\([^ ]*\).*/\1/p' "$work/daemon.log")
curl -s -H "Authorization: Bearer $(cat "$token")" "http://127.0.0.1:$api/admin/queries?limit=1000" >"$work/hist.json"
python3 - "$work/hist.json" <<'PY'
import collections, json, sys
recs = json.load(open(sys.argv[1]))["records"]
agg = collections.defaultdict(lambda: [0, 0, ""])
for r in recs:
    a = agg[r["sqlDigest"]]
    a[0] += 1
    a[1] += r["execMs"]
    a[2] = r["sql"][:90]
print(f"{len(recs)} statements, exec {sum(r['execMs'] for r in recs)} ms; the top ten (count, exec ms, text):")
for n, ms, sql in sorted(agg.values(), key=lambda v: -v[1])[:10]:
    print(f"  {n:3d} {ms:6d}  {sql}")
PY
db=duckcat_migrate_$$
psql -qAt -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db" postgres
s0=$(date +%s%N)
/usr/bin/python3 "$script" "postgres://postgres@127.0.0.1:5432/$db" >/dev/null
s1=$(date +%s%N)
psql -qAt -h 127.0.0.1 -U postgres -c "DROP DATABASE $db" postgres
echo "PostgreSQL: wall $(((s1 - s0) / 1000000)) ms (load $(cut -d' ' -f1 /proc/loadavg))"
