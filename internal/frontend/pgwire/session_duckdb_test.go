package pgwire_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestSessionFunctionsAsPostgreSQL: current_user and its kin answer the user the client logged
// in as, and current_setting('application_name') the name it gave at startup, then the one it
// set, on the embedded DuckDB as on PostgreSQL (DuckDB's own answer "duckdb", and no such
// setting); the result columns are named and typed as PostgreSQL's. A column or an alias
// named user is left alone, and the server-state functions clients ask answer as a primary's.
func TestSessionFunctionsAsPostgreSQL(t *testing.T) {
	withApp := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		q := p.Query()
		q.Set("application_name", "qf-session-test")
		p.RawQuery = q.Encode()
		return p.String()
	}
	pgURL := pgtest.NewDatabase(t)
	dsn := memoryDuckProxy(t, "session")
	pg, duck := connect(t, withApp(pgURL)), connect(t, withApp(dsn.URL()))
	users := map[*pgx.Conn]string{pg: "postgres", duck: dsn.User}

	const sessionSQL = `SELECT current_user, session_user, user, current_role, current_setting('application_name'),
		current_user = $1 AS mine, 1 AS "user", pg_is_in_recovery(), to_regclass('no_such_table') IS NULL AS missing`
	shape := func(c *pgx.Conn, sql string, args ...any) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return "error " + err.Error()
		}
		defer rows.Close()
		out := ""
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return "error " + err.Error()
			}
			for i, f := range rows.FieldDescriptions() {
				v := fmt.Sprint(vals[i])
				if v == users[c] {
					v = "<login user>"
				}
				oid := f.DataTypeOID
				if oid == 19 {
					oid = 25 // name: DuckDB has no such type, text is sent (a string to every client)
				}
				out += fmt.Sprintf("%s(oid %d)=%s ", f.Name, oid, v)
			}
		}
		if rows.Err() != nil {
			return "error " + rows.Err().Error()
		}
		return out
	}
	check := func(sql string, args func(*pgx.Conn) []any) {
		t.Helper()
		want, got := shape(pg, sql, args(pg)...), shape(duck, sql, args(duck)...)
		if want != got {
			t.Errorf("%s\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
	login := func(c *pgx.Conn) []any { return []any{users[c]} }
	none := func(*pgx.Conn) []any { return nil }
	check(sessionSQL, login)
	for _, c := range []*pgx.Conn{pg, duck} {
		if _, err := c.Exec(context.Background(), "SET application_name = 'qf-renamed'"); err != nil {
			t.Fatal(err)
		}
	}
	check("SELECT current_setting('application_name')", none)
	check("SELECT pg_catalog.to_regclass('pg_catalog.no_such_table') IS NULL", none)
}
