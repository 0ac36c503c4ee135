#!/usr/bin/env bash
# bench-proxy.sh: QueryFlux's proxy overhead next to PgBouncer, on the local PostgreSQL
# (127.0.0.1:5432, user postgres, trust) and MariaDB (127.0.0.1:3306, root).
#
# Starts (all on free loopback ports, all stopped on exit): PgBouncer (transaction pooling),
# haproxy in mode tcp (one thread: a C event-loop relay hop, to PostgreSQL and to MariaDB),
# a Go byte relay (scripts/benchrelay: goroutines, io.Copy) and the same on an event loop (-loop),
# a standalone queryflux (passthrough, its group in transaction pool mode like PgBouncer), the
# same with its group in session pool mode (pass-session), a standalone queryflux with
# settings.passthrough: false (Arrow path), and a control plane + worker (capacity leases from
# the control plane). Then
# prints one table: single-client SELECT 1 latency (pgbench -c1 -M extended, per-transaction
# --log) and pgbench -S -c 8 TPS; and the same for the MySQL wire against MariaDB when the
# daemon serves it. Bounded: about 5-6 minutes.
#
# Trino HTTP rows: "trino" is single-client SELECT 1 through the Trino HTTP port of a standalone
# daemon to the PostgreSQL engine, "trino-pg" the same query straight to PostgreSQL, both timed by
# one program (scripts/benchtrino) with one persistent connection each (kept-alive HTTP/1.1, as
# trino-go-client keeps; one pgx connection); the trino row's added p50 is its p50 minus
# trino-pg's, and its goal is added p50 <= 100 us. The floor rows are the same client
# against fixed documents with no proxy behind them (net/http, httplite, no HTTP server): how
# much of those 100 us the client and two loopback exchanges take by themselves; trino-rawc,
# floor-rawc and trino-driver ask with other clients (no net/http; trino-go-client). A trino row's
# cpu_us/q is its server process's CPU per query over the latency run. benchtrino reads rows from
# every answer, the POST's too, as the Python and Java clients do, and the daemon lists it in
# frontends.trino.postAnswerClients: a SELECT 1 of the trino row is one exchange (its POST answered
# with the row). trino-2x is the same client under another name (-agent), answered as trino-go-client
# and the npm trino-client are (they drop a POST answer's rows): QUEUED, then a GET.
#
# The machine is shared and its timings drift, so the targets are measured in ROUNDS interleaved
# rounds (every target once per round) and each figure is the median over the rounds. The
# throughput goals (passthrough against PgBouncer, the worker against passthrough, MySQL
# passthrough against MariaDB direct) read pairs: the goal's rows run back to back in every
# round, in an order that turns round every second round, and GOAL_ROUNDS more runs of them alone
# follow the rounds; the goal line is the median of the per-round ratios (each printed, with each
# round's CPU per query of both), as a round's load moves both rows of its pair alike. The
# worker's latency goal reads the same rounds' differences of p50 (worker less passthrough).
#
# Environment: ROOT (the checkout to build; default: this script's), ROUNDS (3), GOAL_ROUNDS (ROUNDS), LAT_SECS (3), TPS_SECS (6), CLIENTS (8), KEEP_TMP=1 keeps the temp dir,
# BASE_QF (another queryflux binary, such as main's before a change: its standalone passthrough
# daemon and its control plane + worker are measured too, as the rows "base-pass", "base-session"
# (session pool mode) and "base-worker", in the same interleaved rounds),
# PROFILE=1 builds the daemon with -tags benchpprof and writes a 4 s CPU profile of the
# passthrough daemon under the pgbench -S load to $PROFILE_OUT (default /tmp/bench-proxy-cpu.prof)
# (go tool pprof -top bin/queryflux /tmp/bench-proxy-cpu.prof), and one under the MySQL qps
# load to $PROFILE_OUT_MYSQL (default /tmp/bench-proxy-mysql-cpu.prof). PROFILE_TARGET (default
# passthrough; or pass-session, arrow, worker) names the daemon profiled; for worker, its control
# plane is profiled too, to the same file names with ".cp" added.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
GOAL_ROUNDS=${GOAL_ROUNDS:-$ROUNDS}
LAT_SECS=${LAT_SECS:-3}
TPS_SECS=${TPS_SECS:-6}
CLIENTS=${CLIENTS:-8}
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
# No target offers TLS but PostgreSQL itself (and the go-relay, which passes its bytes): every
# client connects in plain text, so no row pays for encryption the others do not.
export PGSSLMODE=disable
TMP=$(mktemp -d /tmp/bench-proxy.XXXXXX)
chmod 755 "$TMP"
PIDS=()
DB=qf_bench

cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ "${KEEP_TMP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

log() { echo "bench-proxy: $*" >&2; }
. "$(dirname "$0")/probelib.sh" # the daemons' configurations (qf_*), freeport
waitport() { # port, name
	for _ in $(seq 1 100); do
		if (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "$2 did not listen on $1; its log:"; cat "$TMP/$2.log" >&2 || true; exit 1
}

# --- tools -------------------------------------------------------------------------------
for tool in pgbouncer haproxy; do
	command -v "$tool" >/dev/null && continue
	log "$tool missing: apt-get install -y $tool"
	# Another apt-get (a test's dependencies) may hold dpkg's lock: wait for it rather than fail.
	APT=(apt-get -o DPkg::Lock::Timeout=600)
	"${APT[@]}" install -y "$tool" >/dev/null 2>&1 || { "${APT[@]}" update >/dev/null && "${APT[@]}" install -y "$tool" >/dev/null; }
done
log "building bin/queryflux and the MySQL client"
TAGS=(); [ "${PROFILE:-0}" = 1 ] && TAGS=(-tags benchpprof)
(cd "$ROOT" && go build "${TAGS[@]}" -o bin/queryflux ./cmd/queryflux && go build -o "$TMP/benchclient" ./scripts/benchclient && go build -o "$TMP/benchrelay" ./scripts/benchrelay)
QF="$ROOT/bin/queryflux"

# --- data --------------------------------------------------------------------------------
psql -q -h 127.0.0.1 -U postgres -d postgres -c "drop database if exists $DB with (force)" -c "create database $DB" >/dev/null
pgbench -i -q -s 1 -h 127.0.0.1 -p 5432 -U postgres "$DB" >/dev/null 2>&1
MYSQL_OK=0
if mariadb -h 127.0.0.1 -P 3306 -u root -e "select 1" >/dev/null 2>&1; then MYSQL_OK=1; fi

# --- PgBouncer ---------------------------------------------------------------------------
BOUNCER=$(freeport)
cat >"$TMP/pgbouncer.ini" <<INI
[databases]
$DB = host=127.0.0.1 port=5432 dbname=$DB user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER
unix_socket_dir =
auth_type = trust
auth_file = $TMP/userlist.txt
pool_mode = transaction
max_client_conn = 200
default_pool_size = 16
logfile = $TMP/pgbouncer.log
INI
echo '"postgres" ""' >"$TMP/userlist.txt"
chmod 644 "$TMP"/pgbouncer.ini "$TMP"/userlist.txt
touch "$TMP/pgbouncer.log" && chmod 666 "$TMP/pgbouncer.log"
USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u postgres)
pgbouncer "${USER_FLAG[@]}" "$TMP/pgbouncer.ini" >"$TMP/pgbouncer.out" 2>&1 &
PIDS+=($!)
declare -A PROC=([pgbouncer]=$!)
waitport "$BOUNCER" pgbouncer

