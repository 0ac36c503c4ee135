package flightsql

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	gomysql "github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// txEngines are the engines a Flight SQL client's transactions are tested on.
func txEngines(t *testing.T) []engine.Spec {
	return []engine.Spec{
		{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
		{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
		mariaDBSpec(t),
	}
}

// mariaDBSpec is a MySQL engine on a fresh database of the local MariaDB.
func mariaDBSpec(t *testing.T) engine.Spec {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Spec{Name: "maria", Kind: "mysql", Endpoint: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name}
}

// placeholder is the engine's first positional parameter.
func placeholder(spec engine.Spec) string {
	if spec.Kind == "mysql" {
		return "?"
	}
	return "$1"
}

func mustUpdate(t *testing.T, ctx context.Context, c *fsql.Client, sql string) {
	t.Helper()
	if _, err := c.ExecuteUpdate(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: got %v, want %v", what, err, code)
	}
}

func count(t *testing.T, ctx context.Context, c *fsql.Client, table string) string {
	t.Helper()
	return query1(t, ctx, c, "SELECT count(*) FROM "+table)[0][0]
}

// TestTransactionsAsArrowGoUsesThem: arrow-go's client begins a transaction, writes and reads in
// it (a prepared statement too), and what it wrote is seen by others only once committed, and
// never once rolled back.
func TestTransactionsAsArrowGoUsesThem(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			mustUpdate(t, ctx, c, "CREATE TABLE t (n INTEGER PRIMARY KEY)")

			tx, err := c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			prep, err := tx.Prepare(ctx, "INSERT INTO t VALUES ("+placeholder(spec)+")")
			if err != nil {
				t.Fatal(err)
			}
			prep.SetParameters(paramBatch(t, 2))
			if n, err := prep.ExecuteUpdate(ctx); err != nil || n != 1 {
				t.Fatalf("prepared insert in the transaction: %d, %v", n, err)
			}
			prep.Close(ctx)
			info, err := tx.Execute(ctx, "SELECT count(*) FROM t")
			if err != nil {
				t.Fatal(err)
			}
			if _, rows := fetch(t, ctx, c, info); rows[0][0] != "2" {
				t.Fatalf("inside the transaction: %v rows, want 2", rows)
			}
			if got := count(t, ctx, c, "t"); got != "0" {
				t.Fatalf("outside before COMMIT: %s rows, want 0", got)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got := count(t, ctx, c, "t"); got != "2" {
				t.Fatalf("after COMMIT: %s rows, want 2", got)
			}

			tx, err = c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (3)"); err != nil {
				t.Fatal(err)
			}
			ended := *tx // the client forgets the id at its end; the server must too
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if got := count(t, ctx, c, "t"); got != "2" {
				t.Fatalf("after ROLLBACK: %s rows, want 2", got)
			}
			_, err = ended.ExecuteUpdate(ctx, "INSERT INTO t VALUES (4)")
			wantCode(t, "a statement in an ended transaction", err, codes.NotFound)
		})
	}
}

