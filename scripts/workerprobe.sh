#!/usr/bin/env bash
# workerprobe.sh BIN SECS: a control plane and a worker of its leases from the queryflux binary
# BIN, configured as scripts/bench-proxy.sh's worker rows (POOL=session for session pool mode),
# under pgbench -S -c 8 -j 2 for SECS seconds after WARM (3) seconds of the same load. Prints
# tps, each process's CPU per transaction (/proc/PID/stat) and the worker's allocations per
# transaction (go_memstats_mallocs_total from its ops port, which the machine's load does not
# change; scripts/passprobe.sh's standalone daemon makes about 2). MODE=stat adds the worker's
# system calls per transaction (perf stat); MODE=pprof writes CPU profiles of both to
# /tmp/workerprobe.w.prof and .cp.prof (a -tags benchpprof build). The database is
# qf_passprobe, as passprobe.sh makes it. MODE=cg runs the worker under valgrind's callgrind (as
# passprobe.sh's cg mode: QUERYFLUX_RELAY_BACKEND=epoll, counting from the end of the warm-up) and
# prints its user instructions per transaction, to $OUT.cg (OUT defaults to /tmp/workerprobe).
set -euo pipefail
BIN=$1 SECS=$2
. "$(dirname "$0")/probelib.sh"
DB=$PROBE_DB
probe_db
TMP=$(mktemp -d /tmp/workerprobe.XXXX)
PG=$(freeport) MY=$(freeport) PP=$(freeport)
probe_control_plane $BIN $TMP $PG $MY
OUT=${OUT:-/tmp/workerprobe} WRAP=()
if [ "${MODE:-}" = cg ]; then
  rm -f "$OUT.cg"*
  WRAP=(env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off QUERYFLUX_RELAY_BACKEND=epoll valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT.cg" --log-file="$TMP/vg.log")
fi
QUERYFLUX_PPROF=127.0.0.1:$PP "${WRAP[@]}" $BIN serve --config $TMP/w.yaml --name probe-w --ops-listen 127.0.0.1:$OPS > $TMP/w.log 2>&1 &
W=$!
trap 'kill $W $CP 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1200); do psql -qAt -h 127.0.0.1 -p $PG -U postgres -d $DB -c "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
pgbench -n -S -c 8 -j 2 -T ${WARM:-3} -h 127.0.0.1 -p $PG -U postgres $DB >/dev/null 2>&1
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
metric() { curl -s http://127.0.0.1:$OPS/metrics | awk -v m="$1" 'index($1, m) == 1 {s += $2} END {printf "%d", s}'; }
m0=$(metric go_memstats_mallocs_total) r0=$(metric queryflux_capacity_lease_reused_total) p0=$(metric 'queryflux_query_path_total{path="passthrough"')
w0=$(ticks $W) c0=$(ticks $CP)
[ "${MODE:-}" = cg ] && callgrind_control -i on $W >/dev/null
if [ "${MODE:-}" = pprof ]; then
  (sleep 1; curl -s -o /tmp/workerprobe.w.prof "http://127.0.0.1:$PP/debug/pprof/profile?seconds=$((SECS-2))") &
  (sleep 1; curl -s -o /tmp/workerprobe.cp.prof "http://127.0.0.1:$PPC/debug/pprof/profile?seconds=$((SECS-2))") &
fi
PGB=(pgbench -n -S -c ${CLIENTS:-8} -j $((${CLIENTS:-8} > 1 ? 2 : 1)) ${RATE:+-R $RATE} -T $SECS -h 127.0.0.1 -p $PG -U postgres $DB)
if [ "${MODE:-}" = stat ]; then
  res=$(perf stat -e 'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_fcntl,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,context-switches' -p $W -o /tmp/workerprobe.stat -- "${PGB[@]}" 2>&1)
else
  res=$("${PGB[@]}" 2>&1)
fi
w1=$(ticks $W) c1=$(ticks $CP)
[ "${MODE:-}" = cg ] && callgrind_control -i off $W >/dev/null && callgrind_control -d $W >/dev/null
m1=$(metric go_memstats_mallocs_total) r1=$(metric queryflux_capacity_lease_reused_total) p1=$(metric 'queryflux_query_path_total{path="passthrough"')
[ "${MODE:-}" = pprof ] && sleep 1
n=$(echo "$res" | awk -F: '/number of transactions actually processed/{print $2}' | tr -d ' ')
tps=$(echo "$res" | awk '/^tps/{print int($3)}')
hz=$(getconf CLK_TCK)
echo "tps=$tps n=$n worker_us=$(awk -v a=$w0 -v b=$w1 -v n=$n -v hz=$hz 'BEGIN{printf "%.1f",(b-a)*1e6/hz/n}') cp_us=$(awk -v a=$c0 -v b=$c1 -v n=$n -v hz=$hz 'BEGIN{printf "%.1f",(b-a)*1e6/hz/n}') load=$(cut -d' ' -f1 /proc/loadavg) mallocs_per_tx=$(awk -v a=$m0 -v b=$m1 -v n=$n 'BEGIN{printf "%.2f",(b-a)/n}') idle_taken=$((r1 - r0))/$((p1 - p0))"
[ "${MODE:-}" = stat ] && awk -v n=$n '/syscalls|context/{gsub(",","",$1); printf "%s %.3f\n", $2, $1/n}' /tmp/workerprobe.stat
if [ "${MODE:-}" = cg ]; then
  sleep 1
  f=$(ls -t "$OUT".cg.* 2>/dev/null | head -1)
  [ -n "$f" ] || f=$OUT.cg
  awk -v n=$n '/^totals:/{printf "user instructions per transaction: %.0f (%s)\n", $2/n, FILENAME; exit}' "$f"
fi
