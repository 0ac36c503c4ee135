package trinohttp

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// divisionA and divisionB are the values of table dv's columns a and b: every sign, zero in a,
// NULLs; dv holds each pair (b never zero), c = a * 1000003 as a bigint.
var divisionA = []string{"-7", "-6", "-1", "0", "1", "6", "7", "null"}
var divisionB = []string{"-3", "-2", "-1", "1", "2", "3", "null"}

// TestTrinoIntegerDivisionOfColumnsOnEveryEngine: a Trino client's `x / y` of integer columns
// (and of expressions, aggregates and literals of them) is Trino's integer division, truncated
// toward zero, on MariaDB (whose / is a decimal division: the column types are its catalog's),
// PostgreSQL and DuckDB: each engine's rows through trino-go-client are real PostgreSQL's
// integer division of the same statement, and announced as integers.
func TestTrinoIntegerDivisionOfColumnsOnEveryEngine(t *testing.T) {
	testlong.RapidChecks(t, 25, 200)
	engines := trinoOnEveryEngine(t)
	oracle, err := pgx.Connect(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oracle.Close(context.Background()) })
	var values []string
	for _, a := range divisionA {
		for _, b := range divisionB {
			c := "null"
			if a != "null" {
				c = a + " * 1000003"
			}
			values = append(values, fmt.Sprintf("(%d, %s, %s, %s, 7.5)", len(values)+1, a, b, c))
		}
	}
	setup := []string{`create table dv (id integer, a integer, b integer, c bigint, d decimal(4,1))`,
		`insert into dv values ` + strings.Join(values, ", "), `create table dw (k integer, w integer)`, `insert into dw values (1, 4), (2, -5)`}
	for _, q := range setup {
		for _, db := range engines {
			mustExec(t, db, q)
		}
		if _, err := oracle.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	lefts := []string{"a", "t.a", "-a", "(a + c)", "c", "7", "abs(a)", "coalesce(a, 5)", "w"}
	rights := []string{"b", "t.b", "-b", "2", "-3", "(b * 2)", "dw.k", "abs(b)", "least(dw.k, 2)"}
	rapid.Check(t, func(rt *rapid.T) {
		l, r := rapid.SampledFrom(lefts).Draw(rt, "left"), rapid.SampledFrom(rights).Draw(rt, "right")
		div := l + " / " + r
		var q string
		switch rapid.IntRange(0, 2).Draw(rt, "form") {
		case 0:
			q = "select id, " + div + " from dv t join dw on dw.k = t.id % 2 + 1 order by id"
		case 1:
			q = "select count(*) from dv t join dw on dw.k = t.id % 2 + 1 where " + div + " > 0 and " + div + " < 3"
		default:
			q = "select b, sum(a) / count(*), max(c) / b, min(" + div + ") / 2 from dv t join dw on dw.k = t.id % 2 + 1 " +
				"where b is not null group by b order by b"
		}
		want := oracleRows(rt, oracle, q)
		for name, db := range engines {
			rows, err := db.Query(q)
			if err != nil {
				rt.Fatalf("%s: %s: %v", name, q, err)
			}
			types, _ := rows.ColumnTypes()
			for _, ct := range types[1:] {
				if n := ct.DatabaseTypeName(); n != "INTEGER" && n != "BIGINT" {
					rt.Errorf("%s: %s: column %s is %s, want an integer", name, q, ct.Name(), n)
				}
			}
			if got := fmt.Sprint(scanAll(t, rows)); got != want {
				rt.Fatalf("%s: %s:\n got %s\nwant %s", name, q, got, want)
			}
		}
	})
	// a decimal column's division is a decimal's; a division by a zero column fails as Trino's;
	// a transaction's statement divides as any other
	for name, db := range engines {
		var got string
		if err := db.QueryRow(`select cast(d / 2 as varchar) from dv where id = 1`).Scan(&got); err != nil || strings.HasPrefix(got, "3") && !strings.HasPrefix(got, "3.") {
			t.Errorf("%s: d / 2 of 7.5 is %q (%v), want Trino's decimal 3.8", name, got, err)
		}
		if err := queryErr(db, `select a / (b - b) from dv where id = 1`); trinoErrorName(err) != "DIVISION_BY_ZERO" {
			t.Errorf("%s: a / (b - b): %v, want DIVISION_BY_ZERO", name, err)
		}
		tx, err := db.Begin() // inside a transaction, on its connection
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := tx.QueryRow(`select a / b from dv where id = 1`).Scan(&n); err != nil || n != 2 {
			t.Errorf("%s: in a transaction, -7 / -3 is %d (%v), want 2", name, n, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// oracleRows is PostgreSQL's answer to q, printed as scanAll's rows are.
func oracleRows(rt *rapid.T, oracle *pgx.Conn, q string) string {
	rows, err := oracle.Query(context.Background(), q)
	if err != nil {
		rt.Fatalf("postgres (oracle): %s: %v", q, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rt.Fatal(err)
		}
		for i, v := range vals {
			switch n := v.(type) {
			case int32:
				vals[i] = int64(n)
			case int16:
				vals[i] = int64(n)
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		rt.Fatalf("postgres (oracle): %s: %v", q, err)
	}
	return fmt.Sprint(out)
}

// queryErr is q's error, from its start or its rows (an engine's warning read at their end).
func queryErr(db *sql.DB, q string) error {
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}
