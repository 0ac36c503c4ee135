package trinohttp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// trinoErrorName is the Trino error name err carries, "" for none.
func trinoErrorName(err error) string {
	var et *trino.ErrTrino
	if errors.As(err, &et) {
		return et.ErrorName
	}
	var qf *trino.ErrQueryFailed
	if errors.As(err, &qf) && errors.As(qf.Reason, &et) {
		return et.ErrorName
	}
	return ""
}

// Transactions through trino-go-client's BeginTx (X-Trino-Transaction-Id: NONE, then the id
// the server started) on each engine: a rolled-back insert is gone, a committed one stays, a
// row a transaction inserted is seen inside it and not outside it before COMMIT, a failed
// statement aborts the transaction as in Trino (TRANSACTION_ALREADY_ABORTED until ROLLBACK),
// and COMMIT or ROLLBACK outside one is NOT_IN_TRANSACTION.
func TestTransactionsOnEachEngine(t *testing.T) {
	maria, _, mariaDB := frontendtest.MariaDB(t)
	for _, c := range []struct {
		name    string
		backend *frontendtest.Backend
		schema  string
	}{
		{"postgres", postgresBackend(t), ""},
		{"duckdb", duckBackend(t), ""},
		{"mariadb", frontendtest.NewBackend(maria), mariaDB},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, c.backend, Options{})
			db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr, Schema: c.schema})
			db.SetMaxOpenConns(2)
			mustExec(t, db, "CREATE TABLE txt (id integer)")
			count := func(q interface {
				QueryRow(string, ...any) *sql.Row
			}) int {
				t.Helper()
				var n int
				if err := q.QueryRow("SELECT count(*) FROM txt").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			if _, err := tx.Exec("INSERT INTO txt VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if in, out := count(tx), count(db); in != 1 || out != 0 {
				t.Fatalf("inside the transaction %d rows, outside %d; want 1 and 0", in, out)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatalf("Rollback: %v", err)
			}
			if n := count(db); n != 0 {
				t.Fatalf("after ROLLBACK %d rows, want 0", n)
			}
			tx, err = db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			if err != nil {
				t.Fatalf("BeginTx read committed: %v", err)
			}
			mustExec(t, tx, "INSERT INTO txt VALUES (2)")
			if err := tx.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if n := count(db); n != 1 {
				t.Fatalf("after COMMIT %d rows, want 1", n)
			}
			tx, err = db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
			if err != nil {
				t.Fatalf("BeginTx serializable, read only: %v", err)
			}
			if _, err := tx.Exec("INSERT INTO txt VALUES (5)"); err == nil {
				t.Fatal("an INSERT in a read-only transaction succeeded")
			}
			if err := tx.Rollback(); err != nil {
				t.Fatalf("Rollback: %v", err)
			}

			tx, err = db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, tx, "INSERT INTO txt VALUES (3)")
			if _, err := tx.Exec("INSERT INTO no_such_table VALUES (1)"); trinoErrorName(err) != "TABLE_NOT_FOUND" {
				t.Fatalf("a missing table in a transaction: %v", err)
			}
			if _, err := tx.Exec("INSERT INTO txt VALUES (4)"); trinoErrorName(err) != "TRANSACTION_ALREADY_ABORTED" {
				t.Fatalf("after a failure in the transaction: %v, want TRANSACTION_ALREADY_ABORTED", err)
			}
			if err := tx.Commit(); trinoErrorName(err) != "TRANSACTION_ALREADY_ABORTED" {
				t.Fatalf("COMMIT of an aborted transaction: %v, want TRANSACTION_ALREADY_ABORTED", err)
			}
			if n := count(db); n != 1 {
				t.Fatalf("after the aborted transaction %d rows, want 1", n)
			}
			for _, stmt := range []string{"COMMIT", "rollback"} {
				if _, err := db.Exec(stmt); trinoErrorName(err) != "NOT_IN_TRANSACTION" {
					t.Fatalf("%s outside a transaction: %v", stmt, err)
				}
			}
			ts.mu.Lock()
			open := len(ts.txns)
			ts.mu.Unlock()
			if open != 0 {
				t.Fatalf("%d transactions still held after each ended", open)
			}
		})
	}
}

