#!/usr/bin/env bash
# passprobe.sh BIN SECS [MODE]: one target under pgbench -S -c $C (default 8) -j 2 (1 for one client) for SECS seconds, after WARM
# seconds (default 3) of the same load: BIN is a queryflux binary (started as a standalone daemon in
# scripts/bench-proxy.sh's passthrough configuration; POOL=session for session pool mode),
# "loop-relay" (scripts/benchrelay -loop), "uring-relay" (scripts/benchrelay -uring: one io_uring), "hybrid-relay" (-hybrid: epoll, then
# io_uring for each turn's reads and writes) or "pgbouncer" (transaction pool mode; POOL=session for session). Prints tps and the
# target's CPU per transaction (/proc/PID/stat). MODE: stat (perf stat over the pgbench run: system
# calls and context switches per transaction processed; EVENTS="a,b," counts those events too, such
# as io_uring's tracepoints), perf (perf record -g of the whole process, kernel included, to
# $OUT.perf; scripts/perffold.py reads it per function), pprof (a CPU profile from a -tags
# benchpprof build to $OUT.prof), allocs (the heap profile's allocations before and after the run, from
# such a build, to $OUT.allocs0 and .allocs1: go tool pprof -sample_index=alloc_objects -base), strace (strace_pair below: one backend's and pgbench's system calls per transaction, to $OUT.be.tr
# and $OUT.pb.tr), perfall (perf record -a -g of the whole machine over exactly the
# pgbench run, to $OUT.perf: what every process spends per transaction), plain. OUT defaults to /tmp/passprobe; the database is
# qf_passprobe (made with pgbench -i when missing). MARIA=1 adds bench-proxy.sh's MariaDB cluster and group
# beside pg (its passthrough configuration exactly). RELAY_ARGS: more benchrelay flags. RELAY=PATH runs a benchrelay binary built
# elsewhere (another commit's) as loop-relay. MODE cg runs the target under valgrind's callgrind
# (GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off: callgrind fails on Go's preemption signals and RDTSCP; CG_ARGS: more valgrind
# flags, such as --cache-sim=yes for simulated cache misses per function; io_uring does not run under valgrind: set
# QUERYFLUX_RELAY_BACKEND=epoll), counting from the end of
# the warm-up to the end of the run: user-space instructions per transaction, which the machine's
# load does not change (this VM has no hardware counters for perf), to $OUT.cg; callgrind_annotate
# reads it per function. A queryflux target also prints its allocations per transaction
# (go_memstats_mallocs_total around the run). Every mode also prints what the rest of the machine
# spent per transaction over the run: pgbench's CPU, the CPU, context switches and migrations of
# the backends of the probe's database (a pooling target's server connections and a relay's,
# sampled every 0.1 s: a relay's last 0.1 s may be missed), the machine's busy CPU and idle share
# (/proc/stat). Under callgrind a target runs ~50x slower, so its waits differ.
set -euo pipefail
BIN=$1 SECS=$2 MODE=${3:-plain} OUT=${OUT:-/tmp/passprobe}
. "$(dirname "$0")/probelib.sh"
DB=$PROBE_DB
probe_db
C=${C:-8} J=$(( ${C:-8} < 2 ? 1 : 2 ))
PG=$(freeport) AD=$(freeport) PP=$(freeport) MY=$(freeport)
TMP=$(mktemp -d /tmp/passprobe.XXXX)
WRAP=()
if [ "$MODE" = cg ]; then
	export GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off
	rm -f "$OUT.cg"
	WRAP=(valgrind --tool=callgrind ${CG_ARGS:-} --instr-atstart=no --callgrind-out-file="$OUT.cg" --log-file="$TMP/vg.log")
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RELAYS=" loop-relay uring-relay hybrid-relay "
if [[ $RELAYS == *" $BIN "* ]]; then
	if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
