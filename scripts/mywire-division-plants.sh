#!/bin/sh
# mywire-division-plants.sh N: plants bug N (1-8) in internal/frontend/mysqlwire/divops.go, runs
# the division tests against MariaDB and PostgreSQL, and restores the file (scripts/plantlib.sh;
# RESULTS.md names the plants). CHECKS=n sets rapid's checks (100).
. "$(dirname "$0")/plantlib.sh"
plant_in internal/frontend/mysqlwire/divops.go
case $1 in
1) plant 'func pgDivisions(sql string) string {
' 'func pgDivisions(sql string) string {
	if true {
		return sql
	}
' ;;
2) plant '	if len(ins) == 0 {
		return sql' '	if true {
		return sql' ;;
3) plant '"CAST(div(CAST(("' '"CAST(floor(CAST(("'
   plant '") AS numeric), " + divisor' '") AS numeric) / " + divisor' ;;
4) plant '		if s < 2 || !multiplies(toks, s-1) {' '		if true {' ;;
5) plant '		return r.zeros
' '		return r.zeros * 0
' ;;
6) plant '	dividend, divisor := text(d.left, d.right), text(d.from, d.to)
' '	dividend, divisor := text(d.left, d.right), text(d.from, d.to)
	if true {
		return "TRUE"
	}
' ;;
7) plant 'when := text(d.left, d.right) + " IS NOT NULL"' 'when := "TRUE"' ;;
8) plant "		case divides(toks[i]) && toks[i].Text[0] == '/':
			decimal = true" "		case divides(toks[i]) && toks[i].Text[0] == '/':
			decimal = false" ;;
*) echo "plant 1-8"; exit 2 ;;
esac
planted
gotest 'failed after|PostgreSQL|MariaDB ' -run 'TestPgDivisions|TestDivisionOfColumnsAsMariaDB|TestDivisionOfAnyExpression' ./internal/frontend/mysqlwire/ -rapid.checks=${CHECKS:-100}
