#!/bin/sh
# mywire-division-plants.sh N: plants bug N (1-8) in internal/frontend/mysqlwire/divops.go, runs
# the division tests against MariaDB and PostgreSQL, and restores the file by cp (session 43,
# mywire; RESULTS.md names the plants). CHECKS=n sets rapid's checks (100).
set -e
cd "$(git rev-parse --show-toplevel)"
F=internal/frontend/mysqlwire/divops.go
mkdir -p /tmp/mywire-plants
cp $F /tmp/mywire-plants/divops.go.orig
trap 'cp /tmp/mywire-plants/divops.go.orig $F' EXIT
case $1 in
1) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('func pgDivisions(sql string) string {\n','func pgDivisions(sql string) string {\n\tif true {\n\t\treturn sql\n\t}\n',1); open(p,'w').write(s)
P
;;
2) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('\tif len(ins) == 0 {\n\t\treturn sql','\tif true {\n\t\treturn sql',1); open(p,'w').write(s)
P
;;
3) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('"CAST(div(CAST(("','"CAST(floor(CAST(("',1).replace('") AS numeric), " + divisor','") AS numeric) / " + divisor',1); open(p,'w').write(s)
P
;;
4) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('\t\tif s < 2 || !multiplies(toks, s-1) {','\t\tif true {',1); open(p,'w').write(s)
P
;;
5) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('\t\treturn r.zeros\n','\t\treturn r.zeros * 0\n',1); open(p,'w').write(s)
P
;;
6) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('\tdividend, divisor := text(d.left, d.right), text(d.from, d.to)\n','\tdividend, divisor := text(d.left, d.right), text(d.from, d.to)\n\tif true {\n\t\treturn "TRUE"\n\t}\n',1); open(p,'w').write(s)
P
;;
7) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('when := text(d.left, d.right) + " IS NOT NULL"','when := "TRUE"',1); open(p,'w').write(s)
P
;;
8) python3 - <<'P'
p='internal/frontend/mysqlwire/divops.go'; s=open(p).read()
s=s.replace('\t\tcase divides(toks[i]) && toks[i].Text[0] == \'/\':\n\t\t\tdecimal = true','\t\tcase divides(toks[i]) && toks[i].Text[0] == \'/\':\n\t\t\tdecimal = false',1); open(p,'w').write(s)
P
;;
esac
git diff --stat $F
nice -n 10 go test -count=1 -run 'TestPgDivisions|TestDivisionOfColumnsAsMariaDB|TestDivisionOfAnyExpression' ./internal/frontend/mysqlwire/ -rapid.checks=${CHECKS:-100} 2>&1 | grep -E "^(---|ok|FAIL)|failed after|PostgreSQL|MariaDB " | head -12
