#!/usr/bin/env bash
# sysmonprobe.sh BIN [SECS]: what Go's system monitor (sysmon) costs a queryflux daemon under
# passprobe.sh's load (pgbench -S -c $C, default 8, through the standalone passthrough daemon):
# the CPU of the daemon's thread that makes its nanosleeps (sysmon is the one caller of
# runtime.usleep under this load: perf probe -x BIN runtime.usleep shows it), beside the whole
# daemon's CPU, over SECS seconds (default 8) of the run, and per transaction (committed
# transactions of the probe's database, pg_stat_database: its counts are flushed up to a second
# late, so the per-transaction figures are within ~1/SECS; the share of the daemon's CPU is
# exact). A locked event loop that runs from one wait in the kernel to the next never passes
# through Go's scheduler, so its processor's scheduling tick goes stale after 10 ms, and the
# monitor then takes the processor at every tick it finds the loop in a system call (retake),
# sleeping its shortest (20 us) in between: this counts what that costs.
set -euo pipefail
BIN=$1 SECS=${2:-8}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/probelib.sh"
OUTF=$(mktemp /tmp/sysmonprobe.XXXX)
(cd "$ROOT" && WARM=2 OUT=$OUTF scripts/passprobe.sh "$BIN" $((SECS + 8)) plain >"$OUTF.log" 2>&1) &
PP=$!
P=
for _ in $(seq 200); do P=$(pgrep -n -f "^$BIN serve --config /tmp/passprobe" || true); [ -n "$P" ] && break; sleep 0.1; done
[ -n "$P" ] || { echo "sysmonprobe: no daemon"; exit 1; }
sleep 5 # the warm-up and the run's first seconds
# strace prefixes a thread's lines with "[pid TID]", but for the thread it attached by $P
TID=$(timeout 2 strace -f -qq -e trace=nanosleep -p "$P" 2>&1 | awk -v p="$P" '/nanosleep\(/{if (match($0, /^\[pid +[0-9]+\]/)) {s=substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", s); print s} else print p; exit}' || true)
[ -n "$TID" ] || { echo "sysmonprobe: no thread of $P made a nanosleep in 2 s"; wait $PP; exit 0; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "$1"; }
commits() { psql -h 127.0.0.1 -U postgres -Atc "select xact_commit from pg_stat_database where datname='$PROBE_DB'"; }
q0=$(commits) s0=$(ticks /proc/$P/task/$TID/stat) d0=$(ticks /proc/$P/stat)
sleep "$SECS"
q1=$(commits) s1=$(ticks /proc/$P/task/$TID/stat) d1=$(ticks /proc/$P/stat)
wait $PP || true
awk -v bin="$(basename "$BIN")" -v tid=$TID -v n=$((q1 - q0)) -v s=$((s1 - s0)) -v d=$((d1 - d0)) -v hz="$(getconf CLK_TCK)" -v secs="$SECS" -v ld="$(cut -d' ' -f1 /proc/loadavg)" \
	'BEGIN{printf "bin=%s sysmon_tid=%s tx=%d tps=%.0f sysmon_cpu_pct=%.1f sysmon_us_per_tx=%.2f daemon_us_per_tx=%.1f sysmon_share=%.3f load=%s\n", bin, tid, n, n/secs, 100*s/hz/secs, s*1e6/hz/(n ? n : 1), d*1e6/hz/(n ? n : 1), d ? s/d : 0, ld}'
grep '^bin=' "$OUTF.log" | sed 's/^/passprobe: /'
rm -f "$OUTF" "$OUTF".*
