#!/bin/sh
# mywire-cast-plants.sh N: plants bug N (1-4) in MySQL's CAST and CONVERT on PostgreSQL, runs the
# text test and the oracle test against MariaDB and PostgreSQL, and restores the file
# (scripts/plantlib.sh; RESULTS.md names the plants).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|2|3|4) plant_in internal/engine/pgengine/mysqlfuncs.go ;;
*) echo "plant 1-4"; exit 2 ;;
esac
case $1 in
1) plant '		"cast":         mysqlCast,' '' ;;                                      # CAST left to PostgreSQL
2) plant '"char": "text", ' '"char": "char", ' ;;                                       # CHAR PostgreSQL's char(1)
3) plant '		if depth == 0 && t.IsWord("as") {' '		if as < 0 && t.IsWord("as") {' ;; # the operand's own AS (a subquery's alias) taken for the cast's
4) plant '		"convert":      mysqlConvert,' '' ;;                                   # CONVERT(x, type) left to PostgreSQL
esac
planted
gotest 'got|want' -run 'TestMySQLFunctions' ./internal/engine/pgengine/
LINES_MAX=16 gotest 'PostgreSQL |MariaDB ' -run 'TestMariaDBExpressionsOnPostgreSQL' ./internal/frontend/mysqlwire/
