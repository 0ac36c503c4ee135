# probelib.sh, sourced by scripts/bench-proxy.sh and the probe scripts (passprobe.sh,
# oneprobe.sh, workerprobe.sh): the configurations they start queryflux daemons with, written
# in one place (what a probe measures is then what the bench measures), and the database the
# probes run pgbench on.
PROBE_DB=qf_passprobe
export PGSSLMODE=disable

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# probe_db makes $PROBE_DB (pgbench -i) when it has no pgbench_accounts.
probe_db() {
	if ! psql -qAt -h 127.0.0.1 -U postgres -d "$PROBE_DB" -c "select 1 from pgbench_accounts limit 1" >/dev/null 2>&1; then
		psql -q -h 127.0.0.1 -U postgres -d postgres -c "drop database if exists $PROBE_DB" -c "create database $PROBE_DB" >/dev/null
		pgbench -i -q -s 1 -h 127.0.0.1 -U postgres "$PROBE_DB" >/dev/null 2>&1
	fi
}

# qf_clusters DB [POOL] [MARIA]: a configuration from "clusters:" on: the pg cluster on the
# local PostgreSQL's database DB, its group in pool mode POOL (default transaction), and with
# MARIA=1 the local MariaDB's cluster and group beside it, MySQL clients routed there.
qf_clusters() {
	local db=$1 pool=${2:-transaction} maria=${3:-0}
	echo "clusters:"
	echo "  - {name: pg, engine: postgres, endpoint: \"127.0.0.1:5432\", database: $db, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}"
	[ "$maria" = 1 ] && echo '  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}'
	echo "clusterGroups:"
	echo "  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: $pool}"
	if [ "$maria" = 1 ]; then
		echo '  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}'
		echo "routers:"
		echo "  - {type: protocolBased, postgres: pg, mysql: maria}"
	else
		echo "routers:"
		echo "  - {type: protocolBased, postgres: pg}"
	fi
	echo "routingFallback: pg"
}

# qf_standalone ADMIN PG MY PASSTHROUGH: a standalone daemon's queryflux section and settings
# (admin API, PostgreSQL and MySQL frontends on those ports; MY "" for no MySQL frontend),
# trusting loopback clients; qf_clusters follows.
qf_standalone() {
	local admin=$1 pg=$2 my=$3 pt=$4
	cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$admin"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$pg"}
YAML
	[ -n "$my" ] && echo "    mysql: {enabled: true, listen: \"127.0.0.1:$my\"}"
	echo "settings: {passthrough: $pt, security: {trustLoopback: true}}"
}

# qf_control_plane ADMIN SECRET PG: a control plane's queryflux section and settings (its
# worker API under SECRET, its own PostgreSQL frontend on PG); qf_clusters follows. Workers take
# their settings from here: every daemon trusts loopback clients, so that they log in without a
# password in plain text, like every other target.
qf_control_plane() {
	cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$1"}
  workerApi: {enabled: true, secret: "$2"}
  coordination: {mode: controlPlane}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$3"}
settings: {security: {trustLoopback: true}}
YAML
}

