#!/bin/sh
# mywire-nullorder-plants.sh N: plants bug N (1-4) in the NULL order of a MySQL client's NOT
# NULL sort keys on PostgreSQL, runs the text test and the oracle test against MariaDB and
# PostgreSQL, and restores the file by cp (RESULTS.md names the plants).
set -e
cd "$(git rev-parse --show-toplevel)"
case $1 in
1|4) F=internal/engine/pgengine/mysqlnulls.go ;;
2|3) F=internal/engine/pgengine/mysqlnotnull.go ;;
*) echo "plant 1-4"; exit 2 ;;
esac
mkdir -p /tmp/mywire-plants
cp $F /tmp/mywire-plants/plant.orig
trap 'cp /tmp/mywire-plants/plant.orig $F' EXIT
plant() { python3 -c "import sys; p=sys.argv[1]; s=open(p).read(); assert sys.argv[2] in s; open(p,'w').write(s.replace(sys.argv[2], sys.argv[3], 1))" "$F" "$1" "$2"; }
case $1 in
1) plant '	if lookup.columns != nil {' '	if lookup.columns != nil && false {' ;;                            # every key gets its NULLS
2) plant '	case "CREATE", "ALTER", "DROP":
		c.forget()' '	case "CREATE", "ALTER", "DROP":' ;;                                                        # a dropped NOT NULL not seen
3) plant '"select", "join", "union"' '"select", "union"' ;;                                                    # a joined table read as the only one
4) plant 'notNull[col] && !namedOtherwise(toks, col)' 'notNull[col]' ;;                                  # an alias named as the column not seen
esac
git diff --stat $F
nice -n 10 go test -count=1 -run 'TestMySQLNullsOrder' ./internal/engine/pgengine/ 2>&1 | grep -E "^(---|ok|FAIL)|got|want" | head -8
nice -n 10 go test -count=1 -run 'TestNotNullSortKeysOnPostgreSQL' ./internal/frontend/mysqlwire/ 2>&1 | grep -E "^(---|ok|FAIL)|want|PostgreSQL |MariaDB " | head -10
