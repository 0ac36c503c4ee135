#!/bin/sh
# mywire-nullorder-plants.sh N: plants bug N (1-4) in the NULL order of a MySQL client's NOT
# NULL sort keys on PostgreSQL, runs the text test and the oracle test against MariaDB and
# PostgreSQL, and restores the file (scripts/plantlib.sh; RESULTS.md names the plants).
. "$(dirname "$0")/plantlib.sh"
case $1 in
1|4) plant_in internal/engine/pgengine/mysqlnulls.go ;;
2|3) plant_in internal/engine/pgengine/mysqlnotnull.go ;;
*) echo "plant 1-4"; exit 2 ;;
esac
case $1 in
1) plant '	if lookup.columns != nil {' '	if lookup.columns != nil && false {' ;;                            # every key gets its NULLS
2) plant '	case "CREATE", "ALTER", "DROP":
		c.forget()' '	case "CREATE", "ALTER", "DROP":' ;;          # a dropped NOT NULL not seen
3) plant '"select", "join", "union"' '"select", "union"' ;;                                                    # a joined table read as the only one
4) plant 'notNull[col] && !namedOtherwise(toks, col)' 'notNull[col]' ;;                                  # an alias named as the column not seen
esac
planted
LINES_MAX=8 gotest 'got|want' -run 'TestMySQLNullsOrder' ./internal/engine/pgengine/
LINES_MAX=10 gotest 'want|PostgreSQL |MariaDB ' -run 'TestNotNullSortKeysOnPostgreSQL' ./internal/frontend/mysqlwire/