# --- a C relay hop: haproxy in mode tcp (one thread, epoll), to PostgreSQL and to MariaDB ----
HAPROXY=$(freeport) MY_HAPROXY=$(freeport)
cat >"$TMP/haproxy.cfg" <<CFG
global
  nbthread 1
  maxconn 1000
defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
listen pg
  bind 127.0.0.1:$HAPROXY
  server pg 127.0.0.1:5432
listen my
  bind 127.0.0.1:$MY_HAPROXY
  server my 127.0.0.1:3306
CFG
haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
PIDS+=($!)
PROC[haproxy]=$!
waitport "$HAPROXY" haproxy

# --- the floor: a Go byte relay (scripts/benchrelay) ----------------------------------------
RELAY=$(freeport)
"$TMP/benchrelay" -listen "127.0.0.1:$RELAY" -upstream 127.0.0.1:5432 >"$TMP/relay.log" 2>&1 &
PIDS+=($!)
PROC[go-relay]=$!
LOOP_RELAY=$(freeport)
QUERYFLUX_RELAY_BACKEND=epoll "$TMP/benchrelay" -loop -listen "127.0.0.1:$LOOP_RELAY" -upstream 127.0.0.1:5432 >"$TMP/loop-relay.log" 2>&1 &
PIDS+=($!)
PROC[loop-relay]=$!
waitport "$RELAY" relay
waitport "$LOOP_RELAY" loop-relay
# The same bare relay on one io_uring (benchrelay -uring -peek), a row only where io_uring works.
listening() { for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
URING_RELAY=$(freeport)
"$TMP/benchrelay" -uring -peek -listen "127.0.0.1:$URING_RELAY" -upstream 127.0.0.1:5432 >"$TMP/uring-relay.log" 2>&1 &
PIDS+=($!)
PROC[uring-relay]=$!
URING_OK=1
listening "$URING_RELAY" || { URING_OK=0; log "no uring-relay row: $(head -1 "$TMP/uring-relay.log")"; }
# loop-ring: loop-relay with internal/relayloop on its io_uring backend (loop-relay is forced to epoll).
LOOP_RING=$(freeport)
if [ "$URING_OK" = 1 ]; then
	QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -listen "127.0.0.1:$LOOP_RING" -upstream 127.0.0.1:5432 >"$TMP/loop-ring.log" 2>&1 &
	PIDS+=($!)
	PROC[loop-ring]=$!
	waitport "$LOOP_RING" loop-ring
fi

# --- queryflux daemons -------------------------------------------------------------------
clusters() { qf_clusters "$DB" "${1:-transaction}" 1; } # [poolMode of the pg group] (default: transaction)

PPROF=$(freeport) PPROF_CP=$(freeport) PROFILE_TARGET=${PROFILE_TARGET:-passthrough}
profile() { # file: a 4 s CPU profile of the profiled daemon (and of its control plane, if any) a second from now
	(sleep 1; curl -s -o "$1" "http://127.0.0.1:$PPROF/debug/pprof/profile?seconds=4") &
	[ "$PROFILE_TARGET" = worker ] && (sleep 1; curl -s -o "$1.cp" "http://127.0.0.1:$PPROF_CP/debug/pprof/profile?seconds=4") &
	return 0
}
start_qf() { # name, args...
	local name=$1 bin=$QF; shift
	local pprof=""
	[ "$name" = "$PROFILE_TARGET" ] && pprof=127.0.0.1:$PPROF
	[ "$name" = "$PROFILE_TARGET-cp" ] && pprof=127.0.0.1:$PPROF_CP
	case $name in base-*) bin=$BASE_QF ;; esac
	local spin=() # rawconn's spinning wait: each daemon's default (on while CPUs idle), trino-nospin's off
	case $name in trino-nospin | pass-nospin) spin=(QUERYFLUX_SPIN_MICROS=0) ;; esac
	env "${spin[@]}" QUERYFLUX_PPROF=$pprof "$bin" serve "$@" >"$TMP/$name.log" 2>&1 &
	PIDS+=($!)
	PROC[$name]=$!
}

standalone() { # name, passthrough(true|false), [poolMode] -> sets PG_<name>, MY_<name>
	local name=$1 pt=$2 mode=${3:-transaction} pg my admin
	pg=$(freeport); my=$(freeport); admin=$(freeport)
	{
		qf_standalone "$admin" "$pg" "$my" "$pt"
		clusters "$mode"
	} >"$TMP/$name.yaml"
	start_qf "$name" --config "$TMP/$name.yaml"
	waitport "$pg" "$name"
	printf -v "PG_${name//-/_}" %s "$pg"; printf -v "MY_${name//-/_}" %s "$my"
}

standalone passthrough true
standalone pass-session true session
standalone pass-nospin true
standalone arrow false
if [ -n "${BASE_QF:-}" ]; then
	standalone base-pass true
	standalone base-session true session
fi

worker_pair() { # name, ops port: a control plane and a worker (name) of its leases -> sets PG_<name>, MY_<name>
	local name=$1 ops=$2 secret cpadmin cppg pg my
	secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cpadmin=$(freeport); cppg=$(freeport); pg=$(freeport); my=$(freeport)
	{
		qf_control_plane "$cpadmin" "$secret" "$cppg"
		clusters
	} >"$TMP/$name-cp.yaml"
	start_qf "$name-cp" --config "$TMP/$name-cp.yaml"
	waitport "$cpadmin" "$name-cp"
	qf_worker "$cpadmin" "$secret" "$pg" "$my" >"$TMP/$name.yaml"
	start_qf "$name" --config "$TMP/$name.yaml" --name "bench-$name" --ops-listen "127.0.0.1:$ops"
	waitport "$pg" "$name"
	PROC[$name]="${PROC[$name]} ${PROC[$name-cp]}"
	# The worker answers "not configured" until its first config arrives from the control plane.
	for _ in $(seq 1 100); do
		if psql -qAt -h 127.0.0.1 -p "$pg" -U postgres -d "$DB" -c "select 1" >/dev/null 2>&1; then break; fi
		sleep 0.1
	done
	printf -v "PG_${name//-/_}" %s "$pg"; printf -v "MY_${name//-/_}" %s "$my"
}

OPS=$(freeport)
worker_pair worker "$OPS"
[ -n "${BASE_QF:-}" ] && worker_pair base-worker "$(freeport)"

