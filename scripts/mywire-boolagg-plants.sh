#!/bin/sh
# mywire-boolagg-plants.sh N: plants bug N (1-5) in SUM/AVG/MIN/MAX of a MySQL client's boolean
# column on PostgreSQL, runs the text test and the oracle test against MariaDB and PostgreSQL,
# and restores the file (scripts/plantlib.sh; RESULTS.md names the plants).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|2) plant_in internal/engine/pgengine/mysqlboolsums.go ;;
3) plant_in internal/engine/pgengine/mysqlnotnull.go ;;
4) plant_in internal/engine/pgengine/mysqlboolsums.go ;;
5) plant_in internal/engine/pgengine/mysqlfuncs.go ;;
*) echo "plant 1-5"; exit 2 ;;
esac
case $1 in
1) plant '	if lookup.booleans == nil ||' '	if true ||' ;;                                       # aggregates of a boolean left to PostgreSQL
2) plant 'toks[to+2].IsWord("numeric")' 'toks[to+2].IsWord("numerics")' ;;                     # AVG's scale() of the boolean not read as an integer
4) plant '	if lookup.booleans == nil || !mayCallOf(' '	if lookup.booleans == nil || false && !mayCallOf(' ;; # no pre-check: every statement tokenized
5) plant '(k == 0 || !wordByte(sqlText[k-1])) && ' '' ;;                                  # "admin(" read as a call of min
3) plant '			return quoteIdent(identName(name[0])), qualifiers, searchPath' '			return "", nil, false' ;; # a client in no database: no table
esac
planted
gotest 'got|want|alloc' -run 'TestMySQLBoolAggregates|TestBoolAggregatesLookOnlyAtCalls|TestMySQLFunctions' ./internal/engine/pgengine/
[ "$1" -lt 4 ] || exit 0
LINES_MAX=16 gotest 'PostgreSQL |MariaDB ' -run 'TestMariaDBExpressionsOnPostgreSQL' ./internal/frontend/mysqlwire/
