package trinohttp

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// Trino's dialect on a MariaDB engine (package trinomy): Trino's SHOW and DESCRIBE with Trino's
// columns and type names, double-quoted names, a string's backslash as itself and || as
// concatenation, through trino-go-client and the npm trino-client, as Trino answers them.
func TestTrinoDialectOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "maria", Schema: dbName})
	mustExec(t, db, `create table "Orders" ("Id" integer, name varchar(5), at datetime(3), price decimal(10,2), note text)`)
	mustExec(t, db, `insert into "Orders" values (1, 'a\b', '2024-01-02 03:04:05.678', 1.25, 'x')`)
	for _, c := range []struct{ sql, names, rows string }{
		{"show catalogs", "Catalog", "[[maria]]"},
		{"show schemas like '" + dbName + "'", "Schema", "[[" + dbName + "]]"},
		{"show tables", "Table", "[[Orders]]"},
		{`describe "Orders"`, "Column Type Extra Comment",
			"[[Id integer  ] [name varchar(5)  ] [at timestamp(3)  ] [price decimal(10,2)  ] [note varchar  ]]"},
		{`show columns from maria.` + dbName + `."Orders" like 'n%'`, "Column Type Extra Comment", "[[name varchar(5)  ] [note varchar  ]]"},
		{`select "Id", name, name || '-' || "Id" + 1 as tag, 'c:\dir' as path from "Orders"`, "Id name tag path", `[[1 a\b a\b-2 c:\dir]]`},
		{`select case when 'a' || 'b' = 'ab' then 'yes' end as same`, "same", "[[yes]]"},
		{`select date_add('day', 1, date '2024-01-31') d, date_diff('month', date '2024-01-15', date '2024-03-14') m, ` +
			`date_diff('millisecond', timestamp '2024-01-01 00:00:00', timestamp '2024-01-01 00:00:01.5') ms`, "d m ms",
			"[[2024-02-01 00:00:00 +0000 UTC 1 1500]]"},
	} {
		r, err := db.Query(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		names, _ := r.Columns()
		if rows := fmt.Sprint(scanAll(t, r)); strings.Join(names, " ") != c.names || rows != c.rows {
			t.Errorf("%s: %v %s, want %s %s", c.sql, names, rows, c.names, c.rows)
		}
	}
	got := runNPMIn(t, ts.addr, "alice", "maria", dbName,
		npmStep{Name: "describe", SQL: `describe "Orders"`},
		npmStep{Name: "concat", SQL: `select name || '|' || note as s from "Orders"`})
	if o := got["describe"].OK; o == nil || fmt.Sprint(o.Names) != "[Column Type Extra Comment]" || len(o.Rows) != 5 {
		t.Errorf("npm describe: %+v %+v", got["describe"].OK, got["describe"].Error)
	}
	if o := got["concat"].OK; o == nil || fmt.Sprint(o.Rows) != `[[a\b|x]]` {
		t.Errorf("npm concat: %+v %+v", got["concat"].OK, got["concat"].Error)
	}
}