# --- measurements ------------------------------------------------------------------------
latency() { # port -> "p50 p99" in microseconds of SELECT 1, one client, extended protocol
	local dir; dir=$(mktemp -d "$TMP/lat.XXXX")
	echo "SELECT 1;" >"$dir/select1.sql"
	(cd "$dir" && pgbench -n -c 1 -M extended -T "$LAT_SECS" -f select1.sql --log --log-prefix=lat \
		-h 127.0.0.1 -p "$1" -U postgres "$DB" >"$dir/out" 2>&1) || { cat "$dir/out" >&2; echo "- -"; return; }
	cat "$dir"/lat* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {printf "%d %d\n", a[int(NR*0.5)+1], a[int(NR*0.99)+1]}'
}
# CPU time (user + system) of processes, in clock ticks, from /proc/PID/stat.
HZ=$(getconf CLK_TCK)
ticks() { # pids... -> their utime + stime summed
	local sum=0 t
	for pid in "$@"; do
		t=$(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat" 2>/dev/null || echo 0)
		sum=$((sum + t))
	done
	echo "$sum"
}
cpu_per_query() { # ticks before, ticks after, queries -> CPU microseconds per query ("-" without pids)
	if [ -z "$4" ] || ! [[ $3 =~ ^[0-9]+$ ]] || [ "$3" = 0 ]; then echo -; return; fi
	awk -v b="$1" -v a="$2" -v n="$3" -v hz="$HZ" 'BEGIN{printf "%d\n", (a - b) * 1e6 / hz / n}'
}
# Every party's CPU over a throughput run, per query, beside the target's: on 2 cores a
# saturated row's throughput is about 2 CPU-seconds a second over the parties' sum, so the split
# says where a row's gap to another is spent. The client is the load generator itself (its
# user + system time); the engine is every process of the server, the ended ones too (the
# postmaster's, or mariadbd's, children's times: direct's backends end with pgbench); the
# machine is all CPUs' busy time (/proc/stat: other processes' too, which a loaded machine shows).
server_ticks() { # the engine's processes: pgrep pattern -> their CPU and their ended children's
	local sum=0 t
	for pid in $(pgrep -x "$1" || true); do
		t=$(awk '{sub(/.*\) /, ""); print $12 + $13 + $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
		sum=$((sum + t))
	done
	echo "$sum"
}
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
client_cpu() { # file of /usr/bin/time -f '%U %S', queries -> the client's CPU microseconds per query
	awk -v n="$2" '{if (n > 0) printf "%d", ($1 + $2) * 1e6 / n; else print "-"}' "$1" 2>/dev/null || echo -
}
split_of() { # client time file, engine ticks before, after, busy before, after, queries -> "client engine machine"
	echo "$(client_cpu "$1" "$6") $(cpu_per_query "$2" "$3" "$6" engine) $(cpu_per_query "$4" "$5" "$6" machine)"
}
tps() { # port, pids... -> "TPS cpu_us_per_query client engine machine" of pgbench -S -c N (the pids' CPU per transaction)
	local out port=$1 t0 t1 n e0 e1 b0 b1; shift
	t0=$(ticks "$@") e0=$(server_ticks postgres) b0=$(busy_ticks)
	out=$(/usr/bin/time -f '%U %S' -o "$TMP/client.time" pgbench -n -S -c "$CLIENTS" -j 2 -T "$TPS_SECS" -h 127.0.0.1 -p "$port" -U postgres "$DB" 2>&1) || { echo "$out" >&2; echo "- - - - -"; return; }
	t1=$(ticks "$@") e1=$(server_ticks postgres) b1=$(busy_ticks)
	n=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' | head -1)
	echo "$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1 | awk '{printf "%d", $1}') $(cpu_per_query "$t0" "$t1" "$n" "$*") $(split_of "$TMP/client.time" "$e0" "$e1" "$b0" "$b1" "$n")"
}

# median of numbers (or "-" when none is a number)
median() { printf '%s\n' "$@" | { grep -E '^[0-9]+$' || true; } | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }

declare -A LAT TPS CPU P50S P99S TPSS CPUS SPLITS
# passthrough between pgbouncer and worker: the goals compare it with each, and the machine's
# load drifts between rows of a round.
TARGETS=(direct pgbouncer passthrough worker haproxy go-relay loop-relay pass-session pass-nospin arrow)
declare -A PORT=([direct]=5432 [pgbouncer]=$BOUNCER [haproxy]=$HAPROXY [go-relay]=$RELAY [loop-relay]=$LOOP_RELAY [passthrough]=$PG_passthrough
	[pass-session]=$PG_pass_session [pass-nospin]=$PG_pass_nospin [arrow]=$PG_arrow [worker]=$PG_worker)
if [ "$URING_OK" = 1 ]; then TARGETS+=(uring-relay loop-ring); PORT[uring-relay]=$URING_RELAY PORT[loop-ring]=$LOOP_RING; fi
if [ -n "${BASE_QF:-}" ]; then
	TARGETS+=(base-pass base-session base-worker)
	PORT[base-pass]=$PG_base_pass PORT[base-session]=$PG_base_session PORT[base-worker]=$PG_base_worker
fi
# swapped list a b: the list with a and b in each other's place (a round's pair runs in the other
# order every second round, so that neither side of a goal's pair always runs first).
swapped() {
	local x=$1 y=$2 t; shift 2
	for t in "$@"; do
		case $t in "$x") echo "$y" ;; "$y") echo "$x" ;; *) echo "$t" ;; esac
	done
}
# moved name anchor before|after list...: the list with name taken out and put just before or
# just after anchor.
moved() {
	local name=$1 anchor=$2 where=$3 t; shift 3
	for t in "$@"; do
		[ "$t" = "$name" ] && continue
		[ "$t" = "$anchor" ] && [ "$where" = before ] && echo "$name"
		echo "$t"
		[ "$t" = "$anchor" ] && [ "$where" = after ] && echo "$name"
	done
}
# next_to round base row list...: the list with BASE_QF's row base moved beside the row it is
# compared with, after it in odd rounds and before it in even ones, so that the two see the same
# load and neither always runs first (the list unchanged without BASE_QF).
next_to() {
	local round=$1 base=$2 row=$3 where=after; shift 3
	if [ -z "${BASE_QF:-}" ]; then printf '%s\n' "$@"; return; fi
	[ $((round % 2)) = 0 ] && where=before
	moved "$base" "$row" "$where" "$@"
}
# The goals' rows, passthrough between the two it is compared with: every second round they run
# reversed (worker, passthrough, pgbouncer), so that each pair turns round each round. BASE_QF's
# rows run just outside the goals' three (worker, base-worker, base-pass; reversed every second
# round), so that they leave the goals' pairs as they are.
GOAL_PG=(pgbouncer passthrough worker)
for round in $(seq 1 "$ROUNDS"); do
	ORDER=("${TARGETS[@]}")
	# shellcheck disable=SC2207 # one target a line
	[ $((round % 2)) = 0 ] && ORDER=($(swapped pgbouncer worker "${TARGETS[@]}"))
	# shellcheck disable=SC2207
	ORDER=($(next_to "$round" base-pass worker "${ORDER[@]}"))
	# shellcheck disable=SC2207
	ORDER=($(next_to "$round" base-worker worker "${ORDER[@]}"))
	# shellcheck disable=SC2207
	ORDER=($(next_to "$round" base-session pass-session "${ORDER[@]}"))
	for t in "${ORDER[@]}"; do
		log "postgres round $round/$ROUNDS: $t (port ${PORT[$t]})"
		read -r p50 p99 <<<"$(latency "${PORT[$t]}")"
		P50S[$t]+="$p50 "; P99S[$t]+="$p99 "
		if [ "${PROFILE:-0}" = 1 ] && [ "$t" = "$PROFILE_TARGET" ] && [ "$round" = 1 ]; then
			profile "${PROFILE_OUT:-/tmp/bench-proxy-cpu.prof}"
		fi
		# shellcheck disable=SC2086 # the target's pids, one word each
		read -r q cpu cc ec mc <<<"$(tps "${PORT[$t]}" ${PROC[$t]:-})"
		TPSS[$t]+="$q "; CPUS[$t]+="$cpu "; SPLITS[$t]+="$q/$cpu/$cc/$ec/$mc "
	done
