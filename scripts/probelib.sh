# probelib.sh, sourced by the probe scripts (oneprobe.sh, workerprobe.sh): the database they run
# pgbench on, and a control plane + worker of its leases configured as scripts/bench-proxy.sh's
# worker rows.
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

# probe_clusters prints the configuration's pg cluster, its group (POOL: its pool mode, default
# transaction) and router, from "clusters:" on.
probe_clusters() {
	cat <<YAML
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: $PROBE_DB, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}
clusterGroups:
  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: ${POOL:-transaction}}
routers:
  - {type: protocolBased, postgres: pg}
routingFallback: pg
YAML
}

# probe_control_plane BIN DIR PG [MY]: starts a control plane of probe_clusters from BIN (pid in
# CP, its pprof port PPC) and writes DIR/w.yaml, a worker of its leases listening on PG (and MY
# for MySQL when given). The caller starts the worker: $BIN serve --config DIR/w.yaml --name N
# --ops-listen 127.0.0.1:$OPS.
probe_control_plane() {
	local bin=$1 dir=$2 pg=$3 my=${4:-} secret cpa cppg
	secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cpa=$(freeport) cppg=$(freeport) PPC=$(freeport) OPS=$(freeport)
	{
		cat <<YAML
queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:$cpa"}
  workerApi: {enabled: true, secret: "$secret"}
  coordination: {mode: controlPlane}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$cppg"}
settings: {security: {trustLoopback: true}}
YAML
		probe_clusters
	} >"$dir/cp.yaml"
	cat >"$dir/w.yaml" <<YAML
queryflux:
  role: worker
  controlPlane: {url: "http://127.0.0.1:$cpa", secret: "$secret"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:$pg"}
YAML
	[ -n "$my" ] && echo "    mysql: {enabled: true, listen: \"127.0.0.1:$my\"}" >>"$dir/w.yaml"
	QUERYFLUX_PPROF=127.0.0.1:$PPC $bin serve --config "$dir/cp.yaml" >"$dir/cp.log" 2>&1 &
	CP=$!
	sleep 1
}