fi
if [ "$BIN" = pgbouncer ]; then
	printf '[databases]\n%s = host=127.0.0.1 port=5432 dbname=%s user=postgres\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %s\nunix_socket_dir =\nauth_type = trust\nauth_file = %s\npool_mode = %s\nmax_client_conn = 200\ndefault_pool_size = 16\nlogfile = %s\n' "$DB" "$DB" "$PG" "$TMP/userlist.txt" "${POOL:-transaction}" "$TMP/pgb.log" >"$TMP/pgb.ini"
	echo '"postgres" ""' >"$TMP/userlist.txt"
	chmod 755 "$TMP"; chmod 644 "$TMP/pgb.ini" "$TMP/userlist.txt"; touch "$TMP/pgb.log"; chmod 666 "$TMP/pgb.log"
	[ "$MODE" = cg ] && touch "$OUT.cg" && chmod 666 "$OUT.cg"
	"${WRAP[@]}" pgbouncer -u postgres "$TMP/pgb.ini" >"$TMP/log" 2>&1 &
elif [[ $RELAYS == *" $BIN "* ]]; then
	"${WRAP[@]}" "$TMP/benchrelay" "-${BIN%-relay}" ${RELAY_ARGS:-} -listen 127.0.0.1:$PG -upstream 127.0.0.1:5432 >$TMP/log 2>&1 &
