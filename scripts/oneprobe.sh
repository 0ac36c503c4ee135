#!/usr/bin/env bash
# oneprobe.sh BIN SECS TARGET [MODE]: one client's statements through a queryflux daemon, as
# scripts/bench-proxy.sh's latency rows run them (pgbench -c 1 -M extended, SELECT 1), counted per
# statement. TARGET: pass (a standalone daemon, bench-proxy's passthrough configuration) or worker
# (a control plane and a worker of its leases, bench-proxy's worker rows; the worker is measured,
# the control plane's switches printed beside). Prints the p50 and p99 (us), and per statement:
# the daemon's context switches (voluntary/involuntary, every thread, /proc/PID/task/*/status),
# its CPU, the control plane's switches, and for a worker the leases reused and asked for
# (queryflux_capacity_lease_reused_total, the control plane's acquires). MODE: plain; stat (perf
# stat of the daemon: system calls per statement); trace (a runtime/trace of SECS-2 s from a
# -tags benchpprof build to $OUT.trace, the control plane's to $OUT.cp.trace); strace (strace -f -tt of the daemon over 1 s to
# $OUT.strace); cg (the daemon under valgrind's callgrind, counting from the end of the warm-up: user
# instructions per statement, to $OUT.cg; as scripts/passprobe.sh's cg mode). WARM: seconds of the same client first (default 2). The database is
# qf_passprobe, as scripts/passprobe.sh makes it. Ports: free ones (:0). DAEMON_ENV: VAR=value
# words set for the measured daemon only.
set -euo pipefail
BIN=$1 SECS=$2 TARGET=$3 MODE=${4:-plain} OUT=${OUT:-/tmp/oneprobe}
. "$(dirname "$0")/probelib.sh"
DB=$PROBE_DB
probe_db
TMP=$(mktemp -d /tmp/oneprobe.XXXX)
WRAP=()
if [ "$MODE" = cg ]; then
	rm -f "$OUT.cg"*
	WRAP=(env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT.cg" --log-file="$TMP/vg.log")
fi
PG=$(freeport) AD=$(freeport) PP=$(freeport) CP=
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$TMP"' EXIT
case $TARGET in
pass)
	{
		qf_standalone "$AD" "$PG" "" true
		probe_clusters
	} >"$TMP/d.yaml"
	env ${DAEMON_ENV:-} QUERYFLUX_PPROF=127.0.0.1:$PP "${WRAP[@]}" $BIN serve --config $TMP/d.yaml >$TMP/d.log 2>&1 &
	PID=$! PIDS+=($!)
	METRICS=http://127.0.0.1:$AD/metrics
	;;
worker)
	probe_control_plane $BIN $TMP $PG
	PIDS+=($CP)
	env ${DAEMON_ENV:-} QUERYFLUX_PPROF=127.0.0.1:$PP "${WRAP[@]}" $BIN serve --config $TMP/w.yaml --name oneprobe-w --ops-listen 127.0.0.1:$OPS >$TMP/w.log 2>&1 &
	PID=$! PIDS+=($!)
	METRICS=http://127.0.0.1:$OPS/metrics
	;;
*) echo "TARGET: pass or worker" >&2; exit 2 ;;
esac
for _ in $(seq 1200); do psql -qAt -h 127.0.0.1 -p $PG -U postgres -d $DB -c "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
echo "SELECT 1;" >$TMP/select1.sql
PGB=(pgbench -n -c 1 -M extended -f $TMP/select1.sql -h 127.0.0.1 -p $PG -U postgres $DB)
(cd $TMP && "${PGB[@]}" -T ${WARM:-2} >/dev/null 2>&1)
tswitches() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print v+0, n+0}'; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
metric() { curl -s "$METRICS" | awk -v m="$1" '$1 ~ "^"m {s+=$2} END{print s+0}'; }
read -r v0 n0 < <(tswitches $PID)
c0=0 cv0=0; [ -n "$CP" ] && read -r cv0 _ < <(tswitches $CP) && c0=$(ticks $CP)
[ -n "${PROBE_FILE:-}" ] && sleep 0.6 && cp $PROBE_FILE $TMP/probe0
t0=$(ticks $PID) r0=$(metric queryflux_capacity_lease_reused_total)
SP=
case $MODE in
cg) callgrind_control -i on $PID >/dev/null ;;
trace) (sleep 1; curl -s -o $OUT.trace "http://127.0.0.1:$PP/debug/pprof/trace?seconds=$((SECS-2))") & SP=$!
	[ -n "$CP" ] && (sleep 1; curl -s -o $OUT.cp.trace "http://127.0.0.1:$PPC/debug/pprof/trace?seconds=$((SECS-2))") & ;;
