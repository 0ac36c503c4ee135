#!/bin/sh
# mywire-sqlmode-plants.sh N: plants bug N (1-7) in a MySQL client's sql_mode on PostgreSQL,
# runs the oracle tests against MariaDB and PostgreSQL and the text test, and restores the file
# by cp (RESULTS.md names the plants). CHECKS=n sets rapid's checks (100).
set -e
cd "$(git rev-parse --show-toplevel)"
case $1 in
1|7) F=internal/engine/pgengine/pgengine.go ;;
2|3|4|6) F=internal/engine/pgengine/mysqlsqlmode.go ;;
5) F=internal/frontend/mysqlwire/setvars.go ;;
*) echo "plant 1-7"; exit 2 ;;
esac
mkdir -p /tmp/mywire-plants
cp $F /tmp/mywire-plants/plant.orig
trap 'cp /tmp/mywire-plants/plant.orig $F' EXIT
plant() { python3 -c "import sys; p=sys.argv[1]; s=open(p).read(); assert sys.argv[2] in s; open(p,'w').write(s.replace(sys.argv[2], sys.argv[3], 1))" "$F" "$1" "$2"; }
case $1 in
1) plant 'if modes, ok := mysqlSQLModeSet(sqlText); ok {' 'if modes, ok := mysqlSQLModeSet(sqlText); ok && false {' ;; # SET sql_mode left to PostgreSQL
2) plant '		j, read := i+1, mode' '		j, read := i+1, mysqlmode.Default' ;;                      # @@sql_mode reads the default
3) plant '			if why, refused := sqlModesRefused[m]; refused {' '			if why, refused := sqlModesRefused[m]; refused && false {' ;; # every mode kept
4) plant '	return *v, len(value) == 1 && value[0].Kind == sqltok.Number, nil' '	return *v, false, nil' ;; # a number read as names
5) plant '		case name == "sql_mode" && refusing && readingMode(v) != "":' '		case false:' ;; # the frontend's 1235 for ANSI_QUOTES
6) plant '		if value[0].IsWord("default") {' '		if value[0].IsWord("defaults") {' ;;                  # DEFAULT read as a name
7) plant '	delete(s.conn.Conn().PgConn().CustomData(), sqlModeKey)' '	_ = sqlModeKey' ;;            # the mode left with the pooled connection
esac
git diff --stat $F
nice -n 10 go test -count=1 -run 'TestSQLModeTexts' ./internal/engine/pgengine/ 2>&1 | grep -E "^(---|ok|FAIL)" | head -6
nice -n 10 go test -count=1 -run 'TestSQLModeOnPostgreSQLAsMariaDB|TestSQLModesPostgreSQLCannotKeep|TestAnySQLModeOnPostgreSQLAsMariaDB' ./internal/frontend/mysqlwire/ -args -rapid.checks=${CHECKS:-100} 2>&1 | grep -E "^(---|ok|FAIL)|failed after|PostgreSQL |MariaDB |want" | head -12