else
# bench-proxy.sh's passthrough daemon (MARIA=1: with its MariaDB cluster and group beside pg).
{
	qf_standalone "$AD" "$PG" "$MY" true
	qf_clusters "$DB" "${POOL:-transaction}" "${MARIA:-0}"
	echo "${EXTRA_YAML:-}"
} >"$TMP/c.yaml"
QUERYFLUX_PPROF=127.0.0.1:$PP "${WRAP[@]}" $BIN serve --config $TMP/c.yaml >$TMP/log 2>&1 &
fi
PID=$!
trap 'kill $PID ${PGS:-} 2>/dev/null' EXIT
for _ in $(seq 1200); do (exec 3<>/dev/tcp/127.0.0.1/$PG) 2>/dev/null && break; sleep 0.1; done
if [ "${WARM:-3}" -gt 0 ]; then pgbench -n -S -c $C -j $J -T ${WARM:-3} -h 127.0.0.1 -p $PG -U postgres $DB >/dev/null 2>&1; fi
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
uticks() { awk '{sub(/.*\) /, ""); print $12}' /proc/$1/stat; }
mallocs() { [[ $RELAYS == *" $BIN "* || $BIN == pgbouncer ]] && echo 0 0 0 0 && return; curl -s http://127.0.0.1:$AD/metrics | awk '/^go_memstats_mallocs_total /{m=$2} /^go_memstats_alloc_bytes_total /{b=$2} /^go_gc_duration_seconds_count /{g=$2} /^go_memstats_heap_inuse_bytes /{h=$2} END{print m" "b" "g" "h}'; }
# The whole machine around the run: every postgres process's CPU, pgbench's, and the idle share
# (/proc/stat), so that a target's tps can be read against what it makes the others spend.
# Only the backends of $DB count (other work on the machine's PostgreSQL is not the target's), and
# they are sampled through the run (pgsample): a relay's backends exit with pgbench's connections,
# before the run's end can read them. pgsample prints "pid ticks switches migrations" a line.
pgbackends() { pgrep -f "^postgres: .* $DB 127\.0\.0\.1" || true; }
pgsample() {
	local p files=()
	for p in $(pgbackends); do files+=(/proc/$p/stat /proc/$p/status /proc/$p/sched); done
	[ ${#files[@]} -gt 0 ] || return 0
	# one awk for every backend: the sample must be quick next to the run's 0.1 s steps
	awk '{split(FILENAME, f, "/"); p=f[3]}
		FILENAME ~ /stat$/ && FNR==1 {sub(/.*\) /, ""); t[p]=$12+$13}
		/ctxt_switches/ {w[p]+=$2}
		/nr_migrations/ {x[p]=$3}
		END{for (p in t) if ((p in w) && (p in x)) print p, t[p], w[p], x[p]}' "${files[@]}" 2>/dev/null || true
}
# pgsampler FILE: samples every 0.1 s into FILE until killed.
pgsampler() { while :; do pgsample >>"$1"; sleep 0.1; done; }
# pgspent BEFORE SAMPLES: each backend's last sample less what it had spent before the run (0 for
# one born during it): "ticks switches migrations" summed over the backends, the busiest one's
# ticks, then each one's.
pgspent() { awk 'FILENAME==ARGV[1]{t0[$1]=$2; w0[$1]=$3; x0[$1]=$4; next} {t[$1]=$2; w[$1]=$3; x[$1]=$4} END{for (p in t) {d=t[p]-t0[p]; T+=d; W+=w[p]-w0[p]; X+=x[p]-x0[p]; if (d > top) top=d; s=s " " d} print T+0, W+0, X+0, top+0, substr(s, 2)}' "$1" "$2"; }
cpustat() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
# Wake-ups across CPUs cost an interrupt each (dear on a VM guest): the machine's context switches
# and its rescheduling, function-call and TLB-shootdown interrupts over the run.
wakestat() { { awk '/^ctxt/{print $2}' /proc/stat; awk '$1 ~ /^(RES|CAL|TLB):$/{s=0; for (i=2; i<=NF && $i ~ /^[0-9]+$/; i++) s+=$i; print s}' /proc/interrupts; } | xargs; }
tswitches() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print v+0, n+0}'; }
# strace_pair: 2 s into the run, strace for 4 s one backend of $DB and pgbench (every thread), to
# $OUT.be.tr and $OUT.pb.tr; strace_sum reads them per transaction.
strace_pair() {
	sleep 2
	local be pb
	be=$(pgbackends | head -1) pb=$(pgrep -n -f "pgbench .* -p $PG " || true)
	[ -n "$be" ] && timeout 4 strace -qq -s 6 -e trace=recvfrom,sendto,epoll_wait,epoll_pwait -p "$be" -o "$OUT.be.tr" &
	[ -n "$pb" ] && timeout 4 strace -qq -f -s 6 -e trace=recvfrom,sendto,ppoll,poll,select,pselect6 -p "$pb" -o "$OUT.pb.tr" &
	wait
}
# strace_sum WHO FILE: system calls per transaction in a strace_pair file, a transaction being a
# Query message (pgbench -S's simple protocol) that the backend reads or pgbench writes; a read
# that finds nothing (EAGAIN) counts apart from one that reads data.
strace_sum() {
	[ -f "$2" ] || { echo "$1_strace: no trace"; return 0; }
	awk -v who="$1" '
		who == "pgbench" && /sendto\([0-9]+, "Q/ { tx++ }
		/<unfinished/ { next } # its "<... resumed>" line counts it
		match($0, /[a-z_0-9]+(\(| resumed>)/) {
			name = substr($0, RSTART, RLENGTH); sub(/(\(| resumed>)$/, "", name)
			ret = $NF; if ($0 ~ /= -1 /) ret = -1
			if (name == "recvfrom") { name = (ret < 0) ? "recvfrom_eagain" : "recvfrom_data"; if (who == "backend" && ret > 0 && $0 ~ /, "Q/) tx++ }
			c[name]++
		}
		END { printf "%s_strace tx=%d", who, tx; for (k in c) printf " %s=%.2f", k, c[k] / (tx ? tx : 1); print "" }' "$2"
}
# TCP over loopback around the run (nstat's counters: segments, pure and delayed ACKs, ...).
nstat -n >/dev/null 2>&1 || true
read -r tv0 tn0 < <(tswitches $PID)
read -r m0 b0 gc0 _ < <(mallocs)
pgsample >"$TMP/pg0"; pgsampler "$TMP/pgs" & PGS=$!; read -r busy0 idle0 < <(cpustat); read -r cs0 res0 cal0 tlb0 < <(wakestat)
t0=$(ticks $PID) u0=$(uticks $PID)
case $MODE in
cg) callgrind_control -i on $PID >/dev/null; SP= ;;
stat) SP= ;;
strace) strace_pair & SP=$! ;;
pprof) (sleep 1; curl -s -o $OUT.prof "http://127.0.0.1:$PP/debug/pprof/profile?seconds=$((SECS-2))") & SP=$! ;;
allocs) curl -s -o $OUT.allocs0 "http://127.0.0.1:$PP/debug/pprof/allocs"; SP= ;;
perf) perf record -g -o $OUT.perf -p $PID -- sleep $((SECS-1)) >/dev/null 2>&1 & SP=$! ;;
*) SP= ;;
esac
PGB=(pgbench -n -S -c $C -j $J -T $SECS -h 127.0.0.1 -p $PG -U postgres $DB)
if [ "$MODE" = stat ]; then
	# Counted over exactly the pgbench run, divided by the transactions it processed: a window
	# of its own would meet the run at another rate (perf's tracing slows the target).
	res=$(perf stat -e "${EVENTS:-}"'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_getpid,syscalls:sys_enter_tgkill,syscalls:sys_enter_sched_yield,syscalls:sys_enter_madvise,syscalls:sys_enter_mmap,syscalls:sys_enter_io_uring_enter,context-switches,cpu-migrations' -p $PID -o $OUT.stat -- "${PGB[@]}" 2>&1)
