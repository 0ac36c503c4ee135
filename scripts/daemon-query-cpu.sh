#!/usr/bin/env bash
# daemon-query-cpu.sh PID FILE N [PORT]: runs the SQL in FILE N times through psql on one
# connection to a QueryFlux daemon's PostgreSQL port (default 15432, user queryflux, database
# demo: `make run`'s) and prints the daemon's CPU (utime+stime of /proc/PID/stat) and the wall
# time a run, with the load. CPU a run is what a catalog query costs the daemon, whatever else
# the machine does; wall time is not.
set -euo pipefail
pid=$1 file=$2 n=$3 port=${4:-15432}
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(cpu) s0=$(date +%s%N)
for _ in $(seq "$n"); do cat "$file"; done | psql -qAt -h 127.0.0.1 -p "$port" -U queryflux demo >/dev/null
t1=$(cpu) s1=$(date +%s%N)
tick=$(getconf CLK_TCK)
echo "$file: daemon CPU $(((t1 - t0) * 1000 / tick / n)) ms a run, wall $(((s1 - s0) / 1000000 / n)) ms a run (n=$n, load $(cut -d' ' -f1 /proc/loadavg))"
