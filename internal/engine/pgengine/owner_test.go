package pgengine_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestPooledConnectionGoesToAnotherUserReset: on an engine of one connection (so each statement
// takes the connection the last one left), what a user's statements leave on the session stays
// theirs. Alice's temporary table named as a real one, her search_path and her prepared
// statement do not reach Bob: his SELECT reads the real table, his search_path is the server's,
// and his statement with parameters (pgx's cached statement, dropped by the reset) runs; the
// reset sets the dead-client backstop again. Between statements of one user nothing is reset:
// Alice's next statement reads her temporary table.
func TestPooledConnectionGoesToAnotherUserReset(t *testing.T) {
	e, _ := openConns(t, 1)
	run := func(user, sql string, args ...any) [][]string {
		t.Helper()
		_, rows, err := enginetest.TextRows(e, &query.Request{SQL: sql, User: user, Args: args})
		if err != nil {
			t.Fatalf("%s: %s: %v", user, sql, err)
		}
		return rows
	}
	run("admin", "create table accounts (owner text, balance int)")
	run("admin", "insert into accounts values ('bob', 100)")
	run("alice", "create temporary table accounts (owner text, balance int)")
	run("alice", "insert into accounts values ('bob', 0)")
	if got := run("alice", "select balance from accounts"); len(got) != 1 || got[0][0] != "0" {
		t.Errorf("alice's next statement does not see her temporary table: %v", got)
	}
	run("alice", "select set_config('search_path', 'pg_catalog', false)")
	run("alice", "select $1::int + 1", 1)
	if got := run("bob", "select balance from public.accounts where owner = $1", "bob"); len(got) != 1 || got[0][0] != "100" {
		t.Errorf("bob's balance: %v", got)
	}
	if got := run("bob", "select balance from accounts"); len(got) != 1 || got[0][0] != "100" {
		t.Errorf("bob read alice's temporary table in place of the real one: %v", got)
	}
	if got := run("bob", "show search_path"); got[0][0] != `"$user", public` {
		t.Errorf("bob's search_path is alice's: %v", got)
	}
	if got := run("bob", "show client_connection_check_interval"); got[0][0] != "1s" {
		t.Errorf("after the reset, client_connection_check_interval is %v", got)
	}
	run("bob", "select $1::int + 1", 1)
}
