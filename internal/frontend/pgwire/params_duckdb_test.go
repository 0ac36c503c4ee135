package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestBareParametersAsPostgreSQL: a parameter nothing in the statement types (SELECT $1) is
// typed on DuckDB as PostgreSQL types it: as the client declared it, else as text; and the
// statement is described with the columns it answers with. Before, DuckDB took the bound
// value's type: psycopg 3's date came back a timestamptz, its int2 an int8, a text-format
// date or int4 a text; pgx's described SELECT $1 said int4 and sent text.
// Held to PostgreSQL for the same statements: psycopg2 and psycopg 3 (text and binary)
// (testdata/clients/params.py), pgx in each of its modes, and pgconn with declared types in
// text and binary results.
func TestBareParametersAsPostgreSQL(t *testing.T) {
	pgURL := pgtest.NewDatabase(t)
	duck := duckProxy(t, "transaction")

	var answers [2]string
	for i, dsn := range []string{pgURL, duck.URL()} {
		out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "params.py", dsn)
		if err != nil {
			t.Fatalf("params.py on %s: %v\n%s", dsn, err, out)
		}
		answers[i] = out
	}
	if answers[0] != answers[1] {
		t.Errorf("psycopg's bare parameters differ.\nPostgreSQL:\n%s\nDuckDB:\n%s", answers[0], answers[1])
	}

	ctx := context.Background()
	pg, dk := connect(t, pgURL), connect(t, duck.URL())
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	instant := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, arg := range []any{day, instant, pgtype.Date{Time: day, Valid: true}, pgtype.Timestamp{Time: instant, Valid: true}, "2024-01-02", int16(7), int32(5), 1.5, true} {
		for _, mode := range modes {
			want, got := pgxAnswer(ctx, pg, mode, arg), pgxAnswer(ctx, dk, mode, arg)
			if got != want {
				t.Errorf("pgx %v, select $1 of %T %v: DuckDB %s, PostgreSQL %s", mode, arg, arg, got, want)
			}
		}
	}

	for _, c := range []struct {
		oid   uint32
		value string
	}{
		{1082, "2024-01-02"}, {1114, "2024-01-02 03:04:05.000006"}, {1184, "2024-01-02 03:04:05.000006+00"},
		{1083, "03:04:05"}, {1186, "1 day"}, {21, "7"}, {23, "5"}, {20, "8"}, {700, "2.5"}, {701, "1.5"}, {16, "t"},
		{17, `\x0102`}, {114, `{"a": 1}`}, {2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}, {25, "x"}, {0, "2024-01-02"},
	} {
		for _, sql := range []string{"SELECT $1", "SELECT $1 AS v", "SELECT $1 WHERE $1 IS NOT NULL"} {
			if c.oid == 0 && strings.Contains(sql, "WHERE") {
				continue // PostgreSQL: could not determine data type of parameter $1
			}
			for _, format := range []int16{0, 1} {
				values := [][]byte{[]byte(c.value)}
				want, got := askWith(pg.PgConn(), sql, []uint32{c.oid}, values, format), askWith(dk.PgConn(), sql, []uint32{c.oid}, values, format)
				if got.String() != want.String() {
					t.Errorf("%s, $1 declared %d, %q, result format %d: DuckDB %v, PostgreSQL %v", sql, c.oid, c.value, format, got, want)
				}
			}
		}
	}
}

// pgxAnswer is select $1 of arg as pgx reads it: the column's type and name, and the value.
func pgxAnswer(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, arg any) string {
	rows, err := c.Query(ctx, "select $1", mode, arg)
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return "error " + err.Error()
		}
		f := rows.FieldDescriptions()[0]
		out += fmt.Sprintf("%s oid %d %T %v", f.Name, f.DataTypeOID, v[0], v[0])
	}
	if err := rows.Err(); err != nil {
		return "error " + err.Error()
	}
	return out
}
