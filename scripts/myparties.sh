#!/usr/bin/env bash
# myparties.sh SECS TARGET...: what every party of a MySQL-wire statement pays in the kernel, per
# statement, counted (not timed): for each TARGET in turn (as scripts/myab.sh names them: direct,
# direct-unix (MariaDB's Unix socket, MY_SOCK, default /run/mysqld/mysqld.sock),
# loop-relay, loop-ring, haproxy, NAME=BIN; a relay's name may carry more benchrelay flags after
# "+", e.g. loop-ring+-upstream=unix:/run/mysqld/mysqld.sock or loop-ring+-cc=reno, and
# "+pin=CPU" runs it under taskset -c CPU; PIN=CPU pins every relay), scripts/benchclient -c $C (default 8)
# SELECT 1 for SECS seconds, and over SECS-1 of them one perf stat, counted per thread and summed
# per party (the client, mariadbd, the target: all their threads; of mariadbd only the threads of
# this run's connections), of software events and tracepoints: task-clock, context
# switches, migrations, system calls, segments handed to a device (net:net_dev_xmit: on loopback
# the receiver's TCP work runs in the sender's context), wake-ups made (sched:sched_wakeup, counted
# in the waker) and softirqs run. Prints them per statement (over the client's segments in the
# window: one request each), with each party's user and system CPU (/proc/PID/stat, over the
# run's rate) and the load. The machine's load changes how much each party batches, so
# compare targets counted in the same minutes (interleave them), and read the load beside them.
set -euo pipefail
SECS=$1
shift
C=${C:-8} QUERY=${QUERY:-SELECT 1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/myparties.XXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
# shellcheck source=scripts/probelib.sh
. "$ROOT/scripts/probelib.sh" # freeport
waitport() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "myparties: nothing listens on $1" >&2; exit 1; }
if [ -n "${BENCHCLIENT:-}" ]; then cp "$BENCHCLIENT" "$TMP/benchclient"; else (cd "$ROOT" && go build -o "$TMP/benchclient" ./scripts/benchclient); fi
MARIADB=$(pidof mariadbd || pidof mysqld)
EV=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter,net:net_dev_xmit,sched:sched_wakeup,irq:softirq_entry${EVENTS:+,$EVENTS}
# ticks PID or TID,TID,...: user and system clock ticks (threads of mariadbd for a list)
ticks() {
	local f=/proc/$1/stat
	case $1 in *,* | [0-9]*) if [ ! -e /proc/$1/stat ]; then f=$(for t in ${1//,/ }; do echo /proc/$MARIADB/task/$t/stat; done); fi ;; esac
	{ cat $f 2>/dev/null || true; } | awk '{sub(/.*\) /, ""); u += $12; s += $13} END{print u + 0, s + 0}'
}
for t in "$@"; do
	PID= DSN= FIRSTID=$(mysql -N -uroot -h127.0.0.1 -e "select max(ID) from information_schema.PROCESSLIST")
	case $t in
	direct) DSN="root@tcp(127.0.0.1:3306)/mysql" ;;
	direct-unix) DSN="root@unix(${MY_SOCK:-/run/mysqld/mysqld.sock})/mysql" ;;
	loop-relay* | loop-ring*)
		base=${t%%+*} extra=()
		[ "$base" != "$t" ] && IFS=+ read -r -a extra <<<"${t#"$base"+}"
		if [ ! -x "$TMP/benchrelay" ]; then
			if [ -n "${RELAY:-}" ]; then cp "$RELAY" "$TMP/benchrelay"; else (cd "$ROOT" && go build -o "$TMP/benchrelay" ./scripts/benchrelay); fi
		fi
		p=$(freeport) be=epoll
		[ "$base" = loop-ring ] && be=uring
		WRAP=() flags=()
		[ -n "${PIN:-}" ] && WRAP=(taskset -c "$PIN")
		for f in "${extra[@]}"; do case $f in pin=*) WRAP=(taskset -c "${f#pin=}") ;; *) flags+=("$f") ;; esac; done
		QUERYFLUX_RELAY_BACKEND=$be "${WRAP[@]}" "$TMP/benchrelay" -loop -raw -listen 127.0.0.1:$p -upstream 127.0.0.1:3306 "${flags[@]}" >"$TMP/relay.log" 2>&1 &
		PID=$! DSN="root@tcp(127.0.0.1:$p)/mysql"
		waitport $p
		;;
	haproxy)
		p=$(freeport)
		printf 'global\n  nbthread 1\n  maxconn 1000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten my\n  bind 127.0.0.1:%s\n  server my 127.0.0.1:3306\n' $p >"$TMP/haproxy.cfg"
		haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
		PID=$! DSN="root@tcp(127.0.0.1:$p)/mysql"
		waitport $p
		;;
	*=*)
		bin=${t#*=} my=$(freeport) ad=$(freeport)
		printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  frontends:\n    mysql: {enabled: true, listen: "127.0.0.1:%s"}\nsettings: {passthrough: true, security: {trustLoopback: true}}\nclusters:\n  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}\nclusterGroups:\n  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}\nrouters:\n  - {type: protocolBased, mysql: maria}\nroutingFallback: maria\n' $ad $my >"$TMP/d.yaml"
		"$bin" serve --config "$TMP/d.yaml" >"$TMP/d.log" 2>&1 &
		PID=$! DSN="queryflux@tcp(127.0.0.1:$my)/mysql"
		waitport $my
		;;
	*) echo "myparties: unknown target $t" >&2; exit 2 ;;
	esac
	[ -n "$PID" ] && PIDS+=("$PID")
	"$TMP/benchclient" -dsn "$DSN" -query "$QUERY" -c "$C" -d 2s >/dev/null # warm-up: pools, caches
	"$TMP/benchclient" -dsn "$DSN" -query "$QUERY" -c "$C" -d "$((SECS + 1))s" >"$TMP/out" & # outlives the counts
	CL=$!
	sleep 0.5
	# MariaDB serves other users too: only the threads of this run's connections are counted (the
	# processlist's TID of each connection whose client port is a socket of the client or target)
	owner=${PID:-$CL}
	hosts=$(ss -tnpH state established dst 127.0.0.1:3306 | { grep "pid=$owner," || true; } | awk '{n = split($3, a, ":"); printf "%s\047127.0.0.1:%s\047", (NR > 1 ? "," : ""), a[n]}')
	where="HOST in ($hosts)"
	case $t in *unix*) where="HOST = 'localhost' and ID > $FIRSTID" ;; esac # a Unix socket's clients have no port: this run's
	TIDS=$(mysql -N -uroot -h127.0.0.1 -e "select group_concat(TID) from information_schema.PROCESSLIST where $where")
	parties=("client:$CL" "mariadb:$TIDS")
	[ -n "$PID" ] && parties+=("target:$PID")
	# One perf stat over every party's threads (one window for all), counted per thread.
	: >"$TMP/tids"
	for pp in "${parties[@]}"; do
		name=${pp%%:*} ids=${pp#*:}
		[ "$name" != mariadb ] && ids=$(ls /proc/"$ids"/task | paste -sd,)
		for id in ${ids//,/ }; do echo "$id $name" >>"$TMP/tids"; done
	done
	declare -A T0
	for pp in "${parties[@]}"; do T0[${pp%%:*}]=$(ticks "${pp#*:}"); done
	perf stat -x, --per-thread -e "$EV" -t "$(awk '{print $1}' "$TMP/tids" | paste -sd,)" -o "$TMP/all.stat" -- sleep $((SECS - 1)) 2>/dev/null || true
	declare -A T1
	for pp in "${parties[@]}"; do T1[${pp%%:*}]=$(ticks "${pp#*:}"); done
	wait $CL
	read -r p50 p99 qps <"$TMP/out"
	# Statements in the window: the client's segments (one request each; its ACKs ride on them).
	n=$(awk -F, 'NR == FNR {party[$1] = $2; next} {t = $1; sub(/.*-/, "", t)} $4 == "net:net_dev_xmit" && party[t] == "client" && $2 ~ /^[0-9]+$/ {n += $2} END {print n + 0}' <(tr ' ' , <"$TMP/tids") "$TMP/all.stat")
	echo "== $t ${PIN:+pinned to $PIN }c=$C qps=$qps p50_us=$p50 p99_us=$p99 (per statement below: $n client segments counted; usr/sys over the same seconds at qps) load=$(cut -d' ' -f1 /proc/loadavg) $(date -u +%H:%M:%S)"
	for pp in "${parties[@]}"; do
		name=${pp%%:*}
		read -r u0 s0 <<<"${T0[$name]}"
		read -r u1 s1 <<<"${T1[$name]}"
		awk -F, -v n=$n -v nq=$((qps * (SECS - 1))) -v name=$name -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz=$(getconf CLK_TCK) -v extra="${EVENTS:-}" '
			NR == FNR { party[$1] = $2; next }
			{ t = $1; sub(/.*-/, "", t) }
			party[t] == name && $2 ~ /^[0-9.]+$/ { v[$4] += $2 }
			END {
				if (n == 0) n = 1
				printf "  %-8s usr_us %5.1f sys_us %5.1f task_us %5.1f switches %5.2f migrations %5.3f syscalls %5.2f segments %5.2f wakeups_made %5.2f softirqs %5.2f\n", name,
					u*1e6/hz/nq, s*1e6/hz/nq, v["task-clock"]*1e3/n, v["context-switches"]/n, v["cpu-migrations"]/n, v["raw_syscalls:sys_enter"]/n, v["net:net_dev_xmit"]/n, v["sched:sched_wakeup"]/n, v["irq:softirq_entry"]/n
				ne = split(extra, ev, ",")
				for (i = 1; i <= ne; i++) if (v[ev[i]] > 0) { e = ev[i]; sub(/^[a-z_]+:(sys_enter_)?/, "", e); printf "    %s %.2f\n", e, v[ev[i]]/n }
			}' <(tr ' ' , <"$TMP/tids") "$TMP/all.stat"
	done
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
	unset T0 T1
done