done
# The goals' rows once more, alone: GOAL_ROUNDS runs of each, back to back, in the order of the
# rounds above (reversed every second one). With those rounds they make the paired figures the
# goal lines read: throughput for all three, and the latency of passthrough and worker (whose
# goal is on added p50) run just before their throughput.
declare -A GTPS GCPU GP50
for t in "${GOAL_PG[@]}"; do GTPS[$t]=${TPSS[$t]} GCPU[$t]=${CPUS[$t]} GP50[$t]=${P50S[$t]}; done
for round in $(seq 1 "$GOAL_ROUNDS"); do
	ORDER=("${GOAL_PG[@]}")
	# shellcheck disable=SC2207 # one target a line
	[ $(((ROUNDS + round) % 2)) = 0 ] && ORDER=($(swapped pgbouncer worker "${GOAL_PG[@]}"))
	for t in "${ORDER[@]}"; do
		log "postgres goal round $round/$GOAL_ROUNDS: $t"
		if [ "$t" != pgbouncer ]; then
			read -r p50 _ <<<"$(latency "${PORT[$t]}")"
			GP50[$t]+="$p50 "
		fi
		# shellcheck disable=SC2086 # the target's pids, one word each
		read -r q cpu _ <<<"$(tps "${PORT[$t]}" ${PROC[$t]:-})"
		GTPS[$t]+="$q "; GCPU[$t]+="$cpu "
	done
done
for t in "${TARGETS[@]}"; do
	# shellcheck disable=SC2086 # word splitting of the per-round lists is wanted
	LAT[$t]="$(median ${P50S[$t]}) $(median ${P99S[$t]})"; TPS[$t]=$(median ${TPSS[$t]}); CPU[$t]=$(median ${CPUS[$t]})
done

