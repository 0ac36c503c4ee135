#!/usr/bin/env bash
# kernelcost.sh [N]: what this machine's kernel charges for the pieces of a relayed MySQL
# statement, as CPU time of the probe's processes (user + system, getrusage), not wall time:
# a null system call; a small message sent and received in one thread over loopback TCP and
# over a Unix stream (the send path and the receiver's work, no wake-up); a pipe ping-pong
# between two processes (two wake-ups and two sleeps a round trip) with the CPUs free, on one
# CPU, and on two; and a request/answer exchange over loopback TCP direct, through a relay
# process (blocking reads and writes, one pair), and through one whose server leg is a Unix
# socket, with the CPUs free and pinned apart. A relay hop's floor on a machine is read from
# these: two messages and two wake-ups a statement more than direct. Machines differ by
# several times in these (a guest whose idle CPUs halt, with no halt-polling, pays for every
# wake-up of an idle CPU), so compare a relay's figures with the same machine's floors. The
# CPU of a busy machine's processes moves less than their wall time, but a wake-up's cost
# depends on whether the woken CPU was idle: read the load printed beside. N (default 20000)
# round trips a probe. Needs a C compiler (cc).
set -euo pipefail
N=${1:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/kernelcost.XXXX)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -o "$TMP/kernelcost" "$ROOT/scripts/kernelcost/kernelcost.c"
echo "kernel $(uname -r), $(nproc) CPUs, cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo unknown), load $(cut -d' ' -f1 /proc/loadavg) at $(date -u +%H:%M:%S)"
"$TMP/kernelcost" "$N"
echo "load $(cut -d' ' -f1 /proc/loadavg) at $(date -u +%H:%M:%S)"