// TestTransactionIsItsUsersAndRunsOneStatementAtATime: another user's statement naming the
// transaction finds none; a statement while the previous result waits for its DoGet is refused
// until it is fetched; a transaction that failed does not commit.
func TestTransactionIsItsUsersAndRunsOneStatementAtATime(t *testing.T) {
	spec := engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)}
	c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw", "bob": "pw"}})
	alice, bob := login(t, c, "alice", "pw"), login(t, c, "bob", "pw")
	mustUpdate(t, alice, c, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
	mustUpdate(t, alice, c, "GRANT ALL ON t TO PUBLIC")

	tx, err := c.BeginTransaction(alice)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecuteUpdate(bob, "INSERT INTO t VALUES (1)")
	wantCode(t, "bob's statement in alice's transaction", err, codes.NotFound)
	stolen := *tx // the client forgets the id once it commits, whatever the answer
	wantCode(t, "bob's commit of alice's transaction", stolen.Commit(bob), codes.NotFound)

	info, err := tx.Execute(alice, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecuteUpdate(alice, "INSERT INTO t VALUES (1)")
	wantCode(t, "a statement while the last result waits", err, codes.FailedPrecondition)
	fetch(t, alice, c, info)
	if _, err := tx.ExecuteUpdate(alice, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("after the fetch: %v", err)
	}

	if _, err := tx.ExecuteUpdate(alice, "INSERT INTO t VALUES (1/0)"); err == nil {
		t.Fatal("division by zero inserted")
	}
	wantCode(t, "COMMIT of a failed transaction", tx.Commit(alice), codes.Aborted)
	if got := count(t, alice, c, "t"); got != "0" {
		t.Fatalf("after the failed transaction: %s rows, want 0", got)
	}
}

// TestTransactionEndsWithItsConnectionOrIdling: a transaction whose client's connection ended,
// or that idled past TransactionIdleTTL, is rolled back and its locks are gone (an insert of
// the key it inserted, which waits on that key until then, goes through).
func TestTransactionEndsWithItsConnectionOrIdling(t *testing.T) {
	for _, c := range []struct {
		idleTTL time.Duration
		spec    engine.Spec
	}{
		{0, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)}},
		{2 * time.Second, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)}},
		{0, mariaDBSpec(t)},
		{2 * time.Second, mariaDBSpec(t)},
	} {
		idleTTL, spec := c.idleTTL, c.spec
		_, addr := serve(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}, TransactionIdleTTL: idleTTL})
		c := dialFlight(t, addr)
		ctx := login(t, c, "alice", "pw")
		mustUpdate(t, ctx, c, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
		holder, hctx := c, ctx
		if idleTTL == 0 { // the default TTL (minutes): only the connection's end rolls back
			holder = dialFlight(t, addr)
			hctx = login(t, holder, "alice", "pw")
		}
		tx, err := holder.BeginTransaction(hctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecuteUpdate(hctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if idleTTL == 0 {
			holder.Close()
		}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		mustUpdate(t, wctx, c, "INSERT INTO t VALUES (1)")
		cancel()
		if idleTTL != 0 {
			_, err = tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (3)")
			wantCode(t, "a statement in the transaction that idled out", err, codes.NotFound)
		}
	}
}

// TestTransactionsAreBoundedPerUser: one user cannot open more than TransactionsPerUserMax; a
// commit gives one back. GetSqlInfo tells clients transactions are supported.
func TestTransactionsAreBoundedPerUser(t *testing.T) {
	spec := engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"}
	c := startServer(t, engineCoreCap(t, spec, 64), Options{Auth: passwords{"alice": "pw", "bob": "pw"}, TransactionsPerUserMax: 3})
	ctx := login(t, c, "alice", "pw")

	info, err := c.GetSqlInfo(ctx, []fsql.SqlInfo{fsql.SqlInfoFlightSqlServerTransaction})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	u := r.RecordBatch().Column(1).(*array.DenseUnion)
	value := u.Field(u.ChildID(0)).(*array.Int32).Value(int(u.ValueOffset(0)))
	r.Release()
	if value != int32(fsql.SqlTransactionTransaction) {
		t.Fatalf("SqlInfo FLIGHT_SQL_SERVER_TRANSACTION = %d, want %d", value, fsql.SqlTransactionTransaction)
	}

	var txs []*fsql.Txn
	for range 3 {
		tx, err := c.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	_, err = c.BeginTransaction(ctx)
	wantCode(t, "one transaction past the bound", err, codes.ResourceExhausted)
	if _, err := c.BeginTransaction(login(t, c, "bob", "pw")); err != nil {
		t.Fatalf("another user's transaction: %v", err)
	}
	if err := txs[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTransaction(ctx); err != nil {
		t.Fatalf("after a commit: %v", err)
	}
}