declare -A MLAT MTPS MCPU MP50S MP99S MQPSS MCPUS MSPLITS
MY_TARGETS=()
if [ "$MYSQL_OK" = 1 ]; then
	# The MySQL wire's floors: the same Go byte relay and event-loop relay (framing nothing) to MariaDB.
	MY_RELAY=$(freeport); MY_LOOP_RELAY=$(freeport)
	"$TMP/benchrelay" -listen "127.0.0.1:$MY_RELAY" -upstream 127.0.0.1:3306 >"$TMP/my-relay.log" 2>&1 &
	PIDS+=($!)
	declare -A MYPROC=([go-relay]=$!)
	QUERYFLUX_RELAY_BACKEND=epoll "$TMP/benchrelay" -loop -raw -listen "127.0.0.1:$MY_LOOP_RELAY" -upstream 127.0.0.1:3306 >"$TMP/my-loop-relay.log" 2>&1 &
	PIDS+=($!)
	MYPROC[loop-relay]=$!
	waitport "$MY_RELAY" my-relay
	waitport "$MY_LOOP_RELAY" my-loop-relay
	MY_URING_RELAY=$(freeport)
	if [ "$URING_OK" = 1 ]; then
		"$TMP/benchrelay" -uring -raw -peek -listen "127.0.0.1:$MY_URING_RELAY" -upstream 127.0.0.1:3306 >"$TMP/my-uring-relay.log" 2>&1 &
		PIDS+=($!)
		MYPROC[uring-relay]=$!
		listening "$MY_URING_RELAY" || URING_OK=0
		MY_LOOP_RING=$(freeport)
		QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -raw -listen "127.0.0.1:$MY_LOOP_RING" -upstream 127.0.0.1:3306 >"$TMP/my-loop-ring.log" 2>&1 &
		PIDS+=($!)
		MYPROC[loop-ring]=$!
		waitport "$MY_LOOP_RING" my-loop-ring
	fi
	# ring-unix: loop-ring with MariaDB's Unix socket as the engine leg (no TCP/IP on that leg);
	# direct-unix: the client on that socket itself. MY_UNIX=0 leaves them out.
	MY_SOCK=$(mysql -N -uroot -h127.0.0.1 -e 'select @@socket' 2>/dev/null || true)
	if [ "${MY_UNIX:-1}" = 1 ] && [ "$URING_OK" = 1 ] && [ -S "$MY_SOCK" ]; then
		MY_RING_UNIX=$(freeport)
		QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -raw -listen "127.0.0.1:$MY_RING_UNIX" -upstream "unix:$MY_SOCK" >"$TMP/my-ring-unix.log" 2>&1 &
		PIDS+=($!)
		MYPROC[ring-unix]=$!
		waitport "$MY_RING_UNIX" my-ring-unix
	else
		MY_SOCK=
	fi
	# sockmap: benchrelay -sockmap, the bytes relayed in the kernel (internal/sockmap: an sk_skb
	# verdict program); left out where BPF is refused (the relay exits) or with MY_SOCKMAP=0.
	MY_SOCKMAP_PORT=
	if [ "${MY_SOCKMAP:-1}" = 1 ]; then
		p=$(freeport)
		"$TMP/benchrelay" -sockmap -listen "127.0.0.1:$p" -upstream 127.0.0.1:3306 >"$TMP/my-sockmap.log" 2>&1 &
		PIDS+=($!)
		MYPROC[sockmap]=$!
		if listening "$p"; then MY_SOCKMAP_PORT=$p; else log "mysql sockmap: left out ($(head -c 300 "$TMP/my-sockmap.log"))"; fi
	fi
	# results-ring: benchrelay -loop -sockmap-results on io_uring, each request read by the event
	# loop and the answers spliced in the kernel (internal/sockmap's result splice); left out
	# with the sockmap row, where io_uring is not, or where BPF is refused.
	MY_RESULTS_PORT=
	if [ -n "$MY_SOCKMAP_PORT" ] && [ "$URING_OK" = 1 ]; then
		p=$(freeport)
		QUERYFLUX_RELAY_BACKEND=uring "$TMP/benchrelay" -loop -sockmap-results -listen "127.0.0.1:$p" -upstream 127.0.0.1:3306 >"$TMP/my-results-ring.log" 2>&1 &
		PIDS+=($!)
		MYPROC[results-ring]=$!
		if listening "$p"; then MY_RESULTS_PORT=$p; else log "mysql results-ring: left out ($(head -c 300 "$TMP/my-results-ring.log"))"; fi
	fi
	MYPROC[haproxy]=${PROC[haproxy]}
	MY_TARGETS=(direct haproxy go-relay loop-relay passthrough pass-nospin arrow worker)
	declare -A MYDSN=(
		[direct]="root@tcp(127.0.0.1:3306)/mysql"
		[haproxy]="root@tcp(127.0.0.1:$MY_HAPROXY)/mysql"
		[go-relay]="root@tcp(127.0.0.1:$MY_RELAY)/mysql"
		[loop-relay]="root@tcp(127.0.0.1:$MY_LOOP_RELAY)/mysql"
		[passthrough]="queryflux@tcp(127.0.0.1:$MY_passthrough)/mysql"
		[pass-nospin]="queryflux@tcp(127.0.0.1:$MY_pass_nospin)/mysql"
		[arrow]="queryflux@tcp(127.0.0.1:$MY_arrow)/mysql"
		[worker]="queryflux@tcp(127.0.0.1:$MY_worker)/mysql"
	)
	for t in passthrough pass-nospin arrow worker; do MYPROC[$t]=${PROC[$t]}; done
	if [ "$URING_OK" = 1 ]; then
		MY_TARGETS+=(uring-relay loop-ring)
		MYDSN[uring-relay]="root@tcp(127.0.0.1:$MY_URING_RELAY)/mysql" MYDSN[loop-ring]="root@tcp(127.0.0.1:$MY_LOOP_RING)/mysql"
	fi
	if [ -n "$MY_SOCKMAP_PORT" ]; then
		MY_TARGETS+=(sockmap)
		MYDSN[sockmap]="root@tcp(127.0.0.1:$MY_SOCKMAP_PORT)/mysql"
	fi
	if [ -n "$MY_RESULTS_PORT" ]; then
		MY_TARGETS+=(results-ring)
		MYDSN[results-ring]="root@tcp(127.0.0.1:$MY_RESULTS_PORT)/mysql"
	fi
	if [ -n "$MY_SOCK" ]; then
		MY_TARGETS+=(ring-unix direct-unix)
		MYDSN[ring-unix]="root@tcp(127.0.0.1:$MY_RING_UNIX)/mysql" MYDSN[direct-unix]="root@unix($MY_SOCK)/mysql"
	fi
	if [ -n "${BASE_QF:-}" ]; then
		MY_TARGETS+=(base-pass base-worker)
		MYDSN[base-pass]="queryflux@tcp(127.0.0.1:$MY_base_pass)/mysql"
		MYDSN[base-worker]="queryflux@tcp(127.0.0.1:$MY_base_worker)/mysql"
		MYPROC[base-pass]=${PROC[base-pass]} MYPROC[base-worker]=${PROC[base-worker]}
	fi
	myqps() { # target -> "qps cpu_us_per_query client engine machine" of benchclient -c N
		local t=$1 t0 t1 e0 e1 b0 b1 n q cpu
		# shellcheck disable=SC2086
		t0=$(ticks ${MYPROC[$t]:-}) e0=$(server_ticks mariadbd) b0=$(busy_ticks)
		read -r _ _ q < <(/usr/bin/time -f '%U %S' -o "$TMP/client.time" "$TMP/benchclient" -dsn "${MYDSN[$t]}" -c "$CLIENTS" -d "${TPS_SECS}s" || echo "- - -")
		# shellcheck disable=SC2086
		t1=$(ticks ${MYPROC[$t]:-}) e1=$(server_ticks mariadbd) b1=$(busy_ticks); n=$(awk -v q="$q" -v s="$TPS_SECS" 'BEGIN{if (q ~ /^[0-9]+$/) printf "%d", q * s}')
		cpu=$(cpu_per_query "$t0" "$t1" "$n" "${MYPROC[$t]:-}")
		echo "$q $cpu $(split_of "$TMP/client.time" "$e0" "$e1" "$b0" "$b1" "$n")"
	}
	for round in $(seq 1 "$ROUNDS"); do
		ORDER=("${MY_TARGETS[@]}")
		# shellcheck disable=SC2207 # one target a line
		[ $((round % 2)) = 0 ] && ORDER=($(swapped direct passthrough "${MY_TARGETS[@]}"))
		# shellcheck disable=SC2207
		ORDER=($(next_to "$round" base-pass passthrough "${ORDER[@]}"))
		# shellcheck disable=SC2207
		ORDER=($(next_to "$round" base-worker worker "${ORDER[@]}"))
		for t in "${ORDER[@]}"; do
			log "mysql round $round/$ROUNDS: $t"
			read -r p50 p99 _ < <("$TMP/benchclient" -dsn "${MYDSN[$t]}" -c 1 -d "${LAT_SECS}s" || echo "- - -")
			if [ "${PROFILE:-0}" = 1 ] && [ "$t" = "$PROFILE_TARGET" ] && [ "$round" = 1 ]; then
				profile "${PROFILE_OUT_MYSQL:-/tmp/bench-proxy-mysql-cpu.prof}"
			fi
			read -r q cpu cc ec mc <<<"$(myqps "$t")"
			MP50S[$t]+="$p50 "; MP99S[$t]+="$p99 "; MQPSS[$t]+="$q "; MCPUS[$t]+="$cpu "; MSPLITS[$t]+="$q/$cpu/$cc/$ec/$mc "
		done
	done
	# The goal's pair alone, as for PostgreSQL's (and the bare ring relay beside it where it runs):
	# GOAL_ROUNDS throughput runs each, in an order that turns round every second round.
	GOAL_MY=(direct passthrough)
	[ "$URING_OK" = 1 ] && GOAL_MY+=(uring-relay)
	for t in "${GOAL_MY[@]}"; do GTPS[my-$t]=${MQPSS[$t]} GCPU[my-$t]=${MCPUS[$t]}; done
	for round in $(seq 1 "$GOAL_ROUNDS"); do
		ORDER=("${GOAL_MY[@]}")
		[ $(((ROUNDS + round) % 2)) = 0 ] && for i in "${!GOAL_MY[@]}"; do ORDER[i]=${GOAL_MY[${#GOAL_MY[@]} - 1 - i]}; done
		for t in "${ORDER[@]}"; do
			log "mysql goal round $round/$GOAL_ROUNDS: $t"
			read -r q cpu _ <<<"$(myqps "$t")"
			GTPS[my-$t]+="$q "; GCPU[my-$t]+="$cpu "
		done
	done
	for t in "${MY_TARGETS[@]}"; do
		# shellcheck disable=SC2086
		MLAT[$t]="$(median ${MP50S[$t]}) $(median ${MP99S[$t]})"; MTPS[$t]=$(median ${MQPSS[$t]}); MCPU[$t]=$(median ${MCPUS[$t]})
	done
else
	log "MariaDB not reachable on 127.0.0.1:3306: MySQL rows skipped"
fi

# --- Trino HTTP (its own daemons, measured after the other wires) ------------------------
# trino: SELECT 1 from one client through the Trino HTTP port of a standalone daemon (only that
# frontend enabled) to the PostgreSQL engine, over one kept-alive HTTP connection, each query a
# POST /v1/statement and GETs of nextUri until the document without one (scripts/benchtrino,
# which follows the protocol as trino-go-client does). trino-pg: the same client program's SELECT 1
# straight to PostgreSQL over one pgx connection (extended protocol). Its "added p50" is trino's
# p50 minus trino-pg's, medians over the same interleaved rounds; base-trino is BASE_QF's daemon.
(cd "$ROOT" && go build -o "$TMP/benchtrino" ./scripts/benchtrino)
trino_standalone() { # name -> sets TR_<name>
	local name=$1 tr admin answer=', postAnswerClients: ["benchtrino/"]'
	tr=$(freeport); admin=$(freeport)
	case $name in base-*) answer="" ;; esac # BASE_QF may not know the field
	{
		cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$admin"}
  frontends:
    trino: {enabled: true, listen: "127.0.0.1:$tr"$answer}
settings: {security: {trustLoopback: true}}
YAML
		clusters
	} >"$TMP/$name.yaml"
	start_qf "$name" --config "$TMP/$name.yaml"
	waitport "$tr" "$name"
	printf -v "TR_${name//-/_}" %s "$tr"
	printf -v "TRADMIN_${name//-/_}" %s "$admin"
}
spin_waits() { # admin port -> "answered waited not_idle slow_peer": the daemon's queryflux_spin_waits_total
	curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk '/^queryflux_spin_waits_total/ {
		for (o in n) if (index($1, "outcome=\"" o "\"")) n[o] = $2 }
		BEGIN {n["answered"] = 0; n["waited"] = 0; n["not_idle"] = 0; n["slow_peer"] = 0}
		END {printf "%d %d %d %d\n", n["answered"], n["waited"], n["not_idle"], n["slow_peer"]}'
}
trino_standalone trino
# trino-nospin: the same daemon with QUERYFLUX_SPIN_MICROS=0. By default a read awaiting the
# answer to its connection's last write (PostgreSQL's answer, the client's next request) polls
# the socket up to 200 us before it sleeps, while the machine has idle CPU (internal/rawconn,
# spin.go, idle.go), one read in the process at a time; this row is the daemon without it.
trino_standalone trino-nospin
# The floors: benchtrino serving the same two documents (POST: queued with a nextUri; GET: the
# row) with no query behind them, measured in the same rounds: what the client and the two
# loopback HTTP exchanges already cost on this machine. trino-floor serves them with net/http,
# floor-lite with internal/httplite (the Trino port's server), floor-raw with no
# HTTP server (one write per answer): the part of trino's added p50 no proxy work can remove.
declare -A TRARGS=([trino-pg]="-pg postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable" [trino]="-trino http://127.0.0.1:$TR_trino")
TR_TARGETS=(trino-pg trino trino-nospin)
TRARGS[trino-nospin]="-trino http://127.0.0.1:$TR_trino_nospin"
# floor-lite1 is floor-lite answering the POST with the row: the floor of one exchange.
for floor in trino-floor:floor floor-lite:floor-lite floor-raw:floor-raw "floor-lite1:floor-one -floor-lite"; do # row:benchtrino flags
	row=${floor%%:*} port=$(freeport)
	# shellcheck disable=SC2086 # the flags, split
	"$TMP/benchtrino" -${floor#*:} "127.0.0.1:$port" >"$TMP/$row.log" 2>&1 &
	PIDS+=($!)
	PROC[$row]=$!
	waitport "$port" "$row"
	TR_TARGETS+=("$row")
	TRARGS[$row]="-trino http://127.0.0.1:$port"
done
# The client's share: the same daemon and floor-raw asked by benchtrino's other clients. trino-rawc
# and floor-rawc write each request themselves on one TCP connection (-client raw: no net/http,
# the same JSON decoding), trino-driver is trino-go-client itself (-client driver, database/sql).
TRARGS[trino-rawc]="${TRARGS[trino]} -client raw" TRARGS[trino-driver]="${TRARGS[trino]} -client driver"
TRARGS[floor-rawc]="${TRARGS[floor-raw]} -client raw" TRARGS[trino-2x]="${TRARGS[trino]} -agent two-exchanges/1"
PROC[trino-rawc]=${PROC[trino]} PROC[trino-driver]=${PROC[trino]} PROC[floor-rawc]=${PROC[floor-raw]} PROC[trino-2x]=${PROC[trino]}
TR_TARGETS+=(trino-2x trino-rawc trino-driver floor-rawc)
# The -busy rows: trino-pg, trino and floor-rawc again while a SCHED_IDLE spinner runs on every
# CPU (chrt -i 0: any other task that wakes preempts it at once), so that no CPU halts between
# a row's messages. A quiet VM whose CPUs halt when idle pays a wake-up from halt at each sleep
# on a statement's chain (client, server, engine: more of them through a proxy), which a loaded
# machine never does: the rows then differ from a run at load by that, not by any work.
if command -v chrt >/dev/null; then
	for t in trino-pg trino floor-rawc; do TRARGS[$t-busy]=${TRARGS[$t]} PROC[$t-busy]=${PROC[$t]:-}; done
	TR_TARGETS+=(trino-pg-busy trino-busy floor-rawc-busy)
fi
BUSY=()
busy_start() { for _ in $(seq "$(nproc)"); do chrt -i 0 sh -c 'while :; do :; done' & BUSY+=($!) PIDS+=($!); done; }
busy_stop() { for p in "${BUSY[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; BUSY=(); }
if [ -n "${BASE_QF:-}" ]; then
	trino_standalone base-trino
	TR_TARGETS+=(base-trino)
	TRARGS[base-trino]="-trino http://127.0.0.1:$TR_base_trino"
fi
# Each row's cpu_us/q is the CPU its server process (the daemon, or the floor's benchtrino)
# spent over the latency run, per query: the daemon's work per Trino statement.
declare -A TLAT TCPU TP50S TP99S TCPUS
# What became of the trino row's spinning reads over its latency runs (awaiting PostgreSQL's
# answer or the client's next request): whether the spin was on at this load.
SPUN=(0 0 0 0)
for round in $(seq 1 "$ROUNDS"); do
	# shellcheck disable=SC2207
	ORDER=($(next_to "$round" base-trino trino "${TR_TARGETS[@]}"))
	for t in "${ORDER[@]}"; do
		log "trino round $round/$ROUNDS: $t"
		[ "$t" = trino ] && read -r -a s0 < <(spin_waits "$TRADMIN_trino")
		case $t in *-busy) busy_start ;; esac
		# shellcheck disable=SC2086 # PROC holds pids
		t0=$(ticks ${PROC[$t]:-})
		# shellcheck disable=SC2086 # TRARGS holds a flag and its value
		read -r p50 p99 n _ < <("$TMP/benchtrino" ${TRARGS[$t]} -user postgres -d "${LAT_SECS}s" || echo "- - - -")
		# shellcheck disable=SC2086
		cpu=$(cpu_per_query "$t0" "$(ticks ${PROC[$t]:-})" "$n" "${PROC[$t]:-}")
		busy_stop
		TP50S[$t]+="$p50 "; TP99S[$t]+="$p99 "; TCPUS[$t]+="$cpu "
		if [ "$t" = trino ]; then
			read -r -a s1 < <(spin_waits "$TRADMIN_trino")
			for i in 0 1 2 3; do SPUN[i]=$((SPUN[i] + ${s1[i]:-0} - ${s0[i]:-0})); done
		fi
	done
done
for t in "${TR_TARGETS[@]}"; do
	# shellcheck disable=SC2086
	TLAT[$t]="$(median ${TP50S[$t]}) $(median ${TP99S[$t]})"; TCPU[$t]=$(median ${TCPUS[$t]})
done

# --- table -------------------------------------------------------------------------------
added() { # p50 of target minus direct's
	local d=${1%% *} x=${2%% *}
	if [[ $d =~ ^[0-9]+$ && $x =~ ^[0-9]+$ ]]; then echo $((x - d)); else echo -; fi
}
ratio() { if [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $1 -gt 0 ]]; then awk -v a="$2" -v b="$1" 'BEGIN{printf "%.2f", a/b}'; else echo -; fi; }

echo
ROW="%-8s %-15s %10s %10s %12s %10s %9s %9s\n"
# shellcheck disable=SC2059 # ROW is the table's format
printf "$ROW" proto target "p50_us" "p99_us" "added_p50" "tps_c$CLIENTS" "vs_direct" "cpu_us/q"
for t in "${TARGETS[@]}"; do
	read -r p50 p99 <<<"${LAT[$t]}"
	# shellcheck disable=SC2059
	printf "$ROW" postgres "$t" "$p50" "$p99" "$(added "${LAT[direct]}" "${LAT[$t]}")" "${TPS[$t]}" "$(ratio "${TPS[direct]}" "${TPS[$t]}")" "${CPU[$t]}"
done
for t in "${MY_TARGETS[@]}"; do
	read -r p50 p99 <<<"${MLAT[$t]}"
	# shellcheck disable=SC2059
	printf "$ROW" mysql "$t" "$p50" "$p99" "$(added "${MLAT[direct]}" "${MLAT[$t]}")" "${MTPS[$t]}" "$(ratio "${MTPS[direct]}" "${MTPS[$t]}")" "${MCPU[$t]}"
done
for t in "${TR_TARGETS[@]}"; do
	read -r p50 p99 <<<"${TLAT[$t]}"
	# shellcheck disable=SC2059
	base=trino-pg
	case $t in *-busy) base=trino-pg-busy ;; esac
	printf "$ROW" trino "$t" "$p50" "$p99" "$(added "${TLAT[$base]}" "${TLAT[$t]}")" - - "${TCPU[$t]}"
