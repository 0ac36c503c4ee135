#!/bin/sh
# mywire-connect-plants.sh N: plants bug N (1-4) in what MySQL clients' connect sequences need of
# the proxy on PostgreSQL (a boolean column given a number, CONVERT_TZ), runs the text tests and
# the connect sequences against MariaDB, and restores the file (scripts/plantlib.sh; RESULTS.md
# names the plants).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|2|3) plant_in internal/engine/pgengine/mysqlboolliterals.go ;;
4) plant_in internal/engine/pgengine/mysqlfuncs.go ;;
*) echo "plant 1-4"; exit 2 ;;
esac
case $1 in
1) plant '	if values > 0 {' '	if false {' ;;                                  # a VALUES row's number left to PostgreSQL
2) plant 'assigned := op == "=" && assignment(toks, from)' 'assigned := false' ;;  # SET ok = 2 left (only 0 and 1 taken)
3) plant '		op, lit := toks[to].Text, to+1' '		op, lit := toks[to].Text, to' ;;    # comparisons and assignments left
4) plant '		"convert_tz": argsOf(3,' '		"convert_tzx": argsOf(3,' ;;          # CONVERT_TZ not rewritten
esac
planted
gotest 'got|want' -run 'TestMySQLBoolLiterals|TestMySQLFunctions' ./internal/engine/pgengine/
LINES_MAX=16 gotest 'PostgreSQL|MariaDB' -run 'TestConnectSequencesOnPostgreSQLAsMariaDB' ./internal/frontend/mysqlwire/