strace) (sleep 1; timeout 1 strace -f -tt -p $PID -o $OUT.strace >/dev/null 2>&1 || true) & SP=$! ;;
esac
if [ "$MODE" = stat ]; then
	(cd $TMP && perf stat -e 'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_tgkill,syscalls:sys_enter_sched_yield,context-switches' -p $PID -o $OUT.stat -- "${PGB[@]}" -T $SECS --log --log-prefix=lat >$TMP/out 2>&1)
else
	(cd $TMP && "${PGB[@]}" -T $SECS --log --log-prefix=lat >$TMP/out 2>&1)
fi
t1=$(ticks $PID) r1=$(metric queryflux_capacity_lease_reused_total)
read -r v1 n1 < <(tswitches $PID)
c1=0 cv1=0; [ -n "$CP" ] && read -r cv1 _ < <(tswitches $CP) && c1=$(ticks $CP)
[ -n "$SP" ] && wait $SP || true
[ "$MODE" = cg ] && callgrind_control -i off $PID >/dev/null && callgrind_control -d $PID >/dev/null
[ -n "${PROBE_FILE:-}" ] && sleep 0.6 && cp $PROBE_FILE $TMP/probe1
n=$(awk -F: '/number of transactions actually processed/{print $2}' $TMP/out | tr -d ' ')
read -r p50 p99 < <(cat $TMP/lat* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {printf "%d %d\n", a[int(NR*0.5)+1], a[int(NR*0.99)+1]}')
hz=$(getconf CLK_TCK)
echo "target=$TARGET bin=$(basename $BIN) n=$n p50_us=$p50 p99_us=$p99 load=$(cut -d' ' -f1 /proc/loadavg)" \
	"switches_per_stmt=$(awk -v a=$v0 -v b=$v1 -v c=$n0 -v d=$n1 -v n=$n 'BEGIN{printf "%.2f/%.2f", (b-a)/n, (d-c)/n}')" \
	"cpu_us_per_stmt=$(awk -v a=$t0 -v b=$t1 -v n=$n -v hz=$hz 'BEGIN{printf "%.1f", (b-a)*1e6/hz/n}')" \
	"cp_switches_per_stmt=$(awk -v a=$cv0 -v b=$cv1 -v n=$n 'BEGIN{printf "%.3f", (b-a)/n}')" \
	"cp_cpu_us_per_stmt=$(awk -v a=$c0 -v b=$c1 -v n=$n -v hz=$hz 'BEGIN{printf "%.2f", (b-a)*1e6/hz/n}')" \
	"leases_reused_per_stmt=$(awk -v a=$r0 -v b=$r1 -v n=$n 'BEGIN{printf "%.3f", (b-a)/n}')"
if [ -n "${PROBE_FILE:-}" ]; then paste -d' ' $TMP/probe0 $TMP/probe1 | awk -v n=$n '{for (i=1; i<=NF/2; i++) {split($i,a,"="); split($(i+NF/2),b,"="); printf "%s=%.3f ", a[1], (b[2]-a[2])/n} print "per statement (probe build)"}'; fi
if [ "$MODE" = cg ]; then
	sleep 1
	f=$(ls -t "$OUT".cg* | head -1)
	awk -v n=$n '/^totals:/{printf "user instructions per statement: %.0f (%s)\n", $2/n, FILENAME; exit}' "$f"
fi
if [ "$MODE" = stat ]; then awk -v n=$n '/syscalls|context/{gsub(",","",$1); printf "%s %.3f\n", $2, $1/n}' $OUT.stat; fi
