#!/usr/bin/env bash
# trino-exchanges.sh BIN [N]: the HTTP exchanges a Trino HTTP SELECT 1 takes (#22), per client,
# through a standalone daemon BIN (a queryflux build) in front of the local PostgreSQL's database
# "postgres", its Trino port as a deployment has it (postAnswerClients and postWaitMicros at
# their defaults). Each client runs N statements (default 2000) after its warm-up and prints the
# requests it sent per statement, counted in the client:
#   go-client  trino-go-client through database/sql (scripts/benchtrino -client driver)
#   npm        the npm trino-client (scripts/trino-exchanges.js)
#   http-2x    scripts/benchtrino under a User-Agent the daemon does not answer in the POST
#   http-1x    scripts/benchtrino as a client that reads a POST answer's rows (the Python and
#              Java clients' User-Agent)
# A count is not timed, but a statement's GET can come before its statement ended: the counts
# of a loaded machine are printed with uptime's load beside them.
# Ports: P (Trino) and A (admin), default 20702 and 20703 (add your port offset).
#
#	go build -o /tmp/qf ./cmd/queryflux && P=21002 A=21003 scripts/trino-exchanges.sh /tmp/qf 2000
set -euo pipefail
BIN=$(readlink -f "$1") N=${2:-2000}
P=${P:-20702} A=${A:-20703} OUT=${OUT:-/tmp/trino-exchanges}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/probelib.sh"
mkdir -p "$OUT"
[ -x "$OUT/benchtrino" ] && [ "$OUT/benchtrino" -nt "$ROOT/scripts/benchtrino/main.go" ] ||
	(cd "$ROOT" && go build -o "$OUT/benchtrino" ./scripts/benchtrino)
QF_PID=
trap '[ -n "$QF_PID" ] && kill "$QF_PID" 2>/dev/null || true' EXIT
qf_trino_start "$OUT" daemon "$P" "$A" "" "$BIN"
URL=http://127.0.0.1:$P
count() { # name, then the command that prints the requests per statement last on its line
	local name=$1
	shift
	echo "$name $("$@" | awk '{print ($4 == "" ? $1 : $4)}') requests/statement; $(uptime | sed 's/.*load/load/')"
}
count go-client "$OUT/benchtrino" -trino "$URL" -user postgres -client driver -n "$N"
count npm env NODE_PATH="$ROOT/internal/frontend/frontendtest/nodeclients/node_modules" node "$ROOT/scripts/trino-exchanges.js" "$URL" postgres "$N"
count http-2x "$OUT/benchtrino" -trino "$URL" -user postgres -agent two-exchanges/1 -n "$N"
count http-1x "$OUT/benchtrino" -trino "$URL" -user postgres -agent "Trino Python Client/0.339.0" -n "$N"
