package pgwire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestAdvisoryLocksAsPostgreSQL: two clients take and release advisory locks on a real
// PostgreSQL and through QueryFlux on DuckDB, step by step, and see the same answers (value
// and type): a lock held excludes the other client, is taken again by its holder (counted),
// is shared with shared takes only, ends with a transaction (xact locks) or with the holder's
// connection, and a waiting pg_advisory_lock goes on once the holder's connection has ended.
func TestAdvisoryLocksAsPostgreSQL(t *testing.T) {
	pgURL := pgtest.NewDatabase(t)
	duck := memoryDuckProxy(t, "advisory").URL()
	for name, url := range map[string]string{"PostgreSQL": pgURL, "QueryFlux on DuckDB": duck} {
		t.Run(name, func(t *testing.T) {
			a, b := connect(t, url).PgConn(), connect(t, url).PgConn()
			ctx := context.Background()
			steps := []struct {
				c    *pgconn.PgConn
				sql  string
				args []string
				want string
			}{
				{a, "select pg_advisory_lock(42)", nil, "2278 "},
				{b, "select pg_try_advisory_lock(42)", nil, "16 f"},
				{a, "SELECT pg_try_advisory_lock($1) AS got", []string{"42"}, "16 t"},
				{a, "select pg_advisory_unlock(42)", nil, "16 t"},
				{b, "select pg_try_advisory_lock_shared(42)", nil, "16 f"},
				{a, "select pg_advisory_unlock(42)", nil, "16 t"},
				{a, "select pg_advisory_unlock(42)", nil, "16 f"},
				{b, "select pg_try_advisory_lock_shared(42);", nil, "16 t"},
				{a, "select pg_try_advisory_lock_shared(42)", nil, "16 t"},
				{a, "select pg_try_advisory_lock(42)", nil, "16 f"},
				{b, "select pg_advisory_unlock_shared(42)", nil, "16 t"},
				{a, "select pg_try_advisory_lock(42)", nil, "16 t"},
				{a, "select pg_advisory_unlock_all()", nil, "2278 "},
				{b, "select pg_try_advisory_lock(42)", nil, "16 t"},
				{b, "select pg_advisory_unlock(42)", nil, "16 t"},
				// transaction locks, and a pair of integers as a key of its own
				{a, "begin", nil, ""},
				{a, "select pg_advisory_xact_lock(7, 0)", nil, "2278 "},
				{b, "select pg_try_advisory_lock(7, 0)", nil, "16 f"},
				{b, "select pg_try_advisory_xact_lock(7)", nil, "16 t"},
				{a, "select pg_advisory_unlock(7, 0)", nil, "16 f"},
				{a, "commit", nil, ""},
				{b, "select pg_try_advisory_lock(7, 0)", nil, "16 t"},
				{a, "select pg_advisory_lock(99)", nil, "2278 "},
			}
			for i, s := range steps {
				if got := advisoryStep(ctx, s.c, s.sql, s.args); got != s.want {
					t.Fatalf("step %d %s: %q, want %q", i, s.sql, got, s.want)
				}
			}
			// b waits for a's lock, and gets it once a's connection has ended.
			done := make(chan string, 1)
			go func() { done <- advisoryStep(ctx, b, "select pg_advisory_lock(99)", nil) }()
			select {
			case got := <-done:
				t.Fatalf("pg_advisory_lock(99) answered %q while another client held it", got)
			case <-time.After(300 * time.Millisecond):
			}
			_ = a.Close(ctx)
			select {
			case got := <-done:
				if got != "2278 " {
					t.Fatalf("pg_advisory_lock(99) after the holder left: %q", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("pg_advisory_lock(99) still waits after the holder's connection ended")
			}
		})
	}
}

// advisoryStep runs sql with text arguments and answers "oid value" for its one value, "" for
// no rows, or the error.
func advisoryStep(ctx context.Context, c *pgconn.PgConn, sql string, args []string) string {
	var values [][]byte
	for _, a := range args {
		values = append(values, []byte(a))
	}
	res := c.ExecParams(ctx, sql, values, nil, nil, nil).Read()
	switch {
	case res.Err != nil:
		return "error " + res.Err.Error()
	case len(res.Rows) == 0:
		return ""
	}
	return fmt.Sprintf("%d %s", res.FieldDescriptions[0].DataTypeOID, res.Rows[0][0])
}
