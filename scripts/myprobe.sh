#!/usr/bin/env bash
# myprobe.sh BIN SECS [MODE]: one MySQL-wire target under scripts/benchclient -c $C (default 8)
# for SECS seconds, after WARM seconds (default 3) of the same load; the MySQL counterpart of
# passprobe.sh. QUERY is the statement (default SELECT 1). BIN is a queryflux binary (started as
# a standalone daemon in scripts/bench-proxy.sh's passthrough configuration, MariaDB on
# 127.0.0.1:3306 as root), "loop-relay" (scripts/benchrelay -loop -raw; RELAY=PATH runs one
# built elsewhere), "haproxy" (mode tcp, one thread, as in bench-proxy.sh: a C relay hop) or
# "direct" (MariaDB itself: no target process is measured). Prints qps, p50
# and p99 (from benchclient) and the target's CPU per statement (/proc/PID/stat). MODE: plain;
# pprof (a CPU profile of a -tags benchpprof build to $OUT.prof); perf (perf record -g to
# $OUT.perf; PERF_EVENTS=a,b records those events instead of the CPU clock, such as
# raw_syscalls:sys_enter: where the system calls come from); allocs (the allocations of the run, a -tags benchpprof build under
# GODEBUG=memprofilerate=1, to $OUT.allocs0 and $OUT.allocs: go tool pprof -base $OUT.allocs0
# -sample_index=alloc_objects -top reads where they are made); trace (strace -f -tt -T of the
# target for one second, to $OUT.trace); strace (strace -c -f of the target for SECS-1 seconds, calls per statement); cg
# (valgrind's callgrind, counting from the end of the warm-up: user-space instructions per
# statement, which the machine's load does not change, to $OUT.cg; callgrind_annotate reads it
# per function; the target runs ~50x slower under it, so its waits differ). OUT defaults to
# /tmp/myprobe. BENCHCLIENT=PATH runs a benchclient built elsewhere. stat (perf stat of the
# target's system calls by tracepoint and its context switches, per statement; EVENTS="a,b," counts
# those events too, such as io_uring's tracepoints). Every mode also
# prints the target's context switches per statement (all its threads, voluntary/involuntary), its
# minor page faults per statement (a fresh daemon's history store faults its pages in as it fills),
# the machine's, and for a daemon its allocations per statement (go_memstats_mallocs_total), and
# the target's resident memory (VmRSS) idle, a second after it listens, and after the run.
set -euo pipefail
BIN=$1 SECS=$2 MODE=${3:-plain} OUT=${OUT:-/tmp/myprobe} C=${C:-8} QUERY=${QUERY:-SELECT 1}
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
AD=$(freeport) PP=$(freeport) MY=$(freeport)
TMP=$(mktemp -d /tmp/myprobe.XXXX)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${BENCHCLIENT:-}" ]; then cp "$BENCHCLIENT" "$TMP/benchclient"; else (cd "$ROOT" && go build -o "$TMP/benchclient" ./scripts/benchclient); fi
WRAP=()
if [ "$MODE" = cg ]; then
	rm -f "$OUT".cg*
	WRAP=(env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT.cg" --log-file="$TMP/vg.log")
fi
DSN="queryflux@tcp(127.0.0.1:$MY)/mysql"
PID=
case $BIN in
direct) DSN="root@tcp(127.0.0.1:3306)/mysql" ;;
loop-relay | loop-ring)
	if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
	be=epoll
	[ "$BIN" = loop-ring ] && be=uring
	QUERYFLUX_RELAY_BACKEND=$be "${WRAP[@]}" "$TMP/benchrelay" -loop -raw -listen 127.0.0.1:$MY -upstream 127.0.0.1:3306 >"$TMP/log" 2>&1 &
	PID=$!
	DSN="root@tcp(127.0.0.1:$MY)/mysql"
	;;
haproxy)
	printf 'global\n  nbthread 1\n  maxconn 1000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten my\n  bind 127.0.0.1:%s\n  server my 127.0.0.1:3306\n' "$MY" >"$TMP/h.cfg"
	"${WRAP[@]}" haproxy -db -f "$TMP/h.cfg" >"$TMP/log" 2>&1 &
	PID=$!
	DSN="root@tcp(127.0.0.1:$MY)/mysql"
	;;
*)
	cat >"$TMP/c.yaml" <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$AD"}
  frontends:
    mysql: {enabled: true, listen: "127.0.0.1:$MY"}
settings: {passthrough: true, security: {trustLoopback: true}}
clusters:
  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}
clusterGroups:
  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}
routers:
  - {type: protocolBased, mysql: maria}
routingFallback: maria
YAML
	QUERYFLUX_PPROF=127.0.0.1:$PP "${WRAP[@]}" "$BIN" serve --config "$TMP/c.yaml" >"$TMP/log" 2>&1 &
	PID=$!
	;;
esac
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
if [ -n "$PID" ]; then
	for _ in $(seq 1200); do (exec 3<>/dev/tcp/127.0.0.1/$MY) 2>/dev/null && break; sleep 0.1; done
