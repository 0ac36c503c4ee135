#!/usr/bin/env bash
# idleprobe.sh BIN SECS KIND: start one daemon of bench-proxy's configuration KIND (standalone|worker|trino) at rest,
# wait 5 s, count its wakeups (all threads' context switches) and CPU over SECS, and strace -c -f.
set -euo pipefail
BIN=$1 SECS=$2 KIND=${3:-standalone} DB=qf_passprobe
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TMP=$(mktemp -d)
clusters() { cat <<YAML
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: $DB, credentials: {user: postgres}, maxRunningQueries: 16, options: {sslmode: disable}}
  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: mysql, credentials: {user: root}, maxRunningQueries: 16}
clusterGroups:
  - {name: pg, members: [pg], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30, poolMode: transaction}
  - {name: maria, members: [maria], maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 30}
routers:
  - {type: protocolBased, postgres: pg, mysql: maria}
routingFallback: pg
YAML
}
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done' EXIT
PG=$(freeport) MY=$(freeport) AD=$(freeport) TR=$(freeport)
case $KIND in
standalone|trino)
  fe="    postgres: {enabled: true, listen: \"127.0.0.1:$PG\"}
    mysql: {enabled: true, listen: \"127.0.0.1:$MY\"}"
  [ $KIND = trino ] && fe="    trino: {enabled: true, listen: \"127.0.0.1:$TR\"}"
  { printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  frontends:\n%s\nsettings: {passthrough: true, security: {trustLoopback: true}}\n' $AD "$fe"; clusters; } > $TMP/c.yaml
  $BIN serve --config $TMP/c.yaml > $TMP/log 2>&1 & PIDS+=($!)
  ;;
worker)
  secret=abcdef0123456789 CPPG=$(freeport) OPS=$(freeport)
  { printf 'queryflux:\n  role: standalone\n  adminApi: {listen: "127.0.0.1:%s"}\n  workerApi: {enabled: true, secret: "%s"}\n  coordination: {mode: controlPlane}\n  frontends:\n    postgres: {enabled: true, listen: "127.0.0.1:%s"}\nsettings: {security: {trustLoopback: true}}\n' $AD $secret $CPPG; clusters; } > $TMP/cp.yaml
  $BIN serve --config $TMP/cp.yaml > $TMP/cp.log 2>&1 & PIDS+=($!)
  sleep 2
  printf 'queryflux:\n  role: worker\n  controlPlane: {url: "http://127.0.0.1:%s", secret: "%s"}\n  frontends:\n    postgres: {enabled: true, listen: "127.0.0.1:%s"}\n    mysql: {enabled: true, listen: "127.0.0.1:%s"}\n' $AD $secret $PG $MY > $TMP/w.yaml
  $BIN serve --config $TMP/w.yaml --name idle-w --ops-listen 127.0.0.1:$OPS > $TMP/w.log 2>&1 & PIDS+=($!)
  ;;
esac
sleep ${SETTLE:-5}
# optionally one query first, so pools exist, as after bench-proxy's rounds
if [ "${TOUCH:-0}" = 1 ] && [ $KIND != trino ]; then for i in 1 2 3; do PGSSLMODE=disable psql -qAt -h 127.0.0.1 -p $PG -U postgres -d $DB -c 'select 1' >/dev/null; mariadb -h 127.0.0.1 -P $MY -u queryflux -e 'select 1' mysql >/dev/null 2>&1 || true; done; sleep 1; fi
sw() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print v+n}'; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
for p in "${PIDS[@]}"; do s0[$p]=$(sw $p); t0[$p]=$(ticks $p); done
if [ "${STRACE:-1}" = 1 ]; then
  SPS=(); for p in "${PIDS[@]}"; do timeout $SECS strace -c -f -p $p -o $TMP/strace.$p 2>/dev/null & SPS+=($!); done; wait "${SPS[@]}" || true
else sleep $SECS; fi
for p in "${PIDS[@]}"; do
  s1=$(sw $p); t1=$(ticks $p)
  echo "pid=$p kind=$KIND threads=$(ls /proc/$p/task | wc -l) switches_per_s=$(awk -v a=${s0[$p]} -v b=$s1 -v s=$SECS 'BEGIN{printf "%.1f",(b-a)/s}') cpu_ms_per_s=$(awk -v a=${t0[$p]} -v b=$t1 -v s=$SECS -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.2f",(b-a)*1000/hz/s}')"
  [ -f $TMP/strace.$p ] && awk -v s=$SECS '$4 ~ /^[0-9]+$/ {printf "  %s %.1f/s\n", $NF, $4/s}' $TMP/strace.$p
done
echo "tmp=$TMP"