// Trino's row-count clauses and the errors Trino raises where MariaDB answers otherwise: OFFSET
// before LIMIT (MariaDB's syntax error as written), LIMIT ALL, DESCRIBE of a table that does not
// exist (MariaDB's information_schema answers no rows: Trino's TABLE_NOT_FOUND), and a division
// by zero (MariaDB's NULL and a warning: Trino's DIVISION_BY_ZERO), through both clients.
func TestTrinoRowCountsAndErrorsOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "maria", Schema: dbName})
	mustExec(t, db, `create table n (v integer)`)
	mustExec(t, db, `insert into n values (1), (2), (3), (4)`)
	for _, c := range []struct{ sql, rows string }{
		{"select v from n order by v offset 1 limit 2", "[[2] [3]]"},
		{"select v from n order by v offset 2 rows limit 1", "[[3]]"},
		{"select v from n order by v offset 3", "[[4]]"},
		{"select v from n order by v offset 2 limit all", "[[3] [4]]"},
		{"select v from n order by v limit all", "[[1] [2] [3] [4]]"},
		{"select v from n order by v offset 1 rows fetch first 1 rows only", "[[2]]"},
	} {
		r, err := db.Query(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if rows := fmt.Sprint(scanAll(t, r)); rows != c.rows {
			t.Errorf("%s: %s, want %s", c.sql, rows, c.rows)
		}
	}
	for _, c := range []struct{ sql, name string }{
		{"describe missing", "TABLE_NOT_FOUND"},
		{"show columns from maria." + dbName + ".missing", "TABLE_NOT_FOUND"},
		{"select 1 / 0", "DIVISION_BY_ZERO"},
		{"select v, 10 / (v - 3) from n", "DIVISION_BY_ZERO"},
		{"select mod(v, 0) from n", "DIVISION_BY_ZERO"},
	} {
		r, err := db.Query(c.sql)
		if err == nil {
			var rows [][]any
			rows, err = frontendtest.ScanAll(r)
			if err == nil {
				t.Errorf("%s: %v, want %s", c.sql, rows, c.name)
				continue
			}
		}
		if trinoErrorName(err) != c.name {
			t.Errorf("%s: %v, want %s", c.sql, err, c.name)
		}
	}
	got := runNPMIn(t, ts.addr, "alice", "maria", dbName,
		npmStep{Name: "page", SQL: "select v from n order by v offset 1 limit 2"},
		npmStep{Name: "describe", SQL: "describe missing"},
		npmStep{Name: "divide", SQL: "select 1 / 0"})
	if o := got["page"].OK; o == nil || fmt.Sprint(o.Rows) != "[[2] [3]]" {
		t.Errorf("npm offset then limit: %+v %+v", got["page"].OK, got["page"].Error)
	}
	if e := got["describe"].Error; e == nil || e.ErrorName != "TABLE_NOT_FOUND" {
		t.Errorf("npm describe of a missing table: %+v %+v", got["describe"].OK, e)
	}
	if e := got["divide"].Error; e == nil || e.ErrorName != "DIVISION_BY_ZERO" {
		t.Errorf("npm 1 / 0: %+v %+v", got["divide"].OK, e)
	}
}

// What MariaDB answers otherwise than Trino in a plain SELECT: a comparison or predicate is an
// integer there (Trino: boolean), a BOOLEAN column a TINYINT(1) and a BIT(1) a number (Trino's
// connectors: boolean), 7 / 2 is 3.5000 (Trino's integer division: 3), and an unaliased
// expression is named by its text (Trino: _colN), through both clients.
func TestTrinoBooleansDivisionAndNamesOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "maria", Schema: dbName})
	mustExec(t, db, `create table f (id integer, ok boolean, b bit(1), n integer, small tinyint)`)
	mustExec(t, db, `insert into f values (1, true, b'1', 7, 1), (2, false, b'0', null, 0)`)
	const sel = `select id, 1 = 1, ok, b, id > 1 as big, n is null, not ok, case when id = 1 then true else false end, ` +
		`7 / 2, -7 / 2 q, count(*) over () / 2 c, small, id in (2, 3) and ok from f order by id`
	r, err := db.Query(sel)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := r.Columns()
	const wantNames = "id _col1 ok b big _col5 _col6 _col7 _col8 q c small _col12"
	if got := strings.Join(names, " "); got != wantNames {
		t.Errorf("names %s, want %s", got, wantNames)
	}
	const wantRows = "[[1 true true true false false false true 3 -3 1 1 false] [2 true false false true true true false 3 -3 1 0 false]]"
	if rows := fmt.Sprint(scanAll(t, r)); rows != wantRows {
		t.Errorf("rows %s\n want %s", rows, wantRows)
	}
	got := runNPMIn(t, ts.addr, "alice", "maria", dbName, npmStep{Name: "sel", SQL: sel})
	o := got["sel"].OK
	if o == nil {
		t.Fatalf("npm: %+v", got["sel"].Error)
	}
	const wantTypes = "[integer boolean boolean boolean boolean boolean boolean boolean integer integer bigint tinyint boolean]"
	if fmt.Sprint(o.Types) != wantTypes || strings.Join(o.Names, " ") != wantNames ||
		fmt.Sprint(o.Rows[0]) != "[1 true true true false false false true 3 -3 1 1 false]" {
		t.Errorf("npm: %v %v %v\n want %s", o.Names, o.Types, o.Rows, wantTypes)
	}
}

