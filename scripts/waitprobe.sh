#!/usr/bin/env bash
# waitprobe.sh ROUNDS BASE NEW [SECS]: PgBouncer (passprobe.sh) and two queryflux builds
# (sysmonprobe.sh: the system monitor's thread beside the daemon's CPU) under the same pgbench -S
# -c 8 load, in turn, each under flock /work/bench.lock, the order of the builds turned every
# second round; one line a run with the time and the load. BACKEND (default: the daemon's own)
# sets QUERYFLUX_RELAY_BACKEND for both builds; BASE_ENV and NEW_ENV add an environment to each
# (such as QUERYFLUX_RELAY_RAWWAIT_MICROS=0).
set -euo pipefail
ROUNDS=$1 BASE=$2 NEW=$3 SECS=${4:-6}
DIR=$(cd "$(dirname "$0")" && pwd)
be=()
[ -n "${BACKEND:-}" ] && be=(QUERYFLUX_RELAY_BACKEND=$BACKEND)
one() { # NAME BIN ENV...
	local name=$1 bin=$2; shift 2
	echo "$(date +%T) load=$(cut -d' ' -f1 /proc/loadavg) $name: $(flock /work/bench.lock env "${be[@]}" "$@" "$DIR/sysmonprobe.sh" "$bin" "$SECS" 2>&1 | grep -v '^passprobe' | tr '\n' ' ')"
}
for r in $(seq "$ROUNDS"); do
	echo "$(date +%T) load=$(cut -d' ' -f1 /proc/loadavg) pgbouncer: $(flock /work/bench.lock env WARM=3 "$DIR/passprobe.sh" pgbouncer "$SECS" 2>&1 | grep '^bin=' | cut -d' ' -f1-5)"
	if [ $((r % 2)) = 1 ]; then
		one base "$BASE" ${BASE_ENV:-}
		one new "$NEW" ${NEW_ENV:-}
	else
		one new "$NEW" ${NEW_ENV:-}
		one base "$BASE" ${BASE_ENV:-}
	fi
done
