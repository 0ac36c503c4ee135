package mysqlwire

import (
	"context"
	"testing"
)

// TestRollbackToSavepointOnDuckDBKeepsTheTransaction: DuckDB cannot undo part of a
// transaction, so ROLLBACK TO SAVEPOINT is refused (1235) and the transaction is aborted: the
// statements after it are refused until the client ends it, and nothing of it is committed. The
// frontend took ROLLBACK TO for a ROLLBACK of a failed transaction: it answered OK, the client's
// next INSERT ran on its own and was committed, and its COMMIT was answered OK.
func TestRollbackToSavepointOnDuckDBKeepsTheTransaction(t *testing.T) {
	_, duck := mariaAndDuck(t)
	c := oneConnEach(t, duck, duck)[0]
	ctx := context.Background()
	exec := func(stmt string) uint16 {
		_, err := c.ExecContext(ctx, stmt)
		return errNumber(err)
	}
	for _, s := range []string{"create table sp (id int primary key)", "start transaction", "insert into sp values (1)", "savepoint s1"} {
		if n := exec(s); n != 0 {
			t.Fatalf("%s: error %d", s, n)
		}
	}
	if n := exec("insert into sp values (1)"); n != 1062 {
		t.Errorf("the duplicate: error %d, want 1062", n)
	}
	if n := exec("rollback to savepoint s1"); n != 1235 {
		t.Errorf("rollback to savepoint: error %d, want 1235 (not supported)", n)
	}
	if n := exec("insert into sp values (2)"); n == 0 {
		t.Errorf("an insert after the refused rollback to savepoint ran")
	}
	exec("commit")
	var rows int
	if err := c.QueryRowContext(ctx, "select count(*) from sp").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("rows committed: %d (%v), want 0", rows, err)
	}
}