done
echo
echo "medians of $ROUNDS interleaved rounds; latency: pgbench -n -c 1 -M extended -T $LAT_SECS (SELECT 1, per-transaction --log); tps: pgbench -n -S -c $CLIENTS -j 2 -T $TPS_SECS (simple protocol)"
echo "mysql: scripts/benchclient (SELECT 1, text protocol; latency 1 client ${LAT_SECS}s, qps $CLIENTS clients ${TPS_SECS}s); passthrough relays MariaDB's packets, arrow is settings.passthrough: false"
echo "  mysql go-relay / loop-relay: scripts/benchrelay to MariaDB, goroutines / the event loop framing nothing (-loop -raw); uring-relay: -uring -raw -peek"
echo "trino: scripts/benchtrino (SELECT 1, 1 client ${LAT_SECS}s, one kept-alive HTTP connection: POST, then GET nextUri until none; the daemon answers its quick statements whole in the POST, trino-2x: the same client answered QUEUED, then a GET) through a standalone daemon's Trino port to PostgreSQL; trino-pg: the same program over one pgx connection to PostgreSQL; trino-floor, floor-lite, floor-raw: the same program against benchtrino -floor, -floor-lite, -floor-raw (fixed documents, no proxy, served by net/http, by internal/httplite, by no HTTP server); floor-lite1: -floor-lite -floor-one (the POST answered with the row); trino-nospin: trino's daemon configuration run with QUERYFLUX_SPIN_MICROS=0 (no spinning wait; the default spins while CPUs are idle); trino-rawc, floor-rawc: trino and floor-raw asked without net/http (benchtrino -client raw); trino-driver: trino asked by trino-go-client (-client driver); trino cpu_us/q: the server process's CPU over the latency run, per query"
echo "each throughput run's CPU per query by party (per round: tps/target/client/engine/machine us; client: pgbench or benchclient, engine: every postgres or mariadbd process, ended ones included; machine: all CPUs' busy time, other processes' too):"
for t in "${TARGETS[@]}"; do echo "  postgres $t: ${SPLITS[$t]}"; done
for t in "${MY_TARGETS[@]}"; do echo "  mysql $t: ${MSPLITS[$t]:-}"; done
RTT=$("$TMP/benchrelay" -rtt 3s)
# The worker's capacity path over the whole run: queries that took an idle lease (no round trip
# to the control plane) out of all it relayed.
metric() { curl -s --max-time 5 "http://127.0.0.1:$OPS/metrics" | awk -v m="$1" '$1 ~ "^"m {s += $2} END {printf "%d", s}'; }
REUSED=$(metric queryflux_capacity_lease_reused_total); RELAYED=$(metric 'queryflux_query_path_total[{]path="passthrough"')
echo "cpu_us/q: user + system CPU of the target's processes (/proc/PID/stat) over the tps run, per query; the worker's counts its control plane"
echo "haproxy: haproxy $(haproxy -v 2>/dev/null | sed -n '1s/^HAProxy version \([^ ]*\).*/\1/p') in mode tcp, one thread (epoll), bytes unseen: what a C relay hop costs here, on either wire"
echo "go-relay: scripts/benchrelay, a Go byte relay with no protocol work (goroutines and io.Copy, one hop)"
echo "loop-relay: scripts/benchrelay -loop, the same on an event loop (internal/relayloop: one thread in epoll, the server's messages framed, ReadyForQuery watched)"
echo "loop-ring (where io_uring works): loop-relay with internal/relayloop on io_uring (QUERYFLUX_RELAY_BACKEND=uring); the daemons' rows run on the backend of this run's environment (QUERYFLUX_RELAY_BACKEND=${QUERYFLUX_RELAY_BACKEND:-unset: the default})"
[ -n "${MY_RESULTS_PORT:-}" ] && echo "mysql results-ring: scripts/benchrelay -loop -sockmap-results on io_uring: requests read by the event loop, answers spliced in the kernel (a verdict program following the MySQL packets records each answer's end); its kworkers' and the verdict's CPU is in the machine column"
[ -n "${MY_SOCKMAP_PORT:-}" ] && echo "mysql sockmap: scripts/benchrelay -sockmap, the bytes relayed in the kernel (a sockhash and an sk_skb verdict program; the sends run in per-CPU kworkers, so its cpu_us/q is ~0: its cost is in the machine column)"
[ -n "${MY_SOCK:-}" ] && echo "mysql ring-unix: loop-ring (-loop -raw on io_uring) to MariaDB's Unix socket $MY_SOCK instead of 127.0.0.1:3306 (its engine leg without TCP/IP); direct-unix: benchclient on that socket (vs_direct of both: against direct on TCP)"
echo "uring-relay (where io_uring works): scripts/benchrelay -uring -peek, the bare relay on one io_uring (internal/uring: multishot receives into provided buffers, one enter a turn), framing as loop-relay"
echo "passthrough: the pg group in transaction pool mode (PgBouncer's mode here); pass-session: the same daemon configuration with poolMode: session; pass-nospin: passthrough's configuration run with QUERYFLUX_SPIN_MICROS=0 (the event loop never spins before it sleeps; by default it spins up to 200 us while CPUs are idle and its last wait was shorter)"
echo "  (the daemon's event loop, internal/frontend/pgwire/loop.go, relays both; in transaction mode it admits each transaction on its thread when that needs no waiting)"
[ -n "${BASE_QF:-}" ] && echo "base-pass, base-session, base-worker: the same standalone daemons and control plane + worker run from BASE_QF ($BASE_QF)"
echo "loopback round trip p50 (scripts/benchrelay -rtt): ${RTT} us"
echo "worker: $REUSED of its $RELAYED passthrough queries (both wires, whole run) took an idle lease (no control-plane round trip)"
num() { [[ $1 =~ ^-?[0-9]+$ ]]; }
goal() { # description, awk condition over numbers, the numbers it needs...
	local what=$1 cond=$2; shift 2
	for n in "$@"; do num "$n" || { echo "  $what: not met (no figure)"; return; }; done
	if awk "BEGIN{exit !($cond)}"; then echo "  $what: met"; else echo "  $what: not met"; fi
}
pt=$(added "${LAT[direct]}" "${LAT[passthrough]}"); pb=$(added "${LAT[direct]}" "${LAT[pgbouncer]}"); wk=$(added "${LAT[direct]}" "${LAT[worker]}")
echo "goal checks (this run):"
# The throughput goals read paired runs: each round's (and goal round's) ratio of the two rows,
# run back to back in an order that turns round every second round, and the median of those
# ratios. A round's load moves both rows of its pair alike, while the medians of each row taken
# apart (the table's) may come from different rounds: their ratio is printed beside it.
ratios() { # "a1 a2 ..." "b1 b2 ..." -> "a1/b1 a2/b2 ..." (3 decimals; "-" where either is no number)
	awk -v a="$1" -v b="$2" 'BEGIN{n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), (x[i] ~ /^[0-9]+$/ && y[i] ~ /^[0-9]+$/ && y[i] > 0 ? sprintf("%.3f", x[i] / y[i]) : "-"); print ""}'
}
fmedian() { # numbers (or "-") -> their median, the middle two's mean for an even count ("-" without any)
	printf '%s\n' "$@" | { grep -E '^[0-9]+([.][0-9]+)?$' || true; } | sort -g |
		awk '{a[NR] = $1} END {if (!NR) print "-"; else if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
atleast() { awk -v x="$2" -v m="$1" 'BEGIN{n = split(x, r, " "); for (i = 1; i <= n; i++) if (r[i] ~ /^[0-9.]+$/) {n1++; if (r[i] >= m) k++}; printf "%d of %d", k, n1}'; } # min, ratios -> "k of n" at least min
paired() { # label, row a, row b (GTPS keys), goal ratio -> the goal line and its rounds
	local r c med
	r=$(ratios "${GTPS[$2]:-}" "${GTPS[$3]:-}"); c=$(ratios "${GCPU[$2]:-}" "${GCPU[$3]:-}")
	# shellcheck disable=SC2086 # the ratios, a word each
	med=$(fmedian $r)
	goal "$1: median of $(printf '%s\n' $r | grep -c '^[0-9]') paired ratios $med >= $4" "$med >= $4" "${med/./}"
	echo "    per round (tps ${2#my-} / ${3#my-}): $r; rounds at or above $4: $(atleast "$4" "$r")"
	# shellcheck disable=SC2086
	echo "    cpu us/query per round (${2#my-} / ${3#my-}): $(paste -d/ <(printf '%s\n' ${GCPU[$2]:-}) <(printf '%s\n' ${GCPU[$3]:-}) | paste -sd' '); median ratio $(fmedian $c)"
}
paired "postgres passthrough tps >= pgbouncer's" passthrough pgbouncer 1.00
echo "    (medians of the table's rows: passthrough ${TPS[passthrough]} vs pgbouncer ${TPS[pgbouncer]}: $(ratio "${TPS[pgbouncer]}" "${TPS[passthrough]}"))"
goal "postgres passthrough added p50 ${pt} us <= 2 x pgbouncer's ${pb} us + 10" "$pt <= 2 * $pb + 10" "$pt" "$pb"
# The worker's goals read pairs as the PgBouncer goal does: each round's worker p50 less the
# passthrough's (direct's p50, measured once a round, cancels out of the difference), and each
# round's tps ratio, their medians against the goal.
diffs() { # "a1 a2 ..." "b1 b2 ..." -> "a1-b1 a2-b2 ..." ("-" where either is no number)
	awk -v a="$1" -v b="$2" 'BEGIN{n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), (x[i] ~ /^[0-9]+$/ && y[i] ~ /^[0-9]+$/ ? x[i] - y[i] : "-"); print ""}'
}
dmedian() { # integers (or "-") -> their median, the middle two's mean for an even count ("-" without any)
	printf '%s\n' "$@" | { grep -E '^-?[0-9]+$' || true; } | sort -g |
		awk '{a[NR] = $1} END {if (!NR) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
wd=$(diffs "${GP50[worker]:-}" "${GP50[passthrough]:-}")
# shellcheck disable=SC2086 # the differences, a word each
wdm=$(dmedian $wd)
goal "worker added p50 <= passthrough's + 5 us: median of $(printf '%s\n' $wd | grep -cE '^-?[0-9]+$') paired differences $wdm us <= 5" "$wdm <= 5" "${wdm/./}"
echo "    per round (p50 worker - passthrough, us): $wd; p50s worker: ${GP50[worker]:-}; passthrough: ${GP50[passthrough]:-}"
echo "    (medians of the table's rows: worker added p50 ${wk} us, passthrough's ${pt} us)"
paired "worker tps >= 0.95 x passthrough's" worker passthrough 0.95
echo "    (medians of the table's rows: worker ${TPS[worker]} vs passthrough ${TPS[passthrough]}: $(ratio "${TPS[passthrough]}" "${TPS[worker]}"))"
# A daemon that spins before it sleeps can answer sooner than the engine alone (a wake-up saved,
# not work): its added p50 may be below zero. The rows that never spin say what the relay adds.
echo "  without the spinning wait (pass-nospin): postgres added p50 $(added "${LAT[direct]}" "${LAT[pass-nospin]}") us (pgbouncer ${pb}); mysql $(added "${MLAT[direct]:-}" "${MLAT[pass-nospin]:-}") us"
mpt=$(added "${MLAT[direct]:-}" "${MLAT[passthrough]:-}")
if [ "$MYSQL_OK" = 1 ]; then
	paired "mysql passthrough qps >= 0.6 x direct" my-passthrough my-direct 0.60
	echo "    (medians of the table's rows: passthrough ${MTPS[passthrough]} vs direct ${MTPS[direct]}: $(ratio "${MTPS[direct]}" "${MTPS[passthrough]}"))"
	if [ -n "${GTPS[my-uring-relay]:-}" ]; then
		r=$(ratios "${GTPS[my-uring-relay]}" "${GTPS[my-direct]}")
		# shellcheck disable=SC2086
		echo "    the bare ring relay in the same runs (uring-relay / direct): $r, median $(fmedian $r); passthrough / uring-relay median $(fmedian $(ratios "${GTPS[my-passthrough]}" "${GTPS[my-uring-relay]}"))"
	fi
else
	echo "  mysql passthrough qps >= 0.6 x direct: not met (no figure)"
fi
goal "mysql passthrough added p50 ${mpt} us <= 40 us" "$mpt <= 40" "$mpt"
echo "  of which a C relay hop (haproxy): postgres added p50 $(added "${LAT[direct]}" "${LAT[haproxy]}") us, tps $(ratio "${TPS[direct]}" "${TPS[haproxy]}") of direct; mysql added p50 $(added "${MLAT[direct]:-}" "${MLAT[haproxy]:-}") us, qps $(ratio "${MTPS[direct]:-}" "${MTPS[haproxy]:-}") of direct"
tr=$(added "${TLAT[trino-pg]}" "${TLAT[trino]}")
goal "trino added p50 ${tr} us <= 100 us (SELECT 1, scripts/benchtrino, over trino-pg)" "$tr <= 100" "$tr"
echo "  trino's reads that awaited an answer and found the socket empty, over its latency runs: ${SPUN[0]} answered while spinning, ${SPUN[1]} spun to the bound then slept, ${SPUN[2]} slept at once on a machine without idle CPU, ${SPUN[3]} slept at once after a slow answer (queryflux_spin_waits_total)"
echo "  without the spinning wait (trino-nospin, QUERYFLUX_SPIN_MICROS=0): added p50 $(added "${TLAT[trino-pg]}" "${TLAT[trino-nospin]}") us, cpu ${TCPU[trino-nospin]} us/q (trino: ${TCPU[trino]} us/q)"
echo "  of which the floors (the client and loopback HTTP exchanges, no proxy work): one exchange served by httplite $(added "${TLAT[trino-pg]}" "${TLAT[floor-lite1]}") us; two exchanges: added p50 $(added "${TLAT[trino-pg]}" "${TLAT[floor-lite]}") us served by httplite, $(added "${TLAT[trino-pg]}" "${TLAT[floor-raw]}") us by no HTTP server, $(added "${TLAT[trino-pg]}" "${TLAT[trino-floor]}") us by net/http"
echo "  the client's share: added p50 $(added "${TLAT[trino-pg]}" "${TLAT[trino-rawc]}") us with a client without net/http (trino-rawc), $(added "${TLAT[trino-pg]}" "${TLAT[trino-driver]}") us with trino-go-client (trino-driver); two exchanges with neither an HTTP client nor server (floor-rawc): $(added "${TLAT[trino-pg]}" "${TLAT[floor-rawc]}") us"
if [ -n "${TLAT[trino-busy]:-}" ]; then
	echo "  with no CPU halting (the -busy rows: a SCHED_IDLE spinner on every CPU): trino-pg p50 ${TLAT[trino-pg-busy]%% *} us (without: ${TLAT[trino-pg]%% *}), trino added p50 $(added "${TLAT[trino-pg-busy]}" "${TLAT[trino-busy]}") us, floor-rawc $(added "${TLAT[trino-pg-busy]}" "${TLAT[floor-rawc-busy]}") us (added over trino-pg-busy)"
fi
