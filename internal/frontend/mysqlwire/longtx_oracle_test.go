package mysqlwire

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestLongTransactionWithFailuresAsMariaDB: a transaction of 1,000 writes on PostgreSQL, one in
// seven of them refused (a duplicate key) and some of them rolled back by the client's own
// savepoints, far past PostgreSQL's 64 cached subtransactions and the proxy's chain of 32: each
// refused statement is undone alone, the others commit, as on MariaDB (go-sql-driver, one
// connection each, the answer of every statement and the rows committed compared); the locks
// PostgreSQL holds for the proxy's savepoints stay bounded by its chain.
func TestLongTransactionWithFailuresAsMariaDB(t *testing.T) {
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	for _, c := range conns {
		if _, err := c.ExecContext(context.Background(), stmtRollbackTable); err != nil {
			t.Fatal(err)
		}
	}
	steps := []string{"exec start transaction"}
	for i := range 1000 {
		switch {
		case i%7 == 3:
			steps = append(steps, fmt.Sprintf("exec insert into sr values (%d, 'dup')", i-1))
		case i%100 == 50:
			steps = append(steps, fmt.Sprintf("exec savepoint s%d", i/100))
		case i%100 == 60:
			steps = append(steps, fmt.Sprintf("exec rollback to savepoint s%d", i/100))
		case i%5 == 0:
			steps = append(steps, fmt.Sprintf("exec update sr set v = 'u' where id = %d", i-2))
		default:
			steps = append(steps, fmt.Sprintf("exec insert into sr values (%d, 'n')", i))
		}
	}
	compareSteps(t, conns[0], conns[1], append(steps, "select count(*), sum(id), count(case when v = 'u' then 1 end) from sr"))

	// PostgreSQL's cost: a writing subtransaction holds a lock on its XID (in the shared lock
	// table, max_locks_per_transaction x max_connections entries) until it is released or rolled
	// back; the proxy's chain, released every stmtSavepointChain statements, keeps them bounded
	// (savepoints left open: 3,000 writes in psql held 2,908).
	var pid int
	if err := conns[1].QueryRowContext(context.Background(), "select pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	server, err := pgx.Connect(context.Background(), pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(context.Background())
	var locks, perTx, maxConns int
	if err := server.QueryRow(context.Background(), `select (select count(*) from pg_locks where pid = $1 and locktype = 'transactionid'),
		current_setting('max_locks_per_transaction')::int, current_setting('max_connections')::int`, pid).Scan(&locks, &perTx, &maxConns); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d statements: the backend holds %d transactionid locks (lock table: %d x %d)", len(steps)-1, locks, perTx, maxConns)
	if locks > stmtSavepointChain+1 { // the chain's and the transaction's own
		t.Errorf("%d transactionid locks held after %d statements, want at most %d", locks, len(steps)-1, stmtSavepointChain+1)
	}

	compareSteps(t, conns[0], conns[1], []string{"exec commit", "select count(*), sum(id), count(case when v = 'u' then 1 end), min(id), max(id) from sr"})
}
