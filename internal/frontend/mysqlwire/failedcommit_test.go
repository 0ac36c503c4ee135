package mysqlwire

import (
	"context"
	"testing"
)

// TestCommitOfAFailedTransactionIsAnError: on the embedded DuckDB, a transaction whose refused
// statement the engine cannot undo alone (its statement log holds a write of RAND()'s value) is
// failed; the client goes on past the refusal (a duplicate key it expected) and commits. The
// COMMIT is an error (1213: run it again) and the table shows nothing of the transaction.
// Before, COMMIT answered OK with nothing committed: writes the client was told were kept, lost.
// Where the refused statement is undone alone, COMMIT keeps the others, as MariaDB's does.
func TestCommitOfAFailedTransactionIsAnError(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table fc (id int primary key, v int)")
	ctx := context.Background()
	run := func(withRandom bool) (commitErr error) {
		tx, err := duck.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "insert into fc values (1, 1)"); err != nil {
			t.Fatal(err)
		}
		if withRandom {
			if _, err := tx.ExecContext(ctx, "insert into fc values (2, floor(rand()))"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.ExecContext(ctx, "insert into fc values (1, 9)"); errNumber(err) != 1062 {
			t.Fatalf("a duplicate key: %v; want 1062", err)
		}
		return tx.Commit()
	}
	count := func() (n int) {
		if err := duck.QueryRowContext(ctx, "select count(*) from fc").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := run(true); errNumber(err) != 1213 {
		t.Errorf("COMMIT of a transaction DuckDB failed: %v; want error 1213", err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d rows after the failed transaction's COMMIT; want none (the error says nothing was committed)", n)
	}
	if err := run(false); err != nil {
		t.Errorf("COMMIT after a refused statement undone alone: %v", err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d rows after COMMIT; want the one kept", n)
	}
}