elif [ "$MODE" = perfall ]; then
	# The whole machine over exactly the pgbench run: what every process spends per transaction.
	res=$(perf record -a -e cpu-clock -F 2999 -g -o $OUT.perf -- "${PGB[@]}" 2>&1)
else
	res=$( { /usr/bin/time -f "pgbench_cpu %U %S" "${PGB[@]}"; } 2>&1)
fi
t1=$(ticks $PID) u1=$(uticks $PID)
read -r tv1 tn1 < <(tswitches $PID)
TCPSTAT=$(nstat -z 2>/dev/null | awk '$1 ~ /^(TcpInSegs|TcpOutSegs|TcpExtDelayedACKs|TcpExtTCPPureAcks|TcpExtTCPHPAcks|TcpExtTCPHPHits|TcpExtTCPDelivered|TcpExtTCPAutoCorking|TcpExtTCPBacklogCoalesce|TcpExtTCPOrigDataSent|TcpExtTCPRcvCoalesce|TcpExtTCPBacklogDrop|TcpExtTCPWantZeroWindowAdv|TcpExtTCPFromZeroWindowAdv|TcpExtTCPToZeroWindowAdv|TcpExtDelayedACKLost|TcpExtTCPACKSkippedSeq)$/{print $1, $2}')
pgsample >>"$TMP/pgs"; kill $PGS; read -r g w x gtop gall < <(pgspent "$TMP/pg0" "$TMP/pgs"); read -r busy1 idle1 < <(cpustat); read -r cs1 res1 cal1 tlb1 < <(wakestat)
read -r m1 b1 gc1 heap1 < <(mallocs)
[ "$MODE" = cg ] && callgrind_control -i off $PID >/dev/null && callgrind_control -d $PID >/dev/null
[ -n "$SP" ] && wait $SP || true
[ "$MODE" = allocs ] && curl -s -o $OUT.allocs1 "http://127.0.0.1:$PP/debug/pprof/allocs"
tps=$(echo "$res" | awk '/^tps/{print int($3)}')
n=$(echo "$res" | awk '/processed:/{print $NF}' | tr -d ' ' | cut -d/ -f1)
n=$(echo "$res" | awk -F: '/number of transactions actually processed/{print $2}' | tr -d ' ')
echo "bin=$(basename $BIN) tps=$tps n=$n cpu_us_per_tx=$(awk -v a=$t0 -v b=$t1 -v n=$n -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.1f", (b-a)*1e6/hz/n}') load=$(cut -d' ' -f1 /proc/loadavg) usr_us_per_tx=$(awk -v a=$u0 -v b=$u1 -v n=$n -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.1f", (b-a)*1e6/hz/n}') mallocs_per_tx=$(awk -v a=$m0 -v b=$m1 -v n=$n 'BEGIN{printf "%.2f", (b-a)/n}') bytes_per_tx=$(awk -v a=$b0 -v b=$b1 -v n=$n 'BEGIN{printf "%.0f", (b-a)/n}') gc_cycles=$(awk -v a=$gc0 -v b=$gc1 'BEGIN{print b-a}') heap_inuse_mb=$(awk -v h=$heap1 'BEGIN{printf "%.1f", h/1048576}')"
echo "$res" | awk -v n=$n -v tv0=$tv0 -v tv1=$tv1 -v tn0=$tn0 -v tn1=$tn1 -v x0=0 -v x1=$x -v g0=0 -v g1=$g -v w0=0 -v w1=$w -v b0=$busy0 -v b1=$busy1 -v i0=$idle0 -v i1=$idle1 -v hz=$(getconf CLK_TCK) '
	/^pgbench_cpu/{pb=($2+$3)*1e6/n}
	END{printf "target_switches_per_tx=%.2f/%.2f ", (tv1-tv0)/n, (tn1-tn0)/n; printf "pgbench_us_per_tx=%.1f postgres_us_per_tx=%.1f postgres_switches_per_tx=%.2f postgres_migrations_per_tx=%.3f machine_busy_us_per_tx=%.1f idle_pct=%.1f\n", pb, (g1-g0)*1e6/hz/n, (w1-w0)/n, (x1-x0)/n, (b1-b0)*1e6/hz/n, 100*(i1-i0)/((b1-b0)+(i1-i0))}'
