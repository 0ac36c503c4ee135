#!/usr/bin/env bash
# idleothers.sh BIN: start bench-proxy's other targets (PgBouncer, haproxy, the Go relays, three standalone
# daemons, a control plane + worker) on qf_passprobe, warm each with 2 s of pgbench -S -c 8 so that
# its pools exist, as between bench-proxy's rows, then leave them idle until killed (prints pids).
set -euo pipefail
BIN=$1 DB=qf_passprobe T=$(mktemp -d); chmod 755 $T
ROOT=$(cd "$(dirname "$0")/.." && pwd)
(cd "$ROOT" && go build -o "$T/benchrelay" ./scripts/benchrelay)
export PGSSLMODE=disable
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORTS=() PIDS=()
B=$(freeport); printf '[databases]\n%s = host=127.0.0.1 port=5432 dbname=%s user=postgres\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %s\nunix_socket_dir =\nauth_type = trust\nauth_file = %s/u.txt\npool_mode = transaction\nmax_client_conn = 200\ndefault_pool_size = 16\nlogfile = %s/pgb.log\n' $DB $DB $B $T $T > $T/pgb.ini
echo '"postgres" ""' > $T/u.txt; chmod 644 $T/*; touch $T/pgb.log; chmod 666 $T/pgb.log
pgbouncer -u postgres $T/pgb.ini > $T/pgb.out 2>&1 & PIDS+=($!); PORTS+=($B)
H=$(freeport); printf 'global\n  nbthread 1\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten pg\n  bind 127.0.0.1:%s\n  server pg 127.0.0.1:5432\n' $H > $T/h.cfg
haproxy -db -f $T/h.cfg > $T/h.log 2>&1 & PIDS+=($!); PORTS+=($H)
R=$(freeport); $T/benchrelay -listen 127.0.0.1:$R -upstream 127.0.0.1:5432 > $T/r.log 2>&1 & PIDS+=($!); PORTS+=($R)
R=$(freeport); QUERYFLUX_RELAY_BACKEND=epoll $T/benchrelay -loop -listen 127.0.0.1:$R -upstream 127.0.0.1:5432 > $T/r2.log 2>&1 & PIDS+=($!); PORTS+=($R)
clusters() { printf 'clusters:\n  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: %s, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}\n  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}\nclusterGroups:\n  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: %s}\n  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}\nrouters:\n  - {type: protocolBased, postgres: pg, mysql: maria}\nroutingFallback: pg\n' $DB ${1:-transaction}; }
for mode in "true transaction" "true session" "false transaction" "true transaction" "true session"; do
  set -- $mode; PG=$(freeport) MY=$(freeport) AD=$(freeport)
  { printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  frontends:\n    postgres: {enabled: true, listen: "127.0.0.1:%s"}\n    mysql: {enabled: true, listen: "127.0.0.1:%s"}\nsettings: {passthrough: %s, security: {trustLoopback: true}}\n' $AD $PG $MY $1; clusters $2; } > $T/s$PG.yaml
  $BIN serve --config $T/s$PG.yaml > $T/s$PG.log 2>&1 & PIDS+=($!); PORTS+=($PG)
done
for i in 1 2; do
  AD=$(freeport) CPPG=$(freeport) PG=$(freeport) MY=$(freeport) OPS=$(freeport) secret=abcdef012345678$i
  { printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  workerApi: {enabled: true, secret: "%s"}\n  coordination: {mode: controlPlane}\n  frontends:\n    postgres: {enabled: true, listen: "127.0.0.1:%s"}\nsettings: {security: {trustLoopback: true}}\n' $AD $secret $CPPG; clusters; } > $T/cp$i.yaml
  $BIN serve --config $T/cp$i.yaml > $T/cp$i.log 2>&1 & PIDS+=($!)
  sleep 1
  printf 'queryflux:\n  role: worker\n  controlPlane: {url: "http://127.0.0.1:%s", secret: "%s"}\n  frontends:\n    postgres: {enabled: true, listen: "127.0.0.1:%s"}\n    mysql: {enabled: true, listen: "127.0.0.1:%s"}\n' $AD $secret $PG $MY > $T/w$i.yaml
  $BIN serve --config $T/w$i.yaml --name oth-w$i --ops-listen 127.0.0.1:$OPS > $T/w$i.log 2>&1 & PIDS+=($!); PORTS+=($PG)
done
sleep 3
for p in "${PORTS[@]}"; do
  for _ in $(seq 50); do psql -qAt -h 127.0.0.1 -p $p -U postgres -d $DB -c 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
  pgbench -n -S -c 8 -j 2 -T 2 -h 127.0.0.1 -p $p -U postgres $DB >/dev/null 2>&1 || echo "warm failed on $p" >&2
done
echo "${PIDS[@]}"
