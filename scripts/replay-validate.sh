#!/bin/sh
# Replay validation, long form: record a pgbench workload through a real fleet (control plane
# on PostgreSQL, three workers, the PostgreSQL engine), export its history with
# `queryflux history export`, replay it in the simulator with the same config, and print the
# table of queue p50/p99 and admitted/s, real beside simulated.
#   scripts/replay-validate.sh [SECONDS]     (default 120; make replay-validate)
# The recording is kept as replay-history.csv, its config and lease store calibration beside it
# (REPLAY_KEEP overrides); REPLAY_FROM=replay-history.csv replays it again without recording.
set -e
cd "$(dirname "$0")/.."
export REPLAY_SECS="${1:-120}"
export REPLAY_KEEP="${REPLAY_KEEP:-$PWD/replay-history.csv}"
export REPLAY_HOLD_QUEUE=1   # fail when queue p50 or p99 disagrees by more than 20 %
go test -count=1 -timeout 30m -run '^TestReplayedHistoryAgreesWithTheRecording$' -v ./fleettest/ \
	| sed -n '/^ *recording /,/^ *| admitted/p; /^--- /p; /^ok\|^FAIL/p'