fi
rss() { if [ -n "$1" ]; then awk '/^RssAnon/{a=$2} /^RssFile/{f=$2} END{print a+f "(anon:" a ",file:" f ")"}' /proc/$1/status; else echo 0; fi; }
sleep 1 # the daemon's start settled
rss0=$(rss "$PID")
if [ "${WARM:-3}" -gt 0 ]; then "$TMP/benchclient" -dsn "$DSN" -query "$QUERY" -c "$C" -d "${WARM:-3}s" >/dev/null; fi
ticks() { if [ -n "$1" ]; then awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; else echo 0; fi; }
minflt() { if [ -n "$1" ]; then awk '{sub(/.*\) /, ""); print $8}' /proc/$1/stat; else echo 0; fi; }
tswitches() { if [ -n "$1" ]; then cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print v+0, n+0}'; else echo 0 0; fi; }
mswitches() { awk '/^ctxt/{print $2}' /proc/stat; }
isdaemon() { case $BIN in direct | loop-relay | loop-ring | haproxy) return 1 ;; esac; }
mallocs() { if isdaemon; then curl -s http://127.0.0.1:$AD/metrics | awk '/^go_memstats_mallocs_total /{print $2}'; else echo 0; fi; }
read -r tv0 tn0 < <(tswitches "$PID")
ms0=$(mswitches) m0=$(mallocs)
f0=$(minflt "$PID")
t0=$(ticks "$PID")
SP=
case $MODE in
cg) callgrind_control -i on $PID >/dev/null ;;
pprof) (sleep 1; curl -s -o "$OUT.prof" "http://127.0.0.1:$PP/debug/pprof/profile?seconds=$((SECS-2))") & SP=$! ;;
allocs) curl -s -o "$OUT.allocs0" "http://127.0.0.1:$PP/debug/pprof/allocs?gc=1" ;;
perf) perf record -g ${PERF_EVENTS:+-e "$PERF_EVENTS"} -o "$OUT.perf" -p $PID -- sleep $((SECS-1)) >/dev/null 2>&1 & SP=$! ;;
strace) timeout $((SECS-1)) strace -c -f -p $PID -o "$OUT.strace" 2>/dev/null & SP=$! ;;
trace) (sleep 1; timeout 1 strace -f -tt -T -p $PID -o "$OUT.trace" 2>/dev/null) & SP=$! ;;
stat) perf stat -e "${EVENTS:-}"'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_tgkill,syscalls:sys_enter_clock_gettime,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_fcntl,context-switches,cpu-migrations' -p $PID -o "$OUT.stat" -- sleep "$SECS" & SP=$! ;;
esac
read -r p50 p99 qps < <("$TMP/benchclient" -dsn "$DSN" -query "$QUERY" -c "$C" -d "${SECS}s")
t1=$(ticks "$PID")
read -r tv1 tn1 < <(tswitches "$PID")
ms1=$(mswitches) m1=$(mallocs)
f1=$(minflt "$PID")
rss1=$(rss "$PID")
[ "$MODE" = allocs ] && curl -s -o "$OUT.allocs" "http://127.0.0.1:$PP/debug/pprof/allocs?gc=1"
[ "$MODE" = cg ] && callgrind_control -i off $PID >/dev/null && callgrind_control -d $PID >/dev/null
[ -n "$SP" ] && { wait $SP || true; }
n=$((qps * SECS))
echo "bin=$(basename "$BIN") c=$C qps=$qps p50_us=$p50 p99_us=$p99 n=$n cpu_us_per_stmt=$(awk -v a=$t0 -v b=$t1 -v n=$n -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.1f", (b-a)*1e6/hz/n}') load=$(cut -d' ' -f1 /proc/loadavg)"
awk -v n=$n -v a=$tv0 -v b=$tv1 -v c=$tn0 -v d=$tn1 -v e=$ms0 -v f=$ms1 -v g=$m0 -v h=$m1 -v i=$f0 -v j=$f1 'BEGIN{printf "target_switches_per_stmt=%.3f/%.3f machine_switches_per_stmt=%.2f mallocs_per_stmt=%.2f minor_faults_per_stmt=%.3f\n", (b-a)/n, (d-c)/n, (f-e)/n, (h-g)/n, (j-i)/n}'
echo "rss_kb idle=$rss0 after=$rss1"
if [ "$MODE" = stat ]; then
	# counted over SECS seconds beside a run of SECS: per statement at the run's rate
	awk -v n=$n '/syscalls|context|migrations|:/{gsub(",","",$1); if ($1 ~ /^[0-9]+$/) printf "%s %.3f\n", $2, $1/n}' "$OUT.stat"
fi
if [ "$MODE" = strace ]; then
	# strace counted for SECS-1 of the SECS seconds: per statement at the run's rate.
	awk -v n=$((qps * (SECS - 1))) '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ {printf "%s %.3f\n", $NF, $4/n}' "$OUT.strace"
fi
if [ "$MODE" = cg ]; then
	sleep 1
	# the dump taken at the run's end (.cg.N), not the file callgrind writes when the target exits
	f=$(ls -t "$OUT".cg.* 2>/dev/null | head -1)
	[ -n "$f" ] || f=$OUT.cg
	awk -v n=$n '/^totals:/{printf "user instructions per statement: %.0f (%s)\n", $2/n, FILENAME; exit}' "$f"
fi
