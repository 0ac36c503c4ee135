#!/usr/bin/env bash
# trino-callgrind.sh BIN TAG [N]: the instructions a standalone daemon spends per Trino HTTP
# SELECT 1 (#22), counted by callgrind, which load cannot skew. The daemon BIN (a queryflux build)
# runs under valgrind --tool=callgrind with only its Trino port (postAnswerClients: benchtrino/,
# so each statement is one exchange; postWaitMicros 1000000) in front of the local PostgreSQL's
# database "postgres" (SELECT 1 only: nothing is created), GOMAXPROCS=1, GOGC=100,
# asynchronous preemption off; instrumentation is switched on only after benchtrino's first 300
# statements (the warm-up) and off after the next N (default 3000, plus benchtrino's own 20).
# It writes $OUT/cg.TAG (OUT defaults to /tmp/trino-callgrind), prints the total and the
# instructions per statement, and writes $OUT/cg.TAG.txt (callgrind_annotate --inclusive=yes).
# Ports: P (Trino) and A (admin), default 20402 and 20403 (add your port offset). Run it under
# flock /work/bench.lock on a shared machine: the counts are not timed, but the run is slow.
#
#	go build -o /tmp/qf-new ./cmd/queryflux && P=20802 A=20803 scripts/trino-callgrind.sh /tmp/qf-new new 3000
#	scripts/trino-callgrind.sh /tmp/qf-base base && scripts/perfcmp.py ... (or diff the .txt files)
set -euo pipefail
BIN=$(readlink -f "$1") TAG=$2 N=${3:-3000}
P=${P:-20402} A=${A:-20403} OUT=${OUT:-/tmp/trino-callgrind}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/probelib.sh"
mkdir -p "$OUT"
[ -x "$OUT/benchtrino" ] && [ "$OUT/benchtrino" -nt "$ROOT/scripts/benchtrino/main.go" ] ||
	(cd "$ROOT" && go build -o "$OUT/benchtrino" ./scripts/benchtrino)
rm -f "$OUT/cg.$TAG"
QF_PID=
trap '[ -n "$QF_PID" ] && kill "$QF_PID" 2>/dev/null || true' EXIT
qf_trino_start "$OUT" "$TAG" "$P" "$A" ', postAnswerClients: ["benchtrino/"], postWaitMicros: 1000000' "$BIN" \
	env GOMAXPROCS=1 GOGC=100 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
	valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.$TAG"
VG=$QF_PID
"$OUT/benchtrino" -trino "http://127.0.0.1:$P" -user postgres -n 300 >/dev/null
callgrind_control -i on "$VG" >/dev/null 2>&1
read -r p50 p99 n rpq _ < <("$OUT/benchtrino" -trino "http://127.0.0.1:$P" -user postgres -n "$N")
callgrind_control -i off "$VG" >/dev/null 2>&1
kill -INT "$VG"
wait "$VG" || true
QF_PID=
total=$(callgrind_annotate "$OUT/cg.$TAG" 2>/dev/null | awk '/PROGRAM TOTALS/ && !t {gsub(",", "", $1); t = $1} END {print t}')
callgrind_annotate --inclusive=yes "$OUT/cg.$TAG" >"$OUT/cg.$TAG.txt" 2>/dev/null
stmts=$((N + 20))
echo "$TAG: $total instructions over $stmts statements (requests/statement $rpq): $((total / stmts)) a statement; $(uptime | sed 's/.*load/load/')"
