package duckengine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// openConns opens an in-memory engine with at most conns connections (1 makes every pooled
// statement reuse the same connection, so anything left on it would show).
func openConns(t *testing.T, conns int, options map[string]string) query.Engine {
	t.Helper()
	e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:", MaxConns: conns, Options: options})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func session(t *testing.T, e query.Engine) engine.Session {
	t.Helper()
	s, err := e.(engine.SessionOpener).OpenSession(context.Background(), &query.Request{SQL: "BEGIN"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run executes sql on x (an engine or a session) and returns its tag, or fails the test.
func run(t *testing.T, x interface {
	Execute(context.Context, *query.Request) (query.Rows, error)
}, sql string) string {
	t.Helper()
	rows, err := x.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	for {
		if _, err := rows.Next(context.Background()); err != nil {
			break
		}
	}
	tag := rows.Tag()
	_ = rows.Close()
	return tag
}

// code returns the SQLSTATE sql fails with on x, or "" when it succeeds.
func code(x interface {
	Execute(context.Context, *query.Request) (query.Rows, error)
}, sql string) string {
	rows, err := x.Execute(context.Background(), &query.Request{SQL: sql})
	if err == nil {
		for err == nil {
			_, err = rows.Next(context.Background())
		}
		_ = rows.Close()
		if err.Error() == "EOF" {
			return ""
		}
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return qe.Code
	}
	return "not a query.Error: " + err.Error()
}

func count(t *testing.T, x interface {
	Execute(context.Context, *query.Request) (query.Rows, error)
}, sql string) string {
	t.Helper()
	rows, err := x.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return b.Column(0).ValueStr(0)
}

// TestDuckDBTransactionsStayInTheirSession: what a session's transaction writes is seen by
// no other session and no pooled statement until COMMIT, and ROLLBACK undoes it.
func TestDuckDBTransactionsStayInTheirSession(t *testing.T) {
	e := openConns(t, 3, nil)
	run(t, e, "create table t(x integer)")
	a, b := session(t, e), session(t, e)
	if tag := run(t, a, "BEGIN"); tag != "BEGIN" || a.TxStatus() != 'T' {
		t.Fatalf("BEGIN: tag %q status %c", tag, a.TxStatus())
	}
	run(t, b, "begin isolation level read committed")
	run(t, a, "insert into t values (1)")
	if n := count(t, a, "select count(*) from t"); n != "1" {
		t.Fatalf("the transaction does not see its own row: %s", n)
	}
	if n := count(t, b, "select count(*) from t"); n != "0" {
		t.Fatalf("another session sees an uncommitted row: %s", n)
	}
	if n := count(t, e, "select count(*) from t"); n != "0" {
		t.Fatalf("a pooled statement sees an uncommitted row: %s", n)
	}
	if tag := run(t, a, "commit"); tag != "COMMIT" || a.TxStatus() != 'I' {
		t.Fatalf("COMMIT: tag %q status %c", tag, a.TxStatus())
	}
	if n := count(t, e, "select count(*) from t"); n != "1" {
		t.Fatalf("after COMMIT a pooled statement sees %s rows", n)
	}
	run(t, b, "rollback")
	run(t, a, "start transaction")
	run(t, a, "delete from t")
	if tag := run(t, a, "ROLLBACK"); tag != "ROLLBACK" || a.TxStatus() != 'I' {
		t.Fatalf("ROLLBACK: tag %q status %c", tag, a.TxStatus())
	}
	if n := count(t, e, "select count(*) from t"); n != "1" {
		t.Fatalf("after ROLLBACK %s rows", n)
	}
}

// TestDuckDBFailedTransaction: as in PostgreSQL, an error fails the transaction, later
// statements are refused with 25P02, and COMMIT then rolls back.
func TestDuckDBFailedTransaction(t *testing.T) {
	e := openConns(t, 2, nil)
	run(t, e, "create table t(x integer)")
	s := session(t, e)
	run(t, s, "begin")
	run(t, s, "insert into t values (1)")
	if c := code(s, "select * from missing"); c != "42P01" || s.TxStatus() != 'E' {
		t.Fatalf("error in a transaction: code %q status %c", c, s.TxStatus())
	}
	if c := code(s, "select 1"); c != "25P02" {
		t.Fatalf("statement after an error: code %q, want 25P02", c)
	}
	if tag := run(t, s, "commit"); tag != "ROLLBACK" || s.TxStatus() != 'I' {
		t.Fatalf("COMMIT of a failed transaction: tag %q status %c", tag, s.TxStatus())
	}
	if n := count(t, e, "select count(*) from t"); n != "0" {
		t.Fatalf("a failed transaction's row was kept: %s", n)
	}
	run(t, s, "begin read only")
	if c := code(s, "insert into t values (2)"); c != "25006" {
		t.Fatalf("insert in a READ ONLY transaction: code %q", c)
	}
	run(t, s, "rollback")
	for sql, want := range map[string]string{"commit prepared 'x'": "0A000", "declare c cursor for select 1": "0A000", "fetch 10 from c": "0A000",
		"listen ch": "0A000", "notify ch": "0A000", "deallocate all": ""} {
		if c := code(s, sql); c != want {
			t.Errorf("%s: code %q, want %s", sql, c, want)
		}
	}
}

// TestDuckDBSavepoints: SAVEPOINT and RELEASE succeed in a transaction as PostgreSQL's (a
// savepoint taken and released keeps the work; RELEASE of an older one releases the later
// ones too), outside one they are refused with 25P01, an unknown name fails the transaction
// with 3B001, and ROLLBACK TO, which DuckDB cannot do, fails the transaction (0A000) so that
// nothing after it commits.
func TestDuckDBSavepoints(t *testing.T) {
	e := openConns(t, 2, nil)
	run(t, e, "create table t(x integer)")
	s := session(t, e)
	if c := code(s, "savepoint a"); c != "25P01" {
		t.Fatalf("SAVEPOINT outside a transaction: code %q, want 25P01", c)
	}
	run(t, s, "begin")
	for _, sql := range []string{`savepoint "S1_x"`, "insert into t values (1)", "savepoint b", `release savepoint "S1_x"`} {
		run(t, s, sql)
	}
	if c := code(s, "release b"); c != "3B001" || s.TxStatus() != 'E' {
		t.Fatalf("RELEASE of a savepoint the older one's release released: code %q status %c", c, s.TxStatus())
	}
	run(t, s, "rollback")
	run(t, s, "begin")
	run(t, s, "savepoint a")
	run(t, s, "insert into t values (2)")
	run(t, s, "release a")
	if tag := run(t, s, "commit"); tag != "COMMIT" {
		t.Fatalf("COMMIT after a released savepoint: %q", tag)
	}
	run(t, s, "begin")
	run(t, s, "savepoint a")
	run(t, s, "insert into t values (3)")
	if c := code(s, "rollback to savepoint a"); c != "0A000" || s.TxStatus() != 'E' {
		t.Fatalf("ROLLBACK TO: code %q status %c, want 0A000 and a failed transaction", c, s.TxStatus())
	}
	if tag := run(t, s, "commit"); tag != "ROLLBACK" {
		t.Fatalf("COMMIT after ROLLBACK TO: %q, want ROLLBACK", tag)
	}
	if n := count(t, e, "select string_agg(x::varchar, ',' order by x) from t"); n != "2" {
		t.Fatalf("rows %s, want only the released savepoint's transaction's 2", n)
	}
}

// TestDuckDBPooledStatementsLeaveNothing: outside a session a transaction cannot start (it
// would stay on a pooled connection), and nothing a statement sets or creates on its
// connection reaches the next statement, even on the same (only) connection.
func TestDuckDBPooledStatementsLeaveNothing(t *testing.T) {
	e := openConns(t, 1, nil)
	if c := code(e, "BEGIN"); c != "0A000" {
		t.Fatalf("BEGIN outside a session: code %q, want 0A000", c)
	}
	if c := code(e, "/* "+strings.Repeat("x", 5000)+" */ BEGIN"); c != "0A000" {
		t.Fatalf("BEGIN after a long comment outside a session: code %q, want 0A000", c)
	}
	if c := code(e, "select 1"); c != "" {
		t.Fatalf("after a refused BEGIN: %q", c)
	}
	if tag := run(t, e, "commit"); tag != "COMMIT" {
		t.Fatalf("COMMIT without a transaction: %q", tag)
	}
	run(t, e, "create temp table secret as select 42 x")
	if c := code(e, "select * from secret"); c != "42P01" {
		t.Fatalf("a temp table reached the next statement: code %q", c)
	}
	run(t, e, "create schema s")
	run(t, e, "create table s.only_here(x integer)")
	run(t, e, "set search_path = 's'")
	if c := code(e, "select * from only_here"); c != "42P01" {
		t.Fatalf("a search_path reached the next statement: code %q", c)
	}
	run(t, e, "prepare p as select 1")
	if c := code(e, "execute p"); c == "" {
		t.Fatal("a prepared statement reached the next statement")
	}
	// Several statements in one query: refused before any runs.
	if c := code(e, "create table a(x integer); select 1"); c != "42601" {
		t.Fatalf("two statements: code %q, want 42601", c)
	}
	if c := code(e, "select * from a"); c != "42P01" {
		t.Fatalf("the first of two refused statements ran: code %q", c)
	}
	s := session(t, e) // the only connection, pinned: its temp table goes with the session
	run(t, s, "begin")
	run(t, s, "create temp table mine(x integer)")
	run(t, s, "commit")
	_ = s.Close()
	if c := code(e, "select * from mine"); c != "42P01" {
		t.Fatalf("a session's temp table outlived it: code %q", c)
	}
}

func TestDuckDBCurrentDatabaseIsTheConfiguredName(t *testing.T) {
	e, err := duckengine.Open(engine.Spec{Name: "demo", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := count(t, e, "select current_database()"); got != "demo" {
		t.Fatalf("current_database() = %q, want the cluster's name", got)
	}
}
