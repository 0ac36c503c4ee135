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
	for _, c := range []*pgx.Conn{pg, duck} {
		if _, err := c.Exec(context.Background(), "CREATE VIEW session_view AS SELECT 1 AS one"); err != nil {
			t.Fatal(err)
		}
	}
	check("SELECT to_regclass('session_view')::text", none)
}

// TestTypeORMCatalogStatementsAsPostgreSQL: statements TypeORM's PostgreSQL driver sends at
// connect and to synchronise a schema answer on the embedded DuckDB as on PostgreSQL: a scalar
// function as a FROM item, and = ANY of an array parameter.
func TestTypeORMCatalogStatementsAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "typeorm").URL())
	ctx := context.Background()
	for _, c := range []*pgx.Conn{pg, duck} {
		if _, err := c.Exec(ctx, "create table things (id integer, kind text)"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "insert into things values (1, 'a'), (2, 'b'), (3, 'c')"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "create view thing_kinds as select kind from things"); err != nil {
			t.Fatal(err)
		}
	}
	schemas := map[*pgx.Conn]string{}
	for _, c := range []*pgx.Conn{pg, duck} {
		var s string
		if err := c.QueryRow(ctx, "select current_schema()").Scan(&s); err != nil {
			t.Fatal(err)
		}
		schemas[c] = s
	}
	for _, c := range []struct {
		sql  string
		args func(*pgx.Conn) []any
	}{
		{"SELECT * FROM current_schema()", nil},
		{"SELECT db IS NOT NULL FROM current_database() AS db", nil},
		{"SELECT length(db) > 0 AS named FROM current_database() db WHERE db IS NOT NULL", nil},
		{`SELECT count(*) FROM current_schema() WHERE current_schema = $1`, func(c *pgx.Conn) []any { return []any{schemas[c]} }},
		{`SELECT id FROM things WHERE "kind" = ANY($1) ORDER BY id`, func(*pgx.Conn) []any { return []any{[]string{"a", "c"}} }},
		{`SELECT viewname FROM "pg_views" WHERE "schemaname" = ANY($1::text[])`,
			func(c *pgx.Conn) []any { return []any{[]string{schemas[c]}} }},
	} {
		answer := func(conn *pgx.Conn) string {
			var args []any
			if c.args != nil {
				args = c.args(conn)
			}
			rows, err := conn.Query(ctx, c.sql, args...)
			if err != nil {
				return "error " + err.Error()
			}
			defer rows.Close()
			out := ""
			for rows.Next() {
				v, _ := rows.Values()
				if len(v) == 1 && (v[0] == schemas[conn] || v[0] == conn.Config().Database) {
					v[0] = "<the connection's>"
				}
				out += fmt.Sprint(rows.FieldDescriptions()[0].Name, v)
			}
			return out + fmt.Sprint(rows.Err())
		}
		if want, got := answer(pg), answer(duck); want != got {
			t.Errorf("%s\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", c.sql, want, got)
		}
	}
}
