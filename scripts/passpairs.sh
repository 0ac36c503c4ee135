#!/usr/bin/env bash
# passpairs.sh ROUNDS TARGET...: scripts/passprobe.sh's plain run of each target in turn, ROUNDS
# times, the order turned round every second round (so that no target always runs first), each
# under flock /work/bench.lock; one line a run with the time, the load before it and passprobe's
# tps, CPU and allocations per transaction. WARM (default 3) and SECS (default 5) as passprobe's.
set -euo pipefail
ROUNDS=$1; shift
DIR=$(cd "$(dirname "$0")" && pwd)
for r in $(seq "$ROUNDS"); do
	order=("$@")
	if [ $((r % 2)) = 0 ]; then for ((i = 0; i < $#; i++)); do order[i]=${@:$#-i:1}; done; fi
	for t in "${order[@]}"; do
		echo "$(date +%T) load=$(cut -d' ' -f1 /proc/loadavg) $(flock /work/bench.lock env WARM=${WARM:-3} OUT=${OUT:-/tmp/passpairs} "$DIR/passprobe.sh" "$t" "${SECS:-5}" 2>&1 | grep '^bin=' | cut -d' ' -f1-7)"
	done
done
