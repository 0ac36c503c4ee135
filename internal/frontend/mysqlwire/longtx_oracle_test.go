package mysqlwire

import (
	"context"
	"fmt"
	"testing"
)

// TestLongTransactionWithFailuresAsMariaDB: a transaction of 1,000 writes on PostgreSQL, one in
// seven of them refused (a duplicate key) and some of them rolled back by the client's own
// savepoints, far past PostgreSQL's 64 cached subtransactions and the proxy's chain of 32: each
// refused statement is undone alone, the others commit, as on MariaDB (go-sql-driver, one
// connection each, the answer of every statement and the rows committed compared).
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
	steps = append(steps, "select count(*), sum(id), count(case when v = 'u' then 1 end) from sr", "exec commit",
		"select count(*), sum(id), count(case when v = 'u' then 1 end), min(id), max(id) from sr")
	compareSteps(t, conns[0], conns[1], steps)
}
