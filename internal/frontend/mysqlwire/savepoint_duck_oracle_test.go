package mysqlwire

import (
	"context"
	"fmt"
	"testing"
)

// TestRollbackToSavepointOnDuckDBKeepsTheTransaction: ROLLBACK TO SAVEPOINT on DuckDB undoes
// the transaction's statements after the savepoint and keeps the transaction, as on MariaDB:
// the next INSERT runs in it and COMMIT commits what came before the savepoint and after the
// ROLLBACK TO. The frontend once took ROLLBACK TO for a ROLLBACK of a failed transaction (the
// client's next INSERT committed alone); DuckDB then refused it (1235) and failed the
// transaction (mysqlsavepoints.go now rolls back to it).
func TestRollbackToSavepointOnDuckDBKeepsTheTransaction(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	ctx := context.Background()
	for _, s := range []string{"create table sp (id int primary key)", "start transaction", "insert into sp values (1)", "savepoint s1",
		"insert into sp values (1)", "insert into sp values (3)", "rollback to savepoint s1", "insert into sp values (2)", "commit"} {
		var got [2]string
		for i, c := range conns {
			_, err := c.ExecContext(ctx, s)
			got[i] = fmt.Sprint(errNumber(err))
		}
		if got[0] != got[1] {
			t.Errorf("%s: MariaDB error %s, DuckDB %s", s, got[0], got[1])
		}
	}
	for i, c := range conns {
		var rows int
		if err := c.QueryRowContext(ctx, "select count(*) from sp where id in (1, 2)").Scan(&rows); err != nil || rows != 2 {
			t.Errorf("side %d: rows 1 and 2 committed: %d (%v), want 2", i, rows, err)
		}
	}
}
