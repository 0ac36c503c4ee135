#!/usr/bin/env bash
# idleothcount.sh OBIN: bench-proxy's other targets idle (idleothers.sh OBIN) while passprobe runs the passthrough (BIN):
# each one's context switches and CPU per second over the run.
OBIN=$1; cd "$(dirname "$0")/.."
P=$(nice -n 10 scripts/idleothers.sh $OBIN 2>/dev/null | tail -1); sleep 3
sw() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print v+n}'; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/$1/stat; }
declare -A S0 T0
for p in $P; do S0[$p]=$(sw $p); T0[$p]=$(ticks $p); done
s=$(date +%s.%N)
nice -n 10 scripts/passprobe.sh ${BIN:?BIN is the passthrough daemon to measure} 5 2>&1 | head -1
e=$(date +%s.%N)
tot_s=0; tot_t=0
for p in $P; do
  ds=$(( $(sw $p) - S0[$p] )); dt=$(( $(ticks $p) - T0[$p] ))
  printf '%-10s %6.1f switches/s %5.1f ms cpu/s  %s\n' "$(cat /proc/$p/comm)" $(awk -v d=$ds -v s=$s -v e=$e 'BEGIN{print d/(e-s)}') $(awk -v d=$dt -v s=$s -v e=$e 'BEGIN{print d*10/(e-s)}') "$(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-60)"
  tot_s=$((tot_s+ds)); tot_t=$((tot_t+dt))
done
echo "all others: $(awk -v d=$tot_s -v s=$s -v e=$e 'BEGIN{printf "%.1f", d/(e-s)}') switches/s, $(awk -v d=$tot_t -v s=$s -v e=$e 'BEGIN{printf "%.1f", d*10/(e-s)}') ms cpu/s over $(awk -v s=$s -v e=$e 'BEGIN{printf "%.1f", e-s}') s"
kill $P