// Trino's cast types on MariaDB, whose CAST names them otherwise (SIGNED, DOUBLE, CHAR(n),
// BINARY, DATETIME(p)): MariaDB's syntax error as written.
func TestTrinoCastsOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	const sel = `select cast('12' as bigint) a, cast('7' as integer) / 2 b, cast('1.5' as double) c, cast('abcdef' as varchar(3)) d, ` +
		`cast('ab' as varbinary) e, cast('2024-01-02 03:04:05.678' as timestamp(3)) f, cast('1.255' as decimal(10,2)) g`
	got := runNPMIn(t, ts.addr, "alice", "maria", dbName, npmStep{Name: "sel", SQL: sel})
	o := got["sel"].OK
	if o == nil {
		t.Fatalf("npm: %+v", got["sel"].Error)
	}
	const wantRows = "[[12 3 1.5 abc YWI= 2024-01-02 03:04:05.678 1.26]]"
	if fmt.Sprint(o.Rows) != wantRows {
		t.Errorf("npm: %v %v\n want %s", o.Types, o.Rows, wantRows)
	}
}

// Trino's functions MariaDB or PostgreSQL lack or answer otherwise (strpos, regexp_like,
// to_unixtime, approx_distinct, json_extract_scalar), nested and in WHERE and ORDER BY, through
// trino-go-client: their answers and types are DuckDB's (whose answers are Trino's:
// TestTrinoDialectOnDuckDB).
func TestTrinoFunctionsOnMariaDBAndPostgresAsOnDuckDB(t *testing.T) {
	engines := trinoOnEveryEngine(t)
	duck := engines["duckdb"]
	delete(engines, "duckdb")
	for _, db := range []*sql.DB{engines["mariadb"], engines["postgres"], duck} {
		mustExec(t, db, `create table fj (id integer, doc varchar, s varchar, at timestamp(3))`)
		mustExec(t, db, `insert into fj values (1, '{"a": 1, "b": "x", "c": [1], "d": null, "e": {"f": 2}}', 'hello', timestamp '1970-01-01 00:00:01.500'), `+
			`(2, '{"a": "2"}', 'world', timestamp '2024-05-06 07:08:09.000'), (3, null, null, null)`)
	}
	for _, q := range []string{
		`select id, strpos(s, 'l'), strpos(s, 'z') z, strpos(upper(s), 'O') from fj order by id`,
		`select id, regexp_like(s, '^h.l'), regexp_like(s, 'o') o from fj order by id`,
		`select id, to_unixtime(at) from fj order by id`,
		`select approx_distinct(s), approx_distinct(id) from fj`,
		`select id, json_extract_scalar(doc, '$.a'), json_extract_scalar(doc, '$.b'), json_extract_scalar(doc, '$.c'), ` +
			`json_extract_scalar(doc, '$.d'), json_extract_scalar(doc, '$.e'), json_extract_scalar(doc, '$.e.f') from fj order by id`,
		`select id from fj where regexp_like(s, 'l+o') and strpos(json_extract_scalar(doc, '$.b'), 'x') = 1`,
		`select id, strpos(s, 'o') p from fj order by strpos(s, 'o') desc, id`,
	} {
		want, wantTypes := readWithTypes(t, duck, q)
		for name, db := range engines {
			if got, types := readWithTypes(t, db, q); got != want || types != wantTypes {
				t.Errorf("%s: %s:\n %s %s\n DuckDB's %s %s", name, q, got, types, want, wantTypes)
			}
		}
	}
}

// readWithTypes is q's rows and its columns' Trino types, as trino-go-client reads them.
func readWithTypes(t *testing.T, db *sql.DB, q string) (rows, types string) {
	t.Helper()
	r, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	cols, err := r.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.DatabaseTypeName())
	}
	return fmt.Sprint(scanAll(t, r)), strings.Join(names, " ")
}
