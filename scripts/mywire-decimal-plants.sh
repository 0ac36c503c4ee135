#!/bin/sh
# mywire-decimal-plants.sh N: plants bug N (1-8) in MySQL's decimals, functions and NULL order
# on PostgreSQL, runs the oracle tests against MariaDB and PostgreSQL and the text tests, and
# restores the file (scripts/plantlib.sh; RESULTS.md names the plants). CHECKS=n sets rapid's
# checks (100).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|2|3) plant_in internal/frontend/mysqlwire/decimals.go ;;
4|5|6) plant_in internal/engine/pgengine/mysqlfuncs.go ;;
7) plant_in internal/engine/pgengine/mysqlnulls.go ;;
8) plant_in internal/frontend/mysqlwire/types.go ;;
*) echo "plant 1-8"; exit 2 ;;
esac
case $1 in
1) plant '		sql = decimalDivisions(sql)' '		_ = decimalDivisions' ;;                      # / stays PostgreSQL's
2) plant "CASE WHEN pg_typeof(\" + q + \") = 'numeric'::regtype THEN " 'CASE WHEN TRUE THEN ' ;; # a double rounded as a decimal
3) plant '		if pgengine.TruthValue(toks[from:end]) {' '		if pgengine.TruthValue(nil) {' ;;                    # SUM of a comparison not as an integer
4) plant '		"if": func(' '		"if_": func(' ;;                                                  # IF() left to PostgreSQL
5) plant '	return "(" + c + ") <> 0"' '	return c' ;;                                             # IF(number, ...) not read as MariaDB's truth
6) plant '"octet_length(" + a[0] + ")"' '"length(" + a[0] + ")"' ;;                               # LENGTH in characters
7) plant '	if k.Descending(toks) {' '	if true {' ;;                                                # every key NULLS LAST
8) plant '			setType(mysql.MYSQL_TYPE_LONG, 1) //' '			setType(mysql.MYSQL_TYPE_TINY, 1) //' ;; # a comparison a TINYINT
esac
planted
LINES_MAX=6 gotest 'x^' -run 'TestMySQLFunctions|TestMySQLNullsOrder|TestMySQLConcat' ./internal/engine/pgengine/
gotest 'failed after|PostgreSQL |MariaDB ' -run 'TestMariaDBExpressionsOnPostgreSQL|TestDivisionOfAnyExpression|TestDecimal' ./internal/frontend/mysqlwire/ -rapid.checks=${CHECKS:-100}