# qf_worker ADMIN SECRET PG [MY]: the whole configuration of a worker of the control plane whose
# admin API is on ADMIN, listening on PG (and MY for MySQL when given).
qf_worker() {
	cat <<YAML
queryflux:
  role: worker
  controlPlane: {url: "http://127.0.0.1:$1", secret: "$2"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$3"}
YAML
	[ -n "${4:-}" ] && echo "    mysql: {enabled: true, listen: \"127.0.0.1:$4\"}"
	return 0
}

# probe_clusters is qf_clusters of $PROBE_DB, its group in pool mode POOL (default transaction).
probe_clusters() { qf_clusters "$PROBE_DB" "${POOL:-transaction}"; }

# probe_control_plane BIN DIR PG [MY]: starts a control plane of probe_clusters from BIN (pid in
# CP, its pprof port PPC) and writes DIR/w.yaml, a worker of its leases listening on PG (and MY
# for MySQL when given). The caller starts the worker: $BIN serve --config DIR/w.yaml --name N
# --ops-listen 127.0.0.1:$OPS.
probe_control_plane() {
	local bin=$1 dir=$2 pg=$3 my=${4:-} secret cpa cppg
	secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cpa=$(freeport) cppg=$(freeport) PPC=$(freeport) OPS=$(freeport)
	{
		qf_control_plane "$cpa" "$secret" "$cppg"
		probe_clusters
	} >"$dir/cp.yaml"
	qf_worker "$cpa" "$secret" "$pg" "$my" >"$dir/w.yaml"
	QUERYFLUX_PPROF=127.0.0.1:$PPC $bin serve --config "$dir/cp.yaml" >"$dir/cp.log" 2>&1 &
	CP=$!
	sleep 1
}

# qf_trino_config P A [TRINO_OPTS] [DB]: the whole configuration of a standalone daemon serving
# only its Trino port on 127.0.0.1:P (admin API on A), TRINO_OPTS added to that frontend's
# options (', postAnswerClients: ["benchtrino/"]'), in front of the local PostgreSQL's database
# DB (default postgres). The Trino probes (scripts/trino-*.sh) all measure this daemon.
qf_trino_config() {
	cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$2"}
  frontends:
    trino: {enabled: true, listen: "127.0.0.1:$1"${3:-}}
settings: {security: {trustLoopback: true}}
YAML
	qf_clusters "${4:-postgres}"
}

# qf_trino_start DIR NAME P A TRINO_OPTS BIN [WRAPPER...]: writes DIR/NAME.yaml (qf_trino_config
# P A TRINO_OPTS, on $TRINO_DB or postgres), starts `BIN serve` with it, run by WRAPPER when given
# (valgrind and its flags, env and its variables), its output in DIR/NAME.log, and waits up to
# two minutes for its Trino port to answer. QF_PID is then the started process (the wrapper's,
# if any); the caller stops it. Fails, printing the log's tail, if the port never answered.
qf_trino_start() {
	local dir=$1 name=$2 p=$3 a=$4 opts=$5 bin=$6
	shift 6
	qf_trino_config "$p" "$a" "$opts" "${TRINO_DB:-postgres}" >"$dir/$name.yaml"
	"$@" "$bin" serve --config "$dir/$name.yaml" >"$dir/$name.log" 2>&1 &
	QF_PID=$!
	for _ in $(seq 1 600); do
		curl -s -o /dev/null "http://127.0.0.1:$p/v1/info" && return 0
		kill -0 "$QF_PID" 2>/dev/null || break
		sleep 0.2
	done
	echo "qf_trino_start: $name did not answer on $p: $(tail -3 "$dir/$name.log")" >&2
	return 1
}

# cg_bench_count TMP REV BUILD BENCH N PKG...: the user instructions one iteration of the Go
# benchmark BENCH (a -test.bench pattern) costs under valgrind's callgrind, printed as a bare
# number. BUILD's test binary is built in TMP/tree, a copy of this repository's tracked files with
# the packages PKG taken from git revision REV (WORK: the work tree as it is; the copy is reused
# while REV and PKG stay the same: several benchmarks of one binary build it once), then run for
# N and 2N iterations: the difference of the two totals over N is one iteration, whatever the
# binary's start, and the simulation or guard around the loop, cost (callgrind's --toggle-collect
# loses count across coroutine switches). TMP/cg.2N is then the longer run's profile
# (callgrind_annotate reads it).
cg_bench_count() {
	local tmp=$1 rev=$2 build=$3 bench=$4 n=$5 root key a b
	shift 5
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	key="$rev $build $*"
	if [ "$(cat "$tmp/built" 2>/dev/null)" != "$key" ]; then
		rm -rf "$tmp/tree"
		mkdir -p "$tmp/tree"
		(cd "$root" && git ls-files -z | tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$tmp/tree"
		if [ "$rev" != WORK ]; then
			(cd "$root" && git archive "$rev" "$@") | tar -xf - -C "$tmp/tree"
		fi
		(cd "$tmp/tree" && go test -c -o "$tmp/bench.test" "./$build/" >/dev/null) || return 1
		echo "$key" >"$tmp/built"
	fi
	for k in $n $((2 * n)); do
		GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind \
			--callgrind-out-file="$tmp/cg.$k" --log-file="$tmp/vg.log" \
			"$tmp/bench.test" -test.run '^$' -test.bench "$bench" -test.benchtime ${k}x >/dev/null 2>&1 || return 1
	done
	a=$(awk '/^totals:/{print $2}' "$tmp/cg.$n") b=$(awk '/^totals:/{print $2}' "$tmp/cg.$((2 * n))")
	awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN{printf "%.0f\n", (b-a)/n}'
}
