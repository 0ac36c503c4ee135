#!/bin/sh
# mywire-sqlmode-plants.sh N: plants bug N (1-8) in a MySQL client's sql_mode on PostgreSQL,
# runs the oracle tests against MariaDB and PostgreSQL and the text test, and restores the file
# (scripts/plantlib.sh; RESULTS.md names the plants). CHECKS=n sets rapid's checks (100).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|7) plant_in internal/engine/pgengine/pgengine.go ;;
2|3|4|6|8) plant_in internal/engine/pgengine/mysqlsqlmode.go ;;
5) plant_in internal/frontend/mysqlwire/setvars.go ;;
*) echo "plant 1-8"; exit 2 ;;
esac
case $1 in
1) plant 'if modes, ok := mysqlSQLModeSet(sqlText); ok {' 'if modes, ok := mysqlSQLModeSet(sqlText); ok && false {' ;; # SET sql_mode left to PostgreSQL
2) plant '		j, read := i+1, mode' '		j, read := i+1, mysqlmode.Default' ;;                      # @@sql_mode reads the default
3) plant '			if why, refused := sqlModesRefused[m]; refused {' '			if why, refused := sqlModesRefused[m]; refused && false {' ;; # every mode kept
4) plant '(value[0].Kind == sqltok.Number || numberParam(value[0], args))' 'false' ;; # a number read as names
5) plant '		case name == "sql_mode" && refusing && readingMode(v) != "":' '		case false:' ;; # the frontend's 1235 for ANSI_QUOTES
6) plant '		if value[0].IsWord("default") {' '		if value[0].IsWord("defaults") {' ;;                  # DEFAULT read as a name
7) plant '	delete(s.conn.Conn().PgConn().CustomData(), sqlModeKey)' '	_ = sqlModeKey' ;;            # the mode left with the pooled connection
8) plant '	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true' '	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return false' ;; # a prepared SET's number read as names
esac
planted
gotest 'x^' -run 'TestSQLModeTexts' ./internal/engine/pgengine/
LINES_MAX=16 gotest 'failed after|PostgreSQL |MariaDB |want' -run 'TestSQLModeOnPostgreSQLAsMariaDB|TestSQLModesPostgreSQLCannotKeep|TestAnySQLModeOnPostgreSQLAsMariaDB' ./internal/frontend/mysqlwire/ -args -rapid.checks=${CHECKS:-100}