echo "machine_switches_per_tx=$(awk -v a=$cs0 -v b=$cs1 -v n=$n 'BEGIN{printf "%.2f", (b-a)/n}') resched_ipi_per_tx=$(awk -v a=$res0 -v b=$res1 -v n=$n 'BEGIN{printf "%.3f", (b-a)/n}') call_ipi_per_tx=$(awk -v a=$cal0 -v b=$cal1 -v n=$n 'BEGIN{printf "%.3f", (b-a)/n}') tlb_ipi_per_tx=$(awk -v a=$tlb0 -v b=$tlb1 -v n=$n 'BEGIN{printf "%.3f", (b-a)/n}')"
echo "postgres_backend_ticks=${gall// /,} busiest_share=$(awk -v a=$gtop -v b=$g 'BEGIN{printf "%.2f", b ? a/b : 0}')"
echo "$TCPSTAT" | awk -v n=$n 'NF==2{printf "%s=%.3f ", $1, $2/n} END{print ""}'
if [ -n "$AD" ] && [[ $RELAYS != *" $BIN "* ]] && [ "$BIN" != pgbouncer ]; then curl -s http://127.0.0.1:$AD/metrics | grep -E '^go_memstats_mallocs_total ' >$OUT.mallocs || true; fi
if [ "$MODE" = stat ]; then awk -v n=$n '/syscalls|context|migrations|:/{gsub(",","",$1); if ($1 ~ /^[0-9]+$/) printf "%s %.3f\n", $2, $1/n}' $OUT.stat; fi
if [ "$MODE" = strace ]; then
	strace_sum backend "$OUT.be.tr"
	strace_sum pgbench "$OUT.pb.tr"
fi
if [ "$MODE" = cg ]; then
	sleep 1
	# the dump taken at the run's end (.cg.N), not the file callgrind writes when the target exits
	f=$(ls -t "$OUT".cg.* 2>/dev/null | head -1)
	[ -n "$f" ] || f=$OUT.cg
	awk -v n=$n '/^totals:/{printf "user instructions per transaction: %.0f (%s)\n", $2/n, FILENAME; exit}' "$f"
fi
