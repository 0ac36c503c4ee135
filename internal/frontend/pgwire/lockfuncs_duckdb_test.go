package pgwire_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientCannotCrashTheDaemonThroughDuckDB: psql-style clients (pgx, both protocols) on the
// embedded DuckDB send the call that made DuckDB abort the whole process when a connection
// closed (file logging with external access off), and the other configuration functions in
// the forms a statement can take; each is refused with 42501, and the daemon (this test's
// process) serves on.
func TestClientCannotCrashTheDaemonThroughDuckDB(t *testing.T) {
	d := duckProxy(t, "transaction")
	log := filepath.Join(t.TempDir(), "duck-log")
	for _, attack := range []string{
		"CALL enable_logging(storage = 'file', storage_path = '" + log + "')",
		"select * from enable_logging()",
		"select * from query('select * from enable_logging()')",
		"CALL enable_profiling()",
	} {
		for mode, m := range map[string]pgx.QueryExecMode{"simple": pgx.QueryExecModeSimpleProtocol, "extended": pgx.QueryExecModeExec} {
			c := connect(t, d.URL())
			_, err := c.Exec(context.Background(), attack, m)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%s %q: %v, want refused with 42501", mode, attack, err)
			}
			_ = c.Close(context.Background()) // a connection closing is what aborted the process
		}
	}
	for range 8 { // every pooled engine connection serves a statement and closes
		c := connect(t, d.URL())
		var n int
		if err := c.QueryRow(context.Background(), "select count(*) from customers").Scan(&n); err != nil || n == 0 {
			t.Fatalf("after the attacks: %d %v", n, err)
		}
		_ = c.Close(context.Background())
	}
}

// TestClientCannotRewriteTheCompatibilityCatalog: the objects that answer every client's
// catalog queries and functions on DuckDB are read by clients, never replaced: a client's
// CREATE OR REPLACE of one of its functions (which answered every other client 'pwned'), a
// table or macro created in it, USE of it, are refused; other clients are answered as before.
func TestClientCannotRewriteTheCompatibilityCatalog(t *testing.T) {
	d := duckProxy(t, "transaction")
	attacker := connect(t, d.URL())
	for _, attack := range []string{
		"CREATE OR REPLACE FUNCTION queryflux_pg_compat.main.pg_get_userbyid(x) AS 'pwned'",
		`create or replace macro "QUERYFLUX_PG_COMPAT".main.obj_description(a, b) as 'pwned'`,
		"create table queryflux_pg_compat.main.customers as select 'pwned' as name",
		"create view queryflux_pg_compat.main.orders as select 'pwned' as x",
		"USE queryflux_pg_compat",
		"drop schema queryflux_pg_compat.main cascade",
	} {
		_, err := attacker.Exec(context.Background(), attack)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%q: %v, want refused with 42501", attack, err)
		}
	}
	other := connect(t, d.URL())
	var user, version string
	if err := other.QueryRow(context.Background(), "select pg_get_userbyid(10), version()").Scan(&user, &version); err != nil {
		t.Fatal(err)
	}
	if user == "pwned" || version == "pwned" {
		t.Fatalf("another client is answered %q, %q", user, version)
	}
	var n int
	if err := other.QueryRow(context.Background(), "select count(*) from pg_catalog.pg_class").Scan(&n); err != nil || n == 0 {
		t.Fatalf("the catalog read: %d %v", n, err)
	}
}
