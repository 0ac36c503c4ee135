#!/bin/sh
# mywire-boolagg-plants.sh N: plants bug N (1-3) in SUM/AVG/MIN/MAX of a MySQL client's boolean
# column on PostgreSQL, runs the text test and the oracle test against MariaDB and PostgreSQL,
# and restores the file (scripts/plantlib.sh; RESULTS.md names the plants).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|2) plant_in internal/engine/pgengine/mysqlboolsums.go ;;
3) plant_in internal/engine/pgengine/mysqlnotnull.go ;;
*) echo "plant 1-3"; exit 2 ;;
esac
case $1 in
1) plant '	if lookup.booleans == nil ||' '	if true ||' ;;                                       # aggregates of a boolean left to PostgreSQL
2) plant 'toks[to+2].IsWord("numeric")' 'toks[to+2].IsWord("numerics")' ;;                     # AVG's scale() of the boolean not read as an integer
3) plant '			return quoteIdent(identName(name[0])), qualifiers, searchPath' '			return "", nil, false' ;; # a client in no database: no table
esac
planted
gotest 'got|want' -run 'TestMySQLBoolAggregates' ./internal/engine/pgengine/
LINES_MAX=16 gotest 'PostgreSQL |MariaDB ' -run 'TestMariaDBExpressionsOnPostgreSQL' ./internal/frontend/mysqlwire/