func mustExec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// The protocol's refusals, as Trino answers them: START TRANSACTION from a client that keeps no
// transaction id (INCOMPATIBLE_CLIENT), inside a transaction (NOT_SUPPORTED), a statement naming
// an id the server does not hold or another user's (UNKNOWN_TRANSACTION); and a transaction
// idle past AbandonAfter is rolled back, its session closed.
func TestTransactionRefusalsAndIdleEnd(t *testing.T) {
	backend := postgresBackend(t)
	ts := startServer(t, backend, Options{})
	post := func(user, sql string, h http.Header) (*QueryError, http.Header) {
		t.Helper()
		if h == nil {
			h = http.Header{}
		}
		h.Set("X-Trino-User", user)
		_, qe, got := runTrino(t, ts.addr, sql, h)
		return qe, got
	}
	if qe, _ := post("bob", "START TRANSACTION", nil); qe == nil || qe.ErrorName != "INCOMPATIBLE_CLIENT" || qe.ErrorCode != 27 {
		t.Fatalf("START TRANSACTION without the header: %+v", qe)
	}
	qe, h := post("bob", "start transaction", http.Header{txHeader: {noTransaction}})
	id := h.Get(txStartedHeader)
	if qe != nil || id == "" {
		t.Fatalf("START TRANSACTION: %+v, started id %q", qe, id)
	}
	if qe, _ := post("bob", "START TRANSACTION", http.Header{txHeader: {id}}); qe == nil || qe.ErrorName != "NOT_SUPPORTED" {
		t.Fatalf("nested START TRANSACTION: %+v", qe)
	}
	for _, c := range []struct{ user, id string }{{"bob", "8f5c7a3e-0000-4000-8000-000000000000"}, {"eve", id}} {
		if qe, _ := post(c.user, "SELECT 1", http.Header{txHeader: {c.id}}); qe == nil || qe.ErrorName != "UNKNOWN_TRANSACTION" || qe.ErrorCode != 20 {
			t.Fatalf("%s naming transaction %s: %+v", c.user, c.id, qe)
		}
	}
	if qe, _ := post("bob", "SELECT 1", http.Header{txHeader: {id}}); qe != nil {
		t.Fatalf("a statement in the transaction: %+v", qe)
	}
	ts.endIdleTransactions(ts.started.Add(1<<62), false) // every transaction is idle past this
	if qe, _ := post("bob", "SELECT 1", http.Header{txHeader: {id}}); qe == nil || qe.ErrorName != "UNKNOWN_TRANSACTION" {
		t.Fatalf("a statement in a transaction ended idle: %+v", qe)
	}
	if got := fmt.Sprint(len(ts.txns), len(ts.userTxns)); got != "0 0" {
		t.Fatalf("held after the idle end: %s", got)
	}
}

// trino-go-client's rows.Close in the middle of a result DELETEs its nextUri: the statement
// stops on PostgreSQL, outside a transaction and in one; the transaction is then aborted, as a
// failed statement aborts it in Trino, its ROLLBACK ends it, and its pinned connection is
// released: nothing of the database is left idle in a transaction.
func TestCloseMidResultStopsTheEngineInAndOutOfTransactions(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ts := startServer(t, postgresBackendAt(t, dbURL), Options{PageRows: 10, BufferedRowsMax: 20})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	const slow = "select g, pg_sleep(0.001) /* %s */ from generate_series(1, 1000000) g"
	readSome := func(q interface {
		Query(string, ...any) (*sql.Rows, error)
	}, marker string) {
		t.Helper()
		rows, err := q.Query(fmt.Sprintf(slow, marker))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 15 && rows.Next(); i++ {
		}
		rows.Close()
		waitEngineIdle(t, dbURL, marker)
	}
	readSome(db, "qf-go-closed")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	readSome(tx, "qf-go-closed-in-tx")
	if _, err := tx.Exec("SELECT 1"); trinoErrorName(err) != "TRANSACTION_ALREADY_ABORTED" {
		t.Fatalf("after a cancelled statement in the transaction: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	admin, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
			where datname = current_database() and state like 'idle in transaction%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle in a transaction after ROLLBACK", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOnlyATransactionsEndEndsIt: COMMIT and ROLLBACK end a client's transaction, as do
// Trino's COMMIT WORK and the engines' COMMIT TRANSACTION; a statement that only begins with
// one of the words (two-phase commit's COMMIT PREPARED 'gid', ROLLBACK TO SAVEPOINT) is the
// engine's statement, checked by the core, never taken for the transaction's end (it was:
// COMMIT PREPARED 'gid' in a transaction committed it, outside one was "No transaction in
// progress" instead of the two-phase refusal).
func TestOnlyATransactionsEndEndsIt(t *testing.T) {
	for sql, want := range map[string]string{
		"COMMIT": "commit", "commit;": "commit", " Commit Work ; ": "commit", "commit transaction": "commit",
		"ROLLBACK": "rollback", "rollback work": "rollback", "ROLLBACK TRANSACTION;": "rollback",
		"START TRANSACTION": "start", "use c.s": "use",
		"COMMIT PREPARED 'g'": "", "commit  prepared 'g'": "", "rollback prepared 'g'": "",
		"ROLLBACK TO SAVEPOINT s": "", "rollback to s": "", "commit work prepared": "",
		"COMMIT AND CHAIN": "", "commit 'x'": "", "committed": "", "select 1": "",
	} {
		if got := transactionVerb(sql); got != want {
			t.Errorf("transactionVerb(%q) = %q, want %q", sql, got, want)
		}
	}
}
